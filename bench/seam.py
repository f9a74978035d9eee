#!/usr/bin/env python3
"""Level 1's figures of two builds of agentjail in the same run (a change's
cost, e.g. the backend seam): the bench's own measurements, with both
binaries in the same interleaved rounds where the bench interleaves.

  cold start   `run --memory 256M --pids 64 -- /bin/true` of each build,
               bwrap --unshare-all and a direct spawn, interleaved
  API exec     /bin/true in an existing sandbox through the SDK (HTTP), one
               `agentjail serve` of each build, interleaved with a direct spawn
  warm pool    bench/warm.py's create-from-pool + exec `true` against a direct
               spawn, each build in turn, alternated (warm.py's rounds
               settle the machine before each case, so they cannot be mixed)

Needs root (cgroups, serve, pools). Usage:
  bench/seam.py --old /work/base/build/agentjail --new build/agentjail [--rounds 100]
      [--warm-rounds 10] [--json OUT]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402
import bench_service  # noqa: E402
import warm  # noqa: E402


def log(msg):
    print(f"seam: {msg}", file=sys.stderr, flush=True)


def ratio(s, ref):
    return round(s["median"] / ref["median"], 3) if s and ref else None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--warm-rounds", type=int, default=10)
    ap.add_argument("--warm-turns", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    bins = {"old": os.path.abspath(a.old), "new": os.path.abspath(a.new)}
    res = {"binaries": bins, "loadavg_start": os.getloadavg(), "cpus": os.cpu_count()}

    cmds = {"direct /bin/true": ["/bin/true"],
            "bwrap --unshare-all": ["bwrap", "--ro-bind", "/", "/", "--unshare-all",
                                    "--die-with-parent", "/bin/true"]}
    for k, aj in bins.items():
        cmds[f"run ({k})"] = [aj, "run", "--memory", "256M", "--pids", "64", "--", "/bin/true"]
    log(f"cold start: {len(cmds)} x {a.rounds} interleaved rounds")
    samples, failed = bench.interleaved(cmds, a.rounds, 5, log)
    cs = {n: bench.summary(v) for n, v in samples.items() if n not in failed}
    res["cold_start"] = {"summary": cs, "failed": failed,
                         "ratio_to_bwrap": {k: ratio(cs.get(f"run ({k})"),
                                                     cs.get("bwrap --unshare-all"))
                                            for k in bins}}

    svcs, boxes = {}, {}
    try:
        for k, aj in bins.items():
            svcs[k] = bench_service.Service(aj, 8)
            boxes[k] = bench_service.Sandbox.create(client=svcs[k].client,
                                                    **bench_service.POLICY)

        def direct():
            bench_service.check_exit(bench.wait_status(bench.spawn(["/bin/true"])))

        def exec_in(sb):
            return lambda: bench_service.check_exit(sb.exec(["/bin/true"]).exit_code)

        fns = {"direct /bin/true": direct}
        fns.update({f"API exec ({k})": exec_in(b) for k, b in boxes.items()})
        log(f"API exec: {len(fns)} x {a.rounds} interleaved rounds")
        samples, failed = bench_service.interleaved_fns(fns, a.rounds, 5)
    finally:
        for b in boxes.values():
            b.kill()
        for s in svcs.values():
            s.stop()
    ex = {n: bench.summary(v) for n, v in samples.items() if n not in failed}
    res["api_exec"] = {"summary": ex, "failed": failed,
                       "ratio_to_direct": {k: ratio(ex.get(f"API exec ({k})"),
                                                    ex.get("direct /bin/true")) for k in bins}}

    wm = {k: {"pool": [], "direct": [], "fresh": []} for k in bins}
    for turn in range(a.warm_turns):
        for k in (("old", "new") if turn % 2 == 0 else ("new", "old")):
            log(f"warm pool: {k}, turn {turn + 1}/{a.warm_turns}")
            w = warm.measure(bins[k], a.warm_rounds, log=lambda m: None, pairs=3)
            for case in wm[k]:
                wm[k][case] += w["samples_ms"][case]
    res["warm"] = {k: {c: bench.summary(v) for c, v in d.items()} for k, d in wm.items()}
    for k in bins:
        res["warm"][k]["ratio_to_direct"] = ratio(res["warm"][k]["pool"],
                                                  res["warm"][k]["direct"])
    res["loadavg_end"] = os.getloadavg()

    def f(s):
        return f"{s['median']:.2f} ms (p95 {s['p95']:.2f}, n {s['n']})" if s else "n/a"

    print(f"load {res['loadavg_start']} -> {res['loadavg_end']}")
    print("| figure | old | new | reference |")
    print("| --- | --- | --- | --- |")
    print(f"| cold start `run --memory 256M --pids 64 -- /bin/true` | {f(cs.get('run (old)'))} "
          f"= {res['cold_start']['ratio_to_bwrap']['old']}× bwrap | {f(cs.get('run (new)'))} = "
          f"{res['cold_start']['ratio_to_bwrap']['new']}× bwrap | bwrap "
          f"{f(cs.get('bwrap --unshare-all'))}, direct {f(cs.get('direct /bin/true'))} |")
    print(f"| API exec `/bin/true` (HTTP, SDK) | {f(ex.get('API exec (old)'))} = "
          f"{res['api_exec']['ratio_to_direct']['old']}× direct | {f(ex.get('API exec (new)'))} "
          f"= {res['api_exec']['ratio_to_direct']['new']}× direct | direct "
          f"{f(ex.get('direct /bin/true'))} |")
    w = res["warm"]
    print(f"| warm create-from-pool + exec `true` | {f(w['old']['pool'])} = "
          f"{w['old']['ratio_to_direct']}× direct ({f(w['old']['direct'])}) | "
          f"{f(w['new']['pool'])} = {w['new']['ratio_to_direct']}× direct "
          f"({f(w['new']['direct'])}) | create without a pool: old {f(w['old']['fresh'])}, "
          f"new {f(w['new']['fresh'])} |")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
