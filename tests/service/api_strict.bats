#!/usr/bin/env bats
# The API is strict (docs/api.md, "Strictness"): every route of
# docs/openapi.json is walked (api_strict.py, generated from the file) with
# a wrong method (405 and Allow), an unknown field and a wrong type (400
# bad_request), and nothing changes; a missing workspace is a 400; the
# probes answer without a token.

load helpers

@test "api strict: every route refuses a wrong method, an unknown field, a wrong type" {
    svc_start
    local id pid
    id=$(sb_create '{"timeout": 600}')
    api POST "/v1/sandboxes/$id/files?path=/tmp/keep" -X PUT --data-binary keep >/dev/null
    pid=$(api POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["sleep", "300"], "background": true}' |
        jq -er .process)
    run python3 "$BATS_TEST_DIRNAME/api_strict.py" "$SOCK" "$_aj_root/docs/openapi.json" "$id" "$pid"
    echo "$output" >&2
    [ "$status" -eq 0 ] || fail "the API is not strict"
    [[ "$output" == *" 0 failed"* ]]
    # every route was walked: as many paths as the file has
    local n
    n=$(jq '.paths | length' "$_aj_root/docs/openapi.json")
    assert_eq "$(grep -c '^ok   method' <<<"$output" | tr -d ' ')" \
        "$(jq '[.paths[] | 5 - ([keys[] | select(. != "parameters" and (startswith("x-") | not))] | length)] | add' \
            "$_aj_root/docs/openapi.json")"
    [ "$n" -ge 16 ]
    # nothing changed: one sandbox, running, its file and its process there
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 1
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r .state)" running
    assert_eq "$(api GET "/v1/sandboxes/$id/files?path=/tmp/keep")" keep
    assert_eq "$(api GET "/v1/sandboxes/$id/processes/$pid" | jq -r .running)" true
    api_status GET "/v1/sandboxes/$id/files?path=/tmp/strict-never-made"
    assert_eq "$status_code" 404
    api DELETE "/v1/sandboxes/$id" >/dev/null
}

@test "api strict: a missing workspace is a 400, an unknown field bad_request" {
    svc_start
    api_status POST /v1/sandboxes -d "{\"workspace\": \"$BATS_TEST_TMPDIR/no-such-dir\"}"
    assert_eq "$status_code" 400
    assert_eq "$(jq -r .error.code <<<"$body")" bad_request
    [[ "$(jq -r .error.message <<<"$body")" == *"no-such-dir"*"No such file"* ]]
    touch "$BATS_TEST_TMPDIR/a-file"
    api_status POST /v1/sandboxes -d "{\"workspace\": \"$BATS_TEST_TMPDIR/a-file\"}"
    assert_eq "$status_code" 400
    api_status POST /v1/sandboxes -d '{"memroy": "64M"}'
    assert_eq "$status_code" 400
    assert_eq "$(jq -c . <<<"$body")" '{"error":{"code":"bad_request","message":"unknown field '"'memroy'"'"}}'
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
}

@test "api strict: the command line's sandbox create sends each key of its type" {
    svc_start
    local id
    id=$(AGENTJAIL_SOCKET=$SOCK "$AJ" sandbox create --memory 64M --pids 32 --cpus 0.5 \
        --timeout 60 --env A=1 --env B=2)
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -c '[.limits.memory, .limits.pids, .limits.cpus]')" \
        '[67108864,32,0.5]'
    assert_eq "$(api POST "/v1/sandboxes/$id/exec" -d '{"cmd": "echo $A$B"}' | jq -rs '.[0].data')" 12
    run env AGENTJAIL_SOCKET=$SOCK "$AJ" sandbox create --pids lots
    assert_eq "$status" 125
    [[ "$output" == *"'pids': expected an integer"* ]] || fail "$output"
    api DELETE "/v1/sandboxes/$id" >/dev/null
}

@test "probes: /healthz and /readyz answer without a token, the state only" {
    printf 'probe-token-0123456789abcdef\n' >"$BATS_TEST_TMPDIR/token"
    local port=$((20000 + RANDOM % 20000)) code out
    svc_start --listen "127.0.0.1:$port" --token-file "$BATS_TEST_TMPDIR/token"
    for p in /healthz /readyz; do
        out=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$port$p")
        assert_eq "$out" '{"status":"ok"}
 200'
    done
    # the rest still needs the token; a probe's other methods are 405
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/sandboxes")
    assert_eq "$code" 401
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/metrics")
    assert_eq "$code" 401
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/healthz")
    assert_eq "$code" 401 # only GET is a probe
    out=$(curl -s -D - -o /dev/null -X POST -H "Authorization: Bearer $(cat "$BATS_TEST_TMPDIR/token")" \
        "http://127.0.0.1:$port/healthz" | tr -d '\r')
    [[ "$out" == *" 405 "* && "$out" == *"allow: GET"* ]] || fail "$out"
    api_status GET /healthz
    assert_eq "$(jq -c . <<<"$body")" '{"status":"ok"}'
}

@test "probes: /readyz is 503 until the pools are full" {
    # 64 pooled sandboxes built, a route without input: no parsing for the
    # ASan pass to watch (tests/run.sh)
    [ -z "${AJ_SANITIZED:-}" ] || skip "runs in the plain pass"
    # 64 sandboxes to build before it is ready: asked at once, it is not
    svc_start --pool default=64
    api_status GET /readyz
    assert_eq "$status_code:$(jq -c . <<<"$body")" '503:{"status":"starting"}'
    api_status GET /healthz
    assert_eq "$status_code" 200
    local i
    for i in $(seq 300); do
        api_status GET /readyz
        [ "$status_code" != 200 ] || break
        sleep 0.1
    done
    assert_eq "$status_code:$(jq -c . <<<"$body")" '200:{"status":"ok"}'
    assert_eq "$(api GET /v1/pools | jq '.pools[0].ready')" 64
}

@test "audit: a download is in the audit log like an upload" {
    svc_start
    local id
    id=$(sb_create)
    api PUT "/v1/sandboxes/$id/files?path=/tmp/f" --data-binary hello >/dev/null
    assert_eq "$(api GET "/v1/sandboxes/$id/files?path=/tmp/f")" hello
    api GET "/v1/sandboxes/$id/files?path=/tmp" >/dev/null # a listing: not a download
    assert_eq "$(jq -c 'select(.event == "download") | [.sandbox, .path, .size]' "$STATE/audit.log")" \
        "[\"$id\",\"/tmp/f\",5]"
    api DELETE "/v1/sandboxes/$id" >/dev/null
}
