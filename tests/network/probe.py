#!/usr/bin/env python3
"""Connect to each TARGET (name=host:port, or name=[v6]:port) from inside a
sandbox and print one line per target: NAME RESULT MILLISECONDS, where RESULT
is the HTTP body's first word (connected and served), refused (RST or ICMP
error), unreachable, timeout or another errno name. A refusal must be fast:
the caller checks the milliseconds."""
import errno
import socket
import sys
import time

for spec in sys.argv[1:]:
    name, target = spec.split("=", 1)
    host, port = target.rsplit(":", 1)
    host = host.strip("[]")
    t0 = time.monotonic()
    try:
        # getaddrinfo parses 2852039166, 0251.0376.0251.0376, 0xa9fea9fe like inet_aton
        fam, kind, proto, _, addr = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0]
        s = socket.socket(fam, kind, proto)
        s.settimeout(5)
        s.connect(addr)
        s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        body = data.split(b"\r\n\r\n", 1)[-1].split()
        result = body[0].decode() if body else "empty"
    except socket.timeout:
        result = "timeout"
    except OSError as e:
        result = {errno.ECONNREFUSED: "refused", errno.EHOSTUNREACH: "unreachable",
                  errno.ENETUNREACH: "unreachable", errno.EACCES: "refused",
                  errno.EPERM: "refused"}.get(e.errno, errno.errorcode.get(e.errno, str(e)))
    print(name, result, int((time.monotonic() - t0) * 1000), flush=True)
