"""Python client for `agentjail serve` (standard library only).

    from agentjail import Sandbox

    with Sandbox.create(memory="512M", secret={"API_KEY": key}) as sb:
        r = sb.exec("pytest -q", on_stdout=print_chunk)
        print(r.exit_code, r.stdout)
        sb.files.write("/workspace/notes.txt", b"hello")
        print(sb.files.list("/workspace"))

The service is found at $AGENTJAIL_SOCKET (a unix socket, default
/run/agentjail/agentjail.sock), or at a URL ($AGENTJAIL_URL, with the bearer
token in $AGENTJAIL_TOKEN). See docs/api.md for the API itself.
"""

import base64
import json
import os
import threading
import urllib.parse

from . import _http

__all__ = ["Client", "Sandbox", "ExecResult", "Process", "Session", "AgentjailError"]

DEFAULT_SOCKET = "/run/agentjail/agentjail.sock"


class AgentjailError(Exception):
    """The service answered with an error: status (HTTP), code, message;
    for a 403 (the operator policy or the tenant's caps refused it),
    policy_key: the key of the operator's file to change (else None)."""

    def __init__(self, status, code, message, policy_key=None):
        super().__init__(f"{message} (HTTP {status}, {code})")
        self.status = status
        self.code = code
        self.message = message
        self.policy_key = policy_key


class Client:
    """A connection to the service: a unix socket, or a URL with a token."""

    def __init__(self, socket_path=None, url=None, token=None, timeout=None):
        self.url = url or os.environ.get("AGENTJAIL_URL")
        self.socket_path = socket_path or os.environ.get("AGENTJAIL_SOCKET") or DEFAULT_SOCKET
        self.token = token or os.environ.get("AGENTJAIL_TOKEN")
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

    def close(self):
        """Close the idle connections (requests open new ones)."""
        self._pool.close()

    def request(self, method, path, body=None, query=None, headers=None):
        """Send a request; returns the open response (status < 400) or raises."""
        if query:
            path += "?" + urllib.parse.urlencode(query)
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
            try:
                err = json.loads(raw)["error"]
                raise AgentjailError(resp.status, err.get("code"), err.get("message"),
                                     err.get("policy_key"))
            except (ValueError, KeyError, TypeError):
                raise AgentjailError(resp.status, "http_error", raw.decode(errors="replace"))
        return resp

    def json(self, method, path, body=None, query=None):
        resp = self.request(method, path, body, query)
        try:
            return json.loads(resp.read() or b"null")
        finally:
            resp.close()

    def sandboxes(self):
        """The live sandboxes, as dicts."""
        return self.json("GET", "/v1/sandboxes")["sandboxes"]

    def healthy(self):
        return self.json("GET", "/healthz").get("status") == "ok"


_defaults = {}
_defaults_lock = threading.Lock()


def _default_client():
    """The Client of Sandbox.create() without one: one per service address,
    shared, so that its kept connections serve every such sandbox (a Client
    each would keep a connection each to the service)."""
    key = tuple(os.environ.get(k) for k in ("AGENTJAIL_URL", "AGENTJAIL_SOCKET", "AGENTJAIL_TOKEN"))
    with _defaults_lock:
        if key not in _defaults:
            _defaults[key] = Client()
        return _defaults[key]


class ExecResult:
    """How a command ended, with its (redacted) output."""

    def __init__(self, event, stdout, stderr):
        self.exit_code = event.get("exit_code")
        self.signal = event.get("signal")
        self.timed_out = bool(event.get("timed_out"))
        self.oom_killed = bool(event.get("oom_killed"))
        self.duration_ms = event.get("duration_ms")
        self.error = event.get("error")
        self.stdout = stdout
        self.stderr = stderr

    @property
    def ok(self):
        return self.exit_code == 0

    def __repr__(self):
        return (f"ExecResult(exit_code={self.exit_code}, timed_out={self.timed_out}, "
                f"oom_killed={self.oom_killed}, duration_ms={self.duration_ms})")


