"""Python client for `agentjail serve` (standard library only).

Blocking:

    from agentjail import Sandbox

    with Sandbox.create(memory="512M", secret={"API_KEY": key}) as sb:
        r = sb.exec("pytest -q", on_stdout=print_chunk)
        print(r.exit_code, r.stdout)
        sb.files.write("/workspace/notes.txt", b"hello")
        print(sb.files.list("/workspace"))

asyncio (the same surface, every call awaited; agentjail.aio):

    from agentjail import AsyncSandbox

    async with await AsyncSandbox.create(memory="512M") as sb:
        r = await sb.exec("pytest -q")

The service is found at $AGENTJAIL_SOCKET (a unix socket, default
/run/agentjail/agentjail.sock), or at a URL ($AGENTJAIL_URL, with the bearer
token in $AGENTJAIL_TOKEN). See docs/api.md for the API itself.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import urllib.parse
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from . import _http
from ._code import (CodeCollector, Execution, ExecutionError, Logs, OnError, OnResult, Result,
                    code_body, context_body, context_id)
from ._common import (DEFAULT_SOCKET, AgentjailError, Collector, Command, ExecResult,
                      OnOutput, PathLike, address, create_body, error_from, exec_body,
                      list_entries, path_query, with_query, ws_frame, ws_request)

__all__ = ["Client", "Sandbox", "ExecResult", "Execution", "Result", "Logs", "ExecutionError", "Process", "Session", "Files", "AgentjailError",
           "AsyncClient", "AsyncSandbox", "AsyncProcess", "AsyncSession", "AsyncFiles",
           "DEFAULT_SOCKET", "__version__"]

__version__ = "0.1.0"

Body = Union[bytes, bytearray, Dict[str, Any], List[Any], IO[bytes], None]


class Client:
    """A connection to the service: a unix socket, or a URL with a token.

    socket_path, url and token default to $AGENTJAIL_SOCKET, $AGENTJAIL_URL
    and $AGENTJAIL_TOKEN; timeout (seconds) bounds connecting and each
    read. Idle connections are kept for the next request."""

    def __init__(self, socket_path: Optional[str] = None, url: Optional[str] = None,
                 token: Optional[str] = None, timeout: Optional[float] = None) -> None:
        self.url, self.socket_path, self.token = address(socket_path, url, token)
        self.timeout = timeout
        if self.url:
            u = urllib.parse.urlsplit(self.url)
            tls = u.scheme == "https"
            self._connect = _http.tcp_connector(u.hostname, u.port or (443 if tls else 80),
                                                timeout, tls)
            host, keep = u.netloc, not tls
        else:
            self._connect = _http.unix_connector(self.socket_path, timeout)
            host, keep = "agentjail", True
        # idle connections are kept for the next request (_http.py)
        self._pool = _http.Pool(self._connect, host, keep)

    def close(self) -> None:
        """Close the idle connections (requests open new ones)."""
        self._pool.close()

    def request(self, method: str, path: str, body: Body = None,
                query: Optional[Dict[str, Any]] = None,
                headers: Optional[Dict[str, str]] = None) -> "_http.Response":
        """Send a request; returns the open response (status < 400) or
        raises AgentjailError. A dict or list body is sent as JSON."""
        path = with_query(path, query)
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        if headers:
            h.update(headers)
        resp = self._pool.request(method, path, body, h)
        if resp.status >= 400:
            raw = resp.read()
            resp.close()
            raise error_from(resp.status, raw)
        return resp

    def json(self, method: str, path: str, body: Body = None,
             query: Optional[Dict[str, Any]] = None) -> Any:
        """A request whose answer is JSON: the decoded answer."""
        resp = self.request(method, path, body, query)
        try:
            return json.loads(resp.read() or b"null")
        finally:
            resp.close()

    def sandboxes(self) -> List[Dict[str, Any]]:
        """The live sandboxes, as dicts."""
        return self.json("GET", "/v1/sandboxes")["sandboxes"]

    def healthy(self) -> bool:
        """True when the service answers GET /healthz with ok."""
        return self.json("GET", "/healthz").get("status") == "ok"


_defaults: Dict[Tuple[Optional[str], ...], Client] = {}
_defaults_lock = threading.Lock()


def _default_client() -> Client:
    """The Client of Sandbox.create() without one: one per service address,
    shared, so that its kept connections serve every such sandbox (a Client
    each would keep a connection each to the service)."""
    key = tuple(os.environ.get(k) for k in ("AGENTJAIL_URL", "AGENTJAIL_SOCKET", "AGENTJAIL_TOKEN"))
    with _defaults_lock:
        if key not in _defaults:
            _defaults[key] = Client()
        return _defaults[key]


class Files:
    """Files of one sandbox (Sandbox.files); paths are resolved inside the
    sandbox only. A path is a str, or bytes for a name that is not UTF-8."""

    CHUNK = 1 << 16

    def __init__(self, sb: "Sandbox") -> None:
        self._sb = sb

    def _path(self) -> str:
        return f"/v1/sandboxes/{self._sb.id}/files"

    _q = staticmethod(path_query)

    def write(self, path: PathLike, data: Union[bytes, bytearray, str, IO[bytes]],
              mode: Optional[int] = None) -> Dict[str, Any]:
        """Write bytes, str, or a binary file object (streamed) to path;
        mode is the file's permission bits (e.g. 0o600)."""
        if isinstance(data, str):
            data = data.encode()
        headers = {"Content-Type": "application/octet-stream"}
        if not isinstance(data, (bytes, bytearray)):
            size = os.fstat(data.fileno()).st_size - data.tell()
            headers["Content-Length"] = str(size)
        q = path_query(path, mode=format(mode, "o") if mode is not None else None)
        resp = self._sb.client.request("PUT", self._path(), data, q, headers)
        try:
            return json.loads(resp.read())
        finally:
            resp.close()

    def read(self, path: PathLike, into: Optional[IO[bytes]] = None) -> Optional[bytes]:
        """The file's bytes, or (into given) written chunk by chunk into a
        file object and None returned."""
        resp = self._sb.client.request("GET", self._path(), query=path_query(path))
        try:
            if into is None:
                return resp.read()
            while True:
                chunk = resp.read(self.CHUNK)
                if not chunk:
                    return None
                into.write(chunk)
        finally:
            resp.close()

    def list(self, path: PathLike, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """Entries of a directory: dicts with name, type, size, mode, mtime,
        and name_bytes (the name's bytes: a name that is not UTF-8 has
        name None). Every page of a large directory is fetched (limit:
        entries per page)."""
        out: List[Dict[str, Any]] = []
        cursor = None
        while True:
            page = self._sb.client.json(
                "GET", self._path(), query=path_query(path, limit=limit, cursor=cursor))
            out.extend(list_entries(page))
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def mkdir(self, path: PathLike, parents: bool = False) -> Dict[str, Any]:
        """Make a directory (parents=True: and its missing parents)."""
        q = path_query(path, parents="true" if parents else "false")
        return self._sb.client.json("POST", f"/v1/sandboxes/{self._sb.id}/mkdir", query=q)

    def remove(self, path: PathLike, recursive: bool = False) -> Dict[str, Any]:
        """Remove a file or an empty directory (recursive=True: any directory)."""
        q = path_query(path, recursive="true" if recursive else "false")
        return self._sb.client.json("DELETE", self._path(), query=q)


def _collect(events: Iterator[Dict[str, Any]], on_stdout: OnOutput,
             on_stderr: OnOutput) -> ExecResult:
    """Gather output events up to the exit event: an ExecResult."""
    c = Collector(on_stdout, on_stderr)
    for ev in events:
        c.feed(ev)
    return c.result()


class Process:
    """A background process (Sandbox.exec(..., background=True))."""

    def __init__(self, sb: "Sandbox", pid: str) -> None:
        self.sandbox = sb
        self.id = pid

    def _path(self) -> str:
        return f"/v1/sandboxes/{self.sandbox.id}/processes/{self.id}"

    def info(self) -> Dict[str, Any]:
        """{"id", "cmd", "running", "output_bytes", "kept_from", "exit"?}"""
        return self.sandbox.client.json("GET", self._path())

    def signal(self, sig: Union[str, int] = "TERM") -> Dict[str, Any]:
        """Signal its process group: a number or a name (TERM, KILL, INT...)."""
        return self.sandbox.client.json("POST", self._path() + "/signal", {"signal": sig})

    def events(self, offset: int = 0, follow: bool = False) -> Iterator[Dict[str, Any]]:
        """Its output events from a byte offset: dicts with type stdout/stderr
        (data, offset), gap (output older than the ring), exit."""
        q = {"offset": offset, "follow": "true" if follow else "false"}
        resp = self.sandbox.client.request("GET", self._path() + "/output", query=q)
        try:
            for line in resp:
                yield json.loads(line)
        finally:
            resp.close()

    def wait(self, on_stdout: OnOutput = None, on_stderr: OnOutput = None,
             offset: int = 0) -> ExecResult:
        """Follow the output from offset to the end; an ExecResult."""
        return _collect(self.events(offset, follow=True), on_stdout, on_stderr)


class Sandbox:
    """A sandbox of the service; a context manager that destroys it on exit."""

    def __init__(self, client: Client, info: Dict[str, Any]) -> None:
        self.client = client
        self.info = info
        self.id: str = info["id"]
        self.files = Files(self)

    @classmethod
    def create(cls, client: Optional[Client] = None, timeout: Optional[float] = None,
               **policy: Any) -> "Sandbox":
        """Create a sandbox. policy keys are the long options of `agentjail
        run` (memory="512M", pids=64, cpus=0.5, env={...}, secret={...},
        workspace="/abs/dir", ro=[...], net="none", seccomp_profile={...}: the
        profile itself, a dict); timeout is the
        sandbox's time to live in seconds (0: none)."""
        client = client or _default_client()
        return cls(client, client.json("POST", "/v1/sandboxes", create_body(timeout, policy)))

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.kill()
        return False

    def exec(self, cmd: Command, on_stdout: OnOutput = None, on_stderr: OnOutput = None,
             env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
             timeout: Optional[float] = None, stdin: Union[str, bytes, None] = None,
             background: bool = False) -> Any:
        """Run cmd (a list, or a string for /bin/sh -c) and wait for it: an
        ExecResult. on_stdout/on_stderr get each piece of output (str) as
        it comes. background=True returns a Process at once instead."""
        body = exec_body(cmd, env, cwd, timeout, stdin, background)
        if background:
            r = self.client.json("POST", f"/v1/sandboxes/{self.id}/exec", body)
            return Process(self, r["process"])
        resp = self.client.request("POST", f"/v1/sandboxes/{self.id}/exec", body)
        try:
            return _collect((json.loads(line) for line in resp), on_stdout, on_stderr)
        finally:
            resp.close()

    def run_code(self, code: str, context: Any = None, on_stdout: OnOutput = None,
                 on_stderr: OnOutput = None, on_result: OnResult = None,
                 on_error: OnError = None, timeout: Optional[float] = None,
                 language: str = "python") -> Execution:
        """Run Python code in a code context (a Jupyter kernel kept in the
        sandbox: variables live from one call to the next); context is an
        id or a dict of create_code_context() (None: "default"). on_stdout,
        on_stderr get each piece of output, on_result each Result (a
        chart, a DataFrame, the cell's value) as it comes. timeout
        (seconds, default 300) interrupts the kernel. An Execution."""
        resp = self.client.request("POST", f"/v1/sandboxes/{self.id}/code",
                                   code_body(code, context, timeout, language))
        col = CodeCollector(on_stdout, on_stderr, on_result, on_error)
        try:
            for line in resp:
                col.feed(json.loads(line))
        finally:
            resp.close()
        return col.result()

    def create_code_context(self, id: Optional[str] = None, cwd: Optional[str] = None,
                            language: str = "python") -> Dict[str, Any]:
        """A new code context (its kernel started): {"id", "language", ...}."""
        return self.client.json("POST", f"/v1/sandboxes/{self.id}/code/contexts",
                                   context_body(id, cwd, language))

    def list_code_contexts(self) -> List[Dict[str, Any]]:
        """The sandbox's code contexts, as dicts."""
        return self.client.json("GET", f"/v1/sandboxes/{self.id}/code/contexts")["contexts"]

    def restart_code_context(self, context: Any) -> Dict[str, Any]:
        """Start the context's kernel again (its variables are gone)."""
        return self.client.json(
            "POST", f"/v1/sandboxes/{self.id}/code/contexts/{context_id(context)}/restart")

    def interrupt_code_context(self, context: Any) -> Dict[str, Any]:
        """Interrupt what the context runs (KeyboardInterrupt in the kernel)."""
        return self.client.json(
            "POST", f"/v1/sandboxes/{self.id}/code/contexts/{context_id(context)}/interrupt")

    def remove_code_context(self, context: Any) -> Dict[str, Any]:
        """End the context's kernel."""
        return self.client.json("DELETE",
                                f"/v1/sandboxes/{self.id}/code/contexts/{context_id(context)}")

    def processes(self) -> List[Dict[str, Any]]:
        """Background processes, newest first, as dicts."""
        return self.client.json("GET", f"/v1/sandboxes/{self.id}/processes")["processes"]

    def refresh(self) -> Dict[str, Any]:
        """The sandbox's description, fetched again (also kept in info)."""
        self.info = self.client.json("GET", f"/v1/sandboxes/{self.id}")
        return self.info

    def extend(self, timeout: float) -> Dict[str, Any]:
        """Live timeout more seconds from now (0: no time limit)."""
        self.info = self.client.json("PATCH", f"/v1/sandboxes/{self.id}", {"timeout": timeout})
        return self.info

    def pause(self) -> Dict[str, Any]:
        """Freeze every process of the sandbox (memory kept, TTL clock stopped);
        exec and files answer 409 until resume()."""
        self.info = self.client.json("POST", f"/v1/sandboxes/{self.id}/pause", {})
        return self.info

    def resume(self) -> Dict[str, Any]:
        """Let a paused sandbox's processes run again; its TTL goes on from where it stopped."""
        self.info = self.client.json("POST", f"/v1/sandboxes/{self.id}/resume", {})
        return self.info

    def snapshot(self, name: str) -> Dict[str, Any]:
        """Store the sandbox's filesystem as a new image named name (an image dict)."""
        return self.client.json("POST", f"/v1/sandboxes/{self.id}/snapshot", {"name": name})

    def fork(self, count: int = 1, timeout: Optional[float] = None) -> List["Sandbox"]:
        """count new sandboxes starting from a copy of this one's filesystem."""
        body: Dict[str, Any] = {"count": count}
        if timeout is not None:
            body["timeout"] = timeout
        r = self.client.json("POST", f"/v1/sandboxes/{self.id}/fork", body)
        return [Sandbox(self.client, info) for info in r["sandboxes"]]

    def kill(self) -> None:
        """Destroy the sandbox and everything in it (idempotent)."""
        try:
            self.client.json("DELETE", f"/v1/sandboxes/{self.id}")
        except AgentjailError as e:
            if e.status != 404:
                raise

    def attach(self, cmd: Command, stdin: bool = True, cwd: Optional[str] = None,
               env: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
               tty: bool = False) -> "Session":
        """An interactive Session running cmd (WebSocket exec); tty=True gives
        it a pseudo-terminal (output then comes on channel 1 only)."""
        return Session(self, cmd, stdin=stdin, cwd=cwd, env=env, timeout=timeout, tty=tty)


class Session:
    """An interactive command over the WebSocket exec (Kubernetes channels):
    send() feeds its stdin, recv() returns (channel, bytes) messages: 1
    stdout, 2 stderr, 3 the final status (JSON). Sandbox.attach() makes one."""

    def __init__(self, sb: Sandbox, cmd: Command, stdin: bool = True, cwd: Optional[str] = None,
                 env: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
                 tty: bool = False) -> None:
        self._sock = sb.client._connect()  # a connection of its own, never kept
        key = base64.b64encode(os.urandom(16)).decode()
        self._sock.sendall(ws_request(sb.id, cmd, stdin, cwd, env, timeout, tty,
                                      sb.client.token, key))
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = self._sock.recv(4096)
            if not chunk:
                raise AgentjailError(502, "websocket", "the service closed the connection")
            got += chunk
        status, rest = got.split(b"\r\n\r\n", 1)
        self._rb = _http.RecvBuf(rest)  # received, not read yet
        if b" 101 " not in status.split(b"\r\n")[0]:
            raise AgentjailError(400, "websocket", status.split(b"\r\n")[0].decode())
        self.status: Optional[Dict[str, Any]] = None

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        self._sock.sendall(ws_frame(opcode, payload))

    def send(self, data: Union[bytes, str]) -> None:
        """Bytes or str for the command's stdin; b"" closes it (EOF)."""
        self._send_frame(2, b"\0" + (data.encode() if isinstance(data, str) else data))

    def _read(self, n: int) -> bytes:
        """n bytes of the connection."""
        if not self._rb.fill(self._sock, n):
            raise EOFError
        return self._rb.take(n)

    def recv(self) -> Tuple[Optional[int], Any]:
        """The next (channel, bytes); (None, reason) once the service closed."""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(self._read(2), "big")
            elif n == 127:
                n = int.from_bytes(self._read(8), "big")
            op = b0 & 0x0F
            if op in (1, 2) and n:  # [channel][data]: the data read as it is, not sliced
                ch, data = self._read(1)[0], self._read(n - 1)
                if ch == 3:
                    self.status = json.loads(data)
                return ch, data
            payload = self._read(n)
            if op == 8:
                return None, payload[2:].decode(errors="replace")

    def run(self, on_stdout: Optional[Callable[[bytes], Any]] = None,
            on_stderr: Optional[Callable[[bytes], Any]] = None) -> Optional[Dict[str, Any]]:
        """Read to the end; returns the final status (a Kubernetes Status
        with our exit event under "agentjail")."""
        while True:
            ch, data = self.recv()
            if ch is None:
                return self.status
            if ch == 1 and on_stdout:
                on_stdout(data)
            elif ch == 2 and on_stderr:
                on_stderr(data)

    def resize(self, width: int, height: int) -> None:
        """The pty's size (tty=True)."""
        self._send_frame(2, b"\4" + json.dumps({"Width": width, "Height": height}).encode())

    def close(self) -> None:
        """Close the connection (the command gets EOF and a hang-up)."""
        self._sock.close()


from .aio import (AsyncClient, AsyncFiles, AsyncProcess, AsyncSandbox,  # noqa: E402
                  AsyncSession)
