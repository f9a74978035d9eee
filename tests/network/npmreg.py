#!/usr/bin/env python3
"""A small npm registry for the network tests (standard library only):

  npmreg.py --bind ADDR --port PORT --log FILE --ready FILE [--packages DIR]
            [--host NAME]

With --packages, DIR holds NAME-VERSION.tgz tarballs (a package/ folder
with its package.json, as `npm pack` makes them): GET /NAME answers the
packument (every version, its dist.tarball, shasum and integrity), GET
/NAME/-/NAME-VERSION.tgz the tarball; anything else 404. Without it, the
server is a sink (the attacker's): every request is answered 200.

Every request, with its headers and body, is appended to FILE as one JSON
line, so a test can say what reached the server. FILE given to --ready is
created once the socket listens."""
import argparse
import base64
import hashlib
import http.server
import json
import os
import tarfile
import threading
import urllib.parse


def load(packages, host):
    docs = {}
    for f in sorted(os.listdir(packages)):
        if not f.endswith(".tgz"):
            continue
        path = os.path.join(packages, f)
        with tarfile.open(path) as t:
            meta = json.load(t.extractfile("package/package.json"))
        data = open(path, "rb").read()
        name, version = meta["name"], meta["version"]
        meta["dist"] = {
            "tarball": f"http://{host}/{name}/-/{f}",
            "shasum": hashlib.sha1(data).hexdigest(),
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
        }
        if any(k in meta.get("scripts", {}) for k in ("preinstall", "install", "postinstall")):
            meta["hasInstallScript"] = True
        doc = docs.setdefault(name, {"name": name, "versions": {}, "dist-tags": {}})
        doc["versions"][version] = meta
        doc["dist-tags"]["latest"] = version
        doc.setdefault("files", {})[f] = path
    return docs


def make_handler(docs, log, lock):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def record(self, body):
            entry = {"method": self.command, "path": self.path,
                     "headers": dict(self.headers.items()),
                     "body": body.decode("latin-1")}
            with lock, open(log, "a") as f:
                f.write(json.dumps(entry) + "\n")

        def reply(self, code, body, ctype="application/json"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def handle_any(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(min(n, 1 << 20)) if n > 0 else b""
            self.record(body)
            if docs is None:
                return self.reply(200, b"thanks\n", "text/plain")
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")
            if "/-/" in path:
                name, f = path.split("/-/", 1)
                doc = docs.get(name)
                if doc and f in doc["files"]:
                    return self.reply(200, open(doc["files"][f], "rb").read(),
                                      "application/octet-stream")
            elif path in docs:
                doc = {k: v for k, v in docs[path].items() if k != "files"}
                return self.reply(200, json.dumps(doc).encode())
            return self.reply(404, b'{"error":"not found"}')

        do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = handle_any

        def log_message(self, *args):
            pass

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bind", required=True)
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--packages")
    ap.add_argument("--host", default="registry.test")
    a = ap.parse_args()
    docs = load(a.packages, a.host) if a.packages else None
    srv = http.server.ThreadingHTTPServer((a.bind, a.port),
                                          make_handler(docs, a.log, threading.Lock()))
    open(a.ready, "w").close()
    srv.serve_forever()


main()
