"""The asyncio client: the blocking client's surface, every call awaited.

    import asyncio
    from agentjail.aio import Sandbox

    async def main():
        async with await Sandbox.create(memory="512M") as sb:
            r = await sb.exec("echo hi", on_stdout=print)
            await sb.files.write("/tmp/a", b"x")
            async for ev in (await sb.exec("sleep 1; echo x", background=True)).events(follow=True):
                print(ev)

    asyncio.run(main())

It speaks HTTP/1.1 on asyncio streams (asyncio.open_unix_connection or
asyncio.open_connection, TLS for an https URL): no thread, no blocking
socket. Idle connections are kept for the next request, as in the blocking
client. Callbacks (on_stdout, on_stderr) may be plain functions or
coroutine functions. The classes are also exported by the package as
AsyncClient, AsyncSandbox, AsyncProcess, AsyncSession, AsyncFiles.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import os
import ssl
import urllib.parse
from typing import IO, Any, AsyncIterator, Callable, Dict, List, Optional, Tuple, Union

from ._code import CodeCollector, Execution, OnError, OnResult, code_body, context_body, context_id
from ._common import (AgentjailError, Collector, Command, ExecResult, OnOutput, PathLike,
                      address, create_body, error_from, exec_body, list_entries, path_query,
                      with_query, ws_frame, ws_request)

__all__ = ["Client", "Sandbox", "Process", "Session", "Files", "ExecResult", "AgentjailError"]

_IDEMPOTENT = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}
_KEEP_MAX = 8  # idle connections kept per Client
_LIMIT = 1 << 18  # the longest line (a header, an output event) read
_CHUNK = 1 << 18

Body = Union[bytes, bytearray, Dict[str, Any], List[Any], IO[bytes], None]


class _Conn:
    """A connection: an asyncio StreamReader and StreamWriter."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 reusable: bool) -> None:
        self.reader, self.writer, self.reusable = reader, writer, reusable

    def usable(self) -> bool:
        """Still open and nothing unread (the service did not close it)."""
        return not (self.reader.at_eof() or self.writer.is_closing()
                    or self.reader._buffer)  # type: ignore[attr-defined]

    def close(self) -> None:
        self.writer.close()


class Response:
    """status, reason, headers (lower-case names), and the body: await
    read(), await read(n), `async for line in response`. close() gives the
    connection back when the body was read to its end."""

    def __init__(self, client: "Client", conn: _Conn, method: str) -> None:
        self._client, self._c, self._method = client, conn, method
        self.status = 0
        self.reason = ""
        self.headers: Dict[str, str] = {}
        self._chunked = False
        self._left: Optional[int] = None
        self._chunk = 0
        self._done = False
        self._keep = False

    async def _start(self) -> None:
        r = self._c.reader
        line = await r.readline()
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise ConnectionError(f"not an HTTP response: {line[:80]!r}")
        self.status = int(parts[1])
        self.reason = parts[2].strip().decode("latin-1") if len(parts) > 2 else ""
        while True:
            h = await r.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.partition(b":")
            self.headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
        self._chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        if not self._chunked and "content-length" in self.headers:
            self._left = int(self.headers["content-length"])
        if self._method == "HEAD" or self.status in (204, 304) or self.status < 200:
            self._left, self._chunked = 0, False
        self._keep = (self._c.reusable and self.headers.get("connection", "").lower() != "close"
                      and (self._chunked or self._left is not None))
        self._done = self._left == 0

    def getheader(self, name: str, default: Optional[str] = None) -> Optional[str]:
        return self.headers.get(name.lower(), default)

    async def read1(self, n: int = _CHUNK) -> bytes:
        """Some of the body, up to n bytes; b"" at its end."""
        if self._done:
            return b""
        r = self._c.reader
        if self._chunked:
            if self._chunk == 0:
                line = await r.readline()
                self._chunk = int(line.split(b";", 1)[0].strip() or b"x", 16)
                if self._chunk == 0:
                    while await r.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    self._done = True
                    return b""
            b = await r.read(min(n, self._chunk))
            if not b:
                raise ConnectionError("the service closed the connection mid-response")
            self._chunk -= len(b)
            if self._chunk == 0:
                await r.readexactly(2)  # the chunk's CRLF
            return b
        b = await r.read(n if self._left is None else min(n, self._left))
        if self._left is not None:
            if not b:
                raise ConnectionError("the service closed the connection mid-response")
            self._left -= len(b)
            self._done = self._left == 0
        elif not b:
            self._done = True
        return b

    async def read(self, n: Optional[int] = None) -> bytes:
        """The rest of the body (n given: up to n bytes of it)."""
        if n is not None:
            return await self.read1(n)
        parts = []
        while True:
            b = await self.read1()
            if not b:
                return b"".join(parts)
            parts.append(b)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pend = b""
        while True:
            b = await self.read1()
            if not b:
                break
            pend += b
            *lines, pend = pend.split(b"\n")
            for line in lines:
                yield line + b"\n"
        if pend:
            yield pend

    def close(self) -> None:
        c, self._c = self._c, None  # type: ignore[assignment]
        if c is None:
            return
        if self._done and self._keep:
            self._client._put(c)
        else:
            c.close()


