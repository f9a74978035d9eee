#!/usr/bin/env python3
"""Warm pools and warm interpreters, measured (python3 stdlib + sdk/python).

Starts its own `agentjail serve` (a state directory of its own) with a pool
of the host-root sandbox and a pool of a Python image, and measures, in
interleaved rounds:

  direct      /bin/true spawned directly (the reference)
  pool        create from the pool + exec `true` + its exit event
  fresh       create without a pool (a policy no pool has) + exec `true`
  warm-py     first `python3 -c IMPORTS` of a pooled sandbox (zygote ready)
  cold-py     the same in a fresh sandbox of the same image (no zygote)

The Python image: --image NAME (its warm-up is what is imported), else the
shipped "python" image when built (pandas), else a small image made from the
host's /usr/bin/python3.11 whose warm-up imports a few heavy stdlib modules.
Each round measures direct and pool PAIRS times (default 3), the rest once.
Every timed case starts on a quiet machine (settle(): the CPUs idle for a
20 ms window; what an earlier case or benchmark left to the kernel, such as
a sandbox's teardown or the writeback of a large file, falls on no one's
hand-offs), right after a request to the service.
Needs root. Usage: bench/warm.py [--rounds 20] [--pairs 3] [--aj build/agentjail] [--json OUT]
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk", "python"))
from agentjail import Client, Sandbox  # noqa: E402
from quiet import ms, settle  # noqa: E402

STDLIB_WARMUP = ("python3 -c 'import asyncio, json, decimal, email.mime.multipart, "
                 "http.client, xml.etree.ElementTree, unittest, argparse, logging'")


def host_python_image(aj, state, name):
    """An image from the host's Debian python3 (stdlib only)."""
    d = tempfile.mkdtemp(prefix="aj-bench-py-")
    try:
        for sub in ("bin", "usr/bin", "usr/lib", "etc", "tmp", "proc", "dev", "root"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        shutil.copy2("/usr/bin/python3.11", os.path.join(d, "usr/bin/python3"))
        shutil.copytree("/usr/lib/python3.11", os.path.join(d, "usr/lib/python3.11"), symlinks=True,
                        ignore=shutil.ignore_patterns("test", "idlelib", "tkinter"))
        shutil.copy2("/bin/true", os.path.join(d, "bin/true"))
        dyn = os.path.join(d, "usr/lib/python3.11/lib-dynload")
        objs = ["/usr/bin/python3.11", "/bin/true"] + [os.path.join(dyn, f) for f in os.listdir(dyn)]
        out = subprocess.run(["ldd"] + objs, capture_output=True, text=True).stdout
        for lib in sorted({w for w in out.split()
                           if w.startswith("/") and ".so" in w and not w.endswith(":")}):
            dest = d + lib
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if not os.path.exists(dest):
                shutil.copy2(lib, dest)
        subprocess.run([aj, "image", "build", name, "--from-dir", d, "--warmup", STDLIB_WARMUP],
                       check=True, env=dict(os.environ, AGENTJAIL_STATE_DIR=state),
                       stderr=subprocess.DEVNULL)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def image_warmup(aj, state, name):
    out = subprocess.run([aj, "image", "inspect", name], capture_output=True, text=True,
                         env=dict(os.environ, AGENTJAIL_STATE_DIR=state))
    return json.loads(out.stdout)["warmup"] if out.returncode == 0 else None


def wait_for(pred, timeout=60):
    t = time.time() + timeout
    while time.time() < t:
        if pred():
            return True
        time.sleep(0.02)
    raise RuntimeError("timed out waiting")


def measure(aj, rounds, image=None, state=None, log=lambda m: None, pairs=3):
    """The five cases in interleaved rounds (direct and pool pairs times
    each); returns medians, ratios, samples."""
    aj = os.path.abspath(aj)
    tmp = tempfile.mkdtemp(prefix="aj-bench-warm-")
    if not state:
        state = "/var/lib/agentjail" if image_warmup(aj, "/var/lib/agentjail", "python") else tmp
    if not image:
        image = "python" if image_warmup(aj, state, "python") else "benchpy"
    srv = None
    try:
        if not image_warmup(aj, state, image):
            log(f"warm pools: building the image {image} from the host's python3")
            host_python_image(aj, state, image)
        warmup = image_warmup(aj, state, image)
        code = shlex.split(warmup)[2]
        sock = os.path.join(tmp, "s")
        env = dict(os.environ, AGENTJAIL_STATE_DIR=state)
        srv = subprocess.Popen([aj, "serve", "--quiet", "--socket", sock, "--state-dir",
                                os.path.join(tmp, "run"), "--pool", "default=2", "--pool",
                                image + "=2"], env=env)
        c = Client(socket_path=sock)

        def up():
            try:
                return os.path.exists(sock) and c.healthy()
            except OSError:
                return False

        wait_for(up)

        def ready(img, n=1, key="ready"):
            pool = next(p for p in c.json("GET", "/v1/pools")["pools"] if p["image"] == img)
            return pool[key] >= n

        def quiet():  # both pools full, every zygote warm: no refill competes for the CPU
            return ready("default", 2) and ready(image, 2, "warm")

        def start():
            """Each timed case starts the same way: the service quiet (pools
            full, zygotes warm), the machine quiet, then right after a
            request (an idle machine makes any spawn ~0.8 ms slower, a busy
            one slower too)."""
            wait_for(quiet)
            settle()
            quiet()

        samples = {k: [] for k in ("direct", "pool", "fresh", "warm-py", "cold-py")}
        for i in range(rounds):
            log(f"warm pools: round {i + 1}/{rounds}")
            for _ in range(pairs):
                start()
                t0 = time.perf_counter_ns()
                subprocess.run(["/bin/true"], check=True)
                samples["direct"].append(ms(t0))

                start()
                t0 = time.perf_counter_ns()
                sb = Sandbox.create(c)
                r = sb.exec(["true"])
                samples["pool"].append(ms(t0))
                assert r.exit_code == 0
                sb.kill()

            start()
            t0 = time.perf_counter_ns()
            sb = Sandbox.create(c, hostname="fresh")  # never from a pool (not applied at hand-out)
            r = sb.exec(["true"])
            samples["fresh"].append(ms(t0))
            sb.kill()

            wait_for(quiet)
            sb = Sandbox.create(c, image=image)
            wait_for(lambda: sb.refresh().get("interpreter"))
            start()
            t0 = time.perf_counter_ns()
            r = sb.exec(["python3", "-c", code])
            samples["warm-py"].append(ms(t0))
            assert r.exit_code == 0, r.stderr
            sb.kill()

            start()
            sb = Sandbox.create(c, image=image, hostname="fresh")
            t0 = time.perf_counter_ns()
            r = sb.exec(["python3", "-c", code])
            samples["cold-py"].append(ms(t0))
            assert r.exit_code == 0, r.stderr
            sb.kill()
        med = {k: statistics.median(v) for k, v in samples.items()}
        return {"image": image, "warmup": warmup, "rounds": rounds, "pairs": pairs, "median_ms": med,
                "pool_vs_direct": med["pool"] / med["direct"],
                "fresh_vs_direct": med["fresh"] / med["direct"],
                "warm_vs_cold_python": med["warm-py"] / med["cold-py"], "samples_ms": samples}
    finally:
        if srv:
            srv.terminate()
            srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aj", default=os.path.join(HERE, "..", "build", "agentjail"))
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=3, help="direct and pool samples per round")
    ap.add_argument("--image")
    ap.add_argument("--state", help="an image store to use (default: a temporary one, "
                    "or /var/lib/agentjail when it has the python image)")
    ap.add_argument("--json")
    a = ap.parse_args()
    res = measure(a.aj, a.rounds, a.image, a.state, pairs=a.pairs)
    med = res["median_ms"]
    print(f"image {res['image']}: {res['warmup']}")
    print(f"{'case':10} {'median ms':>10}")
    for k in med:
        print(f"{k:10} {med[k]:10.2f}")
    print(f"pool create+exec true / direct /bin/true: {res['pool_vs_direct']:.2f}x (issue target 1.5x)")
    print(f"fresh create+exec true / direct /bin/true: {res['fresh_vs_direct']:.1f}x")
    print(f"first python exec, warm / cold: {res['warm_vs_cold_python']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
