#!/usr/bin/env bats
# Load: 50 sandboxes, commands in parallel; no failure, no growth of the
# service's fds or memory (AJ_LOAD_SECONDS, default 20).

load helpers

@test "serve under load: 50 sandboxes, parallel execs, no failure, no fd or memory growth" {
    # memory figures mean nothing under ASan (its quarantine grows)
    [ -z "${AJ_SANITIZED:-}" ] || skip "runs in the plain pass"
    svc_start --max-sandboxes 60
    AGENTJAIL_SOCKET=$SOCK run timeout 600 python3 "$BATS_TEST_DIRNAME/load.py" "$SVC_PID" --sandboxes 50 \
        --seconds "${AJ_LOAD_SECONDS:-20}" --threads 16
    echo "$output" >&2
    assert_status 0
    echo "# $(head -n1 <<<"$output")" >&3
    echo "# $(sed -n 2p <<<"$output")" >&3
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
}
