#!/usr/bin/env bats
# The service's operator decides what its clients may do (serve
# --operator-policy FILE) and who they are (serve --tokens FILE: tenants).
# Every test asks for something the operator did not allow and checks that
# it is refused (403, with the key to change) and that nothing was made.

load helpers

PORT=

setup() {
    require_root
    aj_setup
    mkdir -p "$T/work/proj" "$T/ro/lib" "$T/other"
    W=$(realpath "$T/work")
    RO=$(realpath "$T/ro")
    echo outside >"$T/other/secret"
}

# svc_policy JSON [more serve options]: start with that operator policy.
svc_policy() {
    printf '%s\n' "$1" >"$T/policy.json"
    shift
    svc_start --operator-policy "$T/policy.json" "$@"
}

# The tokens file of alice and bob (mode 0600); extra fields per tenant as
# $1 (alice) and $2 (bob), e.g. '"max_sandboxes": 1'.
write_tokens() {
    local a=${1:+, $1} b=${2:+, $2}
    printf '[{"tenant": "alice", "token": "alice-token-0123456789"%s},\n {"tenant": "bob", "token": "bob-token-0123456789ab"%s}]\n' \
        "$a" "$b" >"$T/tokens.json"
    chmod 600 "$T/tokens.json"
}

# Start with tenants (tokens file written) on a TCP port of its own.
svc_tenants() {
    PORT=$((20000 + RANDOM % 20000))
    svc_start --listen "127.0.0.1:$PORT" --tokens "$T/tokens.json" "$@"
    for _ in $(seq 50); do curl -s "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
}

# as TENANT METHOD PATH [curl args]: a request with that tenant's token;
# sets $status_code and $body.
as() {
    local who=$1 m=$2 p=$3 tok out
    shift 3
    case $who in
    alice) tok=alice-token-0123456789 ;;
    bob) tok=bob-token-0123456789ab ;;
    *) tok=$who ;;
    esac
    out=$(curl -sS --max-time 60 -H "Authorization: Bearer $tok" -X "$m" \
        "http://127.0.0.1:$PORT$p" "$@" -w '\n%{http_code}')
    status_code=${out##*$'\n'}
    body=${out%$'\n'*}
}

# create_refused JSON KEY: POST /v1/sandboxes is 403 naming KEY, and no
# sandbox, no keeper came of it.
create_refused() {
    api_status POST /v1/sandboxes -d "$1"
    assert_eq "$status_code" 403 "create $1: $body"
    assert_eq "$(jq -r .error.code <<<"$body")" forbidden "$body"
    assert_eq "$(jq -r .error.policy_key <<<"$body")" "$2" "$body"
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
    ! grep -q '"keeper"' "$STATE/audit.log" || fail "a keeper was started: $(cat "$STATE/audit.log")"
}

@test "operator: with no operator policy, no host path can be bound (rw /, /etc, ro, workspace)" {
    SVC_NO_POLICY=1 svc_start
    create_refused '{"rw": ["/:/host"]}' bind_roots
    create_refused '{"rw": ["/etc:/hostetc"]}' bind_roots
    create_refused '{"rw": "/etc"}' bind_roots
    create_refused '{"ro": ["/etc/shadow:/s"]}' bind_roots
    create_refused "{\"workspace\": \"$W\"}" bind_roots
    create_refused '{"workspace": "/root"}' bind_roots
    # the message says what to change
    api_status POST /v1/sandboxes -d '{"rw": ["/etc:/x"]}'
    assert_contains "$(jq -r .error.message <<<"$body")" "bind_roots"
    # a create without host paths still works
    id=$(sb_create '{}')
    assert_eq "$(sb_exec "$id" '{"cmd": "echo ok"}' | events_stdout)" ok
}

@test "operator: binds below an allowed root work; elsewhere, or rw below a ro root, 403" {
    svc_policy "{\"bind_roots\": [{\"path\": \"$W\", \"rw\": true}, \"$RO\"]}"
    create_refused '{"rw": ["/etc:/x"]}' bind_roots
    create_refused "{\"rw\": [\"$RO/lib:/lib2\"]}" bind_roots # ro root: no rw bind
    create_refused "{\"workspace\": \"$RO/lib\"}" bind_roots  # a workspace is rw
    create_refused "{\"ro\": [\"$T/other:/o\"]}" bind_roots   # a sibling of the roots
    create_refused "{\"ro\": [\"${W}x:/o\"]}" bind_roots      # a prefix is not a parent
    create_refused "{\"ro\": [\"$W/../other:/o\"]}" bind_roots
    id=$(sb_create "{\"workspace\": \"$W/proj\", \"ro\": [\"$RO/lib:/lib2\"], \"rw\": [\"$W:/w2\"]}")
    sb_exec "$id" '{"cmd": "echo in >/workspace/made; ls /lib2 >/dev/null && echo x >/w2/also"}' >/dev/null
    assert_eq "$(cat "$W/proj/made")" in
    assert_eq "$(cat "$W/also")" x
}

