#!/usr/bin/env python3
"""The two ends of tests/service/ports.bats.

portsrv.py serve PORT: a server on 127.0.0.1:PORT (run inside a sandbox).
An HTTP request is answered with what came (method, target, headers,
body) as JSON, and the connection closes only if the request said
"Connection: close" (else the server waits for the next request, as a
keep-alive server does). A WebSocket upgrade is answered 101, then every
byte that comes is sent back.

portsrv.py ws ADDR PATH N [TOKEN]: a client of the service (ADDR: a unix
socket path, or HOST:PORT): the upgrade, then N bytes sent and read back;
prints the 101's status line and "echoed N" when all came back equal."""

import base64
import hashlib
import json
import os
import socket
import sys
import threading

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def read_head(c):
    data = b""
    while b"\r\n\r\n" not in data:
        b = c.recv(65536)
        if not b:
            return None, None, b""
        data += b
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return lines[0], hdrs, rest


def serve_one(c):
    with c:
        while True:
            first, hdrs, rest = read_head(c)
            if first is None:
                return
            if hdrs.get("upgrade", "").lower() == "websocket":
                key = hdrs["sec-websocket-key"] + GUID
                acc = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()
                c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Accept: {acc}\r\n\r\n").encode())
                if rest:
                    c.sendall(rest)
                while True:
                    b = c.recv(65536)
                    if not b:
                        return
                    c.sendall(b)
            n = int(hdrs.get("content-length", "0"))
            while len(rest) < n:
                b = c.recv(65536)
                if not b:
                    break
                rest += b
            method, target, _ = first.split(" ")
            body = json.dumps({"method": method, "target": target, "headers": hdrs,
                               "body": rest.decode(errors="replace")}).encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            if hdrs.get("connection", "").lower() == "close":
                return


def serve(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    print("listening", flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve_one, args=(c,), daemon=True).start()


def ws(addr, path, n, token):
    if addr.startswith("/"):
        c = socket.socket(socket.AF_UNIX)
        c.connect(addr)
    else:
        host, _, port = addr.rpartition(":")
        c = socket.create_connection((host, int(port)))
    c.settimeout(30)
    key = base64.b64encode(os.urandom(16)).decode()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    c.sendall((f"GET {path} HTTP/1.1\r\nHost: agentjail\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n{auth}"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    first, hdrs, rest = read_head(c)
    print(first)
    want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    if " 101 " not in (first or "") or hdrs.get("sec-websocket-accept") != want:
        print(rest.decode(errors="replace"))
        return 1
    data = os.urandom(n)
    got = bytearray(rest)
    threading.Thread(target=c.sendall, args=(data,), daemon=True).start()
    while len(got) < n:
        b = c.recv(65536)
        if not b:
            break
        got += b
    c.shutdown(socket.SHUT_WR)
    tail = c.recv(1)  # the server's close follows ours
    print(f"echoed {len(got)}" if bytes(got) == data else f"differs after {len(got)} bytes")
    print("closed" if tail == b"" else "not closed")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        sys.exit(ws(sys.argv[2], sys.argv[3], int(sys.argv[4]),
                    sys.argv[5] if len(sys.argv) > 5 else None))
