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
. "$(dirname "$0")/mvlib.sh"
mkdir -p "$T/ws" && chown 4242:4343 "$T/ws"
jq -n --arg t "$T" '{bind_roots: [{path: $t, rw: true}]}' >"$T/policy.json"
mv_serve -- --operator-policy "$T/policy.json"
# qemu's PSS, idle 2 s after the create
pss() {
    sleep 2
    echo "ms, qemu's PSS $(($(awk '/^Pss:/ {print $2}' "/proc/$(mv_pid "$1")/smaps_rollup") / 1024)) MiB"
}
create() { mv_create "$1" pss; }
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
