#!/usr/bin/env bats
# The ports proxy (docs/api.md, "Ports"): /v1/sandboxes/{id}/ports/{port}/...
# reaches a server on a sandbox's own loopback address through the API,
# HTTP and WebSocket, with no host port; errors are the API's JSON.

load helpers

SRV=$BATS_TEST_DIRNAME/portsrv.py

# Tenants alice and bob (tokens), the service on a TCP port of its own.
svc_tenants() {
    printf '[{"tenant": "alice", "token": "alice-token-0123456789"},
 {"tenant": "bob", "token": "bob-token-0123456789ab"}]\n' >"$T/tokens.json"
    chmod 600 "$T/tokens.json"
    PORT=$((20000 + RANDOM % 20000))
    svc_start --listen "127.0.0.1:$PORT" --tokens "$T/tokens.json"
}

# as TOKEN METHOD PATH [curl args]: sets $status_code and $body.
as() {
    local tok=$1 m=$2 p=$3 out
    shift 3
    out=$(curl -sS --max-time 30 ${tok:+-H "Authorization: Bearer $tok"} -X "$m" \
        "http://127.0.0.1:$PORT$p" "$@" -w '\n%{http_code}')
    status_code=${out##*$'\n'}
    body=${out%$'\n'*}
}
ALICE=alice-token-0123456789
BOB=bob-token-0123456789ab

# A sandbox of alice's with portsrv.py serving on its 127.0.0.1:8080.
alice_server() {
    as $ALICE POST /v1/sandboxes -d '{}'
    assert_eq "$status_code" 201 "$body"
    id=$(jq -r .id <<<"$body")
    as $ALICE PUT "/v1/sandboxes/$id/files?path=/tmp/srv.py" --data-binary "@$SRV"
    assert_eq "$status_code" 201 "$body"
    as $ALICE POST "/v1/sandboxes/$id/exec" \
        -d '{"cmd": ["python3", "/tmp/srv.py", "serve", "8080"], "background": true}'
    for _ in $(seq 100); do
        as $ALICE GET "/v1/sandboxes/$id/ports/8080/ready"
        [ "$status_code" = 200 ] && return 0
        sleep 0.1
    done
    fail "the server in the sandbox did not start: $status_code $body"
}

@test "ports: HTTP to a server inside: path, query, body and headers pass, the token never" {
    svc_tenants
    alice_server
    as $ALICE POST "/v1/sandboxes/$id/ports/8080/a/b%20c?x=1&y=a%26b" \
        -H 'Content-Type: text/plain' -H 'Cookie: k=v' -H 'Connection: keep-alive' \
        --data-binary 'hello body'
    assert_eq "$status_code" 200 "$body"
    assert_eq "$(jq -c '[.method, .target, .body]' <<<"$body")" \
        '["POST","/a/b%20c?x=1&y=a%26b","hello body"]'
    h=$(jq -c '.headers' <<<"$body")
    assert_eq "$(jq -c '[.host, .connection, ."content-type", .cookie, ."content-length"]' <<<"$h")" \
        '["localhost:8080","close","text/plain","k=v","10"]' "$h"
    # agentjail's bearer token is the service's, not the sandbox's
    assert_eq "$(jq -r '.authorization // "none"' <<<"$h")" none "$h"
    ! grep -q alice-token <<<"$body"
    # the port alone is its root; a GET over the unix socket too (the operator)
    api_status GET "/v1/sandboxes/$id/ports/8080"
    assert_eq "$status_code" 404 "$body" # another tenant's, for the operator too
    as $ALICE GET "/v1/sandboxes/$id/ports/8080"
    assert_eq "$(jq -c '[.method, .target]' <<<"$body")" '["GET","/"]'
    # the proxy went through the supervisor: audited, with the tenant
    jq -e 'select(.event == "port_connect" and .port == 8080 and .tenant == "alice")' \
        "$STATE/audit.log" >/dev/null
}

@test "ports: a WebSocket upgrade is the server's: its 101, then bytes both ways" {
    svc_tenants
    alice_server
    run python3 "$SRV" ws "127.0.0.1:$PORT" "/v1/sandboxes/$id/ports/8080/ws" 3000000 $ALICE
    assert_status 0
    assert_eq "${lines[0]}" "HTTP/1.1 101 Switching Protocols" "$output"
    assert_eq "${lines[1]}" "echoed 3000000" "$output"
    assert_eq "${lines[2]}" "closed" "$output"
    # without the token: 401, never the server's 101
    run python3 "$SRV" ws "127.0.0.1:$PORT" "/v1/sandboxes/$id/ports/8080/ws" 10
    assert_contains "${lines[0]}" " 401 "
}

@test "ports: errors are JSON: bad port 400, no sandbox 404, another tenant's 404, closed port 502" {
    svc_tenants
    alice_server
    for p in 0 65536 99999 abc 08080 -1 ""; do
        as $ALICE GET "/v1/sandboxes/$id/ports/$p/x"
        assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 400:bad_request "port '$p': $body"
    done
    as $ALICE GET "/v1/sandboxes/$id/ports"
    assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 400:bad_request "$body"
    as $ALICE GET "/v1/sandboxes/sb-0123456789abcdef/ports/8080/"
    assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 404:not_found "$body"
    # bob: alice's sandbox is not there for him, whatever the method
    for m in GET POST PUT DELETE; do
        as $BOB $m "/v1/sandboxes/$id/ports/8080/x" -d 'stolen'
        assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 404:not_found "bob $m: $body"
    done
    run python3 "$SRV" ws "127.0.0.1:$PORT" "/v1/sandboxes/$id/ports/8080/ws" 10 $BOB
    assert_contains "${lines[0]}" " 404 "
    # nothing listens on 8081 inside; 8082 listens on the host's loopback,
    # which is not the sandbox's
    python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1", 8082)); s.listen(); time.sleep(30)' &
    hostsrv=$!
    for p in 8081 8082; do
        as $ALICE GET "/v1/sandboxes/$id/ports/$p/"
        assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 502:port_closed "$p: $body"
        assert_contains "$body" "nothing listens on port $p"
    done
    kill $hostsrv
    # no token: 401
    as "" GET "/v1/sandboxes/$id/ports/8080/"
    assert_eq "$status_code" 401 "$body"
    # paused: 409, as for exec
    as $ALICE POST "/v1/sandboxes/$id/pause"
    as $ALICE GET "/v1/sandboxes/$id/ports/8080/"
    assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 409:sandbox_paused "$body"
    as $ALICE POST "/v1/sandboxes/$id/resume"
    as $ALICE GET "/v1/sandboxes/$id/ports/8080/ready"
    assert_eq "$status_code" 200 "$body"
}

@test "ports: a level without it answers 501" {
    svc_start
    # level 4 (WebAssembly) has no network (levels 1-3 have the proxy)
    api_status POST /v1/sandboxes -d '{"isolation": "wasm"}'
    [ "$status_code" = 201 ] || skip "wasm sandboxes not available here: $body"
    id=$(jq -r .id <<<"$body")
    api_status GET "/v1/sandboxes/$id/ports/8080/"
    assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 501:not_supported "$body"
}
