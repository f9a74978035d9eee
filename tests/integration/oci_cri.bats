#!/usr/bin/env bats
# agentjail oci behind containerd's CRI (what a kubelet drives): a
# containerd of the test's own with the runtime handler `agentjail` (the
# runc shim with agentjail as its runc, as deploy/kubernetes's installer
# writes), a pod and a container run through the CRI's gRPC API by
# cri_client.py (no kubelet, no crictl). The pod's network is CNI's
# bridge plugin with a static address, in a network namespace of the
# test's own where this containerd runs (the host's links are not
# touched); the images (the pause one too) are a local OCI archive.

load helpers

setup() {
    aj_setup
    require_root
    PY=/usr/bin/python3
    command -v containerd >/dev/null && command -v containerd-shim-runc-v2 >/dev/null ||
        skip "needs containerd (scripts/setup.sh)"
    [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/static ] ||
        skip "needs containernetworking-plugins (scripts/setup.sh)"
    "$PY" -c 'import grpc, grpc_tools' 2>/dev/null ||
        skip "needs python3-grpcio and python3-grpc-tools (scripts/setup.sh)"
    command -v busybox >/dev/null || skip "needs busybox-static (scripts/setup.sh)"
    "$PY" -m grpc_tools.protoc -I"$BATS_TEST_DIRNAME" --python_out="$T" \
        --grpc_python_out="$T" "$BATS_TEST_DIRNAME/cri_api.proto" || fail "protoc failed"
    "$PY" "$BATS_TEST_DIRNAME/cri_image.py" "$T/img.tar" localhost/ajpause:1 \
        "$(command -v busybox)" || fail "cri_image.py failed"
    # the runc the shim runs: a logging wrapper of agentjail oci
    printf '#!/bin/sh\necho "$*" >>%q\nexec %q oci "$@"\n' "$T/calls" "$AJ" >"$T/runtime"
    chmod 0755 "$T/runtime"
    mkdir -p "$T/ctd" "$T/cni" "$T/logs"
    cat >"$T/cni/10-aj.conflist" <<EOF2
{"cniVersion": "0.4.0", "name": "ajcri", "plugins": [
 {"type": "bridge", "bridge": "ajcri0", "isGateway": false, "ipMasq": false,
  "ipam": {"type": "static", "addresses": [{"address": "10.231.77.2/24"}]}}]}
EOF2
    cat >"$T/ctd/config.toml" <<EOF2
version = 2
root = "$T/ctd/root"
state = "$T/ctd/state"
[grpc]
  address = "$T/ctd/sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/ajpause:1"
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$T/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.agentjail]
    runtime_type = "io.containerd.runc.v2"
    pod_annotations = ["run.agentjail.*"]
    container_annotations = ["run.agentjail.*"]
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.agentjail.options]
    BinaryName = "$T/runtime"
    SystemdCgroup = false
EOF2
    # its own network namespace: CNI's bridge and the shims live there
    unshare -n sh -c 'ip link set lo up && exec containerd --config "$1"' sh \
        "$T/ctd/config.toml" >"$T/ctd/log" 2>&1 &
    CTD_PID=$!
    local i
    for i in $(seq 100); do [ -S "$T/ctd/sock" ] && break; sleep 0.1; done
    timeout 60 ctr --address "$T/ctd/sock" -n k8s.io images import --snapshotter native \
        "$T/img.tar" >/dev/null || fail "ctr images import failed: $(tail -5 "$T/ctd/log")"
    RT=/run/containerd/runc/k8s.io
}

