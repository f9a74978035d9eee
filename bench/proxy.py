#!/usr/bin/env python3
"""The egress proxy, measured (issue 26): what a request costs when it
leaves through agentjail's allow-list proxy, and what swapping a scoped
secret into it adds, against the same request made directly.

A fake world in network namespaces of its own, as tests/network/world.bash
builds it (nothing is sent to a real address): agentjail runs in a "host"
namespace, routed to an "internet" namespace that holds 192.0.2.10 (this
script's web server: GET /bytes/N answers N bytes, echoing nothing) and
192.0.2.53 (tests/network/fakeinet.py's DNS: allowed.test is 192.0.2.10).

In each interleaved round (from a quiet machine), a small client runs N
requests, each on a new connection, and times each one itself, so the
sandbox's start is not in the figures:

  host      the client in the host namespace, no sandbox: the floor
  open      agentjail run --net open: straight out, NATed (nft), no proxy
            (host and open connect to 192.0.2.10: open mode resolves with
            the host's resolver, which is not the fake world's)
  allow     --allow allowed.test: through the proxy (http_proxy), plain HTTP
  secret    the same with --secret TOKEN@allowed.test=...: the placeholder
            in an Authorization header swapped for the value by the proxy
  tunnel    --allow allowed.test, a CONNECT to allowed.test:8443 per request
            (how HTTPS to a host without secrets leaves), plain HTTP inside it

and HTTPS (a TLS server on 192.0.2.10:443 with a certificate for allowed.test
from a CA this script makes; a new TLS session per request, verified):

  tls-host       the client in the host namespace, TLS straight to the server
  tls-open       --net open: TLS straight out, NATed
  tls-tunnel     --allow: a CONNECT per request, tunnelled, TLS end to end
                 (HTTPS to a host without secrets)
  tls-intercept  --allow + --secret TOKEN@allowed.test + --upstream-ca: the
                 proxy terminates TLS with the sandbox's CA (trusted through
                 SSL_CERT_FILE), verifies the server, swaps the secret in

and one download of --mib MiB per case (the proxy's throughput). Then
HTTP/2 (tests/network/h2echo.py, Debian's python3-h2, on 192.0.2.10:8444,
ALPN h2): one curl --http2 per round makes N+1 requests on one kept-alive
connection (the first, with the handshakes, not counted), each timed by
curl (time_total); requests/s is N over their sum:

  h2-host       curl in the host namespace, h2 straight to the server
  h2-open       --net open: straight out, NATed
  h2-tunnel     --allow: one CONNECT, h2 end to end through the tunnel
  h2-intercept  --allow + --secret + --upstream-ca: h2 terminated on both
                sides by netd (nghttp2, proxy_h2.c), the secret swapped
                into each request's HPACK headers
Needs root, ip, nft. Usage:
  bench/proxy.py [--rounds 5] [--requests 100] [--mib 64] [--aj build/agentjail] [--json OUT]
"""
import argparse
import http.server
import json
import os
import shutil
import signal
import socketserver
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from quiet import settle  # noqa: E402

SECRET = "sk-bench-0123456789abcdef"