@test "operator: a symlink below an allowed root that points out of it is refused (403)" {
    svc_policy "{\"bind_roots\": [{\"path\": \"$W\", \"rw\": true}]}"
    ln -s /etc "$W/abs"
    ln -s ../../../../../../../../etc "$W/rel"
    mkdir -p "$W/d"
    ln -s "$T/other" "$W/d/chain"
    ln -s chain "$W/d/chain2"
    create_refused "{\"workspace\": \"$W/abs\"}" bind_roots
    create_refused "{\"rw\": [\"$W/rel:/x\"]}" bind_roots
    create_refused "{\"ro\": [\"$W/d/chain2/secret:/s\"]}" bind_roots
    create_refused "{\"rw\": [\"$W/abs/passwd:/p\"]}" bind_roots
    api_status POST /v1/sandboxes -d "{\"workspace\": \"$W/abs\"}"
    assert_contains "$(jq -r .error.message <<<"$body")" "resolves outside"
    [ "$(stat -c %U /etc/passwd)" = root ]
}

@test "operator: a rootfs host path is refused unless below rootfs_roots" {
    mkdir -p "$T/roots/r1"
    svc_policy "{\"bind_roots\": [{\"path\": \"$W\", \"rw\": true}]}"
    create_refused '{"rootfs": "/"}' rootfs_roots
    create_refused "{\"rootfs\": \"$W\"}" rootfs_roots # bind roots are not rootfs roots
    svc_stop
    rm -f "$STATE/audit.log"
    svc_policy "{\"rootfs_roots\": [\"$(realpath "$T/roots")\"]}"
    create_refused '{"rootfs": "/"}' rootfs_roots
    create_refused "{\"rootfs\": \"$T/other\"}" rootfs_roots
    ln -s /usr "$T/roots/up"
    create_refused "{\"rootfs\": \"$T/roots/up\"}" rootfs_roots
    id=$(sb_create "{\"rootfs\": \"$(realpath "$T/roots/r1")\"}") # below the root: allowed
    [ -n "$id" ]
}

@test "operator: caps on memory, pids, cpus, disk, timeout are 403 above them; defaults are lowered" {
    svc_policy '{"max_memory": "256M", "max_pids": 64, "max_cpus": 1, "max_disk": "64M", "max_timeout": 600}'
    create_refused '{"memory": "1G"}' max_memory
    create_refused '{"memory": "0"}' max_memory # 0: no limit
    create_refused '{"pids": 1000}' max_pids
    create_refused '{"cpus": 2}' max_cpus
    create_refused '{"disk": "1G"}' max_disk
    create_refused '{"timeout": 3600}' max_timeout
    create_refused '{"timeout": 0}' max_timeout # 0: no TTL
    # what the client did not ask for is the cap, not the (larger) default
    id=$(sb_create '{}')
    info=$(api GET "/v1/sandboxes/$id")
    assert_eq "$(jq -r '.limits | "\(.memory) \(.pids) \(.cpus) \(.disk)"' <<<"$info")" "268435456 64 1 67108864"
    [ "$(jq .timeout_remaining <<<"$info")" -le 600 ]
    id2=$(sb_create '{"memory": "128M", "timeout": 60}')
    assert_eq "$(api GET "/v1/sandboxes/$id2" | jq .limits.memory)" 134217728
    # TTL caps hold for PATCH and fork too
    api_status PATCH "/v1/sandboxes/$id" -d '{"timeout": 0}'
    assert_eq "$status_code:$(jq -r .error.policy_key <<<"$body")" 403:max_timeout
    api_status POST "/v1/sandboxes/$id/fork" -d '{"timeout": 7200}'
    assert_eq "$status_code:$(jq -r .error.policy_key <<<"$body")" 403:max_timeout
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 2
}