class Client:
    """A connection to the service, for asyncio: a unix socket, or a URL
    with a token (as agentjail.Client: socket_path, url, token default to
    $AGENTJAIL_SOCKET, $AGENTJAIL_URL, $AGENTJAIL_TOKEN; timeout bounds
    connecting and waiting for a response's headers). Use it in one event
    loop; `async with Client() as c` closes it."""

    def __init__(self, socket_path: Optional[str] = None, url: Optional[str] = None,
                 token: Optional[str] = None, timeout: Optional[float] = None) -> None:
        self.url, self.socket_path, self.token = address(socket_path, url, token)
        self.timeout = timeout
        self._tls: Optional[ssl.SSLContext] = None
        if self.url:
            u = urllib.parse.urlsplit(self.url)
            if u.scheme == "https":
                self._tls = ssl.create_default_context()
            self._host, self._port = u.hostname, u.port or (443 if self._tls else 80)
            self._hosthdr, self._keep = u.netloc, self._tls is None
        else:
            self._hosthdr, self._keep = "agentjail", True
        self._idle: List[_Conn] = []

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _open(self) -> Tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A new connection to the service."""
        if self.url:
            coro = asyncio.open_connection(self._host, self._port, ssl=self._tls, limit=_LIMIT,
                                           server_hostname=self._host if self._tls else None)
        else:
            coro = asyncio.open_unix_connection(self.socket_path, limit=_LIMIT)
        return await asyncio.wait_for(coro, self.timeout)

    def _put(self, conn: _Conn) -> None:
        if len(self._idle) < _KEEP_MAX and conn.usable():
            self._idle.append(conn)
        else:
            conn.close()

    def _get(self) -> Optional[_Conn]:
        while self._idle:
            c = self._idle.pop()
            if c.usable():
                return c
            c.close()
        return None

    def close(self) -> None:
        """Close the idle connections (requests open new ones)."""
        idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    async def aclose(self) -> None:
        """close(), and wait until the connections are closed."""
        idle, self._idle = self._idle, []
        for c in idle:
            c.close()
        for c in idle:
            try:
                await c.writer.wait_closed()
            except OSError:
                pass

    async def _send(self, method: str, path: str, body: Any, headers: Dict[str, str]) -> Response:
        head = [f"{method} {path} HTTP/1.1", f"Host: {self._hosthdr}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        stream = body is not None and not isinstance(body, (bytes, bytearray))
        if body is not None and not stream:
            head.append(f"Content-Length: {len(body)}")
        elif method in ("POST", "PUT", "PATCH") and body is None:
            head.append("Content-Length: 0")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if body is not None and not stream:
            data += body
        for attempt in (0, 1):
            conn = self._get()
            reused = conn is not None
            if conn is None:
                conn = _Conn(*await self._open(), self._keep)
            sent = False
            try:
                conn.writer.write(data)
                await conn.writer.drain()
                sent = True
                if stream:  # a file object: Content-Length is in the headers
                    while True:
                        b = body.read(_CHUNK)
                        if not b:
                            break
                        conn.writer.write(b)
                        await conn.writer.drain()
                resp = Response(self, conn, method)
                await asyncio.wait_for(resp._start(), self.timeout)
                return resp
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
                conn.close()
                again = not sent or method in _IDEMPOTENT
                if attempt or not reused or stream or not again:
                    raise
        raise AssertionError("unreachable")

    async def request(self, method: str, path: str, body: Body = None,
                      query: Optional[Dict[str, Any]] = None,
                      headers: Optional[Dict[str, str]] = None) -> Response:
        """Send a request; returns the open Response (status < 400) or
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
        resp = await self._send(method, path, body, h)
        if resp.status >= 400:
            raw = await resp.read()
            resp.close()
            raise error_from(resp.status, raw)
        return resp

    async def json(self, method: str, path: str, body: Body = None,
                   query: Optional[Dict[str, Any]] = None) -> Any:
        """A request whose answer is JSON: the decoded answer."""
        resp = await self.request(method, path, body, query)
        try:
            return json.loads(await resp.read() or b"null")
        finally:
            resp.close()

    async def sandboxes(self) -> List[Dict[str, Any]]:
        """The live sandboxes, as dicts."""
        return (await self.json("GET", "/v1/sandboxes"))["sandboxes"]

    async def healthy(self) -> bool:
        """True when the service answers GET /healthz with ok."""
        return (await self.json("GET", "/healthz")).get("status") == "ok"


