"""What the blocking and the asyncio clients share: errors, results, the
service's address from the environment, and the pieces of the API that
are neither blocking nor asynchronous (paths, queries, event decoding)."""

from __future__ import annotations

import base64
import os
import urllib.parse
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

DEFAULT_SOCKET = "/run/agentjail/agentjail.sock"

#: A path inside a sandbox: str, or bytes for a name that is not UTF-8.
PathLike = Union[str, bytes, bytearray]
#: A command: a list of arguments, or a string for /bin/sh -c.
Command = Union[str, List[str]]
#: A callback given each piece of output as it comes.
OnOutput = Optional[Callable[[str], Any]]


class AgentjailError(Exception):
    """The service answered with an error.

    status is the HTTP status, code the API's error code (docs/api.md),
    message its text; for a 403 (the operator policy or the tenant's caps
    refused it), policy_key names the key of the operator's file to change
    (else None)."""

    def __init__(self, status: int, code: Optional[str], message: Optional[str],
                 policy_key: Optional[str] = None) -> None:
        super().__init__(f"{message} (HTTP {status}, {code})")
        self.status = status
        self.code = code
        self.message = message
        self.policy_key = policy_key


def error_from(status: int, raw: bytes) -> AgentjailError:
    """The AgentjailError of an error response's body."""
    import json
    try:
        err = json.loads(raw)["error"]
        return AgentjailError(status, err.get("code"), err.get("message"), err.get("policy_key"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return AgentjailError(status, "http_error", raw.decode(errors="replace"))


def address(socket_path: Optional[str], url: Optional[str],
            token: Optional[str]) -> Tuple[Optional[str], str, Optional[str]]:
    """(url, socket_path, token): the arguments, else $AGENTJAIL_URL,
    $AGENTJAIL_SOCKET (default /run/agentjail/agentjail.sock), $AGENTJAIL_TOKEN."""
    return (url or os.environ.get("AGENTJAIL_URL"),
            socket_path or os.environ.get("AGENTJAIL_SOCKET") or DEFAULT_SOCKET,
            token or os.environ.get("AGENTJAIL_TOKEN"))


def with_query(path: str, query: Optional[Dict[str, Any]]) -> str:
    return path + "?" + urllib.parse.urlencode(query) if query else path


class ExecResult:
    """How a command ended, with its (redacted) output.

    exit_code (128+N for signal N, 124 for a timeout, 127 for a command
    not found), signal, timed_out, oom_killed, duration_ms, error (a dict
    with code and message when the command could not run), stdout, stderr."""

    def __init__(self, event: Dict[str, Any], stdout: str, stderr: str) -> None:
        self.exit_code: Optional[int] = event.get("exit_code")
        self.signal: Optional[int] = event.get("signal")
        self.timed_out = bool(event.get("timed_out"))
        self.oom_killed = bool(event.get("oom_killed"))
        self.duration_ms: Optional[int] = event.get("duration_ms")
        self.error: Optional[Dict[str, Any]] = event.get("error")
        self.stdout = stdout
        self.stderr = stderr

    @property
    def ok(self) -> bool:
        """True when the command exited with 0."""
        return self.exit_code == 0

    def __repr__(self) -> str:
        return (f"ExecResult(exit_code={self.exit_code}, timed_out={self.timed_out}, "
                f"oom_killed={self.oom_killed}, duration_ms={self.duration_ms})")


def event_data(ev: Dict[str, Any]) -> str:
    """The text of an output event (data, or data_b64 decoded)."""
    data = ev.get("data")
    if data is None:
        data = base64.b64decode(ev["data_b64"]).decode(errors="replace")
    return data


class Collector:
    """Output events gathered up to the exit event (feed(), then result())."""

    def __init__(self, on_stdout: OnOutput, on_stderr: OnOutput) -> None:
        self.out: List[str] = []
        self.err: List[str] = []
        self.end: Optional[Dict[str, Any]] = None
        self.cbs = {"stdout": on_stdout, "stderr": on_stderr}

    def feed(self, ev: Dict[str, Any]) -> Any:
        """Take one event; returns what the callback returned (an awaitable
        for an async callback), else None."""
        kind = ev.get("type")
        if kind in ("stdout", "stderr"):
            data = event_data(ev)
            (self.out if kind == "stdout" else self.err).append(data)
            cb = self.cbs[kind]
            if cb:
                return cb(data)
        elif kind == "exit":
            self.end = ev
        return None

    def result(self) -> ExecResult:
        if self.end is None:
            raise AgentjailError(502, "stream_ended", "the output ended without an exit event")
        return ExecResult(self.end, "".join(self.out), "".join(self.err))


def path_query(path: PathLike, **more: Any) -> Dict[str, Any]:
    """The path as a query: a str as "path", bytes (any name the sandbox
    can make, UTF-8 or not) as "path_b64"."""
    if isinstance(path, (bytes, bytearray)):
        q: Dict[str, Any] = {"path_b64": base64.urlsafe_b64encode(bytes(path)).decode()}
    else:
        q = {"path": path}
    q.update({k: v for k, v in more.items() if v is not None})
    return q


def list_entries(page: Dict[str, Any]) -> Iterable[Dict[str, Any]]:
    """A listing page's entries, each with name_bytes added."""
    for e in page["entries"]:
        b64 = e.get("name_b64")
        e["name_bytes"] = base64.b64decode(b64) if b64 else e["name"].encode()
        yield e


def create_body(timeout: Optional[float], policy: Dict[str, Any]) -> Dict[str, Any]:
    body = {k.replace("_", "-"): v for k, v in policy.items()}
    if timeout is not None:
        body["timeout"] = timeout
    return body


def exec_body(cmd: Command, env: Optional[Dict[str, str]], cwd: Optional[str],
              timeout: Optional[float], stdin: Union[str, bytes, None],
              background: bool) -> Dict[str, Any]:
    body: Dict[str, Any] = {"cmd": cmd}
    if background:
        body["background"] = True
    if env:
        body["env"] = env
    if cwd:
        body["cwd"] = cwd
    if timeout is not None:
        body["timeout"] = timeout
    if stdin is not None:
        body["stdin"] = stdin if isinstance(stdin, str) else stdin.decode()
    return body


def ws_request(sb_id: str, cmd: Command, stdin: bool, cwd: Optional[str],
               env: Optional[Dict[str, str]], timeout: Optional[float], tty: bool,
               token: Optional[str], key: str) -> bytes:
    """The WebSocket exec's upgrade request."""
    q = [("command", c) for c in (cmd if isinstance(cmd, list) else ["/bin/sh", "-c", cmd])]
    q.append(("stdin", "true" if stdin else "false"))
    if tty:
        q.append(("tty", "true"))
    if cwd:
        q.append(("cwd", cwd))
    if timeout is not None:
        q.append(("timeout", str(timeout)))
    for k, v in (env or {}).items():
        q.append(("env", f"{k}={v}"))
    path = f"/v1/sandboxes/{sb_id}/exec?" + urllib.parse.urlencode(q)
    head = [f"GET {path} HTTP/1.1", "Host: agentjail", "Upgrade: websocket",
            "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Protocol: v4.channel.k8s.io"]
    if token:
        head.append("Authorization: Bearer " + token)
    return ("\r\n".join(head) + "\r\n\r\n").encode()


def ws_frame(opcode: int, payload: bytes) -> bytes:
    """A masked client frame."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + n.to_bytes(8, "big")
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + body
