#!/usr/bin/env bats
# serve --log-format json: one JSON object a line on stderr, the messages
# and every audit event with its sandbox and tenant; plain as before.

load helpers

@test "serve --log-format json: every stderr line is a JSON object, events name sandbox and tenant" {
    svc_start --log-format json
    local id
    id=$(sb_create)
    api POST "/v1/sandboxes/$id/exec" -d '{"cmd": "true"}' >/dev/null
    api DELETE "/v1/sandboxes/$id" >/dev/null
    svc_stop
    local log=$BATS_TEST_TMPDIR/serve.log
    [ -s "$log" ] || fail "nothing logged"
    jq -e . "$log" >/dev/null || fail "not JSON lines: $(cat "$log")"
    assert_eq "$(jq -c 'select(.event == "create") | [.sandbox, .tenant]' "$log")" "[\"$id\",\"operator\"]"
    assert_eq "$(jq -r 'select(.event == "exec") | .sandbox' "$log")" "$id"
    assert_eq "$(jq -r 'select(.event == "delete") | .sandbox' "$log")" "$id"
    assert_eq "$(jq -s 'map(select(.event == "start")) | length' "$log")" 1
    # every line is an object with a timestamp
    assert_eq "$(jq -s 'map(select(type != "object" or .ts == null)) | length' "$log")" 0
}

@test "serve --log-format plain is as before; a bad format is refused" {
    svc_start --log-format plain
    sb_create >/dev/null
    svc_stop
    ! grep -q '"event"' "$BATS_TEST_TMPDIR/serve.log" || fail "plain logged JSON"
    run "$AJ" serve --log-format yaml --socket "$BATS_TEST_TMPDIR/x.sock" --state-dir "$BATS_TEST_TMPDIR/st"
    assert_status 125
    [[ "$output" == *"--log-format 'yaml': expected json or plain"* ]] || fail "$output"
    # a start failure in json is a JSON line too
    run "$AJ" serve --log-format json --socket relative.sock
    assert_status 125
    jq -e '.level == "error" and (.msg | test("absolute"))' <<<"$output" >/dev/null || fail "$output"
}
