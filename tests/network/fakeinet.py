#!/usr/bin/env python3
"""The network tests' fake internet servers, in one process (standard
library only):

  fakeinet.py --web PORTS --body TEXT [--web-log FILE] [--dns ADDR --dns-log FILE]
              [--tls PORT:DIR] --ready FILE

Web (every address, each port of the comma-separated PORTS): GET / answers
TEXT, /host echoes the Host header, /redirect?to=URL answers 302 to URL,
POST (and PUT) answers TEXT after reading the body (Content-Length or
chunked; /s3* answers 411 to a chunked one, as S3 does), a
WebSocket upgrade of /ws* echoes every message back until the close; one
of /nows* is declined (401, the connection kept for the next request).
With --web-log, every request is appended to FILE as a JSON line
{"addr", "port", "peer", "method", "path", "headers"} plus "body" (over
64 KiB: "body_sha256" and "body_len") and "status" for a POST
and "ws": [messages] (written at the close) for a WebSocket (what a server
saw, kept outside the sandbox: the secrets tests read it).

HTTPS (--tls PORT:DIR, HTTP/1.1 with keep-alive): the same server over TLS,
with the certificate and key of DIR/NAME.pem for the SNI NAME, else
DIR/default.pem; its log lines add "tls": true and "sni".

DNS (UDP on ADDR:53): a fake recursive resolver for the zone below, and the
attacker's authoritative server for *.evil.test and *.attacker.test; every query it receives is
appended to FILE as "NAME TYPE", so a test can count what reached it.

FILE given to --ready is created once every socket listens."""
import argparse
import base64
import hashlib
import http.server
import json
import socket
import struct
import threading
import urllib.parse

A, CNAME = 1, 5
ZONE = {
    "allowed.test": [(A, "192.0.2.10", 60)],
    "www.allowed.test": [(A, "203.0.113.10", 60)],
    "short.allowed.test": [(A, "198.51.100.77", 1)],
    "sub.wild.test": [(A, "192.0.2.10", 60)],
    "deep.sub.wild.test": [(A, "203.0.113.10", 60)],
    "wild.test": [(A, "192.0.2.10", 60)],
    "rebind.allowed.test": [(A, "169.254.169.254", 60), (A, "192.0.2.10", 60)],
    "lan.allowed.test": [(A, "10.0.0.5", 60)],
    "loop.allowed.test": [(A, "127.0.0.1", 60)],
    "cname.allowed.test": [(CNAME, "web.other.test", 60)],
    "web.other.test": [(A, "203.0.113.10", 60)],
    "other.test": [(A, "203.0.113.10", 60)],
    "notallowed.test": [(A, "192.0.2.10", 60)],
    # npm.bats: its registry and the attacker's server (npmreg.py)
    "registry.test": [(A, "192.0.2.80", 60)],
    "attacker.test": [(A, "203.0.113.66", 60)],
    # tls.bats: a secret's HTTPS API and one with a certificate nobody trusts
    "api.example.test": [(A, "192.0.2.10", 60)],
    "bad.example.test": [(A, "192.0.2.10", 60)],
}


def qname(msg, off):
    labels = []
    while True:
        n = msg[off]
        off += 1
        if n == 0:
            return ".".join(labels), off
        labels.append(msg[off:off + n].decode("latin-1"))
        off += n


def encode(name):
    out = b""
    for label in name.split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def lookup(key):
    recs = ZONE.get(key)
    if recs is None and (key.endswith(".evil.test") or key.endswith(".attacker.test")):
        recs = [(A, "192.0.2.10", 60)]
    return recs


def answer(msg):
    ident, flags = struct.unpack("!HH", msg[:4])
    name, off = qname(msg, 12)
    qtype, _ = struct.unpack("!HH", msg[off:off + 4])
    question = msg[12:off + 4]
    key = name.lower()
    records = []
    while True:
        recs = lookup(key)
        if not recs:
            break
        for kind, value, ttl in recs:
            if kind == A and qtype == A:
                rdata = socket.inet_aton(value)
            elif kind == CNAME:
                rdata = encode(value)
            else:
                continue
            records.append(encode(key) + struct.pack("!HHIH", kind, 1, ttl, len(rdata)) + rdata)
        if recs[0][0] != CNAME:
            break
        key = recs[0][1]
    rcode = 0 if lookup(key) else 3
    head = struct.pack("!HHHHHH", ident, 0x8180 | (flags & 0x0100) | rcode, 1, len(records), 0, 0)
    return head + question + b"".join(records), name, qtype


def serve_dns(sock, log):
    while True:
        msg, peer = sock.recvfrom(4096)
        try:
            reply, name, qtype = answer(msg)
        except (IndexError, struct.error, UnicodeDecodeError):
            continue
        with open(log, "a") as f:
            f.write(f"{name} {qtype}\n")
        sock.sendto(reply, peer)