class Files:
    """Files of one sandbox; paths are resolved inside the sandbox only."""

    CHUNK = 1 << 16

    def __init__(self, sb):
        self._sb = sb

    def _path(self):
        return f"/v1/sandboxes/{self._sb.id}/files"

    @staticmethod
    def _q(path, **more):
        """The path as a query: a str as "path", bytes (any name the
        sandbox can make, UTF-8 or not) as "path_b64"."""
        if isinstance(path, (bytes, bytearray)):
            q = {"path_b64": base64.urlsafe_b64encode(bytes(path)).decode()}
        else:
            q = {"path": path}
        q.update({k: v for k, v in more.items() if v is not None})
        return q

    def write(self, path, data, mode=None):
        """Write bytes, str, or a binary file object (streamed) to path
        (str, or bytes for a name that is not UTF-8)."""
        if isinstance(data, str):
            data = data.encode()
        headers = {"Content-Type": "application/octet-stream"}
        if not isinstance(data, (bytes, bytearray)):
            size = os.fstat(data.fileno()).st_size - data.tell()
            headers["Content-Length"] = str(size)
        q = self._q(path, mode=format(mode, "o") if mode is not None else None)
        resp = self._sb.client.request("PUT", self._path(), data, q, headers)
        try:
            return json.loads(resp.read())
        finally:
            resp.close()

    def read(self, path, into=None):
        """The file's bytes, or written chunk by chunk into a file object."""
        resp = self._sb.client.request("GET", self._path(), query=self._q(path))
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

    def list(self, path, limit=None):
        """Entries of a directory: dicts with name, type, size, mode, mtime,
        and name_bytes (the name's bytes: a name that is not UTF-8 has
        name None). Every page of a large directory is fetched (limit:
        entries per page)."""
        out, cursor = [], None
        while True:
            page = self._sb.client.json(
                "GET", self._path(), query=self._q(path, limit=limit, cursor=cursor))
            for e in page["entries"]:
                b64 = e.get("name_b64")
                e["name_bytes"] = base64.b64decode(b64) if b64 else e["name"].encode()
                out.append(e)
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def mkdir(self, path, parents=False):
        q = self._q(path, parents="true" if parents else "false")
        return self._sb.client.json("POST", f"/v1/sandboxes/{self._sb.id}/mkdir", query=q)

    def remove(self, path, recursive=False):
        q = self._q(path, recursive="true" if recursive else "false")
        return self._sb.client.json("DELETE", self._path(), query=q)


def _event_data(ev):
    data = ev.get("data")
    if data is None:
        data = base64.b64decode(ev["data_b64"]).decode(errors="replace")
    return data


def _collect(events, on_stdout, on_stderr):
    """Gather output events up to the exit event: an ExecResult."""
    out, err, end = [], [], None
    for ev in events:
        kind = ev.get("type")
        if kind in ("stdout", "stderr"):
            data = _event_data(ev)
            (out if kind == "stdout" else err).append(data)
            cb = on_stdout if kind == "stdout" else on_stderr
            if cb:
                cb(data)
        elif kind == "exit":
            end = ev
    if end is None:
        raise AgentjailError(502, "stream_ended", "the output ended without an exit event")
    return ExecResult(end, "".join(out), "".join(err))


class Process:
    """A background process (Sandbox.exec(..., background=True))."""

    def __init__(self, sb, pid):
        self.sandbox = sb
        self.id = pid

    def _path(self):
        return f"/v1/sandboxes/{self.sandbox.id}/processes/{self.id}"

    def info(self):
        """{"id", "cmd", "running", "output_bytes", "kept_from", "exit"?}"""
        return self.sandbox.client.json("GET", self._path())

    def signal(self, sig="TERM"):
        """Signal its process group: a number or a name (TERM, KILL, INT...)."""
        return self.sandbox.client.json("POST", self._path() + "/signal", {"signal": sig})

    def events(self, offset=0, follow=False):
        """Its output events from a byte offset: dicts with type stdout/stderr
        (data, offset), gap (output older than the ring), exit."""
        q = {"offset": offset, "follow": "true" if follow else "false"}
        resp = self.sandbox.client.request("GET", self._path() + "/output", query=q)
        try:
            for line in resp:
                yield json.loads(line)
        finally:
            resp.close()

    def wait(self, on_stdout=None, on_stderr=None, offset=0):
        """Follow the output from offset to the end; an ExecResult."""
        return _collect(self.events(offset, follow=True), on_stdout, on_stderr)


