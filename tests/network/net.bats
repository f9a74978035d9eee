#!/usr/bin/env bats
# Network modes: --net none and --net open, in a fake world (world.bash);
# nothing here sends a packet to a real address.

load ../integration/helpers
load world

setup_file() { world_setup_file; }
setup() { world_setup; }
teardown() { world_teardown; }

# Everything a sandbox must not reach, as probe.py targets; the gateway (the
# host side of the sandbox's veth) is added by the test.
REFUSED=(
    metadata=169.254.169.254:80 lan=10.0.0.5:80 host-public=198.51.100.2:8080
    loopback=127.0.0.1:8080 loopback-127.1=127.1:8080 zero=0:8080
    meta-decimal=2852039166:80 meta-octal=0251.0376.0251.0376:80 meta-hex=0xa9fea9fe:80
    meta-mixed=169.254.43518:80 mapped-loopback=[::ffff:127.0.0.1]:8080
    mapped-meta=[::ffff:169.254.169.254]:80 v6-loopback=[::1]:8080
)
REFUSED_NAMES=(metadata lan host-public loopback loopback-127.1 zero meta-decimal meta-octal
    meta-hex meta-mixed mapped-loopback mapped-meta v6-loopback)

@test "the world works: from the host netns every fake server answers" {
    local a
    for a in 192.0.2.10 203.0.113.10 169.254.169.254 10.0.0.5; do
        run ip netns exec "$HNS" curl -s -m 2 "http://$a/"
        assert_eq "$output" inet-ok "GET http://$a/ from the host netns"
    done
}

@test "--net none (default): loopback only, the internet is unreachable at once" {
    matrix -- web=192.0.2.10:80 meta=169.254.169.254:80
    assert_status 0
    assert_refused web
    assert_refused meta
    run --separate-stderr hrun --net none -- sh -c 'ip -o link show | awk -F": " "{ print \$2 }"; cat /etc/resolv.conf'
    assert_status 0
    assert_output_has_line lo
    assert_output_lacks eth0
    assert_output_has_line "nameserver 127.0.0.1"
}

@test "--net open: TEST-NET servers are reachable over HTTP" {
    matrix --net open -- web1=192.0.2.10:80 web2=203.0.113.10:80
    assert_status 0
    assert_served web1 inet-ok
    assert_served web2 inet-ok
}

@test "--net open: the host, metadata, LAN, loopback and disguised addresses are refused fast" {
    run --separate-stderr hrun --net open -- sh -c \
        'gw=$(ip route show default | cut -d" " -f3); exec python3 /probe.py gateway=$gw:8080 "$@"' \
        sh "${REFUSED[@]}" web=192.0.2.10:80
    assert_status 0
    local n
    for n in gateway "${REFUSED_NAMES[@]}"; do assert_refused "$n"; done
    assert_served web inet-ok # the refusals are not a dead network
}

@test "--net open: --deny CIDR is refused, the rest still works" {
    matrix --net open --deny 203.0.113.0/24 --deny 2001:db8::/32 -- web1=192.0.2.10:80 denied=203.0.113.10:80
    assert_status 0
    assert_served web1 inet-ok
    assert_refused denied
}

