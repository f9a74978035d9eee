#!/usr/bin/env bats
# A client that never reads a stream costs bounded memory (docs/security.md,
# "Streams a client does not read"): the output waits in bounded queues and
# the command is held back (backpressure), for NDJSON and WebSocket execs
# and for a background process's output.

load helpers

rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

@test "bounded: execs printing 1 GiB that the client never reads: the front's and the supervisor's memory stay bounded, the commands are held back" {
    svc_start
    id=$(sb_create)
    front=$(pgrep -n -P "$SVC_PID" -f agentjail-front)
    f0=$(rss_kib "$front") s0=$(rss_kib "$SVC_PID")
    rm -f "$T/ready"
    python3 "$BATS_TEST_DIRNAME/noread.py" "$SOCK" "$id" 4 8 "$T/ready" &
    client=$!
    for _ in $(seq 100); do [ -f "$T/ready" ] && break; sleep 0.05; done
    fmax=0 smax=0
    for _ in $(seq 12); do
        sleep 0.5
        f=$(rss_kib "$front") s=$(rss_kib "$SVC_PID")
        [ "$f" -gt "$fmax" ] && fmax=$f
        [ "$s" -gt "$smax" ] && smax=$s
    done
    echo "8 streams never read: front RSS $f0 -> at most $fmax KiB, supervisor $s0 -> at most $smax KiB" >&3
    [ -n "${AJ_SANITIZED:-}" ] || # (RSS means nothing under ASan: its quarantine)
    [ $((fmax - f0)) -lt 65536 ] || fail "the front grew by $((fmax - f0)) KiB"
    [ -n "${AJ_SANITIZED:-}" ] || # (RSS means nothing under ASan: its quarantine)
    [ $((smax - s0)) -lt 65536 ] || fail "the supervisor grew by $((smax - s0)) KiB"
    # held back: none of them got to its end
    assert_eq "$(sb_exec "$id" '{"cmd": "test -e /tmp/all-written && echo written || echo held"}' | events_stdout)" held
    wait "$client"
    # the client's close cancels them; the sandbox serves on
    for _ in $(seq 100); do
        [ "$(sb_exec "$id" '{"cmd": "pgrep -c head || true"}' | events_stdout)" = 0 ] && break
        sleep 0.1
    done
    assert_eq "$(sb_exec "$id" '{"cmd": "pgrep -c head || true"}' | events_stdout)" 0
    assert_eq "$(sb_exec "$id" '{"cmd": "echo ok"}' | events_stdout)" ok
}

@test "bounded: a background process printing 1 GiB, its output followed by a client that never reads: bounded, its ring 1 MiB" {
    svc_start
    id=$(sb_create)
    front=$(pgrep -n -P "$SVC_PID" -f agentjail-front)
    f0=$(rss_kib "$front") s0=$(rss_kib "$SVC_PID")
    p=$(api POST "/v1/sandboxes/$id/exec" -d '{"cmd": "head -c 1073741824 /dev/zero | tr \"\\0\" a", "background": true}' | jq -r .process)
    python3 - "$SOCK" "$id" "$p" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(sys.argv[1])
s.sendall(("GET /v1/sandboxes/%s/processes/%s/output?follow=true HTTP/1.1\r\nHost: x\r\n\r\n"
           % (sys.argv[2], sys.argv[3])).encode())
time.sleep(6)
PY
    client=$!
    fmax=0 smax=0
    for _ in $(seq 10); do
        sleep 0.5
        f=$(rss_kib "$front") s=$(rss_kib "$SVC_PID")
        [ "$f" -gt "$fmax" ] && fmax=$f
        [ "$s" -gt "$smax" ] && smax=$s
    done
    echo "a follower that never reads: front RSS $f0 -> at most $fmax KiB, supervisor $s0 -> at most $smax KiB" >&3
    [ -n "${AJ_SANITIZED:-}" ] || # (RSS means nothing under ASan: its quarantine)
    [ $((fmax - f0)) -lt 65536 ] || fail "the front grew by $((fmax - f0)) KiB"
    [ -n "${AJ_SANITIZED:-}" ] || # (RSS means nothing under ASan: its quarantine)
    [ $((smax - s0)) -lt 65536 ] || fail "the supervisor grew by $((smax - s0)) KiB"
    wait "$client"
    api POST "/v1/sandboxes/$id/processes/$p/signal" -d '{"signal": "KILL"}' >/dev/null || true
}

@test "bounded: 100 streams of one sandbox that nobody reads: at most 32 open (429 for the rest), the front's and the supervisor's memory bounded" {
    svc_start
    id=$(sb_create)
    front=$(pgrep -n -P "$SVC_PID" -f agentjail-front)
    f0=$(rss_kib "$front") s0=$(rss_kib "$SVC_PID")
    rm -f "$T/ready"
    python3 "$BATS_TEST_DIRNAME/noread.py" "$SOCK" "$id" 50 6 "$T/ready" &
    client=$!
    for _ in $(seq 100); do [ -f "$T/ready" ] && break; sleep 0.05; done
    sleep 3
    api_status POST "/v1/sandboxes/$id/exec" -d '{"cmd": "echo hi"}'
    assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 429:too_many_streams
    f=$(rss_kib "$front") s=$(rss_kib "$SVC_PID")
    echo "100 streams never read: front RSS $f0 -> $f KiB, supervisor $s0 -> $s KiB" >&3
    [ -n "${AJ_SANITIZED:-}" ] || # (RSS means nothing under ASan: its quarantine)
    [ $((f - f0)) -lt 65536 ] || fail "the front grew by $((f - f0)) KiB"
    [ -n "${AJ_SANITIZED:-}" ] || # (RSS means nothing under ASan: its quarantine)
    [ $((s - s0)) -lt 65536 ] || fail "the supervisor grew by $((s - s0)) KiB"
    # another sandbox is not held back by this one's streams
    other=$(sb_create)
    assert_eq "$(sb_exec "$other" '{"cmd": "echo other"}' | events_stdout)" other
    wait "$client"
    for _ in $(seq 100); do
        [ "$(sb_exec "$id" '{"cmd": "echo again"}' | events_stdout)" = again ] && break
        sleep 0.1
    done
    assert_eq "$(sb_exec "$id" '{"cmd": "echo again"}' | events_stdout)" again
}