class Sandbox:
    """A sandbox of the service; a context manager that destroys it on exit."""

    def __init__(self, client, info):
        self.client = client
        self.info = info
        self.id = info["id"]
        self.files = Files(self)

    @classmethod
    def create(cls, client=None, timeout=None, **policy):
        """Create a sandbox. policy keys are the long options of `agentjail
        run` (memory="512M", pids=64, cpus=0.5, env={...}, secret={...},
        workspace="/abs/dir", ro=[...], net="none"); timeout is the
        sandbox's time to live in seconds (0: none)."""
        client = client or _default_client()
        body = {k.replace("_", "-"): v for k, v in policy.items()}
        if timeout is not None:
            body["timeout"] = timeout
        return cls(client, client.json("POST", "/v1/sandboxes", body))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        return False

    def exec(self, cmd, on_stdout=None, on_stderr=None, env=None, cwd=None, timeout=None,
             stdin=None, background=False):
        """Run cmd (a list, or a string for /bin/sh -c) and wait for it.
        on_stdout/on_stderr get each piece of output (str) as it comes.
        background=True returns a Process at once instead."""
        body = {"cmd": cmd}
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
        if background:
            r = self.client.json("POST", f"/v1/sandboxes/{self.id}/exec", body)
            return Process(self, r["process"])
        resp = self.client.request("POST", f"/v1/sandboxes/{self.id}/exec", body)
        try:
            return _collect((json.loads(line) for line in resp), on_stdout, on_stderr)
        finally:
            resp.close()

    def processes(self):
        """Background processes, newest first, as dicts."""
        return self.client.json("GET", f"/v1/sandboxes/{self.id}/processes")["processes"]

    def refresh(self):
        self.info = self.client.json("GET", f"/v1/sandboxes/{self.id}")
        return self.info

    def extend(self, timeout):
        """Live timeout more seconds from now (0: no time limit)."""
        self.info = self.client.json("PATCH", f"/v1/sandboxes/{self.id}", {"timeout": timeout})
        return self.info

    def pause(self):
        """Freeze every process of the sandbox (memory kept, TTL clock stopped);
        exec and files answer 409 until resume()."""
        self.info = self.client.json("POST", f"/v1/sandboxes/{self.id}/pause", {})
        return self.info

    def resume(self):
        """Let a paused sandbox's processes run again; its TTL goes on from where it stopped."""
        self.info = self.client.json("POST", f"/v1/sandboxes/{self.id}/resume", {})
        return self.info

    def snapshot(self, name):
        """Store the sandbox's filesystem as a new image named name (an image dict)."""
        return self.client.json("POST", f"/v1/sandboxes/{self.id}/snapshot", {"name": name})

    def fork(self, count=1, timeout=None):
        """count new sandboxes starting from a copy of this one's filesystem."""
        body = {"count": count}
        if timeout is not None:
            body["timeout"] = timeout
        r = self.client.json("POST", f"/v1/sandboxes/{self.id}/fork", body)
        return [Sandbox(self.client, info) for info in r["sandboxes"]]

    def kill(self):
        """Destroy the sandbox and everything in it (idempotent)."""
        try:
            self.client.json("DELETE", f"/v1/sandboxes/{self.id}")
        except AgentjailError as e:
            if e.status != 404:
                raise


class Session:
    """An interactive command over the WebSocket exec (Kubernetes channels):
    send() feeds its stdin, recv() returns (channel, bytes) messages: 1
    stdout, 2 stderr, 3 the final status (JSON). Sandbox.attach() makes one."""

    def __init__(self, sb, cmd, stdin=True, cwd=None, env=None, timeout=None, tty=False):
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
        path = f"/v1/sandboxes/{sb.id}/exec?" + urllib.parse.urlencode(q)
        self._sock = sb.client._connect()  # a connection of its own, never kept
        key = base64.b64encode(os.urandom(16)).decode()
        head = [f"GET {path} HTTP/1.1", "Host: agentjail", "Upgrade: websocket",
                "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13",
                "Sec-WebSocket-Protocol: v4.channel.k8s.io"]
        if sb.client.token:
            head.append("Authorization: Bearer " + sb.client.token)
        self._sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
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
        self.status = None

    def _send_frame(self, opcode, payload):
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
        self._sock.sendall(head + mask + body)

    def send(self, data):
        """Bytes or str for the command's stdin; b"" closes it (EOF)."""
        self._send_frame(2, b"\0" + (data.encode() if isinstance(data, str) else data))

    def _read(self, n):
        """n bytes of the connection."""
        if not self._rb.fill(self._sock, n):
            raise EOFError
        return self._rb.take(n)

    def recv(self):
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

    def run(self, on_stdout=None, on_stderr=None):
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

    def resize(self, width, height):
        """The pty's size (tty=True)."""
        self._send_frame(2, b"\4" + json.dumps({"Width": width, "Height": height}).encode())

    def close(self):
        self._sock.close()


def _attach(self, cmd, stdin=True, cwd=None, env=None, timeout=None, tty=False):
    """An interactive Session running cmd (WebSocket exec); tty=True gives
    it a pseudo-terminal (output then comes on channel 1 only)."""
    return Session(self, cmd, stdin=stdin, cwd=cwd, env=env, timeout=timeout, tty=tty)


Sandbox.attach = _attach
