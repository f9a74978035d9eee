#!/usr/bin/env bats
# Socket activation (agentjail.socket, docs/install.md): started with a
# listening unix socket as fd 3 (LISTEN_PID, LISTEN_FDS=1), serve takes it
# instead of binding its own, and leaves it to systemd when it stops.
# systemd-socket-activate plays systemd's part (systemd is not PID 1 here).

load helpers

@test "serve: takes systemd's socket (LISTEN_FDS) and leaves it when it stops" {
    command -v systemd-socket-activate >/dev/null || fail "systemd-socket-activate is missing (apt-get install systemd)"
    SVC_WRAP=(systemd-socket-activate -l "$BATS_TEST_TMPDIR/aj.sock")
    svc_start # its --socket names the same path: taken, not bound again
    local inode id out
    inode=$(stat -c %i "$SOCK")
    id=$(sb_create)
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "echo through systemd; exit 3"]}')
    assert_eq "$(events_stdout <<<"$out")" "through systemd" "an exec's output"
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 3 "an exec's status"
    # nothing but serve's two processes holds the socket: not a sandbox's
    # (a background process is running in one)
    api POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["sleep", "30"], "background": true}' >/dev/null
    local holders pid
    holders=$(ss -xlpn | awk -v p="$SOCK" '$5 == p' | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
    [ -n "$holders" ] || fail "ss shows no process holding $SOCK"
    for pid in $holders; do
        [ "$pid" = "$SVC_PID" ] || [ "$(ps -o ppid=,comm= -p "$pid" | xargs)" = "$SVC_PID agentjail-front" ] ||
            fail "process $pid ($(ps -o args= -p "$pid")) holds serve's socket"
    done
    api DELETE "/v1/sandboxes/$id" >/dev/null
    svc_stop
    [ -S "$SOCK" ] || fail "serve removed systemd's socket"
    assert_eq "$(stat -c %i "$SOCK")" "$inode" "the socket is still systemd's"
    rm -f "$SOCK"
}

@test "serve: what systemd passes must be one listening unix socket, else 125" {
    # shellcheck disable=SC2016
    run --separate-stderr timeout 10 sh -c 'LISTEN_PID=$$ LISTEN_FDS=2 exec "$0" serve --socket "$1/s.sock" --state-dir "$1/state"' \
        "$AJ" "$BATS_TEST_TMPDIR"
    assert_eq "$status" 125 "two sockets: $stderr"
    assert_contains "$stderr" "exactly one socket"
    # shellcheck disable=SC2016
    run --separate-stderr timeout 10 sh -c 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" serve --socket "$1/s.sock" --state-dir "$1/state" 3</dev/null' \
        "$AJ" "$BATS_TEST_TMPDIR"
    assert_eq "$status" 125 "a file as fd 3: $stderr"
    assert_contains "$stderr" "not a listening unix stream socket"
    [ ! -e "$BATS_TEST_TMPDIR/state" ] || fail "a refused start made its state directory"
}