@test "--net open: two concurrent sandboxes cannot reach each other" {
    hrun --net open -- sh -c 'ip -4 -o addr show eth0 | awk "{ split(\$4, a, \"/\"); print a[1] }" >/workspace/a.ip.tmp
        python3 -m http.server -b 0.0.0.0 8000 >/dev/null 2>&1 &
        while ! python3 /probe.py self=127.0.0.1:8000 | grep -qv refused; do sleep 0.05; done
        mv /workspace/a.ip.tmp /workspace/a.ip
        i=0; while [ ! -e /workspace/done ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done' &
    AJ_BG_PID=$!
    wait_for_file_line "$WS/a.ip" '^10\.200\.' 10 || fail "sandbox A did not start"
    local a
    a=$(cat "$WS/a.ip")
    run --separate-stderr hrun --net open -- sh -c \
        'python3 /probe.py peer=$1:8000 peer-gw=$(ip route show default | cut -d" " -f3):8000 web=192.0.2.10:80' sh "$a"
    touch "$WS/done"
    wait "$AJ_BG_PID" || fail "sandbox A failed"
    assert_status 0
    assert_refused peer
    assert_refused peer-gw
    assert_served web inet-ok
}

@test "--net open: veth, addresses and the nft table are gone after the run" {
    run --separate-stderr hrun --net open -- sh -c 'ip -o link show | awk -F": " "{ print \$2 }" | cut -d@ -f1'
    assert_status 0
    assert_output_has_line eth0
    assert_world_clean
}

@test "--net open: after SIGKILL of agentjail the next start removes what it left" {
    hrun --net open -- sleep 60 &
    AJ_BG_PID=$!
    local i pid=""
    for ((i = 0; i < 200; i++)); do
        ip netns exec "$HNS" nft list tables 2>/dev/null | grep -q agentjail- && break
        sleep 0.05
    done
    pid=$(head -n1 "$AJ_PIDS_FILE")
    [ -n "$pid" ] || fail "no agentjail pid"
    ip netns exec "$HNS" nft list tables | grep -q "agentjail-$pid-" || fail "no table for $pid"
    kill -KILL "$pid"
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
    # the sandbox died with agentjail (and its veth with its namespace); the
    # table is what a crash leaves until the next start
    run --separate-stderr hrun --net open -- true
    assert_status 0
    assert_world_clean
}

@test "--net open turns on forwarding in agentjail's namespace only" {
    local before
    before=$(cat /proc/sys/net/ipv4/ip_forward)
    ip netns exec "$HNS" sh -c 'echo 0 >/proc/sys/net/ipv4/ip_forward'
    matrix --net open -- web=192.0.2.10:80
    assert_served web inet-ok
    assert_eq "$(ip netns exec "$HNS" cat /proc/sys/net/ipv4/ip_forward)" 1 "ip_forward in the host netns"
    assert_eq "$(cat /proc/sys/net/ipv4/ip_forward)" "$before" "ip_forward in the real host namespace"
}

@test "--net open: resolv.conf lists only the host's nameservers outside refused ranges" {
    printf 'nameserver 127.0.0.53\nnameserver 10.0.0.53\nnameserver 192.0.2.53\nnameserver 169.254.169.253\n' >"$T/resolv.conf"
    run --separate-stderr timeout -k 5 "$AJ_TIMEOUT" nsenter --net="/run/netns/$HNS" unshare -m sh -c \
        'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"' sh "$T/resolv.conf" \
        "$AJ" run "${AJ_QUIET[@]}" --net open -- cat /etc/resolv.conf
    assert_status 0
    assert_output_has_line "nameserver 192.0.2.53"
    assert_output_lacks 10.0.0.53
    assert_output_lacks 127.0.0.53
    assert_output_lacks 169.254
    printf 'nameserver 127.0.0.53\n' >"$T/resolv.conf"
    run --separate-stderr timeout -k 5 "$AJ_TIMEOUT" nsenter --net="/run/netns/$HNS" unshare -m sh -c \
        'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"' sh "$T/resolv.conf" \
        "$AJ" run "${AJ_QUIET[@]}" --net open -- cat /etc/resolv.conf
    assert_status 0
    assert_output_has_line "nameserver 127.0.0.1"
    assert_output_lacks 127.0.0.53
}

@test "bad network flags fail with one clear line" {
    run --separate-stderr hrun --net wide -- true
    assert_status 125
    assert_one_error_line
    run --separate-stderr hrun --net open --deny 300.1.2.3/8 -- true
    assert_status 125
    assert_one_error_line
    run --separate-stderr hrun --deny 203.0.113.0/24 -- true
    assert_status 125
    assert_one_error_line
    [[ "$stderr" == *"--net open"* ]] || fail "no hint: $stderr"
    # an unprivileged caller cannot create veths or nft rules: clear refusal
    run --separate-stderr timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$AJ_REAL" run --quiet --net open -- true
    assert_status 125
    assert_one_error_line
    [[ "$stderr" == *"needs root"* ]] || fail "no reason: $stderr"
}

# Issue 20: a sandbox has IPv4 egress only; IPv6 to a global address (the
# documentation prefix 2001:db8::/32, never routed) fails at once in every
# mode with an errno the program can act on, never a 5 s timeout of a
# dropped SYN. With --allow the resolver hands out no AAAA record either.
@test "IPv6: connect to [2001:db8::1]:80 fails in < 1 s in every net mode; no AAAA from --allow's resolver" {
    local mode
    for mode in none open allow; do
        local args=(--net "$mode")
        [ "$mode" = allow ] && args=(--dns 192.0.2.53 --allow allowed.test)
        run --separate-stderr hrun "${args[@]}" -- sh -c \
            'python3 /probe.py v6-doc=[2001:db8::1]:80 v6-doc-443=[2001:db8:1::10]:443
             python3 -c "
import errno, socket, time
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.settimeout(5)
t = time.monotonic()
try:
    s.connect((\"2001:db8::1\", 80)); print(\"errno connected\")
except OSError as e:
    print(\"errno\", errno.errorcode.get(e.errno, e.errno), int((time.monotonic() - t) * 1000))
"'
        assert_status 0
        local n r ms
        for n in v6-doc v6-doc-443; do
            r=$(result_of "$n")
            ms=${r##* }
            case ${r%% *} in
            refused | unreachable) ;;
            *) _aj_dump; fail "--net $mode: $n: expected refused or unreachable, got [$r]" ;;
            esac
            [ "$ms" -lt 1000 ] || { _aj_dump; fail "--net $mode: $n refused only after $ms ms"; }
        done
        r=$(printf '%s\n' "$output" | awk '$1 == "errno" { print $2; exit }')
        case $r in
        ENETUNREACH | EHOSTUNREACH | ECONNREFUSED | EACCES | EPERM) ;;
        *) _aj_dump; fail "--net $mode: connect to 2001:db8::1 gave [$r], not a clear refusal" ;;
        esac
    done
    run --separate-stderr hrun --dns 192.0.2.53 --allow allowed.test -- sh -c \
        'ns=$(sed -n "s/^nameserver //p" /etc/resolv.conf); python3 /dnsq.py $ns allowed.test 28; python3 /dnsq.py $ns allowed.test'
    assert_status 0
    assert_output_has_line "rcode=0"
    assert_output_lacks ":"
    assert_output_has_line "192.0.2.10 ttl=60"
}
