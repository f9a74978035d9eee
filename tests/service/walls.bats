#!/usr/bin/env bats
# Walls of issue 20, section 8, in the service: the commands of one sandbox
# share one Landlock domain (abstract unix sockets and signals reach each
# other, nothing outside); the crash sweep kills only the processes it
# recorded; a slow teardown never holds up the execs of other sandboxes.

load helpers

WALLS=$BATS_TEST_DIRNAME/walls
SLOW_DIRS=()

# helpers.bash's, after thawing what a failed test left frozen (make_slow)
teardown() {
    local rc=0
    [ ${#SLOW_DIRS[@]} -eq 0 ] || thaw_slow
    svc_stop || rc=1
    aj_teardown || rc=1
    return $rc
}

exec_body() { # ARGS...: an exec body running them (30 s timeout)
    jq -cn --args '{cmd: $ARGS.positional, timeout: 30}' "$@"
}

sh_body() { # SCRIPT: an exec body running sh -c SCRIPT (30 s timeout)
    jq -cn --arg s "$1" '{cmd: ["sh", "-c", $s], timeout: 30}'
}

# The line "STEP RESULT..." of $out.
step_of() { printf '%s\n' "$out" | awk -v s="$1" '$1 == s { $1 = ""; sub(/^ /, ""); print; exit }'; }

@test "one domain per sandbox: a command reaches another's abstract socket and signals it; init and other sandboxes stay out of reach" {
    svc_start
    local ro="\"ro\": [\"$WALLS/abstract_srv.py:/srv.py\", \"$WALLS/abstract_cli.py:/cli.py\"]"
    local a b name=ajdom-$BASHPID
    a=$(sb_create "{$ro}")
    b=$(sb_create "{$ro}")
    # exec 1 of A: the server, which stays until signalled
    sb_exec "$a" "$(exec_body python3 /srv.py "$name" /tmp/srv.pid)" >"$BATS_TEST_TMPDIR/srv.events" &
    local srv=$!
    # exec 1 of B: the same name's socket in B cannot be reached from A
    # (another network namespace) nor A's from B, whatever is in B
    out=$(sb_exec "$b" "$(sh_body "echo 4242 >/tmp/srv.pid; exec python3 /cli.py $name /tmp/srv.pid")" | events_stdout)
    # exec 2 of A: connects, signals the server, cannot signal init
    local out2
    out2=$(sb_exec "$a" "$(exec_body python3 /cli.py "$name" /tmp/srv.pid TERM)" | events_stdout)
    wait "$srv" || true
    local srvout
    srvout=$(events_stdout <"$BATS_TEST_TMPDIR/srv.events")
    local outb=$out
    out=$out2
    [ "$(step_of connect)" = "ok pong ping" ] || fail "exec 2 could not talk to exec 1's abstract socket: $out (server: $srvout)"
    [ "$(step_of kill0)" = "ok" ] || fail "exec 2 could not kill -0 exec 1: $out"
    [ "$(step_of term)" = "ok" ] || fail "exec 2 could not SIGTERM exec 1: $out"
    [ "$(step_of init_term)" = EPERM ] || fail "exec 2 could signal init: $out"
    [ "$(step_of init_kill0)" = EPERM ] || fail "exec 2 could kill -0 init: $out"
    grep -q '^served$' <<<"$srvout" || fail "the server did not serve: $srvout"
    ! grep -q 'not signalled' <<<"$srvout" || fail "the server was not signalled: $srvout"
    jq -e 'select(.type == "exit") | .signal == 15' "$BATS_TEST_TMPDIR/srv.events" >/dev/null ||
        fail "exec 1 did not end by SIGTERM: $(events_exit <"$BATS_TEST_TMPDIR/srv.events")"
    # sandbox B: A's socket is not there, A's pid is not its
    out=$outb
    [ "$(step_of connect)" = ECONNREFUSED ] || fail "sandbox B reached A's abstract socket: $out"
    [ "$(step_of kill0)" = ESRCH ] || fail "sandbox B could signal A's process: $out"
    [ "$(step_of init_term)" = EPERM ] || fail "sandbox B could signal its init: $out"
    api DELETE "/v1/sandboxes/$a" >/dev/null
    api DELETE "/v1/sandboxes/$b" >/dev/null
}

@test "agentjail run: one command tree shares its domain (abstract socket and signals), init stays out of reach" {
    run --separate-stderr "$AJ" run --quiet --ro "$WALLS/abstract_srv.py:/srv.py" \
        --ro "$WALLS/abstract_cli.py:/cli.py" -- sh -c \
        'python3 /srv.py ajrun /tmp/srv.pid & python3 /cli.py ajrun /tmp/srv.pid TERM; wait'
    assert_status 0
    out=$output
    [ "$(step_of connect)" = "ok pong ping" ] || fail "no talk within one run: $out"
    [ "$(step_of term)" = "ok" ] || fail "no signal within one run: $out"
    [ "$(step_of init_term)" = EPERM ] || fail "a run's command could signal init: $out"
}

@test "service: a command in the sandbox's domain can neither signal nor ptrace init (the suite's kill1, ptrace1)" {
    [ -x "${ATTACK:-}" ] || skip "ATTACK (build/tests/ajattack) not given"
    svc_start
    local id a all=""
    id=$(sb_create "{\"ro\": [\"$ATTACK:/attack\"]}")
    for a in kill1 ptrace1; do
        out=$(sb_exec "$id" "$(exec_body /attack "$a")" | events_stdout)
        ! grep -q ESCAPED <<<"$out" || fail "$a: $out"
        grep -qx 'result=blocked' <<<"$out" || fail "$a: $out"
        all+=$out$'\n'
    done
    for a in kill_1_SIGKILL kill_1_SIGTERM kill_1_SIGSTOP tgkill_1_SIGKILL rt_sigqueueinfo_1 \
        pidfd_send_signal_1 ptrace_attach_1 ptrace_seize_1 process_vm_readv_1 kcmp_1 pidfd_getfd_1; do
        grep -qx "$a=blocked errno=EPERM" <<<"$all" || fail "$a: $all"
    done
    grep -qx "proc1_mem_rdwr=blocked errno=EACCES" <<<"$all" || fail "/proc/1/mem: $all"
    grep -qx "init_alive=blocked" <<<"$all" || fail "init: $all"
    api DELETE "/v1/sandboxes/$id" >/dev/null
}

# The start time of PID (/proc/PID/stat field 22).
start_of() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f20; }

@test "crash sweep: only the recorded processes (pid and start time) are killed, never a process by its title" {
    # decoys with the keeper's and init's titles (argv and comm)
    [ -x /usr/bin/python3 ] || skip "no /usr/bin/python3 (a wrapper would change argv[0])"
    local decoy='import ctypes, sys, time; ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0); time.sleep(60)'
    bash -c "exec -a agentjail-box /usr/bin/python3 -c '$decoy' agentjail-box" &
    local d1=$!
    bash -c "exec -a agentjail-init /usr/bin/python3 -c '$decoy' agentjail-init" &
    local d2=$!
    # what a killed service really left: its start time recorded, any title
    sleep 60 &
    local left=$!
    local i
    for i in $(seq 100); do
        grep -qx agentjail-init "/proc/$d2/comm" 2>/dev/null && grep -qx agentjail-box "/proc/$d1/comm" && break
        sleep 0.05
    done
    grep -qx agentjail-init "/proc/$d2/comm" || fail "the decoy did not take init's title"
    STATE=$BATS_TEST_TMPDIR/state
    mkdir -p "$STATE/sandboxes"
    # a keeper's pid that a decoy took since (other start time), an init
    # recorded exactly; and a state file without start times (any pid)
    jq -cn --argjson d "$d1" --argjson ds "$(($(start_of "$d1") + 1))" --argjson l "$left" \
        --argjson ls "$(start_of "$left")" \
        '{id: "sb-00000000000000a1", keeper: $d, keeper_start: $ds, init: $l, init_start: $ls,
          cgroup_name: "none", cgroups: []}' >"$STATE/sandboxes/sb-00000000000000a1.json"
    jq -cn --argjson d "$d2" \
        '{id: "sb-00000000000000a2", keeper: $d, init: $d, cgroup_name: "none", cgroups: []}' \
        >"$STATE/sandboxes/sb-00000000000000a2.json"
    svc_start
    local gone=0
    for i in $(seq 100); do kill -0 "$left" 2>/dev/null || { gone=1; break; }; sleep 0.05; done
    local alive1=0 alive2=0
    kill -0 "$d1" 2>/dev/null && alive1=1
    kill -0 "$d2" 2>/dev/null && alive2=1
    kill "$d1" "$d2" "$left" 2>/dev/null || true
    wait "$d1" "$d2" "$left" 2>/dev/null || true
    [ "$alive1" = 1 ] || fail "the sweep killed a process with the keeper's title and a recorded pid, but another start time"
    [ "$alive2" = 1 ] || fail "the sweep killed a process with init's title named by a state file without start times"
    [ "$gone" = 1 ] || fail "the sweep left the recorded process (pid and start time) alive"
    [ -z "$(ls "$STATE/sandboxes")" ] || fail "state files left: $(ls "$STATE/sandboxes")"
}

