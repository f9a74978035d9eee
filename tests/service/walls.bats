#!/usr/bin/env bats
# Walls of issue 20, section 8, in the service: the commands of one sandbox
# share one Landlock domain (abstract unix sockets and signals reach each
# other, nothing outside); the crash sweep kills only the processes it
# recorded; a slow teardown never holds up the execs of other sandboxes.

load helpers

WALLS=$BATS_TEST_DIRNAME/walls

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
        grep -q '^agentjail-init' "/proc/$d2/cmdline" 2>/dev/null && grep -qx agentjail-box "/proc/$d1/comm" && break
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
