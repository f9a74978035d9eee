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
