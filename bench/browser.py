#!/usr/bin/env python3
"""The browser job, measured: Chromium's start and a first screenshot
through the ports proxy (docs/guides/browser.md).

Starts its own `agentjail serve` (a unix socket, and TCP with a token for
Playwright), and measures, in interleaved rounds from a quiet machine
(settle()):

  sandbox-ready   create a host-root sandbox + exec Chromium in the
                  background until its /json/version answers through the
                  proxy
  sandbox-shot    then Playwright (tests/browser/drive.mjs): connectOverCDP
                  through the proxy, a new page, a small page loaded, a
                  screenshot back
  host-ready      the peer: the same Chromium started on the host, no
                  sandbox, until its /json/version answers
  host-shot       the peer's screenshot, Playwright connecting directly

Needs root, Debian's chromium and tests/browser's playwright-core
(scripts/setup.sh). Usage: bench/browser.py [--rounds 3] [--aj build/agentjail] [--json OUT]
"""
import argparse
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from quiet import settle  # noqa: E402

DRIVE = os.path.join(HERE, "..", "tests", "browser", "drive.mjs")
PAGE = "data:text/html,<title>done</title><script>window.results={}</script><h1>hello</h1>"
FLAGS = ["--headless", "--no-sandbox", "--remote-debugging-port={port}", "--no-first-run",
         "--user-data-dir={dir}", "about:blank"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def unix(sock, method, path, body=None):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    data = json.dumps(body).encode() if body is not None else b""
    s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
              f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    head, _, rest = out.partition(b"\r\n\r\n")
    return int(head.split()[1]), rest


def wait_json(url, headers, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            req = urllib.request.Request(url, headers=headers)
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"{url} did not answer")


def shot(api, token, sandbox, out):
    r = subprocess.run(["node", DRIVE, api, token, sandbox, PAGE, out], capture_output=True,
                       text=True, timeout=120, check=True)
    return json.loads(r.stdout)["totalMs"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--aj", default=os.path.join(HERE, "..", "build", "agentjail"))
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="aj-bench-browser-")
    token = secrets.token_hex(16)
    with open(os.path.join(tmp, "token"), "w") as f:
        f.write(token + "\n")
    sock, port = os.path.join(tmp, "aj.sock"), free_port()
    api = f"http://127.0.0.1:{port}"
    hdr = {"Authorization": f"Bearer {token}"}
    svc = subprocess.Popen([a.aj, "serve", "--quiet", "--socket", sock, "--state-dir",
                            os.path.join(tmp, "state"), "--listen", f"127.0.0.1:{port}",
                            "--token-file", os.path.join(tmp, "token")])
    res = {k: [] for k in ("sandbox-ready", "sandbox-shot", "host-ready", "host-shot")}
    try:
        wait_json(f"{api}/healthz", {})
        for i in range(a.rounds):
            settle()
            t0 = time.monotonic()
            st, body = unix(sock, "POST", "/v1/sandboxes",
                            {"memory": "2G", "pids": 1024, "timeout": 600})
            sid = json.loads(body)["id"]
            cmd = ["chromium"] + [f.format(port=9222, dir="/tmp/chromium") for f in FLAGS]
            unix(sock, "POST", f"/v1/sandboxes/{sid}/exec", {"cmd": cmd, "background": True})
            wait_json(f"{api}/v1/sandboxes/{sid}/ports/9222/json/version", hdr)
            res["sandbox-ready"].append((time.monotonic() - t0) * 1000)
            res["sandbox-shot"].append(shot(api, token, sid, os.path.join(tmp, "s.png")))
            unix(sock, "DELETE", f"/v1/sandboxes/{sid}")
            settle()
            hp, prof = free_port(), tempfile.mkdtemp(dir=tmp)
            t0 = time.monotonic()
            host = subprocess.Popen(["chromium"] + [f.format(port=hp, dir=prof) for f in FLAGS],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_json(f"http://127.0.0.1:{hp}/json/version", {})
            res["host-ready"].append((time.monotonic() - t0) * 1000)
            res["host-shot"].append(shot(f"http://127.0.0.1:{hp}", "-", "-",
                                         os.path.join(tmp, "h.png")))
            host.kill()
            host.wait()
            print(f"round {i + 1}: " + ", ".join(f"{k} {v[-1]:.0f} ms" for k, v in res.items()),
                  file=sys.stderr)
    finally:
        svc.terminate()
        svc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    out = {"rounds": a.rounds, "median_ms": med,
           "ratio_ready": med["sandbox-ready"] / med["host-ready"],
           "ratio_shot": med["sandbox-shot"] / med["host-shot"], "samples_ms": res}
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
