#!/usr/bin/env python3
"""Fork at level 2 against a level-2 create and a level-1 fork, through the
service (docs/performance.md, "Round 16"): each case timed from the request
to its answer through the Python SDK, in rotating order, the machine
settled (quiet.py) before each; what a case made is deleted after it,
outside the timing.

  create (gvisor)     POST /v1/sandboxes {"isolation": "gvisor"}
  fork (gvisor)       POST .../fork {"count": 1} of a live level-2 sandbox
                      with a process of its own (runsc checkpoint, the
                      parent restored in place, one runsc restore)
  fork x4 (gvisor)    the same, {"count": 4}
  create (process)    POST /v1/sandboxes {}
  fork (process)      POST .../fork {"count": 1} of a live level-1 sandbox
                      (its files copied)

Needs root and runsc. Usage: bench/gvfork.py [--aj build/agentjail]
[--rounds 7] [--json OUT]
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_service  # noqa: E402
import quiet  # noqa: E402
from bench_service import Sandbox  # noqa: E402

# a process that lives on in the sandbox after its exec (its stdio not the exec's)
KEEPER = ("setsid sh -c 'v=$(od -An -N4 -tu4 /dev/urandom); while :; do sleep 1; done' "
          "</dev/null >/dev/null 2>&1 & echo data > /tmp/f")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aj", default=os.path.join(HERE, "..", "build", "agentjail"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args()
    svc = bench_service.Service(os.path.realpath(a.aj), 64)
    parents = {}
    try:
        for lv in ("gvisor", "process"):
            parents[lv] = Sandbox.create(client=svc.client, isolation=lv)
            parents[lv].exec(["sh", "-c", KEEPER])

        def create(lv):
            return lambda: [Sandbox.create(client=svc.client, isolation=lv)]

        def fork(lv, n):
            return lambda: parents[lv].fork(count=n)

        cases = {"create (gvisor)": create("gvisor"), "fork (gvisor)": fork("gvisor", 1),
                 "fork x4 (gvisor)": fork("gvisor", 4), "create (process)": create("process"),
                 "fork (process)": fork("process", 1)}
        names = list(cases)
        samples = {n: [] for n in names}
        for r in range(a.rounds + 1):  # round 0: warm-up, not kept
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                quiet.settle()
                made = []
                ms = bench_service.timed(lambda n=n: made.extend(cases[n]()))
                if r:
                    samples[n].append(ms)
                for sb in made:
                    sb.kill()
            print(f"gvfork: round {r}: " + ", ".join(
                f"{n} {samples[n][-1]:.0f}" for n in names if r), file=sys.stderr, flush=True)
        out = {n: {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
               for n, v in samples.items()}
        out["samples_ms"] = samples
        out["load"] = os.getloadavg()
        print(json.dumps(out, indent=1))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)
    finally:
        for sb in parents.values():
            try:
                sb.kill()
            except Exception:  # noqa: BLE001
                pass
        svc.stop()


if __name__ == "__main__":
    main()
