#!/usr/bin/env bats
# Resource limits (cgroups): --pids, --memory, --cpus.  Root only: a
# non-root caller without delegation gets a warning instead (nonroot.bats).

load helpers

setup() {
    require_root
    aj_setup
}

@test "--pids N: forking beyond the limit fails inside" {
    local spawn='for i in $(seq 40); do /bin/sleep 1 & done; echo started-all; wait'
    sandbox -- /bin/sh -c "$spawn"
    assert_status 0
    assert_eq "$output" started-all "without --pids"
    sandbox --pids 16 -- /bin/sh -c "$spawn"
    [ "$status" -ne 0 ] || [ "$output" != started-all ] ||
        { _aj_dump; fail "40 processes were started under --pids 16"; }
    [[ "$stderr" == *fork* || "$stderr" == *"Resource temporarily unavailable"* ]] ||
        { _aj_dump; fail "no fork failure reported under --pids 16"; }
}

@test "--pids N: a fork bomb is contained and the run ends" {
    sandbox --pids 32 -- /bin/sh -c 'b() { b | b & }; b; sleep 1; exit 0'
    # Whatever the status, agentjail returned and nothing is left (teardown).
    [ "$status" -ne 124 ] || fail "the sandbox did not end"
}

@test "--memory SIZE: exceeding it kills the command (OOM) with 128+9" {
    sandbox --memory 64M -- /bin/sh -c 'x=$(head -c 400000000 /dev/zero | tr "\0" a); echo survived ${#x}'
    assert_output_lacks survived
    [ "$status" -eq 137 ] || { _aj_dump; fail "expected 137 (SIGKILL by the OOM killer), got $status"; }
}

@test "OOM preference: the command runs with oom_score_adj 500, init keeps the caller's" {
    # the command is started from init's memory (clone(CLONE_VM)), where it
    # cannot write its own /proc/self: it inherits 500 from init at the clone
    sandbox -- /bin/sh -c 'cat /proc/self/oom_score_adj; cat /proc/1/oom_score_adj'
    assert_status 0
    assert_eq "$output" "500"$'\n'"$(cat /proc/$$/oom_score_adj)" "command's, then init's oom_score_adj"
}

@test "--memory SIZE: staying below it works" {
    sandbox --memory 64M -- /bin/sh -c 'x=$(head -c 1000000 /dev/zero | tr "\0" a); echo ok ${#x}'
    assert_status 0
    assert_eq "$output" "ok 1000000"
}

@test "--cpus 0.2 throttles a busy loop" {
    # Two busy loops for 2 s of wall time; the CPU time of the whole sandbox
    # (--result: every process of it) over its wall time, unlimited vs
    # --cpus 0.2. The cap is an upper bound the kernel enforces per 100 ms
    # period, whatever else the machine runs.
    local loops='while :; do :; done & while :; do :; done'
    sandbox --timeout 2 --result "$T/free.json" -- /bin/sh -c "$loops"
    assert_status 124
    sandbox --timeout 2 --cpus 0.2 --result "$T/lim.json" -- /bin/sh -c "$loops"
    assert_status 124
    local free lim
    free=$(jq '(.cpu_user_ms + .cpu_sys_ms) * 100 / .wall_ms | floor' "$T/free.json")
    lim=$(jq '(.cpu_user_ms + .cpu_sys_ms) * 100 / .wall_ms | floor' "$T/lim.json")
    echo "CPU in % of one core: unlimited=$free limited=$lim" >&2
    [ "$lim" -le 30 ] || fail "--cpus 0.2 did not throttle: $lim% of a core (unlimited: $free%)"
    # the unlimited run shows the measure can see more than the cap
    [ "$free" -gt 30 ] || skip "the machine is too busy to tell (unlimited: $free%)"
}

# Where agentjail makes its cgroups: below our own in the memory hierarchy
# (v1), or in the unified one (v2).
_own_memory_cgroup() {
    awk '
        FNR == 1 { file++ }
        file == 1 { split($0, c, ":"); if (c[2] ~ /(^|,)memory(,|$)/) v1 = c[3]; if (c[2] == "") v2 = c[3]; next }
        {   for (i = 7; i <= NF; i++) if ($i == "-") break
            if ($(i + 1) == "cgroup" && $(i + 3) ~ /(^|,)memory(,|$)/ && v1 != "") m1 = $5 (v1 == "/" ? "" : v1)
            if ($(i + 1) == "cgroup2" && v2 != "") m2 = $5 (v2 == "/" ? "" : v2)
        }
        END { print (m1 != "" ? m1 : m2) }' /proc/self/cgroup /proc/self/mountinfo
}

@test "a cgroup left by a killed run (its agentjail is gone) is removed by the next run" {
    local pid dir
    pid=$(/bin/sh -c 'echo $$') # a pid that no longer runs
    dir=$(_own_memory_cgroup)/agentjail-$pid-0badc0de
    mkdir "$dir" || skip "cannot create a cgroup next to agentjail's"
    sandbox -- /bin/true
    assert_status 0
    [ ! -d "$dir" ] || { rmdir "$dir"; fail "the stale cgroup $dir is still there"; }
}

@test "init and the command are in the sandbox's cgroups, in each hierarchy of a limit (host's view)" {
    # v1: the child moves itself through the tasks files its parent opened
    # (no RCU wait); v2: the parent moves it. Either way, before init runs.
    "$AJ" run --memory 64M --pids 16 --cpus 0.5 -- /bin/sleep 5 &
    local aj=$! init="" cmd="" _
    for _ in $(seq 100); do
        init=$(pgrep -P "$aj" | head -1)
        [ -n "$init" ] && cmd=$(pgrep -P "$init" -x sleep | head -1)
        [ -n "$cmd" ] && break
        sleep 0.05
    done
    [ -n "$cmd" ] || { kill "$aj"; wait "$aj" || true; fail "no sandbox command under agentjail $aj"; }
    local p c want
    for p in "$init" "$cmd"; do
        for c in memory pids cpu; do
            # the line of the hierarchy holding c: v1's own, else v2's ("0::")
            want=$(awk -F: -v c="$c" '$2 ~ "(^|,)" c "(,|$)" { print $1 }' /proc/self/cgroup)
            [ -n "$want" ] || want=0
            awk -F: -v n="$want" -v aj="$aj" '
                $1 == n && $3 ~ ("/agentjail-" aj "-[0-9a-f]+$") { ok = 1 }
                END { exit !ok }' "/proc/$p/cgroup" ||
                { cat "/proc/$p/cgroup" >&2; kill "$aj"; wait "$aj" || true
                  fail "process $p is not in the sandbox's $c cgroup"; }
        done
    done
    kill "$aj"
    wait "$aj" || true
}
