#!/bin/bash
# Level 3 in the service: creates of a VM with a NIC (--net open) on an
# image against a NIC-less one, both restored from the image's snapshot
# where the build does it (an older build boots every VM with a NIC), the
# median of ROUNDS each. The service runs in a network namespace of its
# own (its veths and nft tables there; no packet is sent). Run as root
# under the test lock: bench/mvnet.sh AGENTJAIL [ROUNDS]
# (docs/performance.md, round 31). AGENTJAIL may be an older build.
set -euo pipefail
AJ=$1
N=${2:-5}
T=$(mktemp -d /tmp/mvnet-XXXXXX)
trap 'kill "$SVC" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
export AGENTJAIL_STATE_DIR=$T/state AGENTJAIL_MICROVM_ACCEL=tcg
mkdir -p "$T/tree/bin" "$T/tree/etc"
cp /bin/busybox "$T/tree/bin/" && ln -s busybox "$T/tree/bin/sh"
"$AJ" image build tiny --from-dir "$T/tree" >/dev/null 2>&1
unshare --net sh -c 'ip link set lo up && exec "$0" serve --quiet --socket "$1" --state-dir "$2"' \
    "$AJ" "$T/s" "$T/state" </dev/null 2>"$T/serve.log" &
SVC=$!
until curl -s --unix-socket "$T/s" http://x/healthz >/dev/null; do sleep 0.1; done
# the wall time of one create (ms) and whether its qemu was restored
create() {
    local t0 t1 id out pid how=booted
    t0=$(date +%s%N)
    out=$(curl -sS --max-time 120 --unix-socket "$T/s" -X POST http://x/v1/sandboxes -d "$1")
    t1=$(date +%s%N)
    id=$(jq -er .id <<<"$out") || {
        echo "create failed: $out" >&2
        exit 1
    }
    pid=$(curl -sS --unix-socket "$T/s" "http://x/v1/sandboxes/$id" | jq -r .pid)
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- '-incoming defer' && how=restored
    curl -sS --unix-socket "$T/s" -X DELETE "http://x/v1/sandboxes/$id" >/dev/null
    echo "$(((t1 - t0) / 1000000)) $how"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
plain='{"isolation": "microvm", "image": "tiny"}'
nic='{"isolation": "microvm", "image": "tiny", "net": "open"}'
create "$plain" >/dev/null # a warm-up: the initramfs, squashfs and snapshot made
: >"$T/plain" && : >"$T/nic"
for r in $(seq "$N"); do
    p=$(create "$plain") && n=$(create "$nic")
    echo "round $r: no NIC ${p% *} ms (${p#* }), --net open ${n% *} ms (${n#* })"
    echo "$p" >>"$T/plain" && echo "$n" >>"$T/nic"
done
mp=$(cut -d' ' -f1 "$T/plain" | median) mn=$(cut -d' ' -f1 "$T/nic" | median)
echo "median: no NIC $mp ms ($(cut -d' ' -f2 "$T/plain" | sort | uniq -c | xargs)), --net open $mn ms ($(cut -d' ' -f2 "$T/nic" | sort | uniq -c | xargs)); NIC / no NIC $(awk -v a="$mn" -v b="$mp" 'BEGIN { printf "%.2fx", a / b }')"
