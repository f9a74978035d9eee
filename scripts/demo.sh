#!/usr/bin/env bash
# The main job, as a short demo: an untrusted command (as an agent might run
# it) tries to read the host's secrets and fails, while it computes something
# useful from a CSV in /workspace; the result lands on the host.
set -euo pipefail
cd "$(dirname "$0")/.."
AJ=${AJ:-$PWD/build/agentjail}

demo=$(mktemp -d /tmp/agentjail-demo.XXXXXX)
trap 'rm -rf "$demo"' EXIT
mkdir "$demo/workspace"
chmod 755 "$demo" "$demo/workspace"
printf 'region,sales\nnorth,120\nsouth,80\neast,200\nwest,100\n' >"$demo/workspace/sales.csv"
echo "demo-host-secret-$(date +%s)" >"$demo/host-secret.txt"
export AWS_SECRET_ACCESS_KEY=demo-aws-key-must-not-leak

cat >"$demo/workspace/agent.sh" <<SCRIPT
echo "--- the untrusted command tries to reach host secrets:"
cat $demo/host-secret.txt 2>&1 || true
cat /etc/shadow 2>&1 || true
ls /root 2>&1 || true
echo "AWS_SECRET_ACCESS_KEY=\${AWS_SECRET_ACCESS_KEY:-<not set>}"
(exec 3<>/dev/tcp/192.0.2.1/80) 2>&1 || echo "network: unreachable"
echo "--- and does useful work in /workspace:"
python3 - <<'PY'
import csv
rows = list(csv.DictReader(open("sales.csv")))
total = sum(int(r["sales"]) for r in rows)
best = max(rows, key=lambda r: int(r["sales"]))
open("report.txt", "w").write(f"total={total} best={best['region']}\n")
print(f"wrote report.txt: total={total} best={best['region']}")
PY
SCRIPT

echo "$ agentjail run --workspace $demo/workspace -- bash agent.sh"
"$AJ" run --workspace "$demo/workspace" -- bash agent.sh
echo "--- back on the host:"
echo "report.txt: $(cat "$demo/workspace/report.txt")"
ls -ln "$demo/workspace/report.txt"
echo "demo: ok"
