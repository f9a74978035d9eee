#!/usr/bin/env bats
# The service and the isolation key: level 2 is not served yet, and a
# create that asks for it is refused, never run at level 1.

load ../service/helpers

@test "serve: a create with \"isolation\": \"gvisor\" is refused with why (no silent level 1)" {
    svc_start
    api_status POST /v1/sandboxes -d '{"isolation": "gvisor"}'
    [ "$status_code" -ge 400 ] || fail "create answered $status_code: $body"
    assert_contains "$body" "not available through the service yet"
    api_status GET /v1/sandboxes
    assert_eq "$(jq -r 'if type == "array" then length else (.sandboxes | length) end' <<<"$body")" 0 "sandboxes after the refused create"
    api_status POST /v1/sandboxes -d '{"isolation": "bogus"}'
    [ "$status_code" -ge 400 ] || fail "create answered $status_code: $body"
    id=$(sb_create '{"isolation": "process"}')
    [ -n "$id" ] || fail "no sandbox at level 1"
    api DELETE "/v1/sandboxes/$id" >/dev/null
}
