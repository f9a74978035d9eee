#!/usr/bin/env bats
# Scoped secrets over HTTPS (docs/network.md, "Secrets for the hosts they
# belong to"): netd terminates TLS toward a secret's hosts with a CA of its
# own, verifies the server against --upstream-ca, and puts the value in.
# The fake world of world.bash serves HTTPS on 443 (fakeinet.py --tls) with
# certificates of a test CA made here: api.example.test (192.0.2.10) and
# other.test present the test CA's leaf, bad.example.test a self-signed
# one. Nothing here sends a packet to a real address.

load ../service/helpers # the integration helpers, and mk_tiny_root
load world

setup_file() {
    world_setup_file
    world_test_certs "$BATS_FILE_TMPDIR/certs"
}

setup() {
    CERTS=$BATS_FILE_TMPDIR/certs
    WORLD_WEB_PORTS=80 WORLD_TLS=443:$CERTS world_setup
}
teardown() { world_teardown; }

VALUE='sk-tls-Zq8!x&y=1'

arun() {
    run --separate-stderr hrun --dns 192.0.2.53 --allow api.example.test --allow other.test \
        --allow bad.example.test --secret "TOKEN@api.example.test,bad.example.test=$VALUE" \
        --upstream-ca "$CERTS/ca.crt" --net-log "$T/net.jsonl" "$@"
}

req() { jq -c "select(.path == \"$1\")" "$WEB_LOG"; }

