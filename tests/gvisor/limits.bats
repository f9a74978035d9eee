#!/usr/bin/env bats
# Level 2's limits fail closed as level 1's do (docs/levels.md): a cgroup
# that can't be made stops the run (exit 125) or the create (409
# limits_unenforceable) with the fix, unless --limits best-effort, which
# runs and names what is missing. The memory hierarchy is made read-only
# in a mount namespace of the test's own; the host's is untouched.

load ../service/helpers

RO='mount -o remount,bind,ro /sys/fs/cgroup/memory && exec "$@"'

setup() {
    require_root
    command -v runsc >/dev/null || skip "runsc is not installed (apt-get install runsc)"
    [ -d /sys/fs/cgroup/memory ] || skip "no cgroup v1 memory hierarchy here"
    aj_setup
}

@test "gvisor limits: run: no cgroup -> 125 with the fix; best-effort runs and names what is missing" {
    run --separate-stderr unshare -m --propagation private sh -c "$RO" sh \
        "$AJ" run --isolation gvisor --memory 64M -- /bin/echo ran
    assert_status 125
    assert_output_lacks ran
    assert_contains "$stderr" "cannot enforce the sandbox's limits"
    assert_contains "$stderr" "--limits best-effort"
    run --separate-stderr unshare -m --propagation private sh -c "$RO" sh \
        "$AJ" run --isolation gvisor --memory 64M --limits best-effort --result "$T/res.json" \
        -- /bin/echo ran
    assert_status 0
    assert_eq "$output" ran
    assert_contains "$stderr" "limits NOT enforced"
    assert_eq "$(jq -c .limits_not_applied "$T/res.json")" '["memory"]' limits_not_applied
}

@test "gvisor limits: service: no cgroup -> 409 limits_unenforceable, nothing kept" {
    SVC_WRAP=(unshare -m --propagation private sh -c "$RO" sh)
    svc_start
    local out
    out=$(api POST /v1/sandboxes -w '\n%{http_code}' -d '{"isolation": "gvisor", "memory": "64M"}')
    assert_eq "${out##*$'\n'}" 409 "create's status"
    assert_eq "$(jq -r .error.code <<<"${out%$'\n'*}")" limits_unenforceable "error code"
    assert_eq "$(api GET /v1/sandboxes | jq -c .sandboxes)" "[]" "sandboxes kept"
    [ -z "$(pgrep -a -f 'runsc.*--root=' || true)" ] || fail "runsc left: $(pgrep -a -f 'runsc.*--root=')"
}