async def _call(cb: Callable[..., Any], *args: Any) -> None:
    r = cb(*args)
    if inspect.isawaitable(r):
        await r


async def _collect(events: AsyncIterator[Dict[str, Any]], on_stdout: OnOutput,
                   on_stderr: OnOutput) -> ExecResult:
    c = Collector(on_stdout, on_stderr)
    async for ev in events:
        r = c.feed(ev)
        if inspect.isawaitable(r):
            await r
    return c.result()


async def _lines(resp: Response) -> AsyncIterator[Dict[str, Any]]:
    try:
        async for line in resp:
            yield json.loads(line)
    finally:
        resp.close()


class Files:
    """Files of one sandbox (Sandbox.files); paths are resolved inside the
    sandbox only. A path is a str, or bytes for a name that is not UTF-8."""

    CHUNK = 1 << 16

    def __init__(self, sb: "Sandbox") -> None:
        self._sb = sb

    def _path(self) -> str:
        return f"/v1/sandboxes/{self._sb.id}/files"

    async def write(self, path: PathLike, data: Union[bytes, bytearray, str, IO[bytes]],
                    mode: Optional[int] = None) -> Dict[str, Any]:
        """Write bytes, str, or a binary file object (streamed) to path;
        mode is the file's permission bits (e.g. 0o600)."""
        if isinstance(data, str):
            data = data.encode()
        headers = {"Content-Type": "application/octet-stream"}
        if not isinstance(data, (bytes, bytearray)):
            headers["Content-Length"] = str(os.fstat(data.fileno()).st_size - data.tell())
        q = path_query(path, mode=format(mode, "o") if mode is not None else None)
        resp = await self._sb.client.request("PUT", self._path(), data, q, headers)
        try:
            return json.loads(await resp.read())
        finally:
            resp.close()

    async def read(self, path: PathLike, into: Optional[IO[bytes]] = None) -> Optional[bytes]:
        """The file's bytes, or (into given) written chunk by chunk into a
        file object and None returned."""
        resp = await self._sb.client.request("GET", self._path(), query=path_query(path))
        try:
            if into is None:
                return await resp.read()
            while True:
                chunk = await resp.read(self.CHUNK)
                if not chunk:
                    return None
                into.write(chunk)
        finally:
            resp.close()

    async def stream(self, path: PathLike) -> AsyncIterator[bytes]:
        """The file's bytes, chunk by chunk (`async for chunk in ...`)."""
        resp = await self._sb.client.request("GET", self._path(), query=path_query(path))
        try:
            while True:
                chunk = await resp.read(self.CHUNK)
                if not chunk:
                    return
                yield chunk
        finally:
            resp.close()

    async def list(self, path: PathLike, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """Entries of a directory: dicts with name, type, size, mode, mtime,
        and name_bytes; every page is fetched (limit: entries per page)."""
        out: List[Dict[str, Any]] = []
        cursor = None
        while True:
            page = await self._sb.client.json(
                "GET", self._path(), query=path_query(path, limit=limit, cursor=cursor))
            out.extend(list_entries(page))
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    async def mkdir(self, path: PathLike, parents: bool = False) -> Dict[str, Any]:
        """Make a directory (parents=True: and its missing parents)."""
        q = path_query(path, parents="true" if parents else "false")
        return await self._sb.client.json("POST", f"/v1/sandboxes/{self._sb.id}/mkdir", query=q)

    async def remove(self, path: PathLike, recursive: bool = False) -> Dict[str, Any]:
        """Remove a file or an empty directory (recursive=True: any directory)."""
        q = path_query(path, recursive="true" if recursive else "false")
        return await self._sb.client.json("DELETE", self._path(), query=q)


class Process:
    """A background process (await Sandbox.exec(..., background=True))."""

    def __init__(self, sb: "Sandbox", pid: str) -> None:
        self.sandbox = sb
        self.id = pid

    def _path(self) -> str:
        return f"/v1/sandboxes/{self.sandbox.id}/processes/{self.id}"

    async def info(self) -> Dict[str, Any]:
        """{"id", "cmd", "running", "output_bytes", "kept_from", "exit"?}"""
        return await self.sandbox.client.json("GET", self._path())

    async def signal(self, sig: Union[str, int] = "TERM") -> Dict[str, Any]:
        """Signal its process group: a number or a name (TERM, KILL, INT...)."""
        return await self.sandbox.client.json("POST", self._path() + "/signal", {"signal": sig})

    async def events(self, offset: int = 0, follow: bool = False) -> AsyncIterator[Dict[str, Any]]:
        """Its output events from a byte offset (`async for`): dicts with
        type stdout/stderr (data, offset), gap, exit."""
        q = {"offset": offset, "follow": "true" if follow else "false"}
        resp = await self.sandbox.client.request("GET", self._path() + "/output", query=q)
        async for ev in _lines(resp):
            yield ev

    async def wait(self, on_stdout: OnOutput = None, on_stderr: OnOutput = None,
                   offset: int = 0) -> ExecResult:
        """Follow the output from offset to the end; an ExecResult."""
        return await _collect(self.events(offset, follow=True), on_stdout, on_stderr)


class Sandbox:
    """A sandbox of the service; `async with` destroys it on exit.

    A sandbox made without a client gets a Client of its own, closed when
    the sandbox is killed."""

    def __init__(self, client: Client, info: Dict[str, Any], owns_client: bool = False) -> None:
        self.client = client
        self.info = info
        self.id: str = info["id"]
        self.files = Files(self)
        self._owns = owns_client

    @classmethod
    async def create(cls, client: Optional[Client] = None, timeout: Optional[float] = None,
                     **policy: Any) -> "Sandbox":
        """Create a sandbox. policy keys are the long options of `agentjail
        run` (memory="512M", pids=64, env={...}, secret={...}, ...); timeout
        is the sandbox's time to live in seconds (0: none)."""
        own = client is None
        c = client or Client()
        try:
            info = await c.json("POST", "/v1/sandboxes", create_body(timeout, policy))
        except BaseException:
            if own:
                await c.aclose()
            raise
        return cls(c, info, owns_client=own)

    async def __aenter__(self) -> "Sandbox":
        return self

    async def __aexit__(self, *exc: Any) -> bool:
        await self.kill()
        return False

    async def exec(self, cmd: Command, on_stdout: OnOutput = None, on_stderr: OnOutput = None,
                   env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
                   timeout: Optional[float] = None, stdin: Union[str, bytes, None] = None,
                   background: bool = False) -> Any:
        """Run cmd (a list, or a string for /bin/sh -c) and wait for it: an
        ExecResult. on_stdout/on_stderr (functions or coroutine functions)
        get each piece of output (str) as it comes. background=True
        returns a Process at once instead."""
        body = exec_body(cmd, env, cwd, timeout, stdin, background)
        if background:
            r = await self.client.json("POST", f"/v1/sandboxes/{self.id}/exec", body)
            return Process(self, r["process"])
        resp = await self.client.request("POST", f"/v1/sandboxes/{self.id}/exec", body)
        return await _collect(_lines(resp), on_stdout, on_stderr)

    async def run_code(self, code: str, context: Any = None, on_stdout: OnOutput = None,
                       on_stderr: OnOutput = None, on_result: OnResult = None,
                       on_error: OnError = None, timeout: Optional[float] = None,
                       language: str = "python") -> Execution:
        """Run Python code in a code context (a Jupyter kernel kept in the
        sandbox); callbacks may be coroutine functions. An Execution (see
        the blocking Sandbox.run_code)."""
        resp = await self.client.request("POST", f"/v1/sandboxes/{self.id}/code",
                                         code_body(code, context, timeout, language))
        col = CodeCollector(on_stdout, on_stderr, on_result, on_error)
        async for ev in _lines(resp):
            r = col.feed(ev)
            if inspect.isawaitable(r):
                await r
        return col.result()

    async def create_code_context(self, id: Optional[str] = None, cwd: Optional[str] = None,
                                  language: str = "python") -> Dict[str, Any]:
        """A new code context (its kernel started)."""
        return await self.client.json("POST", f"/v1/sandboxes/{self.id}/code/contexts",
                                   context_body(id, cwd, language))

    async def list_code_contexts(self) -> List[Dict[str, Any]]:
        """The sandbox's code contexts, as dicts."""
        r = await self.client.json("GET", f"/v1/sandboxes/{self.id}/code/contexts")
        return r["contexts"]

    async def restart_code_context(self, context: Any) -> Dict[str, Any]:
        """Start the context's kernel again (its variables are gone)."""
        return await self.client.json(
            "POST", f"/v1/sandboxes/{self.id}/code/contexts/{context_id(context)}/restart")

    async def interrupt_code_context(self, context: Any) -> Dict[str, Any]:
        """Interrupt what the context runs."""
        return await self.client.json(
            "POST", f"/v1/sandboxes/{self.id}/code/contexts/{context_id(context)}/interrupt")

    async def remove_code_context(self, context: Any) -> Dict[str, Any]:
        """End the context's kernel."""
        return await self.client.json(
            "DELETE", f"/v1/sandboxes/{self.id}/code/contexts/{context_id(context)}")

    async def processes(self) -> List[Dict[str, Any]]:
        """Background processes, newest first, as dicts."""
        return (await self.client.json("GET", f"/v1/sandboxes/{self.id}/processes"))["processes"]

    async def refresh(self) -> Dict[str, Any]:
        """The sandbox's description, fetched again (also kept in info)."""
        self.info = await self.client.json("GET", f"/v1/sandboxes/{self.id}")
        return self.info

    async def extend(self, timeout: float) -> Dict[str, Any]:
        """Live timeout more seconds from now (0: no time limit)."""
        self.info = await self.client.json("PATCH", f"/v1/sandboxes/{self.id}",
                                           {"timeout": timeout})
        return self.info

    async def pause(self) -> Dict[str, Any]:
        """Freeze every process of the sandbox; exec and files answer 409 until resume()."""
        self.info = await self.client.json("POST", f"/v1/sandboxes/{self.id}/pause", {})
        return self.info

    async def resume(self) -> Dict[str, Any]:
        """Let a paused sandbox's processes run again."""
        self.info = await self.client.json("POST", f"/v1/sandboxes/{self.id}/resume", {})
        return self.info

    async def snapshot(self, name: str) -> Dict[str, Any]:
        """Store the sandbox's filesystem as a new image named name (an image dict)."""
        return await self.client.json("POST", f"/v1/sandboxes/{self.id}/snapshot", {"name": name})

    async def fork(self, count: int = 1, timeout: Optional[float] = None) -> List["Sandbox"]:
        """count new sandboxes starting from a copy of this one's filesystem."""
        body: Dict[str, Any] = {"count": count}
        if timeout is not None:
            body["timeout"] = timeout
        r = await self.client.json("POST", f"/v1/sandboxes/{self.id}/fork", body)
        return [Sandbox(self.client, info) for info in r["sandboxes"]]

    async def kill(self) -> None:
        """Destroy the sandbox and everything in it (idempotent)."""
        try:
            await self.client.json("DELETE", f"/v1/sandboxes/{self.id}")
        except AgentjailError as e:
            if e.status != 404:
                raise
        finally:
            if self._owns:
                await self.client.aclose()

    async def attach(self, cmd: Command, stdin: bool = True, cwd: Optional[str] = None,
                     env: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
                     tty: bool = False) -> "Session":
        """An interactive Session running cmd (WebSocket exec); tty=True gives
        it a pseudo-terminal (output then comes on channel 1 only)."""
        s = Session()
        await s._open(self, cmd, stdin, cwd, env, timeout, tty)
        return s


class Session:
    """An interactive command over the WebSocket exec (Kubernetes channels):
    await send() feeds its stdin, await recv() returns (channel, bytes): 1
    stdout, 2 stderr, 3 the final status (JSON). await Sandbox.attach()
    makes one."""

    def __init__(self) -> None:
        self.status: Optional[Dict[str, Any]] = None

    async def _open(self, sb: Sandbox, cmd: Command, stdin: bool, cwd: Optional[str],
                    env: Optional[Dict[str, str]], timeout: Optional[float], tty: bool) -> None:
        self._r, self._w = await sb.client._open()  # a connection of its own, never kept
        key = base64.b64encode(os.urandom(16)).decode()
        self._w.write(ws_request(sb.id, cmd, stdin, cwd, env, timeout, tty, sb.client.token, key))
        await self._w.drain()
        try:
            head = await self._r.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            self._w.close()
            raise AgentjailError(502, "websocket", "the service closed the connection")
        first = head.split(b"\r\n")[0]
        if b" 101 " not in first:
            self._w.close()
            raise AgentjailError(400, "websocket", first.decode(errors="replace"))

    async def _send_frame(self, opcode: int, payload: bytes) -> None:
        self._w.write(ws_frame(opcode, payload))
        await self._w.drain()

    async def send(self, data: Union[bytes, str]) -> None:
        """Bytes or str for the command's stdin; b"" closes it (EOF)."""
        await self._send_frame(2, b"\0" + (data.encode() if isinstance(data, str) else data))

    async def _read(self, n: int) -> bytes:
        try:
            return await self._r.readexactly(n)
        except asyncio.IncompleteReadError:
            raise EOFError from None

    async def recv(self) -> Tuple[Optional[int], Any]:
        """The next (channel, bytes); (None, reason) once the service closed."""
        while True:
            b0, b1 = await self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(await self._read(2), "big")
            elif n == 127:
                n = int.from_bytes(await self._read(8), "big")
            op = b0 & 0x0F
            payload = await self._read(n)
            if op in (1, 2) and n:
                ch, data = payload[0], payload[1:]
                if ch == 3:
                    self.status = json.loads(data)
                return ch, data
            if op == 8:
                return None, payload[2:].decode(errors="replace")

    async def run(self, on_stdout: Optional[Callable[[bytes], Any]] = None,
                  on_stderr: Optional[Callable[[bytes], Any]] = None) -> Optional[Dict[str, Any]]:
        """Read to the end; returns the final status (a Kubernetes Status
        with our exit event under "agentjail")."""
        while True:
            ch, data = await self.recv()
            if ch is None:
                return self.status
            if ch == 1 and on_stdout:
                await _call(on_stdout, data)
            elif ch == 2 and on_stderr:
                await _call(on_stderr, data)

    async def resize(self, width: int, height: int) -> None:
        """The pty's size (tty=True)."""
        await self._send_frame(2, b"\4" + json.dumps({"Width": width, "Height": height}).encode())

    async def close(self) -> None:
        """Close the connection (the command gets EOF and a hang-up)."""
        self._w.close()
        try:
            await self._w.wait_closed()
        except OSError:
            pass


AsyncClient, AsyncSandbox, AsyncProcess, AsyncSession, AsyncFiles = (
    Client, Sandbox, Process, Session, Files)