@test "operator: network modes and images outside the operator policy are 403" {
    svc_policy '{"net": ["none"], "images": ["tiny-*"]}'
    create_refused '{"net": "open"}' net
    create_refused '{"allow": ["192.0.2.10:80"]}' net
    # refused by its name, before the store is looked at
    create_refused '{"image": "debian"}' images
    create_refused '{"image": "no-such-image"}' images
    api_status POST /v1/sandboxes -d '{"image": "tiny-nosuch"}' # allowed name: the store says
    assert_ne "$status_code" 403
    id=$(sb_create '{"net": "none"}')
    [ -n "$id" ]
}

@test "operator: live sandboxes per tenant are capped (max_sandboxes), fork too" {
    svc_policy '{"max_sandboxes": 2}'
    a=$(sb_create '{}')
    sb_create '{}' >/dev/null
    create_refused_n() {
        api_status POST /v1/sandboxes -d '{}'
        assert_eq "$status_code:$(jq -r .error.policy_key <<<"$body")" 403:max_sandboxes "$body"
    }
    create_refused_n
    api_status POST "/v1/sandboxes/$a/fork" -d '{"count": 1}'
    assert_eq "$status_code:$(jq -r .error.policy_key <<<"$body")" 403:max_sandboxes "$body"
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 2
    api DELETE "/v1/sandboxes/$a" >/dev/null
    sb_create '{}' >/dev/null
}