def make_handler(text, log, tls=False):
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        if tls:
            protocol_version = "HTTP/1.1"

        def record(self, **extra):
            if not log:
                return
            addr, port = self.connection.getsockname()[:2]
            entry = {"addr": addr, "port": port, "peer": self.client_address[1],
                     "method": self.command, "path": self.path,
                     "headers": dict(self.headers.items()), **extra}
            if tls:
                entry["tls"] = True
                entry["sni"] = getattr(self.connection, "sni", None)
            line = json.dumps(entry)
            with lock, open(log, "a") as f:
                f.write(line + "\n")

        def read_body(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                body = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0], 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return body
                    body += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length", "0")))

        def do_POST(self):
            body = self.read_body()
            # /s3*: a server that needs a Content-Length (S3-style PUTs)
            status = 411 if self.path.startswith("/s3") and "Transfer-Encoding" in self.headers else 200
            # a big body as its hash and length: the log stays small to read
            if len(body) > 65536:
                self.record(body_sha256=hashlib.sha256(body).hexdigest(), body_len=len(body),
                            status=status)
            else:
                self.record(body=body.decode("latin-1"), status=status)
            out = (text + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        do_PUT = do_POST

        def websocket(self):
            """RFC 6455 echo: the handshake, then every data frame back
            (unmasked), until a close frame, which is answered."""
            key = self.headers.get("Sec-WebSocket-Key", "")
            accept = base64.b64encode(hashlib.sha1(
                (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            self.wfile.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                              "Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept +
                              "\r\n\r\n").encode())
            self.wfile.flush()
            seen = []
            while True:
                head = self.rfile.read(2)
                if len(head) < 2:
                    break
                op, n = head[0] & 0x0F, head[1] & 0x7F
                if n == 126:
                    n = int.from_bytes(self.rfile.read(2), "big")
                elif n == 127:
                    n = int.from_bytes(self.rfile.read(8), "big")
                mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
                if op == 8:
                    self.wfile.write(b"\x88\x00")
                    break
                seen.append(data.decode("latin-1"))
                size = bytes([len(data)]) if len(data) < 126 else b"\x7e" + len(data).to_bytes(2, "big")
                self.wfile.write(bytes([0x80 | op]) + size + data)
                self.wfile.flush()
            self.record(ws=seen)
            self.close_connection = True

        def do_GET(self):
            # RFC 6455 4.2.1: an upgrade needs both headers (a proxy that
            # sends "Connection: close" gets a plain answer)
            if (self.path.startswith("/ws") and
                    self.headers.get("Upgrade", "").lower() == "websocket" and
                    "upgrade" in self.headers.get("Connection", "").lower()):
                return self.websocket()
            self.record()
            if self.path.startswith("/nows") and self.headers.get("Upgrade"):
                # declined, and the connection stays HTTP (keep-alive)
                self.wfile.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 5\r\n\r\nnope\n")
                self.wfile.flush()
                self.close_connection = False
                return
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/redirect":
                to = urllib.parse.parse_qs(url.query).get("to", ["http://169.254.169.254/"])[0]
                self.send_response(302)
                self.send_header("Location", to)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = (self.headers.get("Host", "none") if url.path == "/host" else text) + "\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    return Handler


def tls_socket(sock, certdir):
    import os
    import ssl

    def context(name):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(certdir, name + ".pem"))
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx

    default = context("default")

    def on_sni(conn, name, ctx):
        conn.sni = name
        if name and os.path.exists(os.path.join(certdir, name + ".pem")):
            conn.context = context(name)

    default.sni_callback = on_sni
    return default.wrap_socket(sock, server_side=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--web", required=True)
    ap.add_argument("--body", required=True)
    ap.add_argument("--web-log")
    ap.add_argument("--dns")
    ap.add_argument("--dns-log")
    ap.add_argument("--tls")
    ap.add_argument("--ready", required=True)
    a = ap.parse_args()
    threads = []
    if a.tls:
        port, certdir = a.tls.split(":", 1)
        srv = http.server.ThreadingHTTPServer(("0.0.0.0", int(port)),
                                              make_handler(a.body, a.web_log, tls=True))
        srv.socket = tls_socket(srv.socket, certdir)
        threads.append(threading.Thread(target=srv.serve_forever, daemon=True))
    for port in a.web.split(","):
        srv = http.server.ThreadingHTTPServer(("0.0.0.0", int(port)), make_handler(a.body, a.web_log))
        threads.append(threading.Thread(target=srv.serve_forever, daemon=True))
    if a.dns:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((a.dns, 53))
        threads.append(threading.Thread(target=serve_dns, args=(s, a.dns_log), daemon=True))
    for t in threads:
        t.start()
    open(a.ready, "w").close()
    for t in threads:
        t.join()


main()
