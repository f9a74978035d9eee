#!/usr/bin/env python3
"""Check that a bench output directory holds a complete run (not its figures)."""
import glob
import json
import os
import sys

out = sys.argv[1]
runs = sorted(glob.glob(os.path.join(out, "*.json")))
assert runs, "no results JSON"
with open(runs[-1]) as f:
    res = json.load(f)
for key in ("meta", "cold_start", "gvisor_cold_start", "streaming", "density", "python", "rows"):
    assert key in res, f"missing {key}"
sm = res["cold_start"]["summary"]
for name in ("direct /bin/true", "agentjail run"):
    assert sm.get(name) and sm[name]["median"] > 0, f"no cold start samples for {name}"
# the service's rows ran (their figures are not judged)
svc = res.get("service", {})
assert isinstance(svc, dict) and "api_exec" in svc, "the service's rows did not run"
for key in ("api_exec", "api_streaming", "api_files", "service_density"):
    part = svc.get(key, {"unavailable": "missing"})
    assert not isinstance(part.get("unavailable"), str), f"service: {key}: {part['unavailable']}"
# both isolation levels were tried through the service; level 1 measured
# (level 2 may be unavailable: then the service's answer is recorded)
lv = svc.get("levels", {}).get("levels", {})
assert "process" in lv and "gvisor" in lv, "service: the isolation levels' rows did not run"
assert "unavailable" not in lv["process"], f"service: process: {lv['process'].get('unavailable')}"
assert svc["levels"]["exec_ms"].get("exec (process)"), "service: no exec samples at level 1"
# level 2's cold start group ran, or says why not
g = res["gvisor_cold_start"]
assert isinstance(g.get("unavailable"), (str, dict)), "gvisor_cold_start: no outcome"
# warm pools ran as root (bench/warm.py)
if res["meta"].get("euid") == 0:
    w = res.get("warm") or {"unavailable": "missing"}
    assert "unavailable" not in w, f"warm pools: {w['unavailable']}"
for r in res["rows"]:
    for k in ("metric", "target", "measured", "peers", "ratio"):
        assert k in r, f"row without {k}: {r}"
report = open(os.path.join(out, "report.md")).read()
assert "| metric | target | measured |" in report, "report has no table"
for png in res["plots"]:
    path = os.path.join(out, png)
    # gnuplot may be missing: then run.sh says so in the report instead
    assert os.path.exists(path) or "plot unavailable" in report, f"missing {png}"
print(f"bench: {runs[-1]} is complete ({len(res['rows'])} rows)")
