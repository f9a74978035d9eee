#!/usr/bin/env bats
# The service's side of "Limits fail closed" (docs/security.md): as root
# under `ip netns exec` (a fresh /sys without cgroups) the service mounts
# the hierarchies in a mount namespace of its own, and its sandboxes' limits
# are enforced; nothing of it is mounted on the host. The 409 of a create
# whose limits cannot be enforced is in api.bats (an ordinary user's service).

load helpers

setup() {
    require_root
    aj_setup
    NS=aj-svclim-$$-$BATS_TEST_NUMBER
    ip netns add "$NS"
    SVC_WRAP=(ip netns exec "$NS")
}

teardown() {
    local rc=0
    svc_stop || rc=1
    ip netns del "$NS" 2>/dev/null || true
    aj_teardown || rc=1
    return $rc
}

@test "service under ip netns exec (no cgroups in its /sys): a sandbox's pids and memory are enforced, pause works, the host sees no new mount" {
    local before after id out
    before=$(awk '{ print $5 }' /proc/self/mountinfo | sort)
    svc_start
    id=$(api POST /v1/sandboxes -d '{"pids": 16, "memory": "64M"}' | jq -r .id)
    [[ "$id" == sb-* ]] || { cat "$BATS_TEST_TMPDIR/serve.log" >&2; fail "create failed"; }
    out=$(api POST "/v1/sandboxes/$id/exec" \
        -d '{"cmd": "for i in $(seq 40); do sleep 1 & done; echo started-all; wait"}')
    [[ "$(events_stdout <<<"$out")" != *started-all* ]] || fail "40 processes started under pids 16"
    [[ "$(events_stderr <<<"$out")" == *fork* ]] || fail "no fork failure: $(events_stderr <<<"$out")"
    out=$(api POST "/v1/sandboxes/$id/exec" \
        -d '{"cmd": "x=$(head -c 300000000 /dev/zero | tr \"\\0\" a); echo survived"}')
    [[ "$(events_stdout <<<"$out")" != *survived* ]] || fail "300 MB held under memory 64M"
    # the freezer hierarchy it mounted too: pause and resume work
    api_status POST "/v1/sandboxes/$id/pause"
    assert_eq "$status_code" 200 "pause"
    api_status POST "/v1/sandboxes/$id/resume"
    assert_eq "$status_code" 200 "resume"
    after=$(awk '{ print $5 }' /proc/self/mountinfo | sort)
    assert_eq "$after" "$before" "the host's mount points while the service runs"
    api_status DELETE "/v1/sandboxes/$id"
    assert_eq "$status_code" 200
}
