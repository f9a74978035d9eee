#!/usr/bin/env python3
"""tests/network/browser.bats's servers: a hostile web page, and the
servers it tries to reach, which log what arrives (standard library only).

  hostile.py --http PORT [--udp PORT] --log FILE --ready FILE

HTTP on every address of the network namespace it runs in: GET
/hostile.html is the page (its script tries the targets given in its
query); POST /report (the page's results) is appended to FILE as
"report JSON"; every request is appended as "http LOCAL-ADDR:PORT METHOD
PATH". UDP on every address: each datagram is appended as "udp
LOCAL-ADDR:PORT BYTES" (its local address from IP_PKTINFO). FILE given to
--ready is created once both listen."""
import argparse
import http.server
import json
import socket
import struct
import threading

IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)  # (Linux; Python lacks the name)

PAGE = """<!doctype html>
<html><head><title>loading</title><style>
body { font: 16px sans-serif; background: #fff; } td { padding: 2px 8px; }
.blocked { color: #070; } .reached { color: #b00; font-weight: bold; }
</style></head><body><h1>A hostile page</h1><table id="t"></table>
<script>
const q = new URLSearchParams(location.search);
const results = {};
function show() {
  document.getElementById('t').innerHTML = Object.entries(results).map(([k, v]) =>
    `<tr><td>${k}</td><td class="${v.startsWith('blocked') ? 'blocked' : 'reached'}">${v}</td></tr>`).join('');
}
async function tryFetch(name, url) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 4000);
  try {
    const r = await fetch(url, {mode: 'no-cors', signal: ctl.signal, cache: 'no-store'});
    let body = '';
    try { body = (await r.text()).slice(0, 40); } catch (e) {}
    results[name] = 'reached:' + r.type + ':' + body;
  } catch (e) {
    results[name] = 'blocked:' + e.name;
  }
  clearTimeout(timer);
  show();
}
async function tryRTC(name, servers) {
  try {
    const pc = new RTCPeerConnection({iceServers: servers.map(s => ({urls: 'stun:' + s}))});
    pc.createDataChannel('x');
    const cands = [];
    pc.onicecandidate = e => { if (e.candidate) cands.push(e.candidate.type); };
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise(r => setTimeout(r, 3000));
    pc.close();
    results[name] = (cands.includes('srflx') ? 'reached:' : 'blocked:') + cands.join(',');
  } catch (e) {
    results[name] = 'blocked:' + e.name;
  }
  show();
}
async function main() {
  const targets = JSON.parse(q.get('targets') || '{}');
  await Promise.all(Object.entries(targets).map(([k, u]) => tryFetch(k, u)));
  await tryRTC('webrtc', JSON.parse(q.get('stun') || '[]'));
  await fetch('/report', {method: 'POST', body: JSON.stringify(results)});
  document.title = 'done';
  window.results = results;
}
main();
</script></body></html>
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int, required=True)
    ap.add_argument("--udp", type=int)
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready", required=True)
    a = ap.parse_args()
    lock = threading.Lock()

    def log(line):
        with lock, open(a.log, "a") as f:
            f.write(line + "\n")

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args):
            pass

        def handle_one(self, method):
            local = "%s:%d" % self.connection.getsockname()[:2]
            log(f"http {local} {method} {self.path}")
            n = int(self.headers.get("Content-Length", "0") or 0)
            body = self.rfile.read(n) if n else b""
            if method == "POST" and self.path == "/report":
                log("report " + body.decode(errors="replace"))
            page = self.path.startswith("/hostile.html")
            out = PAGE.encode() if page else b"secret-data\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if page else "text/plain")
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def do_GET(self):
            self.handle_one("GET")

        def do_POST(self):
            self.handle_one("POST")

    class S(http.server.ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    srv = S(("0.0.0.0", a.http), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    if a.udp:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        u.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
        u.bind(("0.0.0.0", a.udp))

        def udp():
            while True:
                data, anc, _, _ = u.recvmsg(65536, 256)
                local = "?"
                for level, kind, d in anc:
                    if level == socket.IPPROTO_IP and kind == IP_PKTINFO:
                        local = socket.inet_ntoa(d[8:12])
                log(f"udp {local}:{a.udp} {len(data)}")

        threading.Thread(target=udp, daemon=True).start()
    open(a.ready, "w").close()
    threading.Event().wait()


if __name__ == "__main__":
    main()