teardown() {
    # a test that failed half-way leaves its pod: ended here
    if [ -n "${POD:-}" ]; then
        cri stoppod "$POD" >/dev/null 2>&1 || true
        cri rmpod "$POD" >/dev/null 2>&1 || true
    fi
    local p
    for p in $(pgrep -f "containerd-shim-runc-v2 .*$T" || true); do kill "$p" 2>/dev/null || true; done
    if [ -n "${CTD_PID:-}" ]; then
        kill "$CTD_PID" 2>/dev/null || true
        wait "$CTD_PID" 2>/dev/null || true
    fi
    # what a pod that could not be stopped left: its containers (those this
    # test's containerd created), mounts
    local c m
    for c in $(awk '/ create / { print $NF }' "$T/calls" 2>/dev/null); do
        "$AJ" oci --root "$RT" delete --force "$c" >/dev/null 2>&1 || true
    done
    for m in $(awk -v t="$T/ctd/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
    aj_teardown
}

cri() {
    timeout -k 5 90 "$PY" "$BATS_TEST_DIRNAME/cri_client.py" "$T/ctd/sock" "$T" "$@" </dev/null
}

# the host pid of container ID's command (agentjail oci state's pid)
cmd_pid() {
    "$AJ" oci --root "$RT" state "$1" | awk -F'[:,]' '/"pid"/ { gsub(/ /, "", $2); print $2 }'
}

@test "CRI: a pod on the agentjail runtime handler; containers share its net, ipc, uts" {
    run cri version
    [ "$status" -eq 0 ] || fail "CRI Version: $output; $(grep -i 'cri\|error' "$T/ctd/log" | tail -5)"
    assert_contains "$output" "containerd v1"
    run --separate-stderr cri runpod ajpod agentjail "$T/logs"
    [ "$status" -eq 0 ] || fail "RunPodSandbox: $stderr $(tail -3 "$T/ctd/log")"
    POD=$output
    [ -n "$POD" ] || fail "no pod id"
    run --separate-stderr cri create "$POD" ajpod "$T/logs" localhost/ajpause:1 app \
        /bin/sh -c 'echo started; exec sleep 1000'
    assert_status 0
    local cid=$output
    run --separate-stderr cri start "$cid"
    [ "$status" -eq 0 ] || fail "StartContainer: $stderr $(tail -3 "$T/ctd/log") $(cat "$T/calls")"
    run cri status "$cid"
    assert_eq "$output" "CONTAINER_RUNNING 0" "ContainerStatus"
    # ExecSync: output, stderr and exit code; the pod's host name
    run --separate-stderr cri exec "$cid" 10 /bin/sh -c 'cat /etc/motd; hostname; echo e >&2; exit 3'
    assert_status 3
    assert_eq "$output" "cri
ajpod" "ExecSync stdout"
    assert_eq "$stderr" "e" "ExecSync stderr"
    # both ran through agentjail (the shim's calls)
    assert_contains "$(cat "$T/calls")" "create --bundle"
    assert_contains "$(cat "$T/calls")" "exec --process"
    # the container's command: never host uid 0, the pod's net, ipc and uts
    # (the pause container's), its own pid and user namespaces
    local c p ns
    c=$(cmd_pid "$cid")
    p=$(cmd_pid "$POD")
    [ -n "$c" ] && [ "$c" -gt 0 ] && [ -n "$p" ] && [ "$p" -gt 0 ] || fail "pids: '$c' '$p'"
    [ "$(host_uid_of "$c")" -ge "$SANDBOX_UID_MIN" ] || fail "host uid $(host_uid_of "$c")"
    [ "$(host_uid_of "$p")" -ge "$SANDBOX_UID_MIN" ] || fail "pause: host uid $(host_uid_of "$p")"
    for ns in net ipc uts; do
        assert_eq "$(readlink "/proc/$c/ns/$ns")" "$(readlink "/proc/$p/ns/$ns")" "$ns namespace"
        assert_ne "$(readlink "/proc/$c/ns/$ns")" "$(readlink "/proc/self/ns/$ns")" "host's $ns"
    done
    for ns in pid user mnt; do
        assert_ne "$(readlink "/proc/$c/ns/$ns")" "$(readlink "/proc/$p/ns/$ns")" "$ns namespace"
        assert_ne "$(readlink "/proc/$c/ns/$ns")" "$(readlink "/proc/self/ns/$ns")" "host's $ns"
    done
    # stop and remove: nothing of the pod is left
    run cri stoppod "$POD"
    assert_status 0
    run cri rmpod "$POD"
    assert_status 0
    POD=
    local i
    for i in $(seq 50); do kill -0 "$c" 2>/dev/null || kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$c" 2>/dev/null && ! kill -0 "$p" 2>/dev/null || fail "the pod's processes are left"
    [ -z "$(ls -A "$RT" 2>/dev/null)" ] || fail "runtime state left: $(ls "$RT")"
    ! grep -q "$T/ctd" /proc/self/mountinfo || fail "mounts left: $(grep "$T/ctd" /proc/self/mountinfo)"
    [ -z "$(ls -A "$T/ctd/state/io.containerd.grpc.v1.cri/netns" 2>/dev/null)" ] ||
        fail "the pod's network namespace is left"
}
