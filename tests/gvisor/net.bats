#!/usr/bin/env bats
# Level 2's network: runsc's netstack in the network namespace agentjail's
# net layer prepares (docs/levels.md), in the fake world of
# tests/network/world.bash: nothing here sends a packet to a real address.
# The same expectations as tests/network/net.bats and allow.bats.

load ../integration/helpers
load ../network/world

setup_file() { world_setup_file; }
setup() {
    command -v runsc >/dev/null || skip "runsc is not installed (apt-get install runsc)"
    world_setup
}
teardown() { world_teardown; }

REFUSED=(
    metadata=169.254.169.254:80 lan=10.0.0.5:80 host-public=198.51.100.2:8080
    meta-decimal=2852039166:80 mapped-meta=[::ffff:169.254.169.254]:80
)
REFUSED_NAMES=(metadata lan host-public meta-decimal mapped-meta)

@test "gvisor --net none: the internet is unreachable at once" {
    matrix --isolation gvisor -- web=192.0.2.10:80 meta=169.254.169.254:80
    assert_status 0
    assert_refused web
    assert_refused meta
}

@test "gvisor --net open: TEST-NET servers answer; the host, metadata, LAN are refused fast" {
    run --separate-stderr hrun --isolation gvisor --net open -- sh -c \
        'gw=$(ip route show default | cut -d" " -f3); exec python3 /probe.py gateway=$gw:8080 "$@"' \
        sh "${REFUSED[@]}" web1=192.0.2.10:80 web2=203.0.113.10:80 loopback=127.0.0.1:8080
    assert_status 0
    # the sandbox's loopback is the Sentry's: nothing listens there (gVisor
    # answers a SYN to a closed loopback port late: not refused fast)
    case $(result_of loopback) in refused* | unreachable* | timeout*) ;; *) _aj_dump; fail "loopback: $(result_of loopback)" ;; esac
    assert_served web1 inet-ok
    assert_served web2 inet-ok
    local n
    for n in gateway "${REFUSED_NAMES[@]}"; do assert_refused "$n"; done
    run --separate-stderr hrun --isolation gvisor --net open -- cat /proc/version
    assert_contains "$output" "4.4.0" # gVisor's kernel, not level 1 on the side
}

@test "gvisor --allow: an HTTP GET through the proxy works, other hosts are refused by it" {
    run --separate-stderr hrun --isolation gvisor --dns 192.0.2.53 --allow allowed.test -- python3 -c '
import urllib.request, urllib.error
print(urllib.request.urlopen("http://allowed.test/", timeout=5).read().decode().strip())
try:
    urllib.request.urlopen("http://other.test/", timeout=5); print("other: served")
except urllib.error.HTTPError as e:
    print("other:", e.code)'
    assert_status 0
    assert_output_has_line inet-ok
    assert_output_has_line "other: 403"
    [ "$(dns_seen '^other\.test')" -eq 0 ] || fail "other.test was asked upstream"
}

@test "gvisor --allow: no direct connection to a host that was not resolved" {
    matrix --isolation gvisor --dns 192.0.2.53 --allow allowed.test -- web=192.0.2.10:80 meta=169.254.169.254:80
    assert_status 0
    assert_refused web
    assert_refused meta
}

@test "gvisor --net-log: JSON lines of DNS queries, proxy requests and connections" {
    run --separate-stderr hrun --isolation gvisor --dns 192.0.2.53 --allow allowed.test --net-log "$T/net.jsonl" -- python3 -c '
import urllib.request, urllib.error
urllib.request.urlopen("http://allowed.test/", timeout=5).read()
try:
    urllib.request.urlopen("http://other.test/", timeout=5)
except urllib.error.HTTPError:
    pass'
    assert_status 0
    q() { jq -c "select($1)" "$T/net.jsonl" | wc -l; }
    [ "$(q '.event == "proxy" and .host == "allowed.test" and .verdict == "allowed"')" -eq 1 ] || fail "proxy allowed: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "proxy" and .host == "other.test" and .verdict == "refused" and .status == 403')" -eq 1 ] || fail "proxy refused: $(cat "$T/net.jsonl")"
    run --separate-stderr hrun --isolation gvisor --net open --net-log "$T/open.jsonl" -- python3 /probe.py web=192.0.2.10:80 meta=169.254.169.254:80
    assert_status 0
    [ "$(jq -c 'select(.event == "connect" and .address == "192.0.2.10" and .verdict == "allowed")' "$T/open.jsonl" | wc -l)" -ge 1 ] || fail "$(cat "$T/open.jsonl")"
    [ "$(jq -c 'select(.event == "connect" and .address == "169.254.169.254" and .verdict == "refused")' "$T/open.jsonl" | wc -l)" -ge 1 ] || fail "$(cat "$T/open.jsonl")"
}
