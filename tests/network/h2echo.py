#!/usr/bin/python3
"""The fake world's HTTP/2 server (tls.bats), Debian's python3-h2:

  h2echo.py ADDR:PORT CERT.pem LOG READY

HTTPS on ADDR:PORT with ALPN h2 and http/1.1. Every request is answered
200 with "ok\\n" (/h2-big*: 2 MiB, sent as the peer's flow control lets
it) and appended to LOG as a JSON line {"path", "headers", "body" (its
first 256 bytes), "len", "proto" ("h2" or "http/1.1"), "peer" (the
client's port: one connection, one peer), "sni"}. READY is created once
it listens."""
import json
import socket
import ssl
import sys
import threading

import h2.config
import h2.connection
import h2.events

lock = threading.Lock()


def log(entry):
    with lock, open(sys.argv[3], "a") as f:
        f.write(json.dumps(entry) + "\n")


def serve_h2(conn, peer, sni):
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    c.initiate_connection()
    conn.sendall(c.data_to_send())
    streams, sending = {}, {}

    def pump():  # the big answers, as far as the windows allow
        for sid in list(sending):
            while sending[sid] and c.local_flow_control_window(sid) > 0:
                n = min(sending[sid], c.local_flow_control_window(sid), c.max_outbound_frame_size)
                sending[sid] -= n
                c.send_data(sid, b"x" * n, end_stream=sending[sid] == 0)
            if not sending[sid]:
                del sending[sid]

    while True:
        data = conn.recv(65536)
        if not data:
            return
        for ev in c.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                streams[ev.stream_id] = [dict(ev.headers), b""]
            elif isinstance(ev, h2.events.DataReceived):
                streams[ev.stream_id][1] += ev.data
                c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                hdrs, body = streams.pop(ev.stream_id, (None, None))
                if hdrs is None:
                    continue
                log({"path": hdrs.get(":path"), "headers": hdrs, "body": body[:256].decode("latin-1"),
                     "len": len(body), "proto": "h2", "peer": peer, "sni": sni})
                if hdrs.get(":path", "").startswith("/h2-big"):
                    c.send_headers(ev.stream_id, [(":status", "200"), ("content-length", str(2 << 20))])
                    sending[ev.stream_id] = 2 << 20
                else:
                    c.send_headers(ev.stream_id, [(":status", "200"), ("content-length", "3")])
                    c.send_data(ev.stream_id, b"ok\n", end_stream=True)
        pump()
        conn.sendall(c.data_to_send())


def serve_h1(conn, peer, sni):
    f = conn.makefile("rb")
    line = f.readline().decode("latin-1").split(" ")
    hdrs = {}
    while True:
        h = f.readline().decode("latin-1").rstrip("\r\n")
        if not h:
            break
        k, _, v = h.partition(":")
        hdrs[k.strip()] = v.strip()
    body = f.read(int(hdrs.get("Content-Length", "0"))).decode("latin-1")
    log({"path": line[1] if len(line) > 1 else None, "headers": hdrs, "body": body,
         "proto": "http/1.1", "peer": peer, "sni": sni})
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")


def handle(raw, ctx):
    peer = raw.getpeername()[1]
    try:
        conn = ctx.wrap_socket(raw, server_side=True)
        sni = getattr(conn, "sni", None)
        (serve_h2 if conn.selected_alpn_protocol() == "h2" else serve_h1)(conn, peer, sni)
        conn.close()
    except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
        raw.close()


def main():
    addr, port = sys.argv[1].rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[2])
    ctx.set_alpn_protocols(["h2", "http/1.1"])

    def on_sni(conn, name, _ctx):
        conn.sni = name

    ctx.sni_callback = on_sni
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.listen(16)
    open(sys.argv[4], "w").close()
    while True:
        raw, _ = s.accept()
        threading.Thread(target=handle, args=(raw, ctx), daemon=True).start()


main()
