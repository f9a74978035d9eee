#!/usr/bin/env bats
# Level 2's network: runsc's netstack in the network namespace agentjail's
# net layer prepares (docs/levels.md), in the fake world of
# tests/network/world.bash: nothing here sends a packet to a real address.
# The same expectations as tests/network/net.bats and allow.bats.

load ../service/helpers # the integration helpers, and mk_tiny_root
load ../network/world

setup_file() {
    world_setup_file
    world_test_certs "$BATS_FILE_TMPDIR/certs"
}
setup() {
    command -v runsc >/dev/null || skip "runsc is not installed (apt-get install runsc)"
    # :443 is HTTPS with the test CA's certificates (tls.bats)
    CERTS=$BATS_FILE_TMPDIR/certs
    WORLD_TLS=443:$CERTS world_setup
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

@test "gvisor: HTTPS to a scoped secret's host is intercepted; other.test gets the placeholder; no key or value inside" {
    # the old code tunnelled it: curl, not trusting the test CA, failed
    local value='sk-gv-Zq8!x&y=1' ph
    chmod 0777 "$WS" # root's: the sandbox's root is not its owner at level 2
    AGENTJAIL_CA_KEY_FILE=$T/ca.key run --separate-stderr hrun --isolation gvisor --dns 192.0.2.53 \
        --allow api.example.test --allow other.test --secret "TOKEN@api.example.test=$value" \
        --upstream-ca "$CERTS/ca.crt" --net-log "$T/net.jsonl" -- sh -c '
        curl -sS -m 10 -H "Authorization: Bearer $TOKEN" -w "api %{http_code}\n" -o /dev/null \
            https://api.example.test/gv
        curl -sS -m 10 -k -H "Authorization: Bearer $TOKEN" -w "other %{http_code}\n" -o /dev/null \
            https://other.test/gv-other
        echo "ca=$SSL_CERT_FILE"; echo "inside: $TOKEN"; '"$WORLD_DUMP; $WORLD_CA_TAMPER"
    assert_status 0
    assert_output_has_line "api 200"
    assert_output_has_line "other 200"
    assert_output_has_line "ca=/etc/ssl/certs/ca-certificates.crt"
    world_assert_ca_intact
    ph=$(sed -n 's/^inside: //p' <<<"$output")
    [[ "$ph" == agentjail-placeholder-TOKEN-* ]] || fail "not a placeholder: $ph"
    req() { jq -c "select(.path == \"$1\")" "$WEB_LOG"; }
    [ "$(req /gv | jq -r '.headers.Authorization')" = "Bearer $value" ] || fail "/gv: $(req /gv)"
    [ "$(req /gv | jq -r '.tls')" = true ] || fail "/gv not over TLS: $(req /gv)"
    [ "$(req /gv-other | jq -r '.headers.Authorization')" = "Bearer $ph" ] || fail "/gv-other: $(req /gv-other)"
    q() { jq -c "select($1)" "$T/net.jsonl" | wc -l; }
    [ "$(q '.event == "secret_injected" and .host == "api.example.test" and .port == 443')" -eq 1 ] ||
        fail "injected: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "proxy" and .intercepted and .host == "api.example.test"')" -eq 1 ] || fail "$(cat "$T/net.jsonl")"
    world_assert_no_key "$WS/inside.bin" "$T/ca.key"
    ! grep -qF "$value" "$WS/inside.bin" "$T/net.jsonl" || fail "the value is inside or logged"
    [[ "$output$stderr" != *"$value"* ]] || fail "the value in the output"
    # an image without /etc/ssl gets a bundle: netd's CA, read-only; one
    # with /etc/ssl but no bundle has no place for it: 125
    mk_tiny_root "$T/tree" sh cat cksum grep rm mv cp mkdir
    run --separate-stderr hrun --isolation gvisor --rootfs "$T/tree" --dns 192.0.2.53 \
        --allow api.example.test --secret "TOKEN@api.example.test=$value" -- sh -c \
        'grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt; '"$WORLD_CA_TAMPER"
    assert_status 0
    [ "${lines[0]}" -eq 1 ] || fail "$output"
    world_assert_ca_intact
    mkdir -p "$T/tree/etc/ssl"
    run --separate-stderr hrun --isolation gvisor --rootfs "$T/tree" --dns 192.0.2.53 \
        --allow api.example.test --secret "TOKEN@api.example.test=$value" -- sh -c :
    assert_status 125
    assert_contains "$stderr" "needs /etc/ssl/certs/ca-certificates.crt in the root"
    # a FIFO there: 125 at once (the old code read it, blocking: the start hung)
    mkdir "$T/tree/etc/ssl/certs"
    mkfifo "$T/tree/etc/ssl/certs/ca-certificates.crt"
    AJ_TIMEOUT=10 run --separate-stderr hrun --isolation gvisor --rootfs "$T/tree" --dns 192.0.2.53 \
        --allow api.example.test --secret "TOKEN@api.example.test=$value" -- sh -c :
    assert_status 125
    assert_contains "$stderr" "ca-certificates.crt: it is a FIFO, not a regular file"
}
