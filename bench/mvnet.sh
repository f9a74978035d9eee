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
. "$(dirname "$0")/mvlib.sh"
# no packet leaves: the service's veths and nft tables in a namespace of its own
mv_serve unshare --net sh -c 'ip link set lo up && exec "$0" "$@"' --
# whether the sandbox's qemu was restored from the snapshot
how() { tr '\0' ' ' <"/proc/$(mv_pid "$1")/cmdline" | grep -q -- '-incoming defer' && echo restored || echo booted; }
create() { mv_create "$1" how; }
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
