#!/usr/bin/env bash
# Keep the latest full run of bench/results/ (not committed) as bench/REPORT.md
# with its JSON and plots in bench/report/ (committed).
set -euo pipefail
cd "$(dirname "$0")"
json=$(ls results/*.json | tail -1)
stamp=$(basename "$json" .json)
grep -q '(full mode)' results/report.md || {
	echo "publish: results/report.md is not a full run" >&2
	exit 1
}
rm -rf report
mkdir report
cp "$json" results/"$stamp"-*.png report/
sed -e "s|(\($stamp-[a-z]*\.png\))|(report/\1)|" -e "s|\`$stamp.json\`|[\`report/$stamp.json\`](report/$stamp.json)|" \
	results/report.md >REPORT.md
echo "publish: bench/REPORT.md ($stamp)"