# A sleep in a session of its own, started before this command ends.
SLEEPER='import os, time
p = os.fork()
if p == 0:
    os.setsid()
    fd = os.open("/dev/null", os.O_RDWR)
    for i in range(3):
        os.dup2(fd, i)
    os.execvp("sleep", ["sleep", "1000"])
while os.getsid(p) == os.getsid(0):
    time.sleep(0.01)'

# Make sandbox $1's teardown wait until thaw_slow: a `sleep` in it moved
# into a child freezer cgroup of its own (v1), frozen there. The keeper's
# teardown thaws the sandbox's cgroup, not this child: the frozen process
# cannot die, so neither can the pid namespace, init, and the teardown that
# waits for init (what a process in D state, a slow unmount or thousands
# of processes do, deterministically). Sets SLOW_DIRS.
make_slow() {
    local id=$1 init cg pid p
    init=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
    cg=$(awk -F: '$2 == "freezer" { print $3 }' "/proc/$init/cgroup")
    [ -n "$cg" ] && [ -f "/sys/fs/cgroup/freezer$cg/freezer.state" ] || return 1
    # out of the command's process group, so that the exec ends (and
    # holds no reference to the sandbox: its last one goes with the TTL)
    api POST "/v1/sandboxes/$id/exec" -d "$(jq -cn --arg s "$SLEEPER" '{cmd: ["python3", "-c", $s]}')" >/dev/null
    for _ in $(seq 100); do
        for p in $(cat "/sys/fs/cgroup/freezer$cg/cgroup.procs"); do
            [ "$(cat "/proc/$p/comm" 2>/dev/null)" = sleep ] && pid=$p
        done
        [ -n "${pid:-}" ] && break
        sleep 0.05
    done
    [ -n "${pid:-}" ] || return 1
    local slow=/sys/fs/cgroup/freezer$cg/ajtest-slow
    mkdir "$slow"
    SLOW_DIRS+=("$slow")
    echo "$pid" >"$slow/cgroup.procs"
    echo FROZEN >"$slow/freezer.state"
    for _ in $(seq 100); do
        [ "$(cat "$slow/freezer.state")" = FROZEN ] && return 0
        sleep 0.02
    done
    return 1
}