# The client, run inside (or beside) the sandbox: one JSON line of results.
CLIENT = r'''
import http.client, json, os, socket, sys, time
mode, n, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
proxy = os.environ.get("http_proxy", "")
hp = proxy.split("//", 1)[-1].rstrip("/") if proxy else ""
phost, pport = (hp.rsplit(":", 1)[0], int(hp.rsplit(":", 1)[1])) if hp else (None, None)
hdrs = ({"Authorization": "Bearer " + os.environ.get("TOKEN", "none")}
        if mode in ("secret", "tls-intercept") else {})
def tls_ctx():
    import ssl
    if mode == "tls-intercept":  # the sandbox's bundle (SSL_CERT_FILE), with its CA
        return ssl.create_default_context()
    return ssl.create_default_context(cadata=os.environ["BENCH_CA"])
def conn():
    if mode.startswith("tls-"):
        c = (http.client.HTTPSConnection(phost, pport, timeout=10, context=tls_ctx()) if phost
             else http.client.HTTPSConnection("allowed.test", 443, timeout=10, context=tls_ctx()))
        if phost:
            c.set_tunnel("allowed.test", 443)
        else:  # the address: no resolver of the fake world's here
            c._create_connection = lambda a, *x, **k: socket.create_connection(
                ("192.0.2.10", 443), *x, **k)
        return c, "/bytes/64"
    if mode == "tunnel":
        c = http.client.HTTPConnection(phost, pport, timeout=10)
        c.set_tunnel("allowed.test", 8443)
        return c, "/bytes/64"
    if phost:
        return http.client.HTTPConnection(phost, pport, timeout=10), "http://allowed.test/bytes/64"
    # open, host: no resolver of the fake world's (open uses the host's), so
    # the address
    return http.client.HTTPConnection("192.0.2.10", 80, timeout=10), "/bytes/64"
if mode.startswith("h2-"):
    import subprocess, tempfile
    cmd = ["curl", "-sS", "--http2", "-w",
           "%{time_total} %{http_version} %{http_code}\n"]
    if mode == "h2-intercept":  # the sandbox's bundle (CURL_CA_BUNDLE), with its CA
        cmd += ["-H", "Authorization: Bearer " + os.environ.get("TOKEN", "none")]
    else:
        ca = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)
        ca.write(os.environ["BENCH_CA"])
        ca.close()
        cmd += ["--cacert", ca.name]
    if mode in ("h2-host", "h2-open"):  # no resolver of the fake world's: the address
        cmd += ["--noproxy", "*", "--resolve", "allowed.test:8444:192.0.2.10"]
    out = subprocess.run(cmd + ["-o", "/dev/null", "https://allowed.test:8444/h2"] * (n + 1),
                         capture_output=True, text=True, timeout=300)
    rows = [l.split() for l in out.stdout.splitlines()]
    if out.returncode or len(rows) != n + 1 or any(r[1:] != ["2", "200"] for r in rows):
        raise SystemExit("bad answer: %d %r %s" % (out.returncode, rows[:3], out.stderr[-300:]))
    lat = [float(r[0]) * 1000 for r in rows[1:]]
    print(json.dumps({"ms": lat, "download_ms": 0}))
    raise SystemExit(0)
def get(size):
    c, path = conn()
    path = path.replace("/bytes/64", "/bytes/%d" % size)
    t = time.perf_counter_ns()
    c.request("GET", path, headers=hdrs)
    r = c.getresponse()
    got = 0
    while True:
        b = r.read(1 << 16)
        if not b:
            break
        got += len(b)
    c.close()
    if r.status != 200 or got != size:
        raise SystemExit("bad answer: %d, %d bytes" % (r.status, got))
    return (time.perf_counter_ns() - t) / 1e6
get(64)  # the resolver's cache and the proxy warm
lat = [get(64) for _ in range(n)]
dl = get(mib << 20) if mib else 0
print(json.dumps({"ms": lat, "download_ms": dl}))
'''


class Bytes(http.server.BaseHTTPRequestHandler):
    """GET /bytes/N: N bytes; records the Authorization header it saw last."""
    protocol_version = "HTTP/1.0"
    chunk = b"x" * (1 << 16)

    def do_GET(self):
        path = self.path.split("://", 1)[-1]
        path = path[path.find("/"):] if "://" in self.path else self.path
        if not path.startswith("/bytes/"):
            self.send_error(404)
            return
        n = int(path[len("/bytes/"):])
        auth = self.headers.get("Authorization", "")
        if auth:
            with open(os.environ["BENCH_AUTH_LOG"], "w") as f:
                f.write(auth)
        self.send_response(200)
        self.send_header("Content-Length", str(n))
        self.end_headers()
        while n:
            k = min(n, len(self.chunk))
            self.wfile.write(self.chunk[:k])
            n -= k

    def log_message(self, *a):
        pass


def serve(ports, ready, certs):
    class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True
    servers = [S(("0.0.0.0", p), Bytes) for p in ports]
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(certs, "leaf.crt"), os.path.join(certs, "leaf.key"))
    tls = S(("0.0.0.0", 443), Bytes)
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    servers.append(tls)
    import threading
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    open(ready, "w").close()
    signal.sigwait([signal.SIGTERM, signal.SIGINT])


def sh(*cmd):
    subprocess.run(cmd, check=True)


