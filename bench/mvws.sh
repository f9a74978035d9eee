#!/bin/bash
# Level 3 in the service: creates of a VM with a workspace on an image,
# restored from the image's snapshot (its workspace hot-plugged) against
# cold-booted, and a workspace-less cold create (boot + save). Run as
# root under the test lock: bench/mvws.sh AGENTJAIL [ROUNDS]
# (docs/performance.md, round 29). AGENTJAIL may be an older build.
set -euo pipefail
AJ=$1
N=${2:-3}
T=$(mktemp -d /tmp/mvws-XXXXXX)
trap 'kill "$SVC" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
export AGENTJAIL_STATE_DIR=$T/state AGENTJAIL_MICROVM_ACCEL=tcg
mkdir -p "$T/tree/bin" "$T/tree/etc" "$T/ws"
cp /bin/busybox "$T/tree/bin/" && ln -s busybox "$T/tree/bin/sh"
chown 4242:4343 "$T/ws"
"$AJ" image build tiny --from-dir "$T/tree" >/dev/null 2>&1
jq -n --arg t "$T" '{bind_roots: [{path: $t, rw: true}]}' >"$T/policy.json"
"$AJ" serve --quiet --socket "$T/s" --state-dir "$T/state" --operator-policy "$T/policy.json" </dev/null 2>"$T/serve.log" &
SVC=$!
until curl -s --unix-socket "$T/s" http://x/healthz >/dev/null; do sleep 0.1; done
# the wall time of one create (ms), the sandbox deleted after
create() {
    local t0 t1 id out
    t0=$(date +%s%N)
    out=$(curl -sS --max-time 120 --unix-socket "$T/s" -X POST http://x/v1/sandboxes -d "$1")
    t1=$(date +%s%N)
    id=$(jq -er .id <<<"$out") || {
        echo "create failed: $out" >&2
        exit 1
    }
    # qemu's PSS, idle 2 s after the create (kB)
    sleep 2
    pid=$(curl -sS --unix-socket "$T/s" "http://x/v1/sandboxes/$id" | jq -r .pid)
    pss=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup")
    curl -sS --unix-socket "$T/s" -X DELETE "http://x/v1/sandboxes/$id" >/dev/null
    echo "$(((t1 - t0) / 1000000)) ms, qemu's PSS $((pss / 1024)) MiB"
}
ws="{\"isolation\": \"microvm\", \"image\": \"tiny\", \"workspace\": \"$T/ws\"}"
plain='{"isolation": "microvm", "image": "tiny"}'
create "$plain" >/dev/null # a warm-up: the initramfs and squashfs built
for r in $(seq "$N"); do
    rm -f "$T"/state/microvm/snap-*
    echo "round $r: cold create, no workspace (boot + save): $(create "$plain")"
    echo "round $r: restored create, no workspace: $(create "$plain")"
    echo "round $r: create with a workspace: $(create "$ws")"
    rm -f "$T"/state/microvm/snap-*
    echo "round $r: create with a workspace, no snapshot: $(create "$ws")"
done
