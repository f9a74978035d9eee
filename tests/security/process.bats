#!/usr/bin/env bats
# Process walls: orphans and daemons surviving teardown, a SIGKILLed
# supervisor, signals aimed at everything, the pid namespace.

load helpers

@test "orphans: a double-forked setsid daemon does not survive the command" {
    local tag="ajt${AJ_TEST_PID}o"
    attack -- /attack orphan "$tag"
    assert_status 0
    [[ "$output" == *"orphan pid="* ]] || { _aj_dump; fail "the daemon was not started"; }
    wait_gone_comm "$tag" 1 || fail "daemon $tag still runs on the host: $(host_pids_by_comm "$tag")"
}

@test "orphans holding the output pipes open: agentjail still returns at once, nothing left" {
    local tag="ajt${AJ_TEST_PID}p" start=$EPOCHREALTIME
    attack -- /attack orphan "$tag" keepfds
    assert_status 0
    [[ "$output" == *"orphan pid="* ]] || { _aj_dump; fail "the daemon was not started"; }
    assert_le "$(elapsed_since "$start")" 3 "seconds until agentjail returned"
    wait_gone_comm "$tag" 1 || fail "daemon $tag still runs on the host"
}

@test "orphans at timeout: --timeout 1 kills the daemon too (exit 124)" {
    local tag="ajt${AJ_TEST_PID}t"
    attack --timeout 1 --kill-after 1 -- /bin/sh -c "/attack orphan $tag; exec sleep 30"
    assert_status 124
    wait_gone_comm "$tag" 1 || fail "daemon $tag outlived the timeout"
}

@test "supervisor crash: SIGKILL to agentjail takes every sandbox process with it within 1 s" {
    # the test finds the sandbox's processes on the host by name; at level 2
    # the host sees runsc's processes only (tests/gvisor/run.bats "agentjail
    # killed (SIGKILL)": runsc and the sandbox die with it)
    not_at_level gvisor "the command's processes are the Sentry's, not host processes"
    local tag="ajt${AJ_TEST_PID}k" i n=0
    "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" --ro "$ATTACK:/attack" -- /attack spawn "$tag" 4 >"$T/out" 2>"$T/err" &
    AJ_BG_PID=$!
    for ((i = 0; i < 100; i++)); do
        n=$(host_pids_by_comm "$tag" | wc -l)
        [ "$n" -ge 5 ] && break
        sleep 0.05
    done
    [ "$n" -ge 5 ] || fail "only $n of 5 sandbox processes appeared"
    # every one of them runs as a sandbox uid on the host
    local pid
    for pid in $(host_pids_by_comm "$tag"); do
        [ "$(host_uid_of "$pid")" -ge "$SANDBOX_UID_MIN" ] || fail "pid $pid runs as host uid $(host_uid_of "$pid")"
    done
    kill -KILL "$AJ_BG_PID"
    wait "$AJ_BG_PID" 2>/dev/null || true
    AJ_BG_PID=
    wait_gone_comm "$tag" 1 || fail "sandbox processes survived agentjail's SIGKILL: $(host_pids_by_comm "$tag")"
    # Documented: the dead run's empty cgroups are swept by the next run.
    run "$AJ" run "${AJ_LEVEL[@]}" -- /bin/true
    assert_status 0
}

@test "signals to everything: kill(-1, SIGKILL) inside reaches neither agentjail nor the host" {
    attack -- /attack killall
    assert_status 0
    assert_output_has_line alive
    assert_eq "$(info_of "kill(-1,")" "SIGKILL) = -1 (ESRCH)" "kill(-1, SIGKILL) finds nobody to kill"
}

@test "pid namespace: the sandbox sees only its own processes" {
    # (counted by the shell: coreutils' statx fails on gVisor, docs/levels.md)
    attack -- /bin/sh -c 'set -- /proc/[0-9]*; echo $#; cat /proc/1/comm 2>&1; cd /proc/$$/task && echo self-ok'
    assert_status 0
    assert_output_has_line self-ok
    # level 2: the command is pid 1 and alone (no agentjail init)
    if at_level gvisor; then assert_eq "${lines[0]}" 1 "processes visible inside"; fi
    [ "${lines[0]}" -le 4 ] || { _aj_dump; fail "${lines[0]} processes visible inside"; }
    local hostpid=$$
    attack -- /bin/sh -c "test -e /proc/$hostpid/cmdline && tr '\\0' ' ' </proc/$hostpid/cmdline || echo absent"
    assert_status 0
    [[ "$output" != *bats* ]] || { _aj_dump; fail "the test's own process is visible inside"; }
}
