#!/usr/bin/env bash
# agentjail against its peers (bwrap, firejail, runsc, unshare, a direct
# spawn), in one run: cold start, streaming, density, a python cell.
#
#   bench/run.sh            full run (a few minutes): bench/results/
#   bench/run.sh --quick    under a minute, fewer samples (the tests run it)
#   bench/run.sh --out DIR  write DIR/<timestamp>.json, DIR/report.md, PNGs
#
# AJ=path/to/agentjail picks the binary (default: build/agentjail, built
# if missing). As root the whole run happens in a private network namespace,
# so `--net open` (NAT, ip_forward) never touches the host's own.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results
quick=()
while (($#)); do
	case $1 in
	--quick) quick=(--quick) ;;
	--out)
		out=$2
		shift
		;;
	-h | --help)
		sed -n '2,12p' "$0"
		exit 0
		;;
	*)
		echo "bench: unknown option $1 (see --help)" >&2
		exit 2
		;;
	esac
	shift
done
AJ=${AJ:-build/agentjail}
if [ ! -x "$AJ" ]; then
	[ -f build/build.ninja ] || meson setup build >/dev/null
	ninja -C build >/dev/null
fi
mkdir -p "$out"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
args=(python3 bench/bench.py --agentjail "$AJ" --out "$out" --stamp "$stamp" "${quick[@]}")
if [ "$(id -u)" -eq 0 ] && [ -z "${AJ_BENCH_IN_NETNS:-}" ]; then
	AJ_BENCH_IN_NETNS=1 unshare --net sh -c 'ip link set lo up && exec "$@"' sh "${args[@]}"
else
	"${args[@]}"
fi
n=$(grep -c '^"' "$out/latency.dat" || true)
if command -v gnuplot >/dev/null; then
	gnuplot -e "dir='$out'; stamp='$stamp'; n=$n" bench/plots.gp
else
	echo "bench: gnuplot not installed (gnuplot-nox): no plots" >&2
	sed -i "s|^!\[$stamp-.*|(plot unavailable: gnuplot not installed)|" "$out/report.md"
fi
echo "bench: report: $out/report.md"