@test "HTTPS to a secret's host: the value goes in (keep-alive, curl, python, node); other hosts get the placeholder; the CA key is nowhere inside" {
    # node's https ignores HTTPS_PROXY: CONNECT by hand (the Host header
    # names the target, as proxy agents send it); it trusts the CA
    # only through NODE_EXTRA_CA_CERTS (its own roots, not the system's)
    cat >"$WS/node.js" <<'EOF'
const http = require('http'), tls = require('tls');
const p = new URL(process.env.HTTPS_PROXY);
http.request({host: p.hostname, port: p.port, method: 'CONNECT', path: 'api.example.test:443',
              headers: {Host: 'api.example.test:443'}})
  .on('connect', (res, sock) => {
    const t = tls.connect({socket: sock, servername: 'api.example.test'}, () =>
      t.end('GET /node HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: Bearer ' +
            process.env.TOKEN + '\r\nConnection: close\r\n\r\n'));
    let d = ''; t.on('data', c => d += c);
    t.on('end', () => console.log('node ' + d.split('\r\n')[0]));
    t.on('error', e => console.log('node error ' + e.code));
  }).end();
EOF
    # everything a process inside can read that agentjail may have written,
    # concatenated: / but /usr, /proc, /sys, /dev (host trees or kernel
    # views), plus every process's environment and command line
    cat >"$WS/dump.py" <<'EOF'
import itertools, os
out = open("/workspace/inside.bin", "wb")
skip = ("/usr", "/proc", "/sys", "/dev", "/workspace")
def walk(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
        yield top, files
for top, files in itertools.chain(walk("/"), walk("/dev/shm")):
    for f in files:
        try:
            with open(os.path.join(top, f), "rb") as fh:
                out.write(fh.read(16 << 20))
        except OSError:
            pass
for pid in filter(str.isdigit, os.listdir("/proc")):
    for what in ("environ", "cmdline"):
        try:
            out.write(open(f"/proc/{pid}/{what}", "rb").read())
        except OSError:
            pass
EOF
    AGENTJAIL_CA_KEY_FILE=$T/ca.key arun -- sh -c '
        curl -sS -m 10 -H "Authorization: Bearer $TOKEN" -w "curl %{http_code} %{num_connects}\n" \
            -o /dev/null -o /dev/null https://api.example.test/a https://api.example.test/b
        curl -sS -m 10 -k -H "Authorization: Bearer $TOKEN" -w "other %{http_code}\n" -o /dev/null \
            https://other.test/c
        python3 -c "import os, urllib.request as u; print(\"python\", u.urlopen(u.Request(\"https://api.example.test/py\", headers={\"x-api-key\": os.environ[\"TOKEN\"]}), timeout=10).status)"
        node /workspace/node.js
        env >/workspace/env.txt; python3 /workspace/dump.py
        echo "inside: $TOKEN"'
    assert_status 0
    assert_output_has_line "curl 200 1"
    assert_output_has_line "curl 200 0" # the second request: the same connection
    assert_output_has_line "other 200"
    assert_output_has_line "python 200"
    assert_output_has_line "node HTTP/1.1 200 OK"
    local ph
    ph=$(sed -n 's/^inside: //p' <<<"$output")
    [[ "$ph" == agentjail-placeholder-TOKEN-* ]] || fail "not a placeholder: $ph"
    # the server saw the value over TLS, from one connection for /a and /b
    local p
    for p in /a /b /node; do
        [ "$(req $p | jq -r '.headers.Authorization')" = "Bearer $VALUE" ] || fail "$p: $(req $p)"
        [ "$(req $p | jq -r '.tls')" = true ] || fail "$p not over TLS: $(req $p)"
    done
    [ "$(req /py | jq -r '.headers["X-Api-Key"]')" = "$VALUE" ] || fail "/py: $(req /py)"
    [ "$(req /a | jq .peer)" = "$(req /b | jq .peer)" ] || fail "/a and /b: two connections: $(cat "$WEB_LOG")"
    # another host: tunnelled untouched, the placeholder arrives
    [ "$(req /c | jq -r '.headers.Authorization')" = "Bearer $ph" ] || fail "/c: $(req /c)"
    q() { jq -c "select($1)" "$T/net.jsonl" | wc -l; }
    [ "$(q '.event == "secret_injected" and .host == "api.example.test" and .port == 443')" -eq 4 ] ||
        fail "injected: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "proxy" and .intercepted and .verdict == "allowed"')" -eq 4 ] || fail "$(cat "$T/net.jsonl")"
    # the inside trusts the CA whose key netd wrote for this test
    grep -q "^SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt$" "$WS/env.txt" || fail "$(cat "$WS/env.txt")"
    grep -q "^NODE_EXTRA_CA_CERTS=" "$WS/env.txt" || fail "$(cat "$WS/env.txt")"
    # the key: not in any file, environment or command line inside, nor the output
    local hex b64
    hex=$(openssl pkey -in "$T/ca.key" -text -noout | awk '/^priv:/ {f = 1; next} /^pub:/ {f = 0} f' | tr -d ' :\n')
    hex=${hex: -64}
    b64=$(sed -n 2p "$T/ca.key")
    [ ${#hex} -eq 64 ] && [ -n "$b64" ] || fail "no key: $(cat "$T/ca.key")"
    [ "$(stat -c %s "$WS/inside.bin")" -gt 100000 ] || fail "the dump is too small to mean anything"
    grep -q "BEGIN CERTIFICATE" "$WS/inside.bin" || fail "the dump holds no CA bundle"
    python3 - "$WS/inside.bin" "$hex" "$b64" <<'EOF' || fail "the CA key is inside"
import sys
data = open(sys.argv[1], "rb").read()
raw = bytes.fromhex(sys.argv[2])
for needle in (raw, raw[::-1], sys.argv[2].encode(), sys.argv[3].encode()):
    if needle in data:
        sys.exit(1)
EOF
    ! grep -rqiF -e "$hex" -e "$b64" -e "$VALUE" "$WS" "$T/net.jsonl" || fail "the key or the value in a file"
    [[ "$output$stderr" != *"$b64"* && "$output$stderr" != *"$VALUE"* ]] || fail "in the output"
}

@test "HTTPS interception refuses a Host or SNI naming another host and a server the CA does not vouch for" {
    arun -- sh -c '
        curl -sS -m 10 -H "Host: other.test" -H "Authorization: Bearer $TOKEN" -w "host %{http_code}\n" \
            -o /dev/null https://api.example.test/host
        curl -sS -m 10 -H "Authorization: Bearer $TOKEN" -w "bad %{http_connect}\n" -o /dev/null \
            https://bad.example.test/bad
        python3 -c "
import os, socket, ssl
s = socket.create_connection((os.environ[\"HTTPS_PROXY\"].split(\"/\")[2].split(\":\")[0], 3128))
s.sendall(b\"CONNECT api.example.test:443 HTTP/1.1\r\n\r\n\")
s.recv(200)
c = ssl.create_default_context(); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE
try:
    t = c.wrap_socket(s, server_hostname=\"other.test\")
    t.sendall(b\"GET /sni HTTP/1.1\r\nHost: other.test\r\nAuthorization: Bearer \" + os.environ[\"TOKEN\"].encode() + b\"\r\n\r\n\")
    print(\"sni\", t.recv(100))
except (ssl.SSLError, OSError) as e:
    print(\"sni refused\")
"'
    assert_status 0
    assert_output_has_line "host 421"
    assert_output_has_line "bad 502"
    assert_output_has_line "sni refused"
    # none of them reached a server with a request, nor got the value
    [ -z "$(req /host)$(req /bad)$(req /sni)" ] || fail "a refused request was sent: $(cat "$WEB_LOG")"
    ! grep -qF "$VALUE" "$WEB_LOG" || fail "the value went out: $(cat "$WEB_LOG")"
    q() { jq -c "select(.verdict == \"refused\" and .intercepted and ($1))" "$T/net.jsonl" | wc -l; }
    [ "$(q '.reason | test("Host header")')" -eq 1 ] || fail "host: $(cat "$T/net.jsonl")"
    [ "$(q '.host == "bad.example.test" and (.reason | test("certificate is not trusted"))')" -eq 1 ] ||
        fail "bad: $(cat "$T/net.jsonl")"
    [ "$(q '.reason | test("^the TLS server name")')" -eq 1 ] || fail "sni: $(cat "$T/net.jsonl")"
    [ "$(jq -c 'select(.event == "secret_injected")' "$T/net.jsonl" | wc -l)" -eq 0 ] ||
        fail "injected: $(cat "$T/net.jsonl")"
}

@test "HTTPS: WebSocket, keep-alive with chunked bodies, :body secrets, --inspect, --net open" {
    local bvalue='bk-Body-7r!x'
    # three requests on one TLS connection (http.client keeps it): a
    # chunked POST, a GET, a Content-Length POST, each with the placeholder
    cat >"$WS/ka.py" <<'PY'
import http.client, os, urllib.parse
p = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
c = http.client.HTTPSConnection(p.hostname, p.port, timeout=10)
c.set_tunnel("api.example.test", 443)
auth = {"Authorization": "Bearer " + os.environ["TOKEN"]}
c.request("POST", "/ka1", body=iter([b"a=", os.environ["BODY"].encode(), b"&z=1"]), headers=auth,
          encode_chunked=True)
r1 = c.getresponse(); r1.read()
c.request("GET", "/ka2", headers=auth)
r2 = c.getresponse(); r2.read()
c.request("POST", "/ka3", body='{"k":"%s","t":"%s"}' % (os.environ["BODY"], os.environ["TOKEN"]), headers=auth)
r3 = c.getresponse(); r3.read()
print("ka", r1.status, r2.status, r3.status)
PY
    run --separate-stderr hrun --dns 192.0.2.53 --allow api.example.test --allow other.test \
        --secret "TOKEN@api.example.test=$VALUE" --secret "BODY@api.example.test:body=$bvalue" \
        --inspect other.test --upstream-ca "$CERTS/ca.crt" --net-log "$T/net.jsonl" \
        --ro "$NET_DIR/wsclient.py:/wsclient.py" -- sh -c '
        python3 /wsclient.py wss://api.example.test/ws-api hello "two $TOKEN" -H "Authorization: Bearer $TOKEN"
        python3 /wsclient.py wss://other.test/ws-other hi -H "Authorization: Bearer $TOKEN"
        python3 /wsclient.py wss://api.example.test/nows-tls --then /after-nows-tls -H "Authorization: Bearer $TOKEN"
        python3 /wsclient.py wss://api.example.test/ws-piped --pipeline /pre-ws piped -H "Authorization: Bearer $TOKEN"
        python3 /workspace/ka.py
        { printf "a=%s&" "$BODY"; head -c 1100000 /dev/zero | tr "\0" x; printf "&b=%s" "$BODY"; } >/tmp/big
        curl -sS -m 10 --data-binary @/tmp/big -H "X-Big: $TOKEN" -w "big %{http_code}\n" -o /dev/null \
            https://api.example.test/s3-big
        curl -sS -m 10 --data-binary @/tmp/big -H "Transfer-Encoding: chunked" -w "bigc %{http_code}\n" \
            -o /dev/null https://api.example.test/big-chunked
        curl -sS -m 10 -w "inspect %{http_code}\n" -o /dev/null "https://other.test/seen?q=$TOKEN"
        curl -sS -m 10 --http2 -H "Authorization: Bearer $TOKEN" -w "h2 %{http_code} %{http_version}\n" \
            -o /dev/null https://api.example.test/h2'
    assert_status 0
    assert_output_has_line "ws 101"
    assert_output_has_line "echo hello"
    assert_output_has_line "ka 200 200 200"
    assert_output_has_line "big 200"
    assert_output_has_line "bigc 200"
    assert_output_has_line "inspect 200"
    # a client offering h2 gets http/1.1: this server speaks only that (ALPN)
    assert_output_has_line "h2 200 1.1"
    [ "$(req /h2 | jq -r '.headers.Authorization')" = "Bearer $VALUE" ] || fail "/h2: $(req /h2)"
    [ "$(grep -c '^ws 101$' <<<"$output")" -eq 3 ] || fail "three upgrades: $output"
    # pipelined: a GET and the upgrade in one write; the GET's 200 is its
    # own, the 101 the upgrade's, and the frames after it pass
    assert_output_has_line "pre 200"
    assert_output_has_line "echo piped"
    [ "$(req /ws-piped | jq -c '.ws')" = '["piped"]' ] || fail "/ws-piped: $(req /ws-piped)"
    assert_output_has_line "echo hi"
    # an upgrade the server declines leaves the connection HTTP: the next
    # request on it is checked and gets the value like any other
    assert_output_has_line "ws 401"
    assert_output_has_line "then 200"
    [ "$(req /after-nows-tls | jq -r '.headers.Authorization')" = "Bearer $VALUE" ] ||
        fail "/after-nows-tls: $(req /after-nows-tls)"
    local ph
    ph=$(req /ws-other | jq -r '.headers.Authorization' | sed 's/^Bearer //')
    [[ "$ph" == agentjail-placeholder-TOKEN-* ]] || fail "other.test: $(req /ws-other)"
    # frames are not touched: the placeholder came back as it was sent
    assert_output_has_line "echo two $ph"
    # the upgrade toward the secret's host got the value; its frames passed
    [ "$(req /ws-api | jq -r '.headers.Authorization')" = "Bearer $VALUE" ] || fail "/ws-api: $(req /ws-api)"
    [ "$(req /ws-api | jq -c '.ws')" = "[\"hello\",\"two $ph\"]" ] || fail "/ws-api: $(req /ws-api)"
    # one connection, three requests, each with the value; bodies filled
    local p
    for p in /ka1 /ka2 /ka3; do
        [ "$(req $p | jq -r '.headers.Authorization')" = "Bearer $VALUE" ] || fail "$p: $(req $p)"
        [ "$(req $p | jq .peer)" = "$(req /ka1 | jq .peer)" ] || fail "$p: another connection: $(cat "$WEB_LOG")"
    done
    [ "$(req /ka1 | jq -r '.body')" = "a=$bvalue&z=1" ] || fail "/ka1: $(req /ka1)"
    [ "$(req /ka1 | jq -r '.headers["Transfer-Encoding"]')" = null ] || fail "/ka1 still chunked: $(req /ka1)"
    [ "$(req /ka3 | jq -r '.body')" = "{\"k\":\"$bvalue\",\"t\":\"$ph\"}" ] || fail "/ka3: $(req /ka3)"
    # a body over 1 MiB, filled at both ends: with a Content-Length
    # spooled and sent with its new length (/s3*: chunked gets 411);
    # chunked streamed and sent chunked
    local x
    x=$({ printf "a=%s&" "$bvalue"; head -c 1100000 /dev/zero | tr '\0' x; printf "&b=%s" "$bvalue"; } |
        sha256sum | cut -d' ' -f1)
    [ "$(req /s3-big | jq -r '.body_sha256')" = "$x" ] || fail "/s3-big: $(req /s3-big)"
    [ "$(req /s3-big | jq -r '.headers["Content-Length"]')" = "$((1100000 + 6 + 2 * ${#bvalue}))" ] ||
        fail "/s3-big: $(req /s3-big | jq -c .headers)"
    [ "$(req /s3-big | jq -r '.headers["X-Big"]')" = "$VALUE" ] || fail "/s3-big: header"
    [ "$(req /big-chunked | jq -r '.body_sha256')" = "$x" ] || fail "/big-chunked: $(req /big-chunked)"
    [ "$(req /big-chunked | jq -r '.headers["Transfer-Encoding"]')" = chunked ] || fail "/big-chunked: not chunked"
    q() { jq -c "select($1)" "$T/net.jsonl" | wc -l; }
    [ "$(q '.event == "secret_injected" and .where == "header X-Big"')" -eq 1 ] ||
        fail "big: $(cat "$T/net.jsonl")"
    # --inspect: other.test intercepted, each request logged with its path
    # (never its query); its placeholder withheld, and logged
    [ "$(q '.event == "proxy" and .intercepted and .host == "other.test" and .method == "GET" and .path == "/seen"')" -eq 1 ] ||
        fail "inspect: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "secret_withheld" and .host == "other.test"')" -eq 2 ] || fail "withheld: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "secret_injected" and .secret == "BODY" and .where == "body"')" -eq 4 ] ||
        fail "body: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "secret_withheld" and .secret == "TOKEN" and .where == "body"')" -eq 1 ] ||
        fail "body withheld: $(cat "$T/net.jsonl")"
    [ "$(jq -r 'select(.path == "/seen?q=\($ph)") | .tls' --arg ph "$ph" "$WEB_LOG")" = true ] ||
        fail "/seen: $(cat "$WEB_LOG")"
    ! grep -qF -e "$VALUE" -e "$bvalue" "$T/net.jsonl" || fail "a value in the log"

    # --net open: the proxy is the way to the secret's host (HTTPS too)
    run --separate-stderr hrun --net open --dns 192.0.2.53 --secret "TOKEN@api.example.test=$VALUE" \
        --upstream-ca "$CERTS/ca.crt" -- sh -c '
        curl -sS -m 10 -H "Authorization: Bearer $TOKEN" -w "open %{http_code}\n" -o /dev/null \
            https://api.example.test/open-tls'
    assert_status 0
    assert_output_has_line "open 200"
    [ "$(req /open-tls | jq -r '.headers.Authorization')" = "Bearer $VALUE" ] || fail "/open-tls: $(req /open-tls)"
}

@test "HTTPS over HTTP/2: h2 on both sides, the value in HPACK headers, concurrent streams, :authority checked" {
    # an HTTP/2 server (ALPN h2, http/1.1) on port 8443 beside the world's
    local h2log=$T/h2.jsonl
    ip netns exec "$INS" /usr/bin/python3 "$NET_DIR/h2echo.py" 0.0.0.0:8443 "$CERTS/default.pem" \
        "$h2log" "$T/h2.ready" >/dev/null 2>&1 3>&- &
    WORLD_PIDS+=($!)
    local i
    for ((i = 0; i < 200; i++)); do [ -e "$T/h2.ready" ] && break; sleep 0.05; done
    [ -e "$T/h2.ready" ] || fail "h2echo.py did not start"
    run --separate-stderr hrun --dns 192.0.2.53 --allow api.example.test:8443 --allow other.test:8443 \
        --secret "TOKEN@api.example.test=$VALUE" --inspect other.test --upstream-ca "$CERTS/ca.crt" \
        --net-log "$T/net.jsonl" -- sh -c '
        A="Authorization: Bearer $TOKEN"
        curl -sS -m 10 --http2 -H "$A" -w "api %{http_code} %{http_version}\n" -o /dev/null "https://api.example.test:8443/h2-api?k=$TOKEN"
        curl -sS -m 10 --http2 -H "$A" -w "other %{http_code} %{http_version}\n" -o /dev/null https://other.test:8443/h2-other
        curl -sS -m 10 --http2 -H "$A" -d "b=$TOKEN" -w "post %{http_code}\n" -o /dev/null https://api.example.test:8443/h2-post
        curl -sS -m 10 --http2 --parallel -H "$A" -w "par %{http_code} %{http_version}\n" \
            -o /dev/null -o /dev/null -o /dev/null https://api.example.test:8443/h2-par[1-3]
        head -c 1048576 /dev/zero | curl -sS -m 20 --http2 -H "$A" --data-binary @- -w "up %{http_code} %{http_version}\n" \
            -o /dev/null https://api.example.test:8443/h2-up
        curl -sS -m 20 --http2 -H "$A" -w "down %{http_code} %{size_download}\n" -o /dev/null https://api.example.test:8443/h2-big
        curl -sS -m 10 --http2 -H "Host: other.test:8443" -H "$A" -w "mismatch %{http_code}\n" -o /dev/null https://api.example.test:8443/h2-mm
        python3 -c "import os, urllib.request as u
print(\"h1\", u.urlopen(u.Request(\"https://api.example.test:8443/h2-h1\", headers={\"Authorization\": \"Bearer \" + os.environ[\"TOKEN\"]})).status)"
        echo "inside: $TOKEN"'
    assert_status 0
    assert_output_has_line "api 200 2"
    assert_output_has_line "other 200 2"
    assert_output_has_line "post 200"
    [ "$(grep -c '^par 200 2$' <<<"$output")" -eq 3 ] || fail "parallel: $output"
    assert_output_has_line "mismatch 421"
    assert_output_has_line "h1 200"
    # bodies past the 64 KiB windows, both ways (flow control relayed)
    assert_output_has_line "up 200 2"
    assert_output_has_line "down 200 2097152"
    local ph
    ph=$(sed -n 's/^inside: //p' <<<"$output")
    [[ "$ph" == agentjail-placeholder-TOKEN-* ]] || fail "not a placeholder: $ph"
    h2req() { jq -c "select(.path | startswith(\"$1\"))" "$h2log"; }
    # the server spoke h2 with netd and got the value, in a header and the
    # query (percent-encoded there)
    [ "$(h2req /h2-api | jq -r '.proto + " " + .headers.authorization + " " + .path')" = \
        "h2 Bearer $VALUE /h2-api?k=sk-tls-Zq8%21x%26y%3D1" ] || fail "/h2-api: $(h2req /h2-api)"
    [ "$(h2req /h2-api | jq -r '.headers[":authority"]')" = "api.example.test:8443" ] || fail "$(h2req /h2-api)"
    # another host: the placeholder; a body as it was sent (no :body secret)
    [ "$(h2req /h2-other | jq -r '.proto + " " + .headers.authorization')" = "h2 Bearer $ph" ] ||
        fail "/h2-other: $(h2req /h2-other)"
    [ "$(h2req /h2-post | jq -r '.body')" = "b=$ph" ] || fail "/h2-post: $(h2req /h2-post)"
    [ "$(h2req /h2-up | jq -r '.len')" = 1048576 ] || fail "/h2-up: $(h2req /h2-up | head -c 300)"
    # three streams on one connection, each filled
    [ "$(h2req /h2-par | jq -r 'select(.proto == "h2" and .headers.authorization == "Bearer '"$VALUE"'") | .peer' | sort -u | wc -l)" -eq 1 ] ||
        fail "parallel: $(h2req /h2-par)"
    [ "$(h2req /h2-par | wc -l)" -eq 3 ] || fail "parallel: $(h2req /h2-par)"
    # an :authority naming another host than SNI and CONNECT: never sent
    [ -z "$(h2req /h2-mm)" ] || fail "/h2-mm was sent: $(h2req /h2-mm)"
    # a client without h2 (urllib): HTTP/1.1 on both sides, the value in
    [ "$(h2req /h2-h1 | jq -r '.proto + " " + .headers.Authorization')" = "http/1.1 Bearer $VALUE" ] ||
        fail "/h2-h1: $(h2req /h2-h1)"
    q() { jq -c "select($1)" "$T/net.jsonl" | wc -l; }
    [ "$(q '.event == "proxy" and .protocol == "h2" and .verdict == "refused" and .status == null and (.reason | test(":authority"))')" -eq 1 ] ||
        fail "$(cat "$T/net.jsonl")"
    [ "$(q '.event == "secret_injected" and .host == "api.example.test" and .port == 8443')" -ge 6 ] ||
        fail "$(cat "$T/net.jsonl")"
    ! grep -qF "$VALUE" "$T/net.jsonl" || fail "a value in the log"
}

@test "the CA bundle: read-only inside (default root, image); a FIFO, directory or socket at an image's bundle path: 125 at once" {
    arun -- sh -c "$WORLD_CA_TAMPER"
    assert_status 0
    world_assert_ca_intact
    # an image with Debian's bundle: it and netd's CA there, read-only
    mk_tiny_root "$T/tree" sh cat cksum grep rm mv cp mkdir
    mkdir -p "$T/tree/etc/ssl/certs"
    local b=$T/tree/etc/ssl/certs/ca-certificates.crt n
    cp /etc/ssl/certs/ca-certificates.crt "$b"
    n=$(grep -c "BEGIN CERTIFICATE" "$b")
    arun --rootfs "$T/tree" -- sh -c 'grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt; '"$WORLD_CA_TAMPER"
    assert_status 0
    [ "${lines[0]}" -eq $((n + 1)) ] || fail "not the image's bundle and netd's CA: $output"
    world_assert_ca_intact
    # anything else there is refused before the command starts (the old
    # code read a FIFO, blocking: the start hung); the image is unchanged
    rm "$b"
    mkfifo "$b"
    AJ_TIMEOUT=10 arun --rootfs "$T/tree" -- cat /etc/ssl/certs/ca-certificates.crt
    assert_status 125
    assert_contains "$stderr" "ca-certificates.crt: it is a FIFO, not a regular file"
    [ -p "$b" ] && [ ! -e "$T/tree/.agentjail" ] || fail "the image changed"
    rm "$b"
    mkdir "$b"
    AJ_TIMEOUT=10 arun --rootfs "$T/tree" -- cat /etc/ssl/certs/ca-certificates.crt
    assert_status 125
    assert_contains "$stderr" "it is a directory, not a regular file"
    rmdir "$b"
    python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$b"
    AJ_TIMEOUT=10 arun --rootfs "$T/tree" -- cat /etc/ssl/certs/ca-certificates.crt
    assert_status 125
    assert_contains "$stderr" "it is a socket, not a regular file"
}
