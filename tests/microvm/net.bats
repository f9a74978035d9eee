#!/usr/bin/env bats
# Level 3's network (docs/levels.md, "The network"): the VM's NIC is a tap
# in a network namespace of its own, bridged there with the veth of level
# 1's network (the /30, the nft table, netd's resolver, proxy and net-log),
# in the fake world of tests/network/world.bash: nothing here sends a
# packet to a real address. TCG forced as in run.bats: three boots (~3 s
# each: two one-shot runs, the service's first VM on an image, saved) and
# one restore from that VM's snapshot.

load ../service/helpers
load ../network/world

setup_file() {
    world_setup_file
    world_test_certs "$BATS_FILE_TMPDIR/certs"
}
setup() {
    command -v qemu-system-x86_64 >/dev/null || skip "qemu is not installed (scripts/setup.sh)"
    [ -r /var/cache/agentjail/microvm/vmlinux ] || skip "no guest kernel (scripts/setup.sh)"
    export AGENTJAIL_MICROVM_ACCEL=tcg
    # :443 is HTTPS with the test CA's certificates (tls.bats)
    CERTS=$BATS_FILE_TMPDIR/certs
    WORLD_TLS=443:$CERTS world_setup
    # no --ro binds at level 3 yet: the probes come in with the workspace
    cp "$NET_PROBE" "$NET_DIR/dnsq.py" "$WS/"
    # the service runs in the test's "host" netns (its veths, nft tables)
    SVC_WRAP=(nsenter --net="/run/netns/$HNS")
}
teardown() {
    local rc=0
    svc_stop || rc=1
    world_teardown || rc=1
    return $rc
}

# No qemu or virtiofsd is left.
mv_gone() {
    local n
    for n in $(seq 50); do
        pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm' >/dev/null || pgrep -x virtiofsd >/dev/null || return 0
        sleep 0.1
    done
    fail "a qemu or virtiofsd is left"
}

