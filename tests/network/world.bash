# A fake world for network tests; nothing here sends a packet to a real
# address. Built per test, torn down in teardown:
#
#   sandbox --veth/NAT--> "host" netns $HNS --veth--> "internet" netns $INS
#                         up0 198.51.100.2/24          wan0 198.51.100.1/24
#                         default via .1               + 192.0.2.10, 203.0.113.10
#                         http :8080 on all addrs        (TEST-NET web servers)
#                                                      + 169.254.169.254 (metadata)
#                                                      + 10.0.0.5 (a LAN host)
#                                                      web :80, :443, :8443 on all
#                                                      addrs (fakeinet.py)
#                                                      + 192.0.2.53: DNS (fakeinet.py),
#                                                      also the attacker's server
#                                                      for *.evil.test; queries
#                                                      it sees go to $DNS_LOG,
#                                                      requests the web servers
#                                                      get to $WEB_LOG (JSON)
#
# agentjail runs inside $HNS (nsenter --net: only the network namespace
# changes; "ip netns exec" would also remount /sys and hide the cgroups), so
# its veth, nft table and ip_forward live there, never in the real host's.

# "ip netns add" mounts /run/netns once; do that before the residue snapshot.
world_prepare() {
    ip netns add "ajt-warm-$$" && ip netns del "ajt-warm-$$"
}

