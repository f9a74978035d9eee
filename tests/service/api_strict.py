#!/usr/bin/env python3
"""Walk every route of docs/openapi.json against a running service: a
wrong method (405 with the route's methods in Allow), an unknown field (a
JSON body's, else a query argument: 400 bad_request) and a wrong type
(each property of a JSON body, each typed query argument: 400). Generated
from the OpenAPI file, so that a new route is covered without a change
here. Usage: api_strict.py SOCKET OPENAPI SANDBOX PROCESS; prints a line a
case, exits 1 if one failed."""

import base64
import json
import os
import socket
import sys
import urllib.parse

SOCK, SPEC, SB, PROC = sys.argv[1:5]
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
spec = json.load(open(SPEC))
failed = 0
counts = {"method": 0, "field": 0, "type": 0}

# valid values of required properties, so that only the case's fault is wrong
VALID = {"cmd": ["true"], "signal": "CONT", "name": "strict-never-made", "timeout": 60,
         "code": "pass"}
# and of required query arguments
VALID_ARGS = {"path": "/tmp/strict-never-made"}


def http(method, path, body=None, ctype="application/json"):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(SOCK)
    head = f"{method} {path} HTTP/1.1\r\nHost: agentjail\r\nConnection: close\r\n"
    if body is not None:
        head += f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
    s.sendall(head.encode() + b"\r\n" + (body or b""))
    data = b""
    while b"\r\n\r\n" not in data:
        b = s.recv(65536)
        if not b:
            break
        data += b
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    want = int(hdrs.get("content-length", "-1"))
    while want < 0 or len(rest) < want:  # by its length; else to the end
        b = s.recv(65536)
        if not b:
            break
        rest += b
    s.close()
    try:
        js = json.loads(rest)
    except ValueError:
        js = None
    return status, hdrs, js


