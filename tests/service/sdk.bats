#!/usr/bin/env bats
# The Python SDK (sdk/python, standard library only) against a real service,
# and the agent loop example.

load helpers

@test "python SDK: unittest suite against the service" {
    svc_start
    AGENTJAIL_SOCKET=$SOCK run python3 "$_aj_root/sdk/python/tests/test_sdk.py" -v
    [ "$status" -eq 0 ] || {
        echo "$output" >&2
        echo "--- the service's log:" >&2
        cat "$BATS_TEST_TMPDIR/serve.log" >&2
        fail "SDK tests failed"
    }
    [[ "$output" == *"OK"* ]]
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
}

@test "examples/agent_loop.py runs to its end" {
    svc_start
    AGENTJAIL_SOCKET=$SOCK run python3 "$_aj_root/examples/agent_loop.py"
    [ "$status" -eq 0 ] || { echo "$output" >&2; fail "agent loop failed"; }
    [[ "$output" == *"tests pass"* ]]
}
