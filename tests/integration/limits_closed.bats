#!/usr/bin/env bats
# Limits fail closed (docs/security.md "Limits fail closed"): a limit that
# is asked for or on by default is enforced or the run does not happen.
# As root where agentjail's view has no cgroup hierarchy (a fresh /sys:
# `ip netns exec`, or /sys/fs/cgroup covered), agentjail mounts what it
# needs in a mount namespace of its own and nothing reaches the host.
# The unprivileged side is in nonroot.bats, the service's in api.bats.

load helpers

setup() {
    require_root
    aj_setup
    NS=aj-lim-$$-$BATS_TEST_NUMBER
}

teardown() {
    ip netns del "$NS" 2>/dev/null || true
    aj_teardown
}

_spawn='for i in $(seq 40); do /bin/sleep 1 & done; echo started-all; wait'
_bomb='x=$(head -c 400000000 /dev/zero | tr "\0" a); echo survived ${#x}'

# Our own cgroup in the memory hierarchy, as /proc/self/cgroup names it.
_own_memory_path() {
    awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup
}

@test "under ip netns exec (a fresh /sys, no cgroups in it), as root: --pids and --memory are enforced" {
    ip netns add "$NS"
    # ip netns exec mounts a new sysfs: /sys/fs/cgroup is empty there
    run ip netns exec "$NS" sh -c 'ls /sys/fs/cgroup | wc -l'
    assert_eq "$output" 0 "entries in /sys/fs/cgroup under ip netns exec"
    run --separate-stderr timeout 60 ip netns exec "$NS" "$AJ" run --pids 16 -- /bin/sh -c "$_spawn"
    [ "$output" != started-all ] || { _aj_dump; fail "40 processes started under --pids 16: the limit was dropped"; }
    [[ "$stderr" == *fork* ]] || { _aj_dump; fail "no fork failure under --pids 16"; }
    [[ "$stderr" != *"NOT enforced"* ]] || { _aj_dump; fail "limits dropped with a warning"; }
    run --separate-stderr timeout 60 ip netns exec "$NS" "$AJ" run --memory 64M -- /bin/sh -c "$_bomb"
    assert_output_lacks survived
    [ "$status" -eq 137 ] || { _aj_dump; fail "expected 137 (OOM kill under --memory 64M), got $status"; }
}

@test "under ip netns exec: the sandbox's cgroup is below agentjail's own (not at a hierarchy's root); the host sees no new mount" {
    ip netns add "$NS"
    local before after
    before=$(awk '{ print $5 }' /proc/self/mountinfo | sort)
    ip netns exec "$NS" "$AJ" run --memory 64M --pids 16 -- /bin/sleep 5 &
    AJ_BG_PID=$!
    local init='' _
    for _ in $(seq 100); do
        init=$(pgrep -P "$AJ_BG_PID" | head -1)
        [ -n "$init" ] && grep -q agentjail- "/proc/$init/cgroup" 2>/dev/null && break
        sleep 0.05
    done
    [ -n "$init" ] || fail "no sandbox init under agentjail $AJ_BG_PID"
    local own want
    own=$(_own_memory_path)
    want="${own%/}/agentjail-$AJ_BG_PID-"
    awk -F: -v w="$want" '$2 ~ /(^|,)memory(,|$)/ && index($3, w) == 1 { ok = 1 } END { exit !ok }' "/proc/$init/cgroup" ||
        { cat "/proc/$init/cgroup" >&2; fail "init's memory cgroup is not $want* (below our own $own)"; }
    awk -F: -v p="/agentjail-$AJ_BG_PID-" '$2 == "pids" && index($3, p) { ok = 1 } END { exit !ok }' "/proc/$init/cgroup" ||
        { cat "/proc/$init/cgroup" >&2; fail "init is not in a pids cgroup of the sandbox"; }
    after=$(awk '{ print $5 }' /proc/self/mountinfo | sort)
    assert_eq "$after" "$before" "the host's mount points while the sandbox runs"
    kill "$AJ_BG_PID"
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
}

@test "root, /sys/fs/cgroup covered by an empty tmpfs (unshare -m): agentjail mounts its own privately, limits enforced" {
    # the cover is in a private namespace of the test's; agentjail's own
    # mounts go below it, in a namespace of agentjail's
    run --separate-stderr timeout 60 unshare -m --propagation private sh -c '
        mount -t tmpfs ajcover /sys/fs/cgroup && exec "$0" run --pids 16 -- /bin/sh -c "$1"' \
        "$AJ" "$_spawn"
    [ "$output" != started-all ] || { _aj_dump; fail "40 processes started under --pids 16"; }
    [[ "$stderr" == *fork* ]] || { _aj_dump; fail "no fork failure under --pids 16"; }
    # and the test's namespace still has only its empty cover
    run unshare -m --propagation private sh -c '
        mount -t tmpfs ajcover /sys/fs/cgroup && "$0" run -- /bin/true && ls /sys/fs/cgroup | wc -l' "$AJ"
    assert_status 0
    assert_eq "$output" 0 "entries in the covered /sys/fs/cgroup after a run"
}

@test "--limits: a bad value is refused (exit 125), strict and best-effort are taken" {
    sandbox --limits loose -- /bin/true
    assert_status 125
    [[ "$stderr" == *"--limits 'loose': expected strict or best-effort"* ]] || fail "stderr: $stderr"
    sandbox --limits strict -- /bin/true
    assert_status 0
    sandbox --limits best-effort --result "$T/r.json" -- /bin/true
    assert_status 0
    assert_eq "$(jq -c .limits_not_applied "$T/r.json")" "[]" "limits_not_applied with every limit in place"
}

@test "--memory on cgroup v1 sets memory.kmem.tcp.limit_in_bytes to the same bound" {
    [ -f /sys/fs/cgroup/memory/memory.kmem.tcp.limit_in_bytes ] || skip "no cgroup v1 memory controller with kmem.tcp"
    "$AJ" run --memory 96M -- /bin/sleep 5 &
    AJ_BG_PID=$!
    local d='' _
    for _ in $(seq 100); do
        d=$(_aj_cgroup_dirs | grep "/memory/.*/agentjail-$AJ_BG_PID-[^/]*$" | head -1)
        [ -n "$d" ] && break
        sleep 0.05
    done
    [ -n "$d" ] || fail "no memory cgroup of agentjail $AJ_BG_PID"
    assert_eq "$(cat "$d/memory.kmem.tcp.limit_in_bytes")" $((96 << 20)) "memory.kmem.tcp.limit_in_bytes"
    assert_eq "$(cat "$d/memory.limit_in_bytes")" $((96 << 20)) "memory.limit_in_bytes"
    kill "$AJ_BG_PID"
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
}