def ws_close_reason(path):
    """A WebSocket exec's handshake, then its close frame's reason (or the
    refusal's status line)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(SOCK)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: agentjail\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n")
              .encode())
    data = b""
    reason = None
    while True:
        try:
            b = s.recv(65536)
        except OSError:
            break
        if not b:
            break
        data += b
        head, _, rest = data.partition(b"\r\n\r\n")
        if reason is None and b" 101 " in head.split(b"\r\n")[0]:
            reason = close_reason(rest)
            if reason is not None:  # answer it (RFC 6455 5.5.1): the server
                # closes now instead of waiting (5 s) for a client's close
                s.sendall(b"\x88\x82" + bytes(4) + b"\x03\xe8")
    s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    if b" 101 " not in head.split(b"\r\n")[0]:
        return head.split(b"\r\n")[0].decode()
    reason = close_reason(rest)
    return reason if reason is not None else "(no close frame) " + rest[:80].decode(errors="replace")


def close_reason(rest):
    """The reason of the first whole close frame (opcode 8) in REST, or None."""
    i = 0
    while i + 2 <= len(rest):
        op, n = rest[i] & 0x0F, rest[i + 1] & 0x7F
        i += 2
        if n == 126:
            n, i = int.from_bytes(rest[i:i + 2], "big"), i + 2
        if i + n > len(rest):
            return None
        payload = rest[i:i + n]
        i += n
        if op == 8:
            return payload[2:].decode(errors="replace")
    return None


def check(kind, what, ok, detail):
    global failed
    counts[kind] += 1
    print(("ok   " if ok else "FAIL ") + f"{kind:6} {what}" + ("" if ok else f": {detail}"))
    failed += not ok


def deref(s):
    if s and "$ref" in s:
        node = spec
        for part in s["$ref"].lstrip("#/").split("/"):
            node = node[part]
        return node
    return s or {}


def wrong_value(prop):
    t = prop.get("type")
    if "oneOf" in prop:
        return {"a": 1}
    return {"string": 12, "integer": "12", "number": "12", "boolean": "true",
            "array": 5, "object": 5}.get(t, [[1]])


def wrong_arg(t):
    return {"boolean": "maybe", "integer": "abc", "number": "abc"}.get(t)


def is_bad_request(st, js):
    return st == 400 and isinstance(js, dict) and js.get("error", {}).get("code") == "bad_request"


for tmpl, item in spec["paths"].items():
    path = tmpl.replace("{id}", SB).replace("{proc}", PROC).replace("{ctx}", "default")
    ops = {m.upper(): o for m, o in item.items() if m != "parameters" and not m.startswith("x-")}
    allowed = set(ops)
    # 1. every method the route does not take: 405, Allow its methods
    for m in METHODS:
        if m in allowed:
            continue
        st, h, js = http(m, path)
        got = {x.strip() for x in h.get("allow", "").split(",") if x.strip()}
        check("method", f"{m} {tmpl}", st == 405 and got == allowed,
              f"HTTP {st}, Allow {h.get('allow')!r} (want 405, {sorted(allowed)})")
    if item.get("x-agentjail-proxy"):  # the ports proxy: the sandbox's server judges the rest
        print(f"n/a  field  {tmpl}: passed on to the server inside")
        continue
    for m, op in ops.items():
        params = list(item.get("parameters", [])) + list(op.get("parameters", []))
        qparams = [deref(p) for p in params if deref(p).get("in") == "query"]
        base_q = {p["name"]: VALID_ARGS[p["name"]] for p in qparams if p["name"] in VALID_ARGS}
        if "path_b64" in base_q and "path" in base_q:
            del base_q["path_b64"]
        body = op.get("requestBody", {}).get("content", {})
        schema = deref(body.get("application/json", {}).get("schema"))
        what = f"{m} {tmpl}"

        def url(extra):
            q = dict(base_q)
            q.update(extra)
            return path + ("?" + urllib.parse.urlencode(q) if q else "")

        ws = m == "GET" and tmpl.endswith("/exec")
        if ws:  # the WebSocket exec: refused with a close frame saying why
            r = ws_close_reason(url({"command": "true", "bogus_field": "1"}))
            check("field", what + " ?bogus_field", "unknown query argument" in r, r)
            for p in qparams:
                bad = wrong_arg(p.get("schema", {}).get("type"))
                if bad is not None:
                    r = ws_close_reason(url({"command": "true", p["name"]: bad}))
                    check("type", f"{what} ?{p['name']}={bad}", "expected" in r, r)
            continue
        if schema:  # a JSON body
            good = {k: VALID[k] for k in schema.get("required", [])}
            st, _, js = http(m, path, json.dumps(dict(good, bogus_field=1)).encode())
            check("field", what + " {bogus_field}", is_bad_request(st, js), f"HTTP {st} {js}")
            for k, prop in schema.get("properties", {}).items():
                st, _, js = http(m, path, json.dumps(dict(good, **{k: wrong_value(prop)})).encode())
                check("type", f"{what} {{{k}: {json.dumps(wrong_value(prop))}}}",
                      is_bad_request(st, js), f"HTTP {st} {js}")
            continue
        # no JSON body: an unknown query argument; typed arguments mistyped
        st, _, js = http(m, url({"bogus_field": "1"}))
        check("field", what + " ?bogus_field", is_bad_request(st, js), f"HTTP {st} {js}")
        typed = False
        for p in qparams:
            bad = wrong_arg(p.get("schema", {}).get("type"))
            if bad is not None:
                typed = True
                st, _, js = http(m, url({p["name"]: bad}))
                check("type", f"{what} ?{p['name']}={bad}", is_bad_request(st, js),
                      f"HTTP {st} {js}")
        if m == "POST" and not body:  # takes no body: a body not an object, a field
            st, _, js = http(m, url({}), b"[]")
            check("type", what + " body []", is_bad_request(st, js), f"HTTP {st} {js}")
            st, _, js = http(m, url({}), b'{"bogus_field": 1}')
            check("field", what + " {bogus_field}", is_bad_request(st, js), f"HTTP {st} {js}")
        elif not typed:
            print(f"n/a  type   {what}: no typed argument nor body")
    st, _, js = http("GET", f"/v1/sandboxes/{SB}/processes/{PROC}")
    if not (st == 200 and js.get("running")):  # nothing of the walk may change it
        check("field", f"after {tmpl}: {PROC} still running", False, f"HTTP {st} {js}")

# the cases of the issue, by name
for body in ({"memory": ["64M", "128M"]}, {"memory": True}, {"pids": "12"}, {"cpus": "0.5"},
             {"timeout": "60"}, {"memory": 67108864}, {"env": ["A"]}, {"ro": [["/x"]]}):
    st, _, js = http("POST", "/v1/sandboxes", json.dumps(body).encode())
    check("type", f"POST /v1/sandboxes {json.dumps(body)}", is_bad_request(st, js),
          f"HTTP {st} {js}")

print(f"# {counts['method']} wrong methods, {counts['field']} unknown fields, "
      f"{counts['type']} wrong types; {failed} failed")
sys.exit(1 if failed else 0)
