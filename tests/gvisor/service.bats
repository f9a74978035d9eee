#!/usr/bin/env bats
# The service and the isolation key: a level without sandboxes that live
# across commands is refused with 501, never run at level 1.

load ../service/helpers

@test "serve: a create with \"isolation\": \"gvisor\" is refused with why (no silent level 1)" {
    svc_start
    api_status POST /v1/sandboxes -d '{"isolation": "gvisor"}'
    assert_eq "$status_code" 501 "create of a level without persistent sandboxes"
    assert_eq "$(jq -r .error.code <<<"$body")" not_supported "error code"
    assert_contains "$body" "'isolation': 'gvisor'"
    api_status GET /v1/sandboxes
    assert_eq "$(jq -r 'if type == "array" then length else (.sandboxes | length) end' <<<"$body")" 0 "sandboxes after the refused create"
    api_status POST /v1/sandboxes -d '{"isolation": "bogus"}'
    assert_eq "$status_code" 400 "create with an unknown level"
    id=$(sb_create '{"isolation": "process"}')
    [ "$(api GET "/v1/sandboxes/$id" | jq -r .isolation)" = process ] || fail "no isolation in the sandbox's JSON"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    id=$(sb_create '{"isolation": "process"}')
    [ -n "$id" ] || fail "no sandbox at level 1"
    api DELETE "/v1/sandboxes/$id" >/dev/null
}
