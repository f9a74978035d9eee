"""A small HTTP/1.1 client for the service (standard library only).

http.client cost about 0.4 ms of Python per request (a connection per
request, headers parsed by the email package), several times the service's
own round trip on a unix socket (docs/performance.md). This one keeps idle
connections for the next request (plain HTTP and unix sockets; TLS
connections are not kept), and reads bodies by Content-Length, chunked, or
to the end of the connection.
"""

import socket
import ssl
import threading
import time

_IDEMPOTENT = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}
_KEEP_MAX = 8  # idle connections kept per Client
_LINE_MAX = 65536
# A connection idle for less than this is taken without checking that the
# service still has it (three system calls): the service closes idle ones
# after 30 s, and a service that went away meanwhile fails the send (on a
# unix socket; the request then goes on a new connection).
_FRESH_S = 5.0


_RECV_MIN = 1 << 14  # a receive buffer's first size
_RECV_MAX = 1 << 18  # ... and the size it grows to while data keeps coming


class RecvBuf:
    """Bytes received and not read yet, buf[lo:hi], in one bytearray that
    is refilled in place with recv_into. A recv() per read allocated new
    memory each time, and on the test VM its page faults were the cost:
    ~100k of them for 256 MiB streamed over the WebSocket, 4-7x slower
    (docs/performance.md, round 12). It starts small (a short response
    touches a page or two) and doubles while receives fill it."""

    def __init__(self, data=b""):
        self.buf = bytearray(max(_RECV_MIN, len(data)))
        self.buf[:len(data)] = data
        self.lo, self.hi = 0, len(data)
        self.full = False

    def __len__(self):
        return self.hi - self.lo

    def fill(self, sock, need=1):
        """Receive until at least need bytes are unread; False if the
        connection ended first."""
        while self.hi - self.lo < need:
            have = self.hi - self.lo
            if self.lo and (self.lo == self.hi or self.lo + need > len(self.buf)
                            or self.hi == len(self.buf)):
                self.buf[:have] = bytes(memoryview(self.buf)[self.lo:self.hi])
                self.lo, self.hi = 0, have
            room = len(self.buf) - self.hi
            if room < need - have or (self.full and len(self.buf) < _RECV_MAX):
                self.buf += bytes(max(len(self.buf), need - have - room))
                room = len(self.buf) - self.hi
            with memoryview(self.buf) as v:
                k = sock.recv_into(v[self.hi:])
            if not k:
                return False
            self.hi += k
            self.full = k == room  # more may be waiting: grow the next time
        return True

    def take(self, n):
        """Up to n of the unread bytes."""
        n = min(n, self.hi - self.lo)
        with memoryview(self.buf) as v:
            out = bytes(v[self.lo:self.lo + n])
        self.lo += n
        return out

    def find(self, sub):
        """Offset of sub in the unread bytes, or -1."""
        i = self.buf.find(sub, self.lo, self.hi)
        return i - self.lo if i >= 0 else -1


class _Conn:
    """A socket with a read buffer."""

    def __init__(self, sock, reusable):
        self.sock = sock
        self.reusable = reusable
        self.rb = RecvBuf()
        self.idle_since = 0.0

    def readline(self):
        while True:
            i = self.rb.find(b"\n")
            if i >= 0:
                return self.rb.take(i + 1)
            if len(self.rb) > _LINE_MAX:
                raise ConnectionError("a line of the response is too long")
            if not self.rb.fill(self.sock, len(self.rb) + 1):
                return self.rb.take(len(self.rb))

    def read_some(self, n):
        """Up to n bytes (b"" at the end of the connection)."""
        if not self.rb and not self.rb.fill(self.sock):
            return b""
        return self.rb.take(n)

    def read_exact(self, n):
        parts = []
        while n:
            b = self.read_some(n)
            if not b:
                raise ConnectionError("the service closed the connection mid-response")
            parts.append(b)
            n -= len(b)
        return b"".join(parts)

    def idle_ok(self):
        """Still usable for the next request: nothing unread, not closed."""
        if self.rb:
            return False
        timeout = self.sock.gettimeout()
        try:
            self.sock.setblocking(False)
            self.sock.recv(1, socket.MSG_PEEK)
            return False  # b"": closed by the service; bytes: not ours to read
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            self.sock.settimeout(timeout)

    def close(self):
        self.sock.close()


