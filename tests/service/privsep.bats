#!/usr/bin/env bats
# The service's two processes (docs/api.md, "Two processes"): an
# unprivileged front that parses HTTP/WebSocket/JSON, a root supervisor that
# holds the sandboxes. Each test climbs a wall and fails.

load helpers

# The front's pid (the audit log's start event).
front_pid() {
    jq -r 'select(.event == "start") | .front' "$STATE/audit.log" | tail -1
}

status_of() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

@test "privsep: the front runs as 65534, no capability in any set, seccomp, no_new_privs" {
    svc_start
    f=$(front_pid)
    [ -n "$f" ] && kill -0 "$f"
    assert_eq "$(cat /proc/"$f"/comm)" agentjail-front
    assert_eq "$(awk '$1 == "Uid:" {print $2 $3 $4 $5}' /proc/"$f"/status)" 65534655346553465534
    assert_eq "$(awk '$1 == "Gid:" {print $2 $3 $4 $5}' /proc/"$f"/status)" 65534655346553465534
    assert_eq "$(awk '$1 == "Groups:" {print $2}' /proc/"$f"/status)" ""
    for c in CapInh CapPrm CapEff CapBnd CapAmb; do
        assert_eq "$(status_of "$f" $c)" 0000000000000000 "$c"
    done
    assert_eq "$(status_of "$f" Seccomp)" 2
    assert_eq "$(status_of "$f" NoNewPrivs)" 1
    # its parent, the supervisor, is the service's process and root
    assert_eq "$(awk '{print $4}' /proc/"$f"/stat)" "$SVC_PID"
    assert_eq "$(status_of "$SVC_PID" Uid)" 0
    # the front holds no file of a sandbox, no directory: sockets, pipes, its own
    id=$(sb_create)
    api_status GET /healthz
    for l in /proc/"$f"/fd/*; do
        t=$(readlink "$l")
        case "$t" in socket:* | pipe:* | anon_inode:* | /dev/null | /dev/urandom | "$BATS_TEST_TMPDIR"/serve.log) ;;
        *) [[ "$t" != /* ]] || [ ! -d "$t" ] || fail "the front holds a directory: $t" ;;
        esac
    done
    api DELETE "/v1/sandboxes/$id" >/dev/null
}

@test "privsep: with the front's identity a sandbox's files are out of reach" {
    svc_start
    id=$(sb_create)
    sb_exec "$id" '{"cmd": "echo s3cret > /tmp/mine; chmod 600 /tmp/mine"}' >/dev/null
    init=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
    # root gets there (the wall is real for the front, not for root)...
    assert_eq "$(cat /proc/"$init"/root/tmp/mine)" s3cret
    # ...the front's identity does not: not the root of the sandbox, not the file
    run setpriv --reuid 65534 --regid 65534 --clear-groups --no-new-privs \
        cat /proc/"$init"/root/tmp/mine
    [ "$status" -ne 0 ]
    [[ "$output" != *s3cret* ]]
    run setpriv --reuid 65534 --regid 65534 --clear-groups --no-new-privs \
        ls /proc/"$(front_pid)"/root/proc/"$init"/root/
    [ "$status" -ne 0 ]
    # through the API it is the sandbox's file, as always
    assert_eq "$(api GET "/v1/sandboxes/$id/files?path=/tmp/mine")" s3cret
}

@test "privsep: a header flood gets 431, the service keeps serving" {
    svc_start
    big=$(head -c 20000 /dev/zero | tr '\0' a)
    out=$(curl -s --max-time 10 -w '\n%{http_code}' --unix-socket "$SOCK" -H "X-Flood: $big" http://agentjail/healthz)
    assert_eq "${out##*$'\n'}:$(jq -r .error.code <<<"${out%$'\n'*}")" 431:headers_too_large
    # many headers too
    args=()
    for i in $(seq 300); do args+=(-H "X-H$i: $(head -c 40 /dev/zero | tr '\0' b)"); done
    code=$(curl -s -o /dev/null --max-time 10 -w '%{http_code}' --unix-socket "$SOCK" "${args[@]}" http://agentjail/healthz)
    assert_eq "$code" 431
    api_status GET /healthz
    assert_eq "$status_code" 200
    grep -q '^agentjail_http_errors_total [2-9]' <<<"$(api GET /metrics)"
}

@test "privsep: a slow client (headers trickled) gets 408 while others are served" {
    svc_start --header-timeout 2
    # a request line and one header, then nothing: the rest never comes
    python3 - "$SOCK" >"$T/slow" 2>&1 <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"POST /v1/sandboxes HTTP/1.1\r\n")
time.sleep(0.5)
s.sendall(b"Host: x\r\n")
s.settimeout(20)
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(data.decode())
EOF
    slow=$!
    # meanwhile others are served
    for _ in 1 2 3; do
        api_status GET /healthz
        assert_eq "$status_code" 200
    done
    wait "$slow"
    head -1 "$T/slow" | grep -q '^HTTP/1.1 408 '
    assert_eq "$(tail -n +2 "$T/slow" | sed -n '/^{/p' | jq -r .error.code)" request_timeout
    # nothing was created for it
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
}

@test "privsep: an unauthenticated TCP WebSocket upgrade gets 401 JSON and starts nothing" {
    printf 'test-token-0123456789abcdef\n' >"$T/token"
    port=$((20000 + RANDOM % 20000))
    svc_start --listen "127.0.0.1:$port" --token-file "$T/token"
    id=$(sb_create)
    python3 - "$port" "$id" >"$T/wsout" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(("GET /v1/sandboxes/%s/exec?command=touch&command=/tmp/pwned HTTP/1.1\r\nHost: x\r\n"
           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n" % sys.argv[2]).encode())
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(data.decode())
EOF
    head -1 "$T/wsout" | grep -q ' 401 '
    assert_eq "$(sed -n '/^{/p' "$T/wsout" | jq -r .error.code)" unauthorized
    api_status GET "/v1/sandboxes/$id/files?path=/tmp/pwned"
    assert_eq "$status_code" 404
    assert_eq "$(api GET /metrics | grep -c '^agentjail_execs_total 0$')" 1
}

@test "privsep: SIGKILL of the supervisor kills the front and every sandbox" {
    svc_start
    for _ in 1 2; do sb_create >/dev/null; done
    f=$(front_pid)
    pids=$(api GET /v1/sandboxes | jq -r '.sandboxes[].pid')
    svc_crash
    for p in $f $pids; do
        for _ in $(seq 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
        ! kill -0 "$p" 2>/dev/null || fail "$p outlived the supervisor"
    done
    # the next start removes the rest (and the teardown checks nothing is left)
    svc_start
    assert_eq "$(ls "$STATE/sandboxes" | wc -l)" 0
}

@test "privsep: SIGKILL of the front: the supervisor removes everything and exits 125" {
    svc_start
    for _ in 1 2; do sb_create >/dev/null; done
    id=$(api GET /v1/sandboxes | jq -r '.sandboxes[0].id')
    api POST "/v1/sandboxes/$id/exec" -d '{"cmd": "sleep 1000", "background": true}' >/dev/null
    _svc_record_keepers
    pids=$(api GET /v1/sandboxes | jq -r '.sandboxes[].pid')
    kill -KILL "$(front_pid)"
    rc=0
    wait "$SVC_PID" || rc=$?
    SVC_PID=
    assert_eq "$rc" 125
    grep -q "the front process ended (signal 9); everything was removed" "$BATS_TEST_TMPDIR/serve.log"
    for p in $pids; do
        for _ in $(seq 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
        ! kill -0 "$p" 2>/dev/null || fail "sandbox init $p outlived the service"
    done
    assert_eq "$(ls "$STATE/sandboxes" | wc -l)" 0
    [ ! -e "$SOCK" ]
    jq -e -s 'map(.event) | index("stop") != null' "$STATE/audit.log" >/dev/null
}

@test "privsep: a request waiting on the supervisor does not block the front's event loop" {
    svc_start
    # the supervisor stopped stands for a long operation (a create: 15-50 ms)
    kill -STOP "$SVC_PID"
    api POST /v1/sandboxes -d '{}' >"$T/created" &
    waiting=$!
    # meanwhile the front answers what it answers alone
    api_status GET /v1/nothing
    assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 404:not_found
    api_status POST /v1/sandboxes -d '{not json'
    assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 400:bad_request
    kill -0 "$waiting" # still waiting for its sandbox
    kill -CONT "$SVC_PID"
    wait "$waiting"
    id=$(jq -er .id "$T/created")
    assert_eq "$(sb_exec "$id" '{"cmd": "echo ok"}' | events_stdout)" ok
}

@test "privsep: a slow client of a large exec stream: the front's memory stays bounded, the command waits" {
    svc_start
    id=$(sb_create)
    # 256 MiB of output read at 2 MiB/s for 3 s: without flow control the
    # front would take it all into its queue as fast as the command writes
    run curl -sSN --max-time 3 --limit-rate 2M --unix-socket "$SOCK" -X POST \
        "http://agentjail/v1/sandboxes/$id/exec" -o /dev/null \
        -d '{"cmd": "yes | head -c 268435456"}'
    [ "$status" -eq 28 ] # curl's timeout: the stream was still going
    f=$(front_pid)
    hwm=$(awk '$1 == "VmHWM:" {print $2}' /proc/"$f"/status)
    [ -n "${AJ_SANITIZED:-}" ] || [ "$hwm" -lt $((32 << 10)) ] || fail "front peak RSS ${hwm} kB"
    # the client went away: the command was cancelled, nothing of it runs on
    sleep 1
    assert_eq "$(sb_exec "$id" '{"cmd": "ps -e -o comm= | grep -c -e yes -e head"}' | events_stdout)" 0
}

@test "privsep: a large file moves through the front with bounded memory" {
    svc_start
    mkdir "$T/w"
    id=$(sb_create "{\"workspace\": \"$T/w\"}")
    head -c $((256 << 20)) /dev/urandom >"$T/big"
    out=$(curl -sS --max-time 120 --unix-socket "$SOCK" -T "$T/big" "http://agentjail/v1/sandboxes/$id/files?path=/workspace/big")
    assert_eq "$(jq -r .size <<<"$out")" $((256 << 20))
    cmp "$T/big" "$T/w/big"
    curl -sS --max-time 120 --unix-socket "$SOCK" "http://agentjail/v1/sandboxes/$id/files?path=/workspace/big" | cmp - "$T/big"
    f=$(front_pid)
    hwm=$(awk '$1 == "VmHWM:" {print $2}' /proc/"$f"/status)
    # the front's peak memory stays far below the file (ASan's shadow aside)
    [ -n "${AJ_SANITIZED:-}" ] || [ "$hwm" -lt $((32 << 10)) ] || fail "front peak RSS ${hwm} kB"
    rm -f "$T/big" "$T/w/big"
}
