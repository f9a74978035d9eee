#!/usr/bin/env bash
# Level 4 (--isolation wasm) against level 1, level 2 and the runtime run
# bare, in one run (docs/performance.md, "Level 4"):
#   cold start  a trivial WASI module (tests/wasm/mod.c `exit 0`) and
#               python3 -c 'print(1)' at each level, and node running the
#               runner outside any sandbox
#   compute     the same C (mod.c `spin N`) as a WASI module on node and
#               native: the ratio
# Needs root, hyperfine, clang-14 with wasi-libc (scripts/setup.sh).
#
#   bench/wasm.sh [--runs N] [--py-runs N] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=20 py_runs=5 out=bench/results
while (($#)); do
	case $1 in
	--runs) runs=$2 && shift ;;
	--py-runs) py_runs=$2 && shift ;;
	--out) out=$2 && shift ;;
	*) sed -n '2,12p' "$0" && exit 2 ;;
	esac
	shift
done
AJ=$(realpath "${AJ:-build/agentjail}")
RT=src/backend/wasm/runtime
mkdir -p "$out"
w=$(mktemp -d /tmp/aj-bench-wasm.XXXXXX)
trap 'rm -rf "$w"' EXIT
chmod 0755 "$w"
mkdir "$w/ws"
clang-14 --target=wasm32-wasi -O2 -o "$w/ws/mod.wasm" tests/wasm/mod.c
clang-14 -O2 -o "$w/mod-native" tests/wasm/mod.c
chmod -R a+rX "$w"
node=(node --disable-warning=ExperimentalWarning --single-threaded-gc
	--disallow-code-generation-from-strings "$RT/runner.mjs" --preopen "$w/ws" --)
has_runsc=()
command -v runsc >/dev/null && has_runsc=(1)

echo "== cold start: a trivial module, /bin/true ($runs runs, load $(cut -d' ' -f1-3 /proc/loadavg))"
cmds=("$AJ run --isolation wasm --workspace $w/ws -- /workspace/mod.wasm exit 0"
	"${node[*]} $w/ws/mod.wasm exit 0"
	"$AJ run -- /bin/true")
((${#has_runsc[@]})) && cmds+=("$AJ run --isolation gvisor -- /bin/true")
hyperfine -N -w 3 -r "$runs" --export-json "$w/cold.json" --export-markdown "$w/cold.md" "${cmds[@]}" >/dev/null
cat "$w/cold.md"

echo "== cold start: python3 -c 'print(1)' ($py_runs runs)"
cmds=("$AJ run --isolation wasm -- python3 -c print(1)"
	"${node[*]} python3 -c print(1)"
	"$AJ run -- python3 -c print(1)")
((${#has_runsc[@]})) && cmds+=("$AJ run --isolation gvisor -- python3 -c print(1)")
hyperfine -N -w 1 -r "$py_runs" --export-json "$w/py.json" --export-markdown "$w/py.md" "${cmds[@]}" >/dev/null
cat "$w/py.md"

echo "== compute: mod.c spin 100 (100 M xorshift steps with loads and stores in 1 MiB), WASI on node vs native"
hyperfine -N -w 1 -r 5 --export-json "$w/spin.json" --export-markdown "$w/spin.md" \
	"${node[*]} $w/ws/mod.wasm spin 100" "$w/mod-native spin 100" >/dev/null
cat "$w/spin.md"
python3 - "$w/spin.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print(f"ratio wasm/native: {r[0]['median'] / r[1]['median']:.2f} (medians)")
EOF
stamp=$(date -u +%Y%m%dT%H%M%SZ)
cat "$w"/cold.md "$w"/py.md "$w"/spin.md >"$out/wasm-$stamp.md"
echo "bench: $out/wasm-$stamp.md"
