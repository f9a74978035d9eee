#!/usr/bin/env python3
"""Load test of agentjail serve: N sandboxes, parallel execs for a while;
fails on any failed exec or on growth of the service's fds or memory.

    load.py SERVICE_PID [--sandboxes 50] [--seconds 20] [--threads 16]

Prints one JSON line of figures (also for bench/).
"""

import argparse
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk", "python"))
from agentjail import Sandbox  # noqa: E402


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def front_of(pid):
    """The service's unprivileged front (a child named agentjail-front), or None."""
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            kids = open(f"/proc/{pid}/task/{t}/children").read().split()
        except OSError:
            continue
        for k in kids:
            try:
                if open(f"/proc/{k}/comm").read().strip() == "agentjail-front":
                    return int(k)
            except OSError:
                pass
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pid", type=int)
    ap.add_argument("--sandboxes", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--threads", type=int, default=16)
    a = ap.parse_args()

    base_fds = fds(a.pid)
    front = front_of(a.pid)
    fbase = fds(front) if front else 0
    t0 = time.monotonic()
    boxes = [Sandbox.create(memory="128M", pids=64, timeout=600) for _ in range(a.sandboxes)]
    create_s = time.monotonic() - t0

    lock = threading.Lock()
    stats = {"execs": 0, "failures": [], "lat": []}
    stop = time.monotonic() + a.seconds

    def worker(seed):
        rnd = random.Random(seed)
        while time.monotonic() < stop:
            sb = rnd.choice(boxes)
            n = rnd.randint(1, 2000)
            t = time.monotonic()
            try:
                r = sb.exec(f"head -c {n} /dev/zero | tr '\\0' x; echo; echo e >&2")
                ok = r.exit_code == 0 and r.stdout == "x" * n + "\n" and r.stderr == "e\n"
                why = None if ok else repr(r)
            except Exception as e:  # noqa: BLE001
                ok, why = False, repr(e)
            with lock:
                stats["execs"] += 1
                stats["lat"].append(time.monotonic() - t)
                if not ok:
                    stats["failures"].append(why)

    # warm up (thread stacks, allocator arenas), then measure
    warm = [threading.Thread(target=worker, args=(i,)) for i in range(a.threads)]
    stop_warm, stop = stop, time.monotonic() + min(3, a.seconds / 4)
    for t in warm:
        t.start()
    for t in warm:
        t.join()
    fds_warm, rss_warm = fds(a.pid), rss_kb(a.pid)
    ffds_warm, frss_warm = (fds(front), rss_kb(front)) if front else (0, 0)
    stop = time.monotonic() + a.seconds
    t1 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(100 + i,)) for i in range(a.threads)]
    for t in threads:
        t.start()
    # a sample of both processes every tenth of the run (at least every 30 s)
    samples = []
    step = min(30.0, max(1.0, a.seconds / 10))
    next_sample = t1
    while any(t.is_alive() for t in threads):
        now = time.monotonic()
        if next_sample <= now <= stop:
            with lock:
                n = stats["execs"]
            samples.append({"t": round(now - t1, 1), "execs": n,
                            "sup_fds": fds(a.pid), "sup_rss_kb": rss_kb(a.pid),
                            "front_fds": fds(front) if front else None,
                            "front_rss_kb": rss_kb(front) if front else None})
            next_sample += step
        time.sleep(0.1)
    for t in threads:
        t.join()
    run_s = time.monotonic() - t1
    fds_end, rss_end = fds(a.pid), rss_kb(a.pid)
    ffds_end, frss_end = (fds(front), rss_kb(front)) if front else (0, 0)
    for sb in boxes:
        sb.kill()
    boxes[0].client.close()  # its idle keep-alive connections (up to 8) are not the front's growth
    time.sleep(0.5)
    fds_after = fds(a.pid)
    ffds_after = fds(front) if front else 0
    lat = sorted(stats["lat"])
    out = {
        "sandboxes": a.sandboxes, "threads": a.threads, "seconds": round(run_s, 1),
        "create_s": round(create_s, 2), "execs": stats["execs"],
        "execs_per_s": round(stats["execs"] / (run_s + min(3, a.seconds / 4)), 1),
        "p50_ms": round(lat[len(lat) // 2] * 1000, 1), "p99_ms": round(lat[int(len(lat) * 0.99)] * 1000, 1),
        "failures": len(stats["failures"]), "fds_base": base_fds, "fds_warm": fds_warm,
        "fds_end": fds_end, "fds_after": fds_after, "rss_warm_kb": rss_warm, "rss_end_kb": rss_end,
        "front_fds": [fbase, ffds_warm, ffds_end, ffds_after], "front_rss_kb": [frss_warm, frss_end],
    }
    print(json.dumps(out))
    print(json.dumps({"samples": samples}))
    problems = []
    if stats["failures"]:
        problems.append(f"{len(stats['failures'])} failed execs, e.g. {stats['failures'][0]}")
    if fds_end > fds_warm + 2 or fds_after > base_fds + 2:
        problems.append(f"fds grew: base {base_fds}, warm {fds_warm}, end {fds_end}, after {fds_after}")
    if rss_end > rss_warm * 1.25 + 4096:
        problems.append(f"memory grew: {rss_warm} kB -> {rss_end} kB")
    if front and (ffds_end > ffds_warm + 4 or ffds_after > fbase + 4):
        problems.append(f"the front's fds grew: base {fbase}, warm {ffds_warm}, end {ffds_end}, after {ffds_after}")
    if front and frss_end > frss_warm * 1.25 + 4096:
        problems.append(f"the front's memory grew: {frss_warm} kB -> {frss_end} kB")
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