@test "tenants: another tenant's sandbox is 404 on every route, absent from lists, metrics, pools" {
    write_tokens
    svc_tenants --pool default=1
    for _ in $(seq 100); do
        [ "$(api GET /v1/pools | jq '.pools[0].ready')" = 1 ] && break
        sleep 0.1
    done
    as alice POST /v1/sandboxes -d '{}' # the pooled one: alice's now
    assert_eq "$status_code" 201 "$body"
    id=$(jq -r .id <<<"$body")
    assert_eq "$(api GET /v1/pools | jq '.pools[0].hits')" 1
    # bob sees the pool, not how it is used
    as bob GET /v1/pools
    assert_eq "$(jq -c '.pools[0] | [.image, .size, .hits, .ready]' <<<"$body"):$(jq .misses <<<"$body")" \
        '["default",1,null,null]:null' "$body"
    as alice POST "/v1/sandboxes/$id/exec" -d '{"cmd": "echo mine >/tmp/f"}'
    routes=("GET /v1/sandboxes/$id" "DELETE /v1/sandboxes/$id" "PATCH /v1/sandboxes/$id"
        "POST /v1/sandboxes/$id/exec" "GET /v1/sandboxes/$id/files?path=/tmp/f"
        "PUT /v1/sandboxes/$id/files?path=/tmp/g" "DELETE /v1/sandboxes/$id/files?path=/tmp/f"
        "POST /v1/sandboxes/$id/mkdir?path=/tmp/d" "GET /v1/sandboxes/$id/processes"
        "GET /v1/sandboxes/$id/processes/p1/output" "POST /v1/sandboxes/$id/processes/p1/signal"
        "POST /v1/sandboxes/$id/pause" "POST /v1/sandboxes/$id/resume"
        "POST /v1/sandboxes/$id/snapshot" "POST /v1/sandboxes/$id/fork")
    for r in "${routes[@]}"; do
        data='{}'
        case $r in
        *exec) data='{"cmd": "echo stolen >/tmp/f"}' ;;
        PATCH*) data='{"timeout": 1}' ;;
        *signal) data='{"signal": "KILL"}' ;;
        *snapshot) data='{"name": "bob.x"}' ;;
        esac
        as bob ${r% *} "${r#* }" -d "$data"
        assert_eq "$status_code" 404 "bob: $r: $body"
        assert_eq "$(jq -r .error.code <<<"$body")" not_found "bob: $r: $body"
    done
    # the operator's unix socket is a tenant too: none of alice's
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$status_code" 404
    # a WebSocket exec of bob's on alice's sandbox does not run
    python3 - "$PORT" "$id" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(("GET /v1/sandboxes/%s/exec?command=sh&command=-c&command=echo+ws+>/tmp/f HTTP/1.1\r\n"
           "Host: x\r\nAuthorization: Bearer bob-token-0123456789ab\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           "Sec-WebSocket-Version: 13\r\n\r\n" % sys.argv[2]).encode())
data = b""
while True:
    try:
        b = s.recv(4096)
    except socket.timeout:
        break
    if not b:
        break
    data += b
sys.exit(0)
EOF
    as bob GET /v1/sandboxes
    assert_eq "$(jq -c '[.sandboxes[].id]' <<<"$body")" '[]'
    as bob GET /metrics
    grep -q '^agentjail_sandboxes_active 0$' <<<"$body" || fail "$body"
    grep -q '^agentjail_execs_total 0$' <<<"$body" || fail "$body"
    ! grep -q 'alice\|tenant=' <<<"$body" || fail "bob's metrics name alice: $body"
    as bob GET /healthz # the probe says the state only, no one's count
    assert_eq "$(jq -c . <<<"$body")" '{"status":"ok"}'
    as bob GET /v1/sandboxes
    assert_eq "$(jq '.sandboxes | length' <<<"$body")" 0
    # alice's sandbox is untouched
    as alice GET "/v1/sandboxes/$id/files?path=/tmp/f"
    assert_eq "$status_code:${body%$'\n'}" 200:mine
    as alice GET "/v1/sandboxes/$id"
    assert_eq "$(jq -r .state <<<"$body"):$(jq .execs <<<"$body")" running:1
    as alice GET /v1/sandboxes
    assert_eq "$(jq -c '[.sandboxes[].id]' <<<"$body")" "[\"$id\"]"
    # the operator sees each tenant's count
    api GET /metrics | grep -q '^agentjail_tenant_sandboxes_active{tenant="alice"} 1$'
    # a wrong token, or none: 401, by TCP
    as wrong-token-0123456789abc GET /v1/sandboxes
    assert_eq "$status_code" 401
}

@test "tenants: per-tenant caps, and the audit log names the tenant" {
    write_tokens '"max_memory": "256M"' '"max_sandboxes": 1'
    svc_tenants
    as bob POST /v1/sandboxes -d '{}'
    assert_eq "$status_code" 201 "$body"
    bid=$(jq -r .id <<<"$body")
    as bob POST /v1/sandboxes -d '{}'
    assert_eq "$status_code:$(jq -r .error.policy_key <<<"$body"):$(jq -r .error.policy_file <<<"$body")" \
        "403:max_sandboxes:tokens file" "$body"
    as bob POST "/v1/sandboxes/$bid/fork" -d '{}'
    assert_eq "$status_code" 403 "$body"
    as alice POST /v1/sandboxes -d '{"memory": "1G"}'
    assert_eq "$status_code:$(jq -r .error.policy_key <<<"$body")" 403:max_memory "$body"
    as alice POST /v1/sandboxes -d '{}' # its default is lowered to its cap
    assert_eq "$status_code:$(jq .limits.memory <<<"$body")" 201:268435456 "$body"
    aid=$(jq -r .id <<<"$body")
    as alice POST "/v1/sandboxes/$aid/exec" -d '{"cmd": "true"}'
    as bob DELETE "/v1/sandboxes/$bid"
    sleep 0.2
    a=$(jq -c 'select(.sandbox == "'"$aid"'") | [.event, .tenant]' "$STATE/audit.log" | sort -u | tr -d '\n')
    assert_eq "$a" '["create","alice"]["exec","alice"]'
    b=$(jq -c 'select(.tenant == "bob") | .event' "$STATE/audit.log" | sort | uniq | tr -d '\n')
    assert_eq "$b" '"create""create_refused""delete"'
    # every line about a sandbox names a tenant
    assert_eq "$(jq -c 'select(.sandbox != null and .tenant == null)' "$STATE/audit.log")" ""
}

@test "tenants: a tenant's snapshots are its own (named TENANT.NAME, not usable by others)" {
    export AGENTJAIL_STATE_DIR=$T/ajstate
    mkdir -p "$T/tree/etc" "$T/tree/tmp"
    echo base >"$T/tree/etc/motd"
    aj_timeout "$AJ" image build tiny --from-dir "$T/tree" 2>/dev/null
    write_tokens
    svc_tenants
    as alice POST /v1/sandboxes -d '{"image": "tiny"}'
    assert_eq "$status_code" 201 "$body"
    id=$(jq -r .id <<<"$body")
    as alice POST "/v1/sandboxes/$id/snapshot" -d '{"name": "plain"}'
    assert_eq "$status_code" 403 "$body"
    as alice POST "/v1/sandboxes/$id/snapshot" -d '{"name": "bob.planted"}'
    assert_eq "$status_code" 403 "$body"
    as alice POST "/v1/sandboxes/$id/snapshot" -d '{"name": "alice.keep"}'
    assert_eq "$status_code" 201 "$body"
    as alice POST /v1/sandboxes -d '{"image": "alice.keep"}'
    assert_eq "$status_code" 201 "$body"
    as bob POST /v1/sandboxes -d '{"image": "alice.keep"}'
    assert_eq "$status_code" 403 "$body"
    as bob POST /v1/sandboxes -d '{"image": "alice.anything"}' # by its name, existing or not
    assert_eq "$status_code" 403 "$body"
    api_status POST /v1/sandboxes -d '{"image": "alice.keep"}' # the operator's socket too
    assert_eq "$status_code" 403 "$body"
    [ ! -e "$AGENTJAIL_STATE_DIR/images/names/plain" ] && [ ! -e "$AGENTJAIL_STATE_DIR/images/names/bob.planted" ]
    as bob GET /v1/sandboxes
    assert_eq "$(jq '.sandboxes | length' <<<"$body")" 0
}

@test "operator: a bad operator policy or tokens file: exit 125, a clear message, nothing served" {
    p=$T/p.json
    bad() { # WHAT EXPECTED-MESSAGE-PART [serve args]
        local msg=$1
        shift
        run "$AJ" serve --socket "$T/x.sock" --state-dir "$T/st" "$@"
        assert_status 125
        assert_contains "$output" "$msg"
        [ ! -S "$T/x.sock" ] || fail "it served"
    }
    echo '{"bind_roots": [' >"$p"
    bad "not JSON" --operator-policy "$p"
    echo '{"bind_root": []}' >"$p"
    bad "unknown key 'bind_root'" --operator-policy "$p"
    echo '{"bind_roots": ["/"]}' >"$p"
    bad "whole host" --operator-policy "$p"
    echo "{\"bind_roots\": [\"$T/nosuch\"]}" >"$p"
    bad "cannot be opened" --operator-policy "$p"
    ln -s "$W" "$T/wlink"
    echo "{\"bind_roots\": [\"$T/wlink\"]}" >"$p"
    bad "symlink" --operator-policy "$p"
    echo '{"max_memory": "lots"}' >"$p"
    bad "max_memory" --operator-policy "$p"
    bad "cannot open" --operator-policy "$T/nosuch.json"
    write_tokens
    chmod 644 "$T/tokens.json"
    bad "can be read by others" --tokens "$T/tokens.json"
    chmod 600 "$T/tokens.json"
    printf '[{"tenant": "a", "token": "same-token-0123456789"}, {"tenant": "b", "token": "same-token-0123456789"}]' >"$T/tokens.json"
    bad "same token" --tokens "$T/tokens.json"
    printf '[{"tenant": "a", "token": "short"}]' >"$T/tokens.json"
    bad "'token'" --tokens "$T/tokens.json"
    printf '[{"tenant": "operator", "token": "oper-token-0123456789"}]' >"$T/tokens.json"
    bad "operator" --tokens "$T/tokens.json"
    bad "needs --token-file or --tokens" --listen 127.0.0.1:1
}

# front_has STRING: the front's memory holds STRING (root reads /proc/PID/mem).
front_has() {
    local front
    front=$(pgrep -P "$SVC_PID" -x agentjail-front) || fail "no front"
    python3 - "$front" "$1" <<'PY'
import re, sys
pid, needle = sys.argv[1], sys.argv[2].encode()
found = False
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) (\S+)", line)
        if not m or m.group(3)[0] != "r" or "[vvar]" in line or "[vsyscall]" in line:
            continue
        start, end = int(m.group(1), 16), int(m.group(2), 16)
        if end - start > (1 << 30):
            continue  # a sanitizer's shadow, not data
        pos, tail = start, b""
        while pos < end and not found:
            n = min(end - pos, 16 << 20)
            try:
                mem.seek(pos)
                chunk = tail + mem.read(n)
            except OSError:
                break
            found = needle in chunk
            tail = chunk[-len(needle):]
            pos += n
        if found:
            break
sys.exit(0 if found else 1)
PY
}

