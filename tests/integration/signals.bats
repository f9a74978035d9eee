#!/usr/bin/env bats
# Signals sent to agentjail reach the command; SIGKILL takes the sandbox down.

load helpers

# Start agentjail in the background (own process group, so SIGINT is not
# ignored as it would be for a non-interactive shell's background job).
# Sets AJ_BG_PID to agentjail's own pid.
start_bg() { # OPTIONS... -- CMD...
    set -m
    "$AJ" run --workspace "$WS" --ro "$PROBE:/probe" "$@" >"$T/out" 2>"$T/err" </dev/null 3>&- &
    AJ_BG_PID=$!
    set +m
}

# Wait (max SECS) for the background agentjail; set BG_STATUS.
wait_bg() {
    local end
    end=$(($(_aj_now_ms) + ${1:-10} * 1000))
    while kill -0 "$AJ_BG_PID" 2>/dev/null && [ "$(_aj_now_ms)" -lt "$end" ]; do
        sleep 0.05
    done
    if kill -0 "$AJ_BG_PID" 2>/dev/null; then
        echo "agentjail still running after ${1:-10}s; out: $(cat "$T/out"); err: $(cat "$T/err")" >&2
        return 1
    fi
    BG_STATUS=0
    wait "$AJ_BG_PID" || BG_STATUS=$?
    AJ_BG_PID=
}

# No process of this test running as a sandbox uid (new since setup) within SECS.
assert_no_sandbox_procs() {
    local end left
    end=$(($(_aj_now_ms) + ${1:-1} * 1000))
    while :; do
        left=$(new_sandbox_uid_pids)
        [ -z "$left" ] && return 0
        [ "$(_aj_now_ms)" -lt "$end" ] || break
        sleep 0.05
    done
    fail "sandbox processes still running: $(for p in $left; do echo "$p:$(cat "/proc/$p/comm" 2>/dev/null)"; done)"
}

forward_test() { # SIGNAL EXPECTED_STATUS
    start_bg -- /bin/sh -c "trap 'exit $2' $1; echo ready; sleep 100 & wait"
    wait_for_file_line "$T/out" '^ready$' 10 || fail "command never started: $(cat "$T/err")"
    sleep 0.2
    kill -"$1" "$AJ_BG_PID"
    wait_bg 10
    assert_eq "$BG_STATUS" "$2" "exit status after SIG$1"
    # The sh's background sleep must not survive the sandbox.
    require_root_or_skip_uidcheck || return 0
    assert_no_sandbox_procs 1
}

require_root_or_skip_uidcheck() { [ "$(id -u)" -eq 0 ]; }

@test "SIGTERM to agentjail is forwarded: trap exits 42" {
    forward_test TERM 42
}

@test "SIGINT to agentjail is forwarded: trap exits 43" {
    forward_test INT 43
}

@test "SIGHUP to agentjail is forwarded: trap exits 44" {
    forward_test HUP 44
}

@test "SIGTERM to agentjail kills a command with default disposition: 143" {
    local tag
    tag=$(aj_tag t)
    start_bg -- /probe sleep 100 "$tag"
    wait_for_comm "$tag" 10 >/dev/null || fail "command never started: $(cat "$T/err")"
    kill -TERM "$AJ_BG_PID"
    wait_bg 10
    assert_eq "$BG_STATUS" 143 "exit status"
    wait_gone_comm "$tag" 1 || fail "command still running after agentjail exited"
}

@test "SIGKILL to agentjail kills the whole sandbox within 1 s" {
    require_root
    # agentjail cannot clean up after SIGKILL; only processes are checked here.
    AJ_RESIDUE_PROCS_ONLY=1
    local ts to
    ts=$(aj_tag s)
    to=$(aj_tag o)
    start_bg -- /bin/sh -c "/probe orphan $to; exec /probe sleep 100 $ts"
    wait_for_comm "$ts" 10 >/dev/null || fail "command never started: $(cat "$T/err")"
    wait_for_comm "$to" 5 >/dev/null || fail "orphan never started"
    kill -KILL "$AJ_BG_PID"
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
    wait_gone_comm "$ts" 1 || fail "command '$ts' survived SIGKILL of agentjail"
    wait_gone_comm "$to" 1 || fail "orphan '$to' survived SIGKILL of agentjail"
    assert_no_sandbox_procs 1
}