@test "microvm --net open: TEST-NET served; metadata, LAN, the host and its loopback refused; net-log; HTTPS to a scoped secret's host intercepted" {
    # with a scoped secret: netd's proxy terminates HTTPS to api.example.test
    # (the old code tunnelled it: curl, not trusting the test CA, failed)
    local value='sk-mv-Zq8!x&y=1' ph
    chmod 0777 "$WS" # root's: the workspace's virtiofsd writes as unused ids
    AGENTJAIL_CA_KEY_FILE=$T/ca.key run --separate-stderr timeout -k 5 120 \
        nsenter --net="/run/netns/$HNS" "$AJ" run -q --isolation microvm --workspace "$WS" \
        --net open --net-log "$T/open.jsonl" --dns 192.0.2.53 --upstream-ca "$CERTS/ca.crt" \
        --secret "TOKEN@api.example.test=$value" -- sh -c '
        uname -r
        curl -sS -m 20 -H "Authorization: Bearer $TOKEN" -w "api %{http_code}\n" -o /dev/null \
            https://api.example.test/mv
        curl -sS -m 20 -k -H "Authorization: Bearer $TOKEN" -w "other %{http_code}\n" -o /dev/null \
            https://other.test/mv-other
        echo "ca=$SSL_CERT_FILE"; echo "inside: $TOKEN"; '"$WORLD_DUMP; $WORLD_CA_TAMPER"'
        gw=$(ip route show default | cut -d" " -f3)
        exec python3 /workspace/probe.py gateway=$gw:8080 "$@"' sh \
        web1=192.0.2.10:80 web2=203.0.113.10:80 metadata=169.254.169.254:80 lan=10.0.0.5:80 \
        host-public=198.51.100.2:8080 loopback=127.0.0.1:8080
    echo "$stderr"
    assert_status 0
    # the guest's own kernel (Debian's 6.1), not the host's: a VM, not level 1
    [[ "${lines[0]}" == 6.1.* ]] || fail "not the guest's kernel: ${lines[0]}"
    assert_served web1 inet-ok
    assert_served web2 inet-ok
    local n
    for n in gateway metadata lan host-public loopback; do assert_refused "$n"; done
    [ "$(jq -c 'select(.event == "connect" and .address == "192.0.2.10" and .verdict == "allowed")' "$T/open.jsonl" | wc -l)" -ge 1 ] || fail "$(cat "$T/open.jsonl")"
    [ "$(jq -c 'select(.event == "connect" and .address == "169.254.169.254" and .verdict == "refused")' "$T/open.jsonl" | wc -l)" -ge 1 ] || fail "$(cat "$T/open.jsonl")"
    # the scoped secret: the value at api.example.test over TLS, the
    # placeholder at other.test (tunnelled); neither the value nor the CA
    # key inside the guest
    assert_output_has_line "api 200"
    assert_output_has_line "other 200"
    assert_output_has_line "ca=/etc/ssl/certs/ca-certificates.crt"
    world_assert_ca_intact
    ph=$(sed -n 's/^inside: //p' <<<"$output")
    [[ "$ph" == agentjail-placeholder-TOKEN-* ]] || fail "not a placeholder: $ph"
    req() { jq -c "select(.path == \"$1\")" "$WEB_LOG"; }
    [ "$(req /mv | jq -r '.headers.Authorization')" = "Bearer $value" ] || fail "/mv: $(req /mv)"
    [ "$(req /mv | jq -r '.tls')" = true ] || fail "/mv not over TLS: $(req /mv)"
    [ "$(req /mv-other | jq -r '.headers.Authorization')" = "Bearer $ph" ] || fail "/mv-other: $(req /mv-other)"
    [ "$(jq -c 'select(.event == "secret_injected" and .host == "api.example.test" and .port == 443)' "$T/open.jsonl" | wc -l)" -eq 1 ] ||
        fail "injected: $(cat "$T/open.jsonl")"
    world_assert_no_key "$WS/inside.bin" "$T/ca.key"
    ! grep -qF "$value" "$WS/inside.bin" "$T/open.jsonl" || fail "the value is inside or logged"
    [[ "$output$stderr" != *"$value"* ]] || fail "the value in the output"
    mv_gone
    # an image with its bundle at Debian's path: it and netd's CA there (the
    # image's /etc layer), read-only (the old code: root wrote it)
    mk_tiny_root "$T/tree" sh cat cksum grep rm mv cp mkdir curl
    local b=$T/tree/etc/ssl/certs/ca-certificates.crt n
    mkdir -p "$T/tree/etc/ssl/certs"
    cp /etc/ssl/certs/ca-certificates.crt "$b"
    n=$(grep -c "BEGIN CERTIFICATE" "$b")
    run --separate-stderr timeout -k 5 120 nsenter --net="/run/netns/$HNS" "$AJ" run -q \
        --isolation microvm --rootfs "$T/tree" --net open --dns 192.0.2.53 --upstream-ca "$CERTS/ca.crt" \
        --secret "TOKEN@api.example.test=$value" -- sh -c '
        grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt
        curl -sS -m 20 -H "Authorization: Bearer $TOKEN" -w "api %{http_code}\n" -o /dev/null \
            https://api.example.test/mv-image; '"$WORLD_CA_TAMPER"
    echo "$stderr"
    assert_status 0
    [ "${lines[0]}" -eq $((n + 1)) ] || fail "not the image's bundle and netd's CA: $output"
    assert_output_has_line "api 200"
    [ "$(req /mv-image | jq -r '.headers.Authorization')" = "Bearer $value" ] || fail "/mv-image: $(req /mv-image)"
    world_assert_ca_intact
    # a FIFO there: 125 before qemu starts (the old code read it, blocking);
    # a root of sh alone: a small squashfs
    mk_tiny_root "$T/fifo" sh
    mkdir -p "$T/fifo/etc/ssl/certs"
    mkfifo "$T/fifo/etc/ssl/certs/ca-certificates.crt"
    run --separate-stderr timeout -k 5 20 nsenter --net="/run/netns/$HNS" "$AJ" run -q \
        --isolation microvm --rootfs "$T/fifo" --net open --dns 192.0.2.53 \
        --secret "TOKEN@api.example.test=$value" -- cat /etc/ssl/certs/ca-certificates.crt
    assert_status 125
    assert_contains "$stderr" "ca-certificates.crt: it is a FIFO, not a regular file"
    mv_gone
}

