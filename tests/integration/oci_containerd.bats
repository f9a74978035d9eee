#!/usr/bin/env bats
# agentjail oci as containerd's runc (io.containerd.runc.v2's shim with
# `ctr run --runc-binary`): a containerd of the test's own, an image from a
# tar (Podman's docker-archive of a tiny busybox root; no registry), run
# --rm with output and exit code, a detached task killed, nothing left.

load helpers

setup() {
    aj_setup
    require_root
    command -v containerd >/dev/null && command -v ctr >/dev/null ||
        skip "needs containerd (scripts/setup.sh)"
    command -v podman >/dev/null || skip "needs podman to build the image archive"
    command -v busybox >/dev/null || skip "needs busybox-static (scripts/setup.sh)"
    local r=$T/img t
    mkdir -p "$r/bin" "$r/proc" "$r/dev" "$r/tmp" "$r/etc" "$r/run"
    cp "$(command -v busybox)" "$r/bin/busybox"
    for t in sh sleep cat; do ln -s busybox "$r/bin/$t"; done
    echo base >"$r/motd"
    tar -C "$r" -cf "$T/img.tar" .
    local p=(podman --root "$T/ps" --runroot "$T/pr" --tmpdir "$T/pt" --storage-driver vfs
        --cgroup-manager cgroupfs --events-backend file)
    timeout 60 "${p[@]}" import "$T/img.tar" localhost/ajtiny:1 >/dev/null 2>&1 &&
        timeout 60 "${p[@]}" save --format docker-archive -o "$T/docker.tar" localhost/ajtiny:1 \
            >/dev/null 2>&1 || fail "podman import/save failed"
    timeout 30 "${p[@]}" rmi -af >/dev/null 2>&1 || true
    # a logging wrapper: what the shim passes
    printf '#!/bin/sh\necho "$*" >>%q\nexec %q oci "$@"\n' "$T/calls" "$AJ" >"$T/runtime"
    chmod 0755 "$T/runtime"
    mkdir -p "$T/ctd"
    cat >"$T/ctd/config.toml" <<EOF
version = 2
root = "$T/ctd/root"
state = "$T/ctd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$T/ctd/sock"
EOF
    containerd --config "$T/ctd/config.toml" >"$T/ctd/log" 2>&1 &
    CTD_PID=$!
    local i
    for i in $(seq 50); do [ -S "$T/ctd/sock" ] && break; sleep 0.1; done
    C=(ctr --address "$T/ctd/sock")
    timeout 60 "${C[@]}" images import --snapshotter native "$T/docker.tar" >/dev/null ||
        fail "ctr images import failed"
}

teardown() {
    # a test that failed half-way leaves its task running: ended here (a
    # shim left behind keeps the runtime's state and fails the next run)
    local c p
    if [ -n "${CTD_PID:-}" ]; then
        for c in t2; do
            timeout 10 "${C[@]}" task kill -s SIGKILL "$c" >/dev/null 2>&1 || true
            timeout 10 "${C[@]}" task delete -f "$c" >/dev/null 2>&1 || true
            timeout 10 "${C[@]}" containers rm "$c" >/dev/null 2>&1 || true
        done
    fi
    for p in $(pgrep -f "containerd-shim-runc-v2 .*$T" || true); do kill "$p" 2>/dev/null || true; done
    if [ -n "${CTD_PID:-}" ]; then
        kill "$CTD_PID" 2>/dev/null || true
        wait "$CTD_PID" 2>/dev/null || true
    fi
    aj_teardown
}

crun_() {
    timeout -k 5 60 "${C[@]}" "$@" </dev/null
}

@test "containerd: ctr run --rm with agentjail as runc; a detached task killed; nothing left" {
    run --separate-stderr crun_ run --rm --snapshotter native --runc-binary "$T/runtime" \
        localhost/ajtiny:1 t1 /bin/sh -c 'echo out $(cat /motd); exit 4'
    assert_status 4
    assert_eq "$output" "out base" "stdout"
    # the shim's flags: runc's global ones, JSON log
    assert_contains "$(cat "$T/calls")" "--log-format json create --bundle"
    run crun_ run -d --snapshotter native --runc-binary "$T/runtime" localhost/ajtiny:1 t2 \
        /bin/sleep 60
    assert_status 0
    run crun_ task ls
    assert_contains "$output" RUNNING
    # task exec (oci exec --process --detach): output and exit code
    run --separate-stderr crun_ task exec --exec-id e1 t2 /bin/sh -c 'echo in $(cat /motd); exit 6'
    assert_status 6
    assert_eq "$output" "in base" "task exec stdout"
    # task ps (oci ps --format json), pause and resume (the freezer)
    run crun_ task ps t2
    assert_status 0
    assert_contains "$output" "PID"
    [ "$(echo "$output" | grep -c '^ *[0-9]')" -ge 2 ] || fail "task ps: $output"
    run crun_ task pause t2
    assert_status 0
    assert_contains "$(crun_ task ls)" PAUSED
    run crun_ task resume t2
    assert_status 0
    assert_contains "$(crun_ task ls)" RUNNING
    assert_contains "$(cat "$T/calls")" "ps --format json"
    run crun_ task kill -s SIGTERM t2
    assert_status 0
    local i
    for i in $(seq 50); do
        crun_ task ls | grep -q STOPPED && break
        sleep 0.1
    done
    run crun_ task delete t2
    assert_status 0
    assert_contains "$output" "143"
    run crun_ containers rm t2
    assert_status 0
    # a refusal reaches ctr through the JSON --log: --privileged asks for
    # the host's devices
    run --separate-stderr crun_ run --rm --privileged --snapshotter native \
        --runc-binary "$T/runtime" localhost/ajtiny:1 t3 /bin/true
    assert_status 1
    assert_contains "$stderr" "OCI runtime create failed: config.json: linux.devices: /dev/"
    crun_ containers rm t3 >/dev/null 2>&1 || true
    run crun_ containers ls -q
    assert_eq "$output" "" "containers left"
    [ -z "$(ls -A /run/containerd/runc/default 2>/dev/null)" ] || fail "runtime state left"
    [ -z "$(pgrep -f "containerd-shim-runc-v2 .*$T" || true)" ] || fail "shims left"
}
