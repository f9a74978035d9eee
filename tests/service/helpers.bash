# Helpers for the service tests: start `agentjail serve` on a socket of the
# test's own, talk to it with curl, stop it, and check that nothing is left
# (the residue check of tests/integration: processes, cgroups, mounts...).

load ../integration/helpers

# The operator policy of the tests: clients may bind below the test's own
# directory (rw) and the source tree (ro; e.g. the network probe); nothing
# else of the host. (With no policy, serve lets clients bind no host path.)
svc_test_policy() {
    local f=$BATS_TEST_TMPDIR/operator-policy.json
    jq -n --arg t "$(realpath "$BATS_TEST_TMPDIR")" --arg r "$(realpath "$_aj_root")" \
        '{bind_roots: [{path: $t, rw: true}, {path: $r, rw: false}]}' >"$f"
    echo "$f"
}

# Start the service (extra serve options as arguments); waits for its socket.
# Without --operator-policy among them, it gets svc_test_policy's (unless
# SVC_NO_POLICY=1: the defaults).
svc_start() {
    SOCK=$BATS_TEST_TMPDIR/aj.sock
    STATE=$BATS_TEST_TMPDIR/state
    local pol=()
    [[ " $* " == *" --operator-policy "* || -n "${SVC_NO_POLICY:-}" ]] ||
        pol=(--operator-policy "$(svc_test_policy)")
    ${SVC_WRAP[@]+"${SVC_WRAP[@]}"} "$AJ" serve --quiet --socket "$SOCK" --state-dir "$STATE" \
        ${pol[@]+"${pol[@]}"} "$@" 2>>"$BATS_TEST_TMPDIR/serve.log" </dev/null &
    SVC_PID=$!
    local i
    for i in $(seq 100); do
        [ -S "$SOCK" ] && curl -s --max-time 2 --unix-socket "$SOCK" http://agentjail/healthz >/dev/null &&
            return 0
        kill -0 "$SVC_PID" 2>/dev/null || break
        sleep 0.05
    done
    cat "$BATS_TEST_TMPDIR/serve.log" >&2
    fail "the service did not start"
}

# The sandboxes' keepers name their cgroups (agentjail-KEEPER-...): they are
# this test's, for the residue check.
_svc_record_keepers() {
    [ -f "${STATE:-/nonexistent}/audit.log" ] || return 0
    jq -r 'select(.keeper != null) | .keeper' "$STATE/audit.log" >>"$AJ_PIDS_FILE" 2>/dev/null || true
}

# SIGKILL the service, as a crash would (its keepers recorded first, so
# the residue check knows what was ours)
svc_crash() {
    _svc_record_keepers
    kill -KILL "$SVC_PID"
    wait "$SVC_PID" 2>/dev/null || true
    SVC_PID=
}

svc_stop() {
    [ -n "${SVC_PID:-}" ] || return 0
    _svc_record_keepers
    kill -TERM "$SVC_PID" 2>/dev/null || true
    local rc=0
    wait "$SVC_PID" 2>/dev/null || rc=$?
    SVC_PID=
    # a clean exit (under ASan: no leak, no error report)
    if [ "$rc" -ne 0 ]; then
        cat "$BATS_TEST_TMPDIR/serve.log" >&2
        fail "agentjail serve exited with $rc"
    fi
}

# curl on the unix socket: api METHOD PATH [curl args...]; body on stdout.
api() {
    local m=$1 p=$2
    shift 2
    curl -sSN --max-time 60 --unix-socket "$SOCK" -X "$m" "http://agentjail$p" "$@"
}

# The same, setting $status_code (HTTP) and $body.
api_status() {
    local out
    out=$(api "$@" -w '\n%{http_code}')
    status_code=${out##*$'\n'}
    body=${out%$'\n'*}
}

# Create a sandbox (JSON body, default {}); prints its id.
sb_create() {
    api POST /v1/sandboxes -d "${1:-{\}}" | jq -er .id
}

# Run a command (JSON exec body) and print the NDJSON events.
sb_exec() {
    api POST "/v1/sandboxes/$1/exec" -d "$2"
}

# stdout / stderr of NDJSON events, concatenated.
events_stdout() { jq -j 'select(.type == "stdout") | .data'; }
events_stderr() { jq -j 'select(.type == "stderr") | .data'; }
events_exit() { jq -c 'select(.type == "exit")'; }

setup() {
    require_root
    aj_setup
}

teardown() {
    local rc=0
    svc_stop || rc=1
    aj_teardown || rc=1
    [ -n "${NRDIR:-}" ] && [ -d "$NRDIR" ] && rm -rf --one-file-system "$NRDIR"
    return $rc
}

# A tiny root for images (DIR PROGRAM...): the programs with their
# libraries, the usual top directories, /etc/motd "base".
mk_tiny_root() {
    local d=$1 b l
    shift
    mkdir -p "$d/bin" "$d/etc" "$d/tmp" "$d/proc" "$d/dev" "$d/root"
    for b in "$@"; do
        cp "$(command -v "$b")" "$d/bin/$b"
        for l in $(ldd "$(command -v "$b")" | grep -o '/[^ ]*'); do
            mkdir -p "$d$(dirname "$l")"
            cp -n "$l" "$d$l"
        done
    done
    echo base >"$d/etc/motd"
    chmod -R a+rX "$d"
}