world_up() {
    local id=${BATS_TEST_NUMBER:-0}$$
    HNS=ajt-host-$id
    INS=ajt-inet-$id
    ip netns add "$HNS"
    ip netns add "$INS"
    ip link add up0 netns "$HNS" type veth peer name wan0 netns "$INS"
    ip -n "$HNS" link set lo up
    ip -n "$INS" link set lo up
    ip -n "$HNS" addr add 198.51.100.2/24 dev up0
    ip -n "$HNS" link set up0 up
    ip -n "$HNS" route add default via 198.51.100.1
    ip -n "$INS" addr add 198.51.100.1/24 dev wan0
    local a
    for a in 192.0.2.10 192.0.2.53 203.0.113.10 169.254.169.254 10.0.0.5; do
        ip -n "$INS" addr add "$a/32" dev lo
    done
    ip -n "$INS" link set wan0 up
    # the internet answers the NATed sandbox via the host's public address
    ip -n "$INS" route add default via 198.51.100.2
    WORLD_PIDS=()
    DNS_LOG=$T/dns.log
    WEB_LOG=$T/web.jsonl
    : >"$DNS_LOG"
    : >"$WEB_LOG"
    rm -f "$T/inet.ready" "$T/host.ready"
    # fd 3 closed: bats waits for it otherwise
    # WORLD_WEB_PORTS: a test with servers of its own on some ports (npm.bats)
    # WORLD_TLS=PORT:DIR: an HTTPS server too, on PORT instead of plain
    # HTTP (tls.bats; fakeinet.py --tls)
    local web=${WORLD_WEB_PORTS:-80,443,8443}
    if [ -n "${WORLD_TLS:-}" ]; then
        web=,$web,
        web=${web//,${WORLD_TLS%%:*},/,}
        web=${web#,}
        web=${web%,}
    fi
    ip netns exec "$INS" python3 "$NET_DIR/fakeinet.py" --web "$web" --body inet-ok \
        ${WORLD_TLS:+--tls "$WORLD_TLS"} --web-log "$WEB_LOG" --dns 192.0.2.53 --dns-log "$DNS_LOG" --ready "$T/inet.ready" >/dev/null 2>&1 3>&- &
    WORLD_PIDS+=($!)
    ip netns exec "$HNS" python3 "$NET_DIR/fakeinet.py" --web 8080 --body host-ok \
        --ready "$T/host.ready" >/dev/null 2>&1 3>&- &
    WORLD_PIDS+=($!)
    local i
    for ((i = 0; i < 600; i++)); do
        [ -e "$T/inet.ready" ] && [ -e "$T/host.ready" ] && return 0
        sleep 0.05
    done
    fail "the test world's servers did not start"
}

world_down() {
    local p
    for p in "${WORLD_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${WORLD_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    WORLD_PIDS=()
    [ -n "${HNS:-}" ] && ip netns del "$HNS" 2>/dev/null
    [ -n "${INS:-}" ] && ip netns del "$INS" 2>/dev/null
    return 0
}

# agentjail inside the host netns, with probe.py at /probe.py and dnsq.py
# at /dnsq.py
hrun() {
    timeout -k 5 "$AJ_TIMEOUT" nsenter --net="/run/netns/$HNS" \
        "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --ro "$NET_PROBE:/probe.py" \
        --ro "$NET_DIR/dnsq.py:/dnsq.py" "$@"
}

# Queries that reached the fake DNS server (also the attacker's) matching
# REGEX.
dns_seen() { # REGEX
    grep -cE "$1" "$DNS_LOG" || true
}

NET_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NET_PROBE=$NET_DIR/probe.py

# Run probe.py in a sandbox with ARGS... before "--" and targets after.
matrix() {
    local args=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    run --separate-stderr hrun "${args[@]}" -- python3 /probe.py "$@"
}

# The line of target NAME in $output: "RESULT MS".
result_of() {
    printf '%s\n' "$output" | awk -v n="$1" '$1 == n { print $2, $3; exit }'
}

assert_served() { # NAME BODY
    local r
    r=$(result_of "$1")
    [ "${r%% *}" = "$2" ] || { _aj_dump; fail "$1: expected to be served [$2], got [$r]"; }
}

# Refused, and fast (under 2 s): a TCP reset or an ICMP error, never a hang.
assert_refused() { # NAME
    local r res ms
    r=$(result_of "$1")
    res=${r%% *}
    ms=${r##* }
    case $res in
    refused | unreachable) ;;
    *) _aj_dump; fail "$1: expected refused, got [$r]" ;;
    esac
    [ "$ms" -lt 2000 ] || { _aj_dump; fail "$1: refused only after ${ms} ms"; }
}

# A test CA and the fake world's HTTPS certificates in DIR (WORLD_TLS=443:DIR):
# DIR/ca.crt signs default.pem (api.example.test, other.test);
# bad.example.test.pem is self-signed.
world_test_certs() { # DIR
    local d=$1 ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
    mkdir -p "$d"
    openssl req -x509 "${ec[@]}" -keyout "$d/ca.key" -out "$d/ca.crt" -days 2 -subj "/CN=test world CA" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
    openssl req "${ec[@]}" -keyout "$d/leaf.key" -out "$d/leaf.csr" -subj "/CN=api.example.test" 2>/dev/null
    printf 'subjectAltName=DNS:api.example.test,DNS:other.test\nextendedKeyUsage=serverAuth\n' >"$d/ext"
    openssl x509 -req -in "$d/leaf.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
        -extfile "$d/ext" -out "$d/leaf.crt" 2>/dev/null
    cat "$d/leaf.crt" "$d/leaf.key" >"$d/default.pem"
    openssl req -x509 "${ec[@]}" -keyout "$d/bad.key" -out "$d/bad.crt" -days 2 -subj "/CN=bad.example.test" \
        -addext subjectAltName=DNS:bad.example.test 2>/dev/null
    cat "$d/bad.crt" "$d/bad.key" >"$d/bad.example.test.pem"
}

# A shell command for inside a sandbox: what a process there can read that
# agentjail may have written (/ but /usr, /proc, /sys, /dev, /workspace,
# as a tar; every process's environment and command line) into
# /workspace/inside.bin, for world_assert_no_key.
WORLD_DUMP='{ tar -cf - --exclude=./usr --exclude=./proc --exclude=./sys --exclude=./dev --exclude=./workspace -C / . 2>/dev/null; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null; } >/workspace/inside.bin'

# A shell command for inside a sandbox with a scoped secret: tries to
# write, replace (rename over, from the same directory and from /tmp),
# unlink and recreate the CA bundle, and to write its staged copy and
# move its directory aside; prints "ca tampered: HOW" for each that
# worked and "ca intact" when the bundle still holds what it held.
WORLD_CA_TAMPER='b=/etc/ssl/certs/ca-certificates.crt; s=$(cksum <$b)
    t() { (eval "$2") 2>/dev/null && echo "ca tampered: $1"; }
    t write "echo junk >>$b"; t truncate ": >$b"; t staged "echo junk >>/.agentjail/ca-certificates.crt"
    t rename "cp $b $b.new && mv -f $b.new $b"; rm -f $b.new 2>/dev/null
    t tmp "echo junk >/tmp/ca.new && mv -f /tmp/ca.new $b"
    t unlink "rm -f $b"; [ -e $b ] || t recreate "echo junk >$b"
    t dir "mv /etc/ssl/certs /etc/ssl/certs.old && mkdir /etc/ssl/certs && echo junk >$b"
    [ "$(cksum <$b)" = "$s" ] && grep -q "BEGIN CERTIFICATE" $b && echo "ca intact"'

# After WORLD_CA_TAMPER: nothing worked, the bundle is as it was.
world_assert_ca_intact() {
    assert_output_has_line "ca intact"
    [[ "$output" != *"ca tampered"* ]] || fail "$(grep "ca tampered" <<<"$output")"
}

# The CA key netd wrote to KEYFILE (AGENTJAIL_CA_KEY_FILE) is not in DUMP,
# as raw bytes (either order), hex or PEM; DUMP holds the CA bundle.
world_assert_no_key() { # DUMP KEYFILE
    local hex b64
    hex=$(openssl pkey -in "$2" -text -noout | awk '/^priv:/ {f = 1; next} /^pub:/ {f = 0} f' | tr -d ' :\n')
    hex=${hex: -64}
    b64=$(sed -n 2p "$2")
    [ ${#hex} -eq 64 ] && [ -n "$b64" ] || fail "no key: $(cat "$2")"
    [ "$(stat -c %s "$1")" -gt 100000 ] || fail "the dump is too small to mean anything"
    grep -q "BEGIN CERTIFICATE" "$1" || fail "the dump holds no CA bundle"
    python3 - "$1" "$hex" "$b64" <<'EOF' || fail "the CA key is inside"
import sys
data = open(sys.argv[1], "rb").read()
raw = bytes.fromhex(sys.argv[2])
for needle in (raw, raw[::-1], sys.argv[2].encode(), sys.argv[3].encode()):
    if needle in data:
        sys.exit(1)
EOF
}

# What agentjail may leave in the host netns: its links and nft ruleset.
world_residue() {
    ip -n "$HNS" -o link show | awk -F': ' '{ print $2 }' | grep -vE '^(lo|up0@.*)$'
    ip netns exec "$HNS" nft list ruleset
}

# Nothing of agentjail left in the host netns.
assert_world_clean() {
    local left
    left=$(world_residue)
    [ -z "$left" ] || fail "left in the host netns: $left"
}

# The per-test setup and teardown of every network test file.
world_setup_file() {
    [ "$(id -u)" -eq 0 ] || return 0
    world_prepare
}

world_setup() {
    require_root
    command -v nft >/dev/null || skip "nft not installed"
    aj_setup
    world_up
}

world_teardown() {
    local rc=0
    if [ -n "${HNS:-}" ] && ip netns list | grep -qw "$HNS"; then
        assert_world_clean || rc=1
    fi
    world_down
    aj_teardown || rc=1
    return $rc
}

# GET http://127.0.0.1:PORT/ in the host netns until it answers (10 s);
# the body in $body.
wait_published() { # PORT
    local i
    body=""
    for ((i = 0; i < 100; i++)); do
        body=$(ip netns exec "$HNS" curl -s -m 1 "http://127.0.0.1:$1/" 2>/dev/null) && [ -n "$body" ] && return 0
        sleep 0.1
    done
    return 0
}