@test "tenants: the front (unprivileged) holds no token, only digests" {
    printf 'operator-token-0123456789\n' >"$T/token"
    write_tokens
    PORT=$((20000 + RANDOM % 20000))
    # SVC_OLD=1: without --tokens, which a build before it does not know (to
    # show that the front of such a build held the token)
    local more=(--tokens "$T/tokens.json")
    [ -z "${SVC_OLD:-}" ] || more=()
    SVC_NO_POLICY=1 svc_start --listen "127.0.0.1:$PORT" --token-file "$T/token" ${more[@]+"${more[@]}"}
    for _ in $(seq 50); do curl -s "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
    # the check itself finds what is there
    front_has "agentjail-front" || fail "cannot read the front's memory"
    ! front_has operator-token-0123456789 || fail "the front's memory holds the --token-file token"
    if [ -z "${SVC_OLD:-}" ]; then
        ! front_has alice-token-0123456789 || fail "the front's memory holds alice's token"
        ! front_has bob-token-0123456789ab || fail "the front's memory holds bob's token"
        as alice GET /v1/sandboxes
        assert_eq "$status_code" 200
        ! front_has bob-token-0123456789ab || fail "the front's memory holds bob's token"
    fi
}

@test "tenants: the supervisor decides who asks from the token, not from what the front says" {
    write_tokens
    if [ -n "${SVC_OLD:-}" ]; then # a build without --tokens: alice's token is the one
        echo alice-token-0123456789 >"$T/token"
        PORT=$((20000 + RANDOM % 20000))
        SVC_NO_POLICY=1 svc_start --listen "127.0.0.1:$PORT" --token-file "$T/token"
    else
        svc_tenants
    fi
    as alice POST /v1/sandboxes -d '{}'
    assert_eq "$status_code" 201 "$body"
    id=$(jq -r .id <<<"$body")
    front=$(pgrep -P "$SVC_PID" -x agentjail-front)
    # a front taken over: requests of its own on its supervisor socket (a
    # copy taken with pidfd_getfd; the front is stopped so that it does not
    # read the replies)
    kill -STOP "$front"
    run python3 - "$front" "$id" <<'PY'
import ctypes, json, os, socket, struct, sys
front, sb = int(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(front)
ipc = None
for name in os.listdir(f"/proc/{front}/fd"):
    if not os.readlink(f"/proc/{front}/fd/{name}").startswith("socket:"):
        continue
    fd = libc.syscall(438, pidfd, int(name), 0)  # pidfd_getfd
    if fd < 0:
        continue
    s = socket.socket(fileno=fd)
    if (s.family == socket.AF_UNIX and s.type == socket.SOCK_SEQPACKET
            and not s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)):
        ipc = s
        break
    s.detach()
    os.close(fd)
assert ipc, "no supervisor socket in the front"
ipc.settimeout(10)  # polls; the descriptor stays non-blocking (it is the front's too)

def ask(n, op, args):
    p = json.dumps(args).encode()
    h = struct.pack("=IHHIIiI24s", 0x504a4a41, 1, 1, 0x7fff0000 + n, 0, 0, len(p), op.encode())
    ipc.sendmsg([h, p])
    while True:
        data = ipc.recv(1 << 17)
        magic, ver, typ, rid, flags, status, ln = struct.unpack("=IHHIIiI", data[:24])
        if rid == 0x7fff0000 + n:
            return status, json.loads(data[48:48 + ln] or b"{}")

tries = [
    ("get", {"sandbox": sb, "tenant": "alice", "auth": {"local": True}}),
    ("list", {"tenant": "alice", "auth": {"local": True}}),
    ("get", {"sandbox": sb, "tenant": "alice", "auth": {"token": "bob-token-0123456789ab"}}),
    ("delete", {"sandbox": sb, "tenant": "alice", "auth": {"token": "bob-token-0123456789ab"}}),
    ("get", {"sandbox": sb, "tenant": "alice"}),
    ("get", {"sandbox": sb, "auth": {"token": "forged-token-0123456789"}}),
    ("get", {"sandbox": sb, "auth": {"token": "alice-token-0123456789"}}),
]
for i, (op, args) in enumerate(tries):
    st, body = ask(i, op, dict(args, peer="127.0.0.1"))
    print(op, st, len(body.get("sandboxes", [])) if op == "list" else body.get("error", {}).get("code", "ok"))
PY
    kill -CONT "$front"
    [ "$status" -eq 0 ] || fail "$output"
    assert_eq "$output" "get 404 not_found
list 200 0
get 404 not_found
delete 404 not_found
get 401 unauthorized
get 401 unauthorized
get 200 ok"
    as alice GET "/v1/sandboxes/$id"
    assert_eq "$status_code:$(jq -r .state <<<"$body")" 200:running
}
