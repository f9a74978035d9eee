#!/usr/bin/env python3
"""A WebSocket client for the network tests (standard library only), run
inside a sandbox: wsclient.py ws[s]://HOST/PATH MESSAGE... [-H 'Name: value']
[--then PATH] [--pipeline PATH]

Goes through agentjail's proxy ($http_proxy / $HTTPS_PROXY): ws:// as an
absolute-form GET, wss:// through a CONNECT and TLS (the CA bundle of
$SSL_CERT_FILE). Sends each MESSAGE as a masked text frame, then a close;
prints "ws STATUS" and then "echo TEXT" for each message echoed back.
--then PATH: when the server declines the upgrade, a GET of PATH (with the
-H headers) on the same connection; prints "then STATUS" or "then closed".
--pipeline PATH: a GET of PATH sent with the upgrade request in one write
(pipelined); its answer is read first and printed as "pre STATUS"."""
import base64
import os
import socket
import ssl
import sys
import urllib.parse


def frame(op, data):
    mask = os.urandom(4)
    n = len(data)
    size = bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big")
    return bytes([0x80 | op]) + size + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def read_exact(s, n):
    out = b""
    while len(out) < n:
        got = s.recv(n - len(out))
        if not got:
            raise EOFError
        out += got
    return out


def main():
    args, headers, then, pre = [], [], None, None
    it = iter(sys.argv[1:])
    for a in it:
        if a == "-H":
            headers.append(next(it))
        elif a == "--then":
            then = next(it)
        elif a == "--pipeline":
            pre = next(it)
        else:
            args.append(a)
    url = urllib.parse.urlsplit(args[0])
    secure = url.scheme == "wss"
    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY" if secure else "http_proxy"])
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
    port = url.port or (443 if secure else 80)
    target = url.path or "/"
    if secure:
        s.sendall(f"CONNECT {url.hostname}:{port} HTTP/1.1\r\nHost: {url.hostname}:{port}\r\n\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += s.recv(1)
        if b" 200 " not in answer.split(b"\r\n")[0]:
            print("ws connect", answer.split(b"\r\n")[0].decode())
            return
        s = ssl.create_default_context().wrap_socket(s, server_hostname=url.hostname)
    else:
        target = f"http://{url.hostname}:{port}{target}"
    key = base64.b64encode(os.urandom(16)).decode()
    head = (f"GET {target} HTTP/1.1\r\nHost: {url.hostname}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
    head += "".join(h + "\r\n" for h in headers) + "\r\n"
    if pre:
        head = f"GET {pre} HTTP/1.1\r\nHost: {url.hostname}\r\n\r\n" + head
    s.sendall(head.encode())
    if pre:
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += read_exact(s, 1)
        length = [int(h.split(b":")[1]) for h in answer.split(b"\r\n")
                  if h.lower().startswith(b"content-length:")]
        read_exact(s, length[0] if length else 0)
        print("pre", answer.split(b"\r\n")[0].decode().split(" ")[1])
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += read_exact(s, 1)
    status = answer.split(b"\r\n")[0].decode()
    print("ws", status.split(" ")[1])
    if " 101 " not in status:
        if then:
            length = [int(h.split(b":")[1]) for h in answer.split(b"\r\n")
                      if h.lower().startswith(b"content-length:")]
            read_exact(s, length[0] if length else 0)
            path = then if secure else f"http://{url.hostname}:{port}{then}"
            try:
                s.sendall((f"GET {path} HTTP/1.1\r\nHost: {url.hostname}\r\n" +
                           "".join(h + "\r\n" for h in headers) + "\r\n").encode())
                line = s.recv(4096).split(b"\r\n")[0].decode()
                print("then", line.split(" ")[1] if line else "closed")
            except (OSError, IndexError):
                print("then closed")
        return
    for m in args[1:]:
        s.sendall(frame(1, m.encode()))
        b0, b1 = read_exact(s, 2)
        n = b1 & 0x7F
        if n == 126:
            n = int.from_bytes(read_exact(s, 2), "big")
        print("echo", read_exact(s, n).decode())
    s.sendall(frame(8, b""))
    read_exact(s, 2)


main()
