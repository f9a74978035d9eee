#!/usr/bin/env python3
"""The code interpreter, measured (sdk/python + Debian's jupyter_client).

Starts its own `agentjail serve` with a pool of host-root sandboxes whose
kernels start ahead (--pool default=N,code: pandas and matplotlib
imported), and measures, in interleaved rounds, each case from a quiet
machine (settle()):

  pool-1+1      create from the pool + the first run_code("1+1") to its end event
  fresh-1+1     create without a pool + the first run_code("1+1") (the kernel
                starts: the cold path)
  local-1+1     the peer: execute "1+1" in a Jupyter kernel already running
                on the host, no sandbox (jupyter_client, the same protocol)
  pool-chart    a pooled sandbox: upload sales.csv (files API) + run_code
                reading it with pandas, a matplotlib chart shown with
                plt.show(), the PNG received
  local-chart   the peer: the same file written and the same cell run in the
                host's running kernel

Targets (issue 22): pool-1+1 <= 50 ms, pool-chart <= 1 s. Needs root and
python3-ipykernel, -jupyter-client, -pandas, -matplotlib (scripts/setup.sh).
Usage: bench/code.py [--rounds 10] [--pool 2] [--aj build/agentjail] [--json OUT]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

try:
    from jupyter_client import KernelManager
except ImportError:  # another python3 first on PATH: Debian's has it
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk", "python"))
from agentjail import Client, Sandbox  # noqa: E402
from quiet import ms, settle  # noqa: E402

CSV = "region,month,sales\n" + "".join(
    f"{r},{m},{100 + 7 * m + (13 if r == 'south' else 0)}\n"
    for r in ("north", "south") for m in range(1, 13))
CHART = """import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv("{path}")
df.pivot(index="month", columns="region", values="sales").plot(title="sales")
plt.show()
"""


def wait_pool(client, n, timeout=120):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        p = client.json("GET", "/v1/pools")["pools"][0]
        if p.get("code_kernels", 0) >= n and p["ready"] >= n:
            return
        time.sleep(0.1)
    raise SystemExit(f"the pool's kernels did not start: {p}")


class LocalKernel:
    """The peer: one ipykernel on the host, started once, with the same imports."""

    def __init__(self):
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel()
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.run("import pandas, matplotlib, matplotlib.pyplot")

    def run(self, code):
        """Execute; the messages of the run up to idle (what the bridge reads)."""
        mid = self.kc.execute(code)
        out = []
        while True:
            m = self.kc.get_iopub_msg(timeout=60)
            if m["parent_header"].get("msg_id") != mid:
                continue
            out.append(m)
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                return out

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def stats(xs):
    xs = sorted(xs)
    return {"median": round(statistics.median(xs), 2),
            "p95": round(xs[min(len(xs) - 1, int(len(xs) * 0.95))], 2),
            "min": round(xs[0], 2), "n": len(xs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--pool", type=int, default=2)
    ap.add_argument("--aj", default=os.path.join(HERE, "..", "build", "agentjail"))
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="aj-bench-code-")
    sock = os.path.join(tmp, "aj.sock")
    log = open(os.path.join(tmp, "serve.log"), "w")
    srv = subprocess.Popen([a.aj, "serve", "--quiet", "--socket", sock, "--state-dir",
                            os.path.join(tmp, "state"), "--pool", f"default={a.pool},code"],
                           stdout=log, stderr=log)
    local = None
    res = {k: [] for k in ("pool-1+1", "fresh-1+1", "local-1+1", "pool-chart", "local-chart")}
    try:
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        client = Client(socket_path=sock)
        local = LocalKernel()
        csv_local = os.path.join(tmp, "sales.csv")
        for r in range(a.rounds):
            wait_pool(client, a.pool)
            settle(timeout=3.0)
            t0 = time.perf_counter_ns()
            sb = Sandbox.create(client=client)
            ex = sb.run_code("1+1")
            res["pool-1+1"].append(ms(t0))
            assert ex.text == "2", ex
            settle(timeout=3.0)
            t0 = time.perf_counter_ns()
            sb.files.write("/tmp/sales.csv", CSV.encode())
            ex = sb.run_code(CHART.format(path="/tmp/sales.csv"))
            res["pool-chart"].append(ms(t0))
            assert ex.results and ex.results[0].png_bytes()[:8] == b"\x89PNG\r\n\x1a\n", ex
            sb.kill()
            settle(timeout=3.0)
            t0 = time.perf_counter_ns()
            local.run("1+1")
            res["local-1+1"].append(ms(t0))
            settle(timeout=3.0)
            t0 = time.perf_counter_ns()
            with open(csv_local, "w") as f:
                f.write(CSV)
            msgs = local.run(CHART.format(path=csv_local))
            res["local-chart"].append(ms(t0))
            assert any("image/png" in m["content"].get("data", {}) for m in msgs)
            if r % 2 == 0:  # the cold path: a kernel started in a new sandbox
                wait_pool(client, a.pool)
                settle(timeout=3.0)
                t0 = time.perf_counter_ns()
                sb = Sandbox.create(client=client, hostname="cold")  # no pool has it
                ex = sb.run_code("1+1")
                res["fresh-1+1"].append(ms(t0))
                assert ex.text == "2", ex
                sb.kill()
            print(f"round {r + 1}/{a.rounds}: " + ", ".join(
                f"{k} {v[-1]:.1f}" for k, v in res.items() if v), file=sys.stderr)
    finally:
        if local:
            local.close()
        srv.terminate()
        srv.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    out = {k: stats(v) for k, v in res.items() if v}
    out["ratios"] = {
        "pool-1+1 / local-1+1": round(out["pool-1+1"]["median"] / out["local-1+1"]["median"], 2),
        "fresh-1+1 / pool-1+1": round(out["fresh-1+1"]["median"] / out["pool-1+1"]["median"], 1),
        "pool-chart / local-chart": round(out["pool-chart"]["median"]
                                          / out["local-chart"]["median"], 2)}
    out["targets"] = {"pool-1+1 <= 50 ms": out["pool-1+1"]["median"] <= 50,
                      "pool-chart <= 1000 ms": out["pool-chart"]["median"] <= 1000}
    out["conditions"] = {"cpus": os.cpu_count(), "rounds": a.rounds, "pool": a.pool,
                         "load1": os.getloadavg()[0]}
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
