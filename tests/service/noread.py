#!/usr/bin/env python3
"""Open exec streams that print without end and never read them: K NDJSON
execs (POST .../exec) and K WebSocket execs, on the unix socket, each with
a small receive buffer. Holds them for SECONDS, then closes them (which
cancels the commands). Writes "ready" to READY_FILE once all were sent.

usage: noread.py SOCKET SANDBOX K SECONDS READY_FILE"""
import json
import socket
import sys
import time
import urllib.parse

sock, sb, k, secs, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
# 1 GiB, then a mark that says the command was not held back
cmd = "head -c 1073741824 /dev/zero | tr '\\0' a; touch /tmp/all-written"
conns = []
for i in range(k):
    s = socket.socket(socket.AF_UNIX)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(sock)
    body = json.dumps({"cmd": cmd}).encode()
    s.sendall(b"POST /v1/sandboxes/%s/exec HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % (sb.encode(), len(body)) + body)
    conns.append(s)
    s = socket.socket(socket.AF_UNIX)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(sock)
    q = urllib.parse.urlencode([("command", "sh"), ("command", "-c"), ("command", cmd)])
    s.sendall(("GET /v1/sandboxes/%s/exec?%s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n"
               % (sb, q)).encode())
    conns.append(s)
with open(ready, "w") as f:
    f.write("ready\n")
time.sleep(secs)
for s in conns:
    s.close()