def make_certs(d):
    """A CA and its leaf for allowed.test (EC P-256), as world_test_certs."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    subprocess.run(["openssl", "req", "-x509"] + ec + [
        "-keyout", d + "/ca.key", "-out", d + "/ca.crt", "-days", "2", "-subj", "/CN=bench CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign"], **q)
    subprocess.run(["openssl", "req"] + ec + ["-keyout", d + "/leaf.key", "-out",
                   d + "/leaf.csr", "-subj", "/CN=allowed.test"], **q)
    with open(d + "/ext", "w") as f:
        f.write("subjectAltName=DNS:allowed.test\nextendedKeyUsage=serverAuth\n")
    subprocess.run(["openssl", "x509", "-req", "-in", d + "/leaf.csr", "-CA", d + "/ca.crt",
                    "-CAkey", d + "/ca.key", "-CAcreateserial", "-days", "2", "-extfile",
                    d + "/ext", "-out", d + "/leaf.crt"], **q)
    os.chmod(d + "/ca.crt", 0o644)


class World:
    def __init__(self, tmp):
        tag = "%d" % os.getpid()
        self.hns, self.ins, self.tmp, self.procs = "ajb-host-" + tag, "ajb-inet-" + tag, tmp, []

    def up(self):
        h, i = self.hns, self.ins
        sh("ip", "netns", "add", h)
        sh("ip", "netns", "add", i)
        sh("ip", "link", "add", "up0", "netns", h, "type", "veth", "peer", "name", "wan0",
           "netns", i)
        for ns in (h, i):
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", h, "addr", "add", "198.51.100.2/24", "dev", "up0")
        sh("ip", "-n", h, "link", "set", "up0", "up")
        sh("ip", "-n", h, "route", "add", "default", "via", "198.51.100.1")
        sh("ip", "-n", i, "addr", "add", "198.51.100.1/24", "dev", "wan0")
        for a in ("192.0.2.10", "192.0.2.53"):
            sh("ip", "-n", i, "addr", "add", a + "/32", "dev", "lo")
        sh("ip", "-n", i, "link", "set", "wan0", "up")
        sh("ip", "-n", i, "route", "add", "default", "via", "198.51.100.2")
        env = dict(os.environ, BENCH_AUTH_LOG=os.path.join(self.tmp, "auth"))
        ready = [os.path.join(self.tmp, x) for x in ("web.ready", "dns.ready", "h2.ready")]
        self.procs.append(subprocess.Popen(
            ["ip", "netns", "exec", i, sys.executable, os.path.abspath(__file__),
             "--serve", ready[0], "--certs", self.tmp], env=env))
        self.procs.append(subprocess.Popen(
            ["ip", "netns", "exec", i, sys.executable,
             os.path.join(ROOT, "tests/network/fakeinet.py"), "--web", "8081", "--body", "x",
             "--dns", "192.0.2.53", "--dns-log", os.path.join(self.tmp, "dns.log"),
             "--ready", ready[1]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        pem = os.path.join(self.tmp, "leaf.pem")  # h2echo.py's: certificate and key
        with open(pem, "w") as f:
            for x in ("leaf.crt", "leaf.key"):
                f.write(open(os.path.join(self.tmp, x)).read())
        self.procs.append(subprocess.Popen(
            ["ip", "netns", "exec", i, "/usr/bin/python3",
             os.path.join(ROOT, "tests/network/h2echo.py"), "0.0.0.0:8444", pem,
             os.path.join(self.tmp, "h2.log"), ready[2]],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        end = time.monotonic() + 30
        while not all(os.path.exists(r) for r in ready):
            if time.monotonic() > end:
                raise SystemExit("proxy bench: the fake world's servers did not start")
            time.sleep(0.05)

    def down(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        for ns in (self.hns, self.ins):
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)


def run_case(a, world, case):
    nsenter = ["nsenter", "--net=/run/netns/" + world.hns]
    # the host cases run the interpreter the sandbox runs (the host root's),
    # not this script's (a pyenv build here, slower at TLS)
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    args = [py if case in ("host", "tls-host", "h2-host") else "python3", "-c", CLIENT, case,
            str(a.requests), str(a.mib)]
    ca = open(os.path.join(world.tmp, "ca.crt")).read()
    env = dict(os.environ, BENCH_CA=ca)
    if case in ("host", "tls-host", "h2-host"):
        cmd = nsenter + args
    else:
        net = (["--net", "open"] if case in ("open", "tls-open", "h2-open")
               else ["--dns", "192.0.2.53", "--allow", "allowed.test",
                     "--allow", "allowed.test:8443", "--allow", "allowed.test:8444"])
        if case in ("secret", "tls-intercept", "h2-intercept"):
            net += ["--secret", "TOKEN@allowed.test=" + SECRET]
        if case in ("tls-intercept", "h2-intercept"):
            net += ["--upstream-ca", os.path.join(world.tmp, "ca.crt")]
        cmd = nsenter + [a.aj, "run", "-q", "--env", "BENCH_CA"] + net + ["--"] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if out.returncode != 0:
        raise SystemExit("proxy bench: %s failed (%d): %s" % (case, out.returncode,
                                                              out.stderr.strip()[-400:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--aj", default=os.path.join(ROOT, "build/agentjail"))
    ap.add_argument("--json")
    ap.add_argument("--serve")
    ap.add_argument("--certs")
    ap.add_argument("--cases", help="comma-separated subset of the cases")
    a = ap.parse_args()
    if a.serve:
        serve([80, 8443], a.serve, a.certs)
        return
    if os.geteuid() != 0 or not shutil.which("nft") or not shutil.which("ip"):
        raise SystemExit("proxy bench: needs root, ip and nft")
    cases = ["host", "open", "allow", "secret", "tunnel",
             "tls-host", "tls-open", "tls-tunnel", "tls-intercept",
             "h2-host", "h2-open", "h2-tunnel", "h2-intercept"]
    if a.cases:
        cases = [c for c in cases if c in a.cases.split(",")]
    res = {c: {"ms": [], "download_ms": []} for c in cases}
    with tempfile.TemporaryDirectory(prefix="ajbench-proxy-") as tmp:
        make_certs(tmp)
        world = World(tmp)
        try:
            world.up()
            for r in range(a.rounds):
                for c in cases[r % len(cases):] + cases[:r % len(cases)]:
                    settle()
                    x = run_case(a, world, c)
                    res[c]["ms"] += x["ms"]
                    res[c]["download_ms"].append(x["download_ms"])
                    if c == "h2-intercept":
                        with open(os.path.join(tmp, "h2.log")) as f:
                            last = json.loads(f.read().splitlines()[-1])
                        if last["headers"].get("authorization") != "Bearer " + SECRET:
                            raise SystemExit("proxy bench: h2 server saw %r" % last["headers"])
                    elif c in ("secret", "tls-intercept"):
                        seen = open(os.path.join(tmp, "auth")).read()
                        os.unlink(os.path.join(tmp, "auth"))
                        if seen != "Bearer " + SECRET:
                            raise SystemExit("proxy bench: the server saw %r, not the secret"
                                             % seen)
        finally:
            world.down()
    rows = {}
    for c in cases:
        lat = sorted(res[c]["ms"])
        dl = statistics.median(res[c]["download_ms"])
        rows[c] = {"median_ms": round(statistics.median(lat), 3),
                   "p95_ms": round(lat[int(len(lat) * 0.95) - 1], 3),
                   "requests": len(lat),
                   "download_mib_s": round(a.mib / (dl / 1000), 1) if dl else None,
                   "requests_per_s": round(1000 * len(lat) / sum(lat), 1)}
    for c in cases:  # each against the direct sandbox of its protocol
        peer = c.split("-")[0] + "-open" if "-" in c else "open"
        if peer in rows:
            rows[c]["vs_open"] = round(rows[c]["median_ms"] / rows[peer]["median_ms"], 2)
    out = {"rounds": a.rounds, "requests_per_round": a.requests, "mib": a.mib,
           "load": os.getloadavg()[0], "cases": rows}
    print("%-14s %10s %10s %8s %8s %12s" % ("case", "median ms", "p95 ms", "vs open", "req/s",
                                            "MiB/s"))
    for c in cases:
        x = rows[c]
        print("%-14s %10.2f %10.2f %7.2fx %8.0f %12s" % (
            c, x["median_ms"], x["p95_ms"], x.get("vs_open", 0), x["requests_per_s"],
            x["download_mib_s"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
