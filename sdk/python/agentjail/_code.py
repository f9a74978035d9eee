"""The code interpreter's results (docs/guides/code-interpreter.md): what a
run_code returns, shared by the blocking and the asyncio clients. The
names follow E2B's code interpreter SDK: an Execution has results (each a
MIME bundle: .png, .html, .text, ...), logs (stdout, stderr) and error."""

from __future__ import annotations

import base64
from typing import Any, Callable, Dict, List, Optional

from ._common import AgentjailError

#: A callback given each Result (a display or the cell's value) as it comes.
OnResult = Optional[Callable[["Result"], Any]]
#: A callback given the ExecutionError when the code raised.
OnError = Optional[Callable[["ExecutionError"], Any]]


class Result:
    """One rich output: a `display` (plt.show(), display(...)) or the
    cell's value (is_main_result). Each MIME type of the bundle is an
    attribute: text (text/plain), html, markdown, svg, png and jpeg (base64
    text, as Jupyter sends them; png_bytes() decodes), json, latex,
    javascript; formats() lists those present, data is the whole bundle."""

    _NAMES = {"text/plain": "text", "text/html": "html", "text/markdown": "markdown",
              "image/svg+xml": "svg", "image/png": "png", "image/jpeg": "jpeg",
              "application/json": "json", "text/latex": "latex",
              "application/javascript": "javascript"}

    def __init__(self, data: Dict[str, Any], is_main_result: bool = False,
                 execution_count: Optional[int] = None) -> None:
        self.data = data
        self.is_main_result = is_main_result
        self.execution_count = execution_count
        for mime, name in self._NAMES.items():
            setattr(self, name, data.get(mime))

    text: Optional[str]
    html: Optional[str]
    markdown: Optional[str]
    svg: Optional[str]
    png: Optional[str]
    jpeg: Optional[str]
    json: Any
    latex: Optional[str]
    javascript: Optional[str]

    def formats(self) -> List[str]:
        """The names of the formats present ("png", "html", "text", ...)."""
        return [n for m, n in self._NAMES.items() if m in self.data]

    def png_bytes(self) -> Optional[bytes]:
        """The PNG image's bytes (None without one)."""
        return base64.b64decode(self.png) if self.png else None

    def __repr__(self) -> str:
        return f"Result(formats={self.formats()}, is_main_result={self.is_main_result})"


class Logs:
    """What the code printed: stdout and stderr, lists of the pieces."""

    def __init__(self) -> None:
        self.stdout: List[str] = []
        self.stderr: List[str] = []

    def __repr__(self) -> str:
        return f"Logs(stdout={self.stdout!r}, stderr={self.stderr!r})"


class ExecutionError:
    """The exception the code raised: name (e.g. "ZeroDivisionError";
    "TimeoutError" at the run's timeout, "OutOfMemory" when the kernel was
    killed for memory), value, traceback (a string, with Jupyter's colours)."""

    def __init__(self, ev: Dict[str, Any]) -> None:
        self.name: str = ev.get("name", "")
        self.value: str = ev.get("value", "")
        self.traceback_lines: List[str] = list(ev.get("traceback") or [])
        self.traceback = "\n".join(self.traceback_lines)

    def __repr__(self) -> str:
        return f"ExecutionError(name={self.name!r}, value={self.value!r})"


class Execution:
    """A run_code: results, logs, error (None when it ran through),
    execution_count, context, duration_ms, timed_out, oom_killed and
    restarted (the context's kernel was started again: its state is gone).
    text is the cell's value as text/plain (or None)."""

    def __init__(self) -> None:
        self.results: List[Result] = []
        self.logs = Logs()
        self.error: Optional[ExecutionError] = None
        self.execution_count: Optional[int] = None
        self.context: Optional[str] = None
        self.duration_ms: Optional[int] = None
        self.timed_out = False
        self.oom_killed = False
        self.restarted = False
        self.ended = False

    @property
    def text(self) -> Optional[str]:
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None

    def __repr__(self) -> str:
        return (f"Execution(results={self.results!r}, logs={self.logs!r}, "
                f"error={self.error!r}, execution_count={self.execution_count})")


class CodeCollector:
    """A run's events gathered into an Execution; feed() returns what a
    callback returned (an awaitable for an async callback) or None."""

    def __init__(self, on_stdout: Any, on_stderr: Any, on_result: OnResult,
                 on_error: OnError) -> None:
        self.ex = Execution()
        self.cbs = {"stdout": on_stdout, "stderr": on_stderr, "result": on_result,
                    "error": on_error}

    def feed(self, ev: Dict[str, Any]) -> Any:
        kind = ev.get("type")
        ex = self.ex
        if kind in ("stdout", "stderr"):
            (ex.logs.stdout if kind == "stdout" else ex.logs.stderr).append(ev.get("data", ""))
            cb = self.cbs[kind]
            return cb(ev.get("data", "")) if cb else None
        if kind in ("display", "result"):
            r = Result(ev.get("data") or {}, kind == "result", ev.get("execution_count"))
            ex.results.append(r)
            cb = self.cbs["result"]
            return cb(r) if cb else None
        if kind == "error":
            ex.error = ExecutionError(ev)
            cb = self.cbs["error"]
            return cb(ex.error) if cb else None
        if kind == "end":
            ex.ended = True
            ex.execution_count = ev.get("execution_count")
            ex.context = ev.get("context")
            ex.duration_ms = ev.get("duration_ms")
            ex.timed_out = bool(ev.get("timed_out"))
            ex.oom_killed = bool(ev.get("oom_killed"))
            ex.restarted = bool(ev.get("restarted"))
        return None

    def result(self) -> Execution:
        if not self.ex.ended:
                raise AgentjailError(502, "stream_ended", "the run ended without an end event")
        return self.ex


def code_body(code: str, context: Any, timeout: Optional[float],
              language: str = "python") -> Dict[str, Any]:
    """The body of POST /code, for the blocking and the asyncio client."""
    if language != "python":
        raise AgentjailError(400, "bad_request", "only language='python' is supported")
    body: Dict[str, Any] = {"code": code, "language": "python"}
    ctx = context_id(context)
    if ctx:
        body["context"] = ctx
    if timeout is not None:
        body["timeout"] = timeout
    return body


def context_body(id: Optional[str], cwd: Optional[str], language: str) -> Dict[str, Any]:
    """The body of POST /code/contexts."""
    body: Dict[str, Any] = {"language": language}
    if id:
        body["id"] = id
    if cwd:
        body["cwd"] = cwd
    return body


def context_id(context: Any) -> Optional[str]:
    """A context given as its id or as the dict create_code_context returned."""
    if context is None or isinstance(context, str):
        return context
    return context["id"]