# probe.py's lines (NAME RESULT MS) by curl, straight (no proxy), for an
# image without python3: the body's first word, refused (no connection:
# a reset or an ICMP error) or timeout
PROBE_SH='for t; do n=${t%%=*}; s=$(date +%s%3N)
b=$(curl -sS -m 5 --noproxy "*" "http://${t#*=}/" 2>/dev/null); rc=$?
case $rc in 0) set -- $b; r=${1:-empty};; 7) r=refused;; 28) r=timeout;; *) r=curl$rc;; esac
echo "$n $r $(($(date +%s%3N) - s))"; done'

@test "serve microvm on an image: a NIC hot-plugged into a booted and a restored VM; --allow's proxy serves the allowed host, 403 for others, DNS of denied names never leaves; a snapshot whose NIC fails is removed" {
    # the guest's agent refuses a NIC without the VM's identity: at once,
    # nothing done (the old agent waited for an eth0; in a namespace of
    # its own with none here, for 30 s); in a user namespace: whatever it
    # did could not reach the host's hostname or clock
    run timeout -k 1 5 unshare -rn python3 -c '
import struct, subprocess, sys
req = b"{\"op\": \"net\", \"addr\": \"10.0.0.2\", \"prefix\": 30, \"gw\": \"10.0.0.1\", \"resolv\": \"\"}"
p = subprocess.Popen([sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
p.stdin.write(b"Q" + struct.pack("<I", len(req)) + req)
p.stdin.flush()
h = p.stdout.read(5)
print(chr(h[0]), p.stdout.read(struct.unpack("<I", h[1:5])[0]).decode())
p.stdin.close()
p.wait(timeout=5)' "$(dirname "${AJ_REAL:-$AJ}")/agentjail-agent"
    assert_status 0
    assert_contains "$output" '"errno":22'

    # the image's VMs start from its snapshot (the first boots and saves
    # it), their workspace and NIC hot-plugged after: the sandbox's tap,
    # addressed by the guest's agent with the sandbox's /30, route and
    # resolver (the old code booted every VM with a NIC)
    mk_tiny_root "$T/tree" sh cat curl getent date
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/state # the service's too
    timeout -k 5 60 "$AJ" image build tiny --from-dir "$T/tree" 2>/dev/null </dev/null
    printf '%s\n' "$PROBE_SH" >"$WS/probe.sh"
    svc_start
    # --net open: booted (no snapshot yet), saved, then plugged
    a=$(sb_create "{\"isolation\": \"microvm\", \"image\": \"tiny\", \"workspace\": \"$WS\", \"net\": \"open\"}")
    output=$(sb_exec "$a" '{"cmd": ["sh", "/workspace/probe.sh", "web1=192.0.2.10:80", "web2=203.0.113.10:80", "metadata=169.254.169.254:80", "lan=10.0.0.5:80", "host-public=198.51.100.2:8080", "loopback=127.0.0.1:8080"], "timeout": 60}' | events_stdout)
    mapfile -t lines <<<"$output"
    assert_served web1 inet-ok
    assert_served web2 inet-ok
    local n
    for n in metadata lan host-public loopback; do assert_refused "$n"; done
    # --allow: restored from that snapshot (qemu -incoming), not booted
    local t0
    t0=$(date +%s%N)
    id=$(sb_create "{\"isolation\": \"microvm\", \"image\": \"tiny\", \"workspace\": \"$WS\", \"dns\": \"192.0.2.53\", \"allow\": [\"allowed.test\"]}")
    q=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
    tr '\0' ' ' <"/proc/$q/cmdline" | grep -q -- '-incoming defer' ||
        fail "the VM with a NIC was not restored: $(tr '\0' ' ' <"/proc/$q/cmdline")"
    output=$(sb_exec "$id" '{"cmd": ["sh", "-c", "getent hosts allowed.test || echo allowed none; getent hosts other.test || echo denied none; curl -sS -m 10 http://allowed.test/; curl -sS -m 10 -o /dev/null -w \"other: %{http_code}\\n\" http://other.test/; echo resolv $(date -r /etc/resolv.conf +%s%N); sh /workspace/probe.sh web2=203.0.113.10:80 metadata=169.254.169.254:80 lan=10.0.0.5:80 host-public=198.51.100.2:8080 loopback=127.0.0.1:8080"], "timeout": 60}' | events_stdout)
    mapfile -t lines <<<"$output"
    assert_output_has_line inet-ok
    assert_output_has_line "other: 403"
    # the sandbox's resolver (netd's, in the guest's resolv.conf the agent
    # wrote): the allowed name's address, none for another
    [[ "$output" =~ 192\.0\.2\.10\ +allowed\.test ]] || fail "allowed.test not resolved: $output"
    assert_output_has_line "denied none"
    # the VM took its own identity (its clock: the host's) before its NIC
    # came up and the agent wrote resolv.conf (the old code: at hand-out,
    # after; the snapshot's clock, behind the host's by the time since its
    # save, dated the file)
    n=$(sed -n 's/^resolv //p' <<<"$output")
    [ "$n" -ge "$t0" ] || fail "resolv.conf written at $n, before the create at $t0: the NIC came up before the VM's identity"
    # no direct connection to an address the resolver did not answer
    for n in web2 metadata lan host-public loopback; do assert_refused "$n"; done
    [ "$(dns_seen '^other\.test')" -eq 0 ] || fail "other.test was asked upstream"
    [ "$(dns_seen '^allowed\.test')" -ge 1 ] || fail "allowed.test was not resolved upstream"
    # a SIGKILLed service: its VMs die with it, their nft tables stay until
    # the next start's sweep (not only the next network sandbox's)
    svc_crash
    mv_gone
    ip netns exec "$HNS" nft list tables | grep -q ' agentjail-' || fail "no table to sweep: $(world_residue)"
    # a snapshot whose restored VMs' NIC always fails (a test fault): each
    # such VM booted after, and the snapshot removed after 3 in a row (the
    # old code kept it: every create restored, failed and booted, forever)
    AGENTJAIL_MICROVM_TEST_NIC_FAIL=1 svc_start
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$status_code" 404
    local snap k
    snap=$(echo "$AGENTJAIL_STATE_DIR"/microvm/snap-*.vmstate)
    [ -f "$snap" ] || fail "no snapshot: $snap"
    for k in 1 2 3; do
        [ -f "$snap" ] || fail "the snapshot removed after $((k - 1)) failures"
        id=$(sb_create '{"isolation": "microvm", "image": "tiny", "net": "open"}')
        q=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
        ! tr '\0' ' ' <"/proc/$q/cmdline" | grep -q -- '-incoming' || fail "VM $k: not booted after its NIC failed"
        api DELETE "/v1/sandboxes/$id" >/dev/null
    done
    [ ! -e "$snap" ] || fail "the snapshot is kept after 3 NIC failures in a row"
    grep -q "the NIC failed in 3 VMs in a row of snapshot" "$BATS_TEST_TMPDIR/serve.log" || fail "$(cat "$BATS_TEST_TMPDIR/serve.log")"
    mv_gone
    assert_world_clean
}