# Thaw what make_slow froze and remove its cgroups (before the keeper's
# removal of the sandbox's cgroup gives up on them: 1 s).
thaw_slow() {
    local d
    for d in "${SLOW_DIRS[@]}"; do echo THAWED >"$d/freezer.state" 2>/dev/null || true; done
    for d in "${SLOW_DIRS[@]}"; do
        for _ in $(seq 200); do
            rmdir "$d" 2>/dev/null || [ ! -d "$d" ] && break
            sleep 0.005
        done
    done
    SLOW_DIRS=()
}

# Milliseconds an exec of true in sandbox $1 takes (curl gives up at 5 s).
exec_ms() {
    local t0 t1 ev
    t0=$(date +%s%N)
    ev=$(curl -sSN --max-time 5 --unix-socket "$SOCK" -X POST \
        "http://agentjail/v1/sandboxes/$1/exec" -d '{"cmd": ["true"]}' 2>/dev/null)
    t1=$(date +%s%N)
    grep -q '"exit_code":0' <<<"$ev" || { echo 99999; return; }
    echo $(((t1 - t0) / 1000000))
}

@test "a slow teardown (DELETE, TTL expiry) never holds up an exec in another sandbox" {
    svc_start
    SLOW_DIRS=()
    local a1 a2 b i1 i2 ms
    a1=$(sb_create)
    a2=$(sb_create)
    b=$(sb_create)
    i1=$(api GET "/v1/sandboxes/$a1" | jq -r .pid)
    i2=$(api GET "/v1/sandboxes/$a2" | jq -r .pid)
    ms=$(exec_ms "$b")
    [ "$ms" -lt 1000 ] || fail "exec in B took $ms ms before anything"
    make_slow "$a1" && make_slow "$a2" || { thaw_slow; skip "no v1 freezer cgroup for the sandboxes"; }
    # A1: DELETE (a pool thread waits for its teardown); A2: its TTL ends
    # (the supervisor's own thread, which starts the execs, expires it)
    curl -sS --max-time 60 --unix-socket "$SOCK" -X DELETE "http://agentjail/v1/sandboxes/$a1" \
        >"$BATS_TEST_TMPDIR/delete.out" 2>&1 &
    local del=$!
    api PATCH "/v1/sandboxes/$a2" -d '{"timeout": 1}' >/dev/null
    local i
    for i in $(seq 100); do
        grep expire "$STATE/audit.log" 2>/dev/null | grep -q "$a2" && break
        sleep 0.05
    done
    grep expire "$STATE/audit.log" | grep -q "$a2" || { thaw_slow; fail "a2 did not expire"; }
    sleep 0.3
    local slow=()
    for i in 1 2 3; do
        ms=$(exec_ms "$b")
        [ "$ms" -lt 1000 ] || slow+=("$ms")
    done
    # both teardowns were still under way
    local still=0
    kill -0 "$i1" 2>/dev/null && kill -0 "$i2" 2>/dev/null && still=1
    thaw_slow
    wait "$del" || true
    [ "$still" = 1 ] || fail "the teardowns were not slow: an init died"
    [ ${#slow[@]} -eq 0 ] || fail "exec in B waited for A's teardown: ${slow[*]} ms"
    for i in $(seq 200); do kill -0 "$i1" 2>/dev/null || kill -0 "$i2" 2>/dev/null || break; sleep 0.05; done
    ! kill -0 "$i1" 2>/dev/null || fail "a1's init outlived its teardown"
    ! kill -0 "$i2" 2>/dev/null || fail "a2's init outlived its teardown"
    assert_eq "$(api GET /v1/sandboxes | jq -c '[.sandboxes[].id]')" "[\"$b\"]"
}