class Response:
    """status, headers (lower-case names), and the body: read(), read(n),
    iteration by lines. close() gives the connection back when the body was
    read to its end."""

    def __init__(self, pool, conn, method):
        self._pool, self._c = pool, conn
        line = conn.readline()
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise ConnectionError(f"not an HTTP response: {line[:80]!r}")
        self.status = int(parts[1])
        self.reason = parts[2].strip().decode("latin-1") if len(parts) > 2 else ""
        self.headers = {}
        while True:
            h = conn.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.partition(b":")
            self.headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
        self._chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        self._left = None  # Content-Length bytes left (None: chunked or to the end)
        self._chunk = 0  # bytes left in the current chunk
        if not self._chunked and "content-length" in self.headers:
            self._left = int(self.headers["content-length"])
        if method == "HEAD" or self.status in (204, 304) or self.status < 200:
            self._left, self._chunked = 0, False
        self._keep = (conn.reusable and self.headers.get("connection", "").lower() != "close"
                      and (self._chunked or self._left is not None))
        self._done = self._left == 0

    def getheader(self, name, default=None):
        return self.headers.get(name.lower(), default)

    def _next_chunk(self):
        line = self._c.readline()
        size = int(line.split(b";", 1)[0].strip() or b"x", 16)
        if size == 0:
            while self._c.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            self._done = True
        self._chunk = size

    def read1(self, n=1 << 18):
        """Some of the body, up to n bytes; b"" at its end."""
        if self._done:
            return b""
        if self._chunked:
            if self._chunk == 0:
                self._next_chunk()
                if self._done:
                    return b""
            b = self._c.read_some(min(n, self._chunk))
            if not b:
                raise ConnectionError("the service closed the connection mid-response")
            self._chunk -= len(b)
            if self._chunk == 0:
                self._c.read_exact(2)  # the chunk's CRLF
            return b
        want = n if self._left is None else min(n, self._left)
        b = self._c.read_some(want)
        if self._left is not None:
            if not b:
                raise ConnectionError("the service closed the connection mid-response")
            self._left -= len(b)
            self._done = self._left == 0
        elif not b:
            self._done = True
        return b

    def read(self, n=None):
        if n is not None:
            return self.read1(n)
        parts = []
        while True:
            b = self.read1()
            if not b:
                return b"".join(parts)
            parts.append(b)

    def __iter__(self):
        pend = b""
        while True:
            b = self.read1()
            if not b:
                break
            pend += b
            *lines, pend = pend.split(b"\n")
            for line in lines:
                yield line + b"\n"
        if pend:
            yield pend

    def close(self):
        c, self._c = self._c, None
        if c is None:
            return
        if self._done and self._keep:
            self._pool.put(c)
        else:
            c.close()


class Pool:
    """Connections to one service: made by connect(), kept when idle."""

    def __init__(self, connect, host, keep):
        self._connect, self._host, self._keep = connect, host, keep
        self._idle = []
        self._lock = threading.Lock()

    def put(self, conn):
        conn.idle_since = time.monotonic()
        with self._lock:
            if len(self._idle) < _KEEP_MAX:
                self._idle.append(conn)
                return
        conn.close()

    def _get(self):
        with self._lock:
            while self._idle:
                c = self._idle.pop()
                fresh = time.monotonic() - c.idle_since < _FRESH_S and not c.rb
                if fresh or c.idle_ok():
                    return c, True
                c.close()
        return _Conn(self._connect(), self._keep), False

    def close(self):
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def request(self, method, path, body=None, headers=None):
        """Send a request; the Response (its headers read)."""
        head = [f"{method} {path} HTTP/1.1", f"Host: {self._host}"]
        for k, v in (headers or {}).items():
            head.append(f"{k}: {v}")
        stream = body is not None and not isinstance(body, (bytes, bytearray))
        if body is not None and not stream:
            head.append(f"Content-Length: {len(body)}")
        elif method in ("POST", "PUT", "PATCH") and body is None:
            head.append("Content-Length: 0")
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if body is not None and not stream:
            data += body
        for attempt in (0, 1):
            conn, reused = self._get()
            sent = False
            try:
                conn.sock.sendall(data)
                sent = True
                if stream:  # a file object: Content-Length is in the headers
                    while True:
                        b = body.read(1 << 18)
                        if not b:
                            break
                        conn.sock.sendall(b)
                return Response(self, conn, method)
            except OSError:  # ConnectionError and socket.timeout too
                conn.close()
                # a kept connection the service closed meanwhile: once more on a
                # new one, when sending the request again cannot do it twice
                again = not sent or method in _IDEMPOTENT
                if attempt or not reused or stream or not again:
                    raise


def unix_connector(path, timeout):
    def connect():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if timeout is not None:
                s.settimeout(timeout)
            s.connect(path)
        except OSError:
            s.close()
            raise
        return s
    return connect


def tcp_connector(host, port, timeout, tls):
    def connect():
        s = socket.create_connection((host, port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls:
            s = ssl.create_default_context().wrap_socket(s, server_hostname=host)
        return s
    return connect
