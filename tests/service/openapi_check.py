#!/usr/bin/env python3
"""docs/openapi.json against a running service: every route it names
exists (answers something else than 'no such endpoint' / 405), and every
route named in docs/api.md (`METHOD /path` headings) is in it.

usage: openapi_check.py SOCKET SPEC API_MD"""
import http.client
import json
import re
import socket
import sys

sock, spec_path, md_path = sys.argv[1:4]


class Conn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(sock)


def call(method, path, body=None):
    c = Conn("agentjail", timeout=30)
    data = None if body is None else json.dumps(body).encode()
    c.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    r = c.getresponse()
    text = r.read()
    c.close()
    return r.status, text


spec = json.load(open(spec_path))
assert spec["openapi"].startswith("3."), "not OpenAPI 3"
problems = []

# every documented route of api.md is in the spec
md = open(md_path).read()
for method, path in re.findall(r"`(GET|POST|PUT|PATCH|DELETE) (/[^` ]+)`", md):
    path = path.split("?")[0]
    if method.lower() not in spec["paths"].get(path, {}):
        problems.append(f"docs/api.md names {method} {path}, docs/openapi.json does not")

st, text = call("POST", "/v1/sandboxes", {})
assert st == 201, text
sid = json.loads(text)["id"]
st, text = call("POST", f"/v1/sandboxes/{sid}/exec", {"cmd": "sleep 30", "background": True})
assert st == 201, text
proc = json.loads(text)["process"]

routes = []
for path, ops in spec["paths"].items():
    for method in ops:
        if method in ("get", "post", "put", "patch", "delete"):
            routes.append((path, method.upper()))
# the sandbox's own DELETE last
routes.sort(key=lambda r: r == ("/v1/sandboxes/{id}", "DELETE"))
for path, method in routes:
    url = path.replace("{id}", sid).replace("{proc}", proc).replace("{ctx}", "default")
    if "/files" in path or "/mkdir" in path:
        url += "?path=/tmp/openapi-check"
    body = {} if method in ("POST", "PATCH") else None
    if method == "GET" and path.endswith("/exec"):
        # a WebSocket route: the upgrade must be accepted
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock)
        s.sendall((f"GET {url}?command=true HTTP/1.1\r\nHost: agentjail\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = s.recv(4096)
        s.close()
        if not head.startswith(b"HTTP/1.1 101"):
            problems.append(f"GET {path} (WebSocket): {head[:200]!r}")
        continue
    if method == "PUT":
        c = Conn("agentjail", timeout=30)
        c.request("PUT", url, body=b"x")
        r = c.getresponse()
        st, text = r.status, r.read()
        c.close()
    elif path.endswith("/output"):
        st, text = call(method, url + "?offset=0")
    else:
        st, text = call(method, url, body)
    try:
        code = json.loads(text.splitlines()[0] if text else b"{}").get("error", {})
    except (ValueError, AttributeError):
        code = {}
    if st == 405 or (st == 404 and "no such endpoint" in code.get("message", "")):
        problems.append(f"{method} {path}: {st} {text[:200]!r}")

for p in problems:
    print("FAIL:", p)
print(f"{len(routes)} routes checked, {len(problems)} problems")
sys.exit(1 if problems else 0)
