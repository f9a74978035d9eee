#!/usr/bin/env bats
# The persistent level-2 backend's network (tests/gvisor/drive.c), in the
# fake world of tests/network/world.bash: nothing here sends a packet to a
# real address. runsc's control socket lives in the sandbox's netns, so
# every runsc command after create must reach it there.

load ../integration/helpers
load ../network/world

DRIVE=${AJGVDRIVE:-$(dirname "${AJ_REAL:-$AJ}")/tests/ajgvdrive}

setup_file() { world_setup_file; }
setup() {
    command -v runsc >/dev/null || skip "runsc is not installed (apt-get install runsc)"
    world_setup
    chown -R 4242:4343 "$WS"
}
teardown() { world_teardown; }

wdrive() { # POLICY [MODE ...]
    timeout -k 5 120 nsenter --net="/run/netns/$HNS" "$DRIVE" "$@" </dev/null
}

@test "gvisor box --net open: the whole scenario in a sandbox with a network" {
    [ -x "$DRIVE" ] || fail "no $DRIVE (the persistent gvisor backend is not built)"
    printf '{"workspace": "%s", "net": "open", "env": {"T": "s3cr3t-value-42"}, "redact": ["s3cr3t-value-42"]}\n' "$WS" >"$T/p.json"
    run wdrive "$T/p.json"
    echo "$output"
    assert_status 0
    assert_output_lacks "not ok"
    assert_contains "$output" "destroy leaves nothing"
}

@test "gvisor box --allow: served through the proxy, other hosts refused; swept after a crash" {
    [ -x "$DRIVE" ] || fail "no $DRIVE"
    cp "$NET_PROBE" "$T/probe.py" 2>/dev/null || true
    printf '{"workspace": "%s", "dns": "192.0.2.53", "allow": ["allowed.test"]}\n' "$WS" >"$T/p.json"
    run wdrive "$T/p.json" --exec 'python3 -c "
import urllib.request, urllib.error
print(urllib.request.urlopen(\"http://allowed.test/\", timeout=5).read().decode().strip())
try:
    urllib.request.urlopen(\"http://other.test/\", timeout=5); print(\"other: served\")
except urllib.error.HTTPError as e:
    print(\"other:\", e.code)"'
    echo "$output"
    assert_status 0
    assert_output_has_line inet-ok
    assert_output_has_line "other: 403"
    run wdrive "$T/p.json" --sweep
    echo "$output"
    assert_status 0
    assert_contains "$output" "sweep leaves nothing"
}
