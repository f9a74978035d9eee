"""The service's rows of the benchmark (bench.py): `agentjail serve` started
for the run, on a socket of its own. Clients: the C client of the same
program (`agentjail sandbox exec|cp`, libcurl) where a command line is
compared with a command line, the Python SDK (sdk/python, stdlib only) for
round trips and the WebSocket.
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk", "python"))
from agentjail import AgentjailError, Client, Sandbox  # noqa: E402

import bench  # noqa: E402  (helpers: spawn, wait_status, summary, mem_of, ...)

POLICY = {"memory": "256M", "pids": 64}


class Service:
    """agentjail serve on a private socket and state directory."""

    def __init__(self, aj, max_sandboxes):
        self.aj = aj
        self.dir = tempfile.mkdtemp(prefix="ajbench-serve.")
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "s.sock")
        self.log = open(os.path.join(self.dir, "serve.log"), "w")
        # the files benchmark's workspace is below /var/tmp (api_files): the
        # operator policy lets clients bind there, nowhere else
        policy = os.path.join(self.dir, "operator-policy.json")
        with open(policy, "w") as f:
            json.dump({"bind_roots": [{"path": os.path.realpath("/var/tmp"), "rw": True}]}, f)
        argv = [aj, "serve", "--quiet", "--socket", self.sock, "--state-dir",
                os.path.join(self.dir, "state"), "--max-sandboxes", str(max_sandboxes),
                "--operator-policy", policy]
        self.pid = bench.spawn(argv, stderr=self.log.fileno())
        deadline = time.time() + 20
        while not os.path.exists(self.sock):
            if time.time() > deadline or os.waitpid(self.pid, os.WNOHANG)[0]:
                raise RuntimeError("agentjail serve did not start: " + self.log_tail())
            time.sleep(0.05)
        self.client = Client(socket_path=self.sock, timeout=600)
        self.env = dict(os.environ, AGENTJAIL_SOCKET=self.sock)

    def log_tail(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-300:]

    def cli(self, *args, **kw):
        """`agentjail sandbox ARGS` (the C client); its stdout."""
        p = subprocess.run([self.aj, "sandbox", *args], env=self.env, capture_output=True,
                           text=True, **kw)
        if p.returncode != 0:
            raise RuntimeError(f"agentjail sandbox {args[0]}: exit {p.returncode}: {p.stderr[-300:]}")
        return p.stdout

    def stop(self):
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        bench.wait_status(self.pid)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def timed(fn):
    t0 = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t0) / 1e6


def interleaved_fns(fns, rounds, warmup):
    """bench.interleaved, for callables."""
    return bench.interleaved(fns, rounds, warmup, None, timer=timed, errors=(Exception,))


def check_exit(code):
    if code != 0:
        raise RuntimeError(f"exit {code}")


# ---------------------------------------------------------------- round trips


def api_exec(a, svc, log):
    """exec `/bin/true` in an existing sandbox: HTTP (NDJSON) and WebSocket,
    each a new connection as a client makes it, against a direct spawn."""
    sb = Sandbox.create(client=svc.client, **POLICY)
    try:
        def http():
            check_exit(sb.exec(["/bin/true"]).exit_code)

        def ws():
            s = sb.attach(["/bin/true"], stdin=False)
            try:
                st = s.run()
            finally:
                s.close()
            check_exit(st["agentjail"]["exit_code"])

        def direct():
            check_exit(bench.wait_status(bench.spawn(["/bin/true"])))

        def cli():
            check_exit(bench.wait_status(bench.spawn(
                [svc.aj, "sandbox", "--socket", svc.sock, "exec", sb.id, "--", "/bin/true"])))

        fns = {"direct /bin/true": direct, "API exec (HTTP, SDK)": http,
               "API exec (WebSocket, SDK)": ws, "agentjail sandbox exec (CLI)": cli}
        log(f"API exec round trip: {len(fns)} x {a.rounds} interleaved rounds")
        samples, failed = interleaved_fns(fns, a.rounds, a.warmup)
    finally:
        sb.kill()
    return {
        "summary": {n: bench.summary(v) for n, v in samples.items() if n not in failed},
        "samples_ms": {n: [round(x, 3) for x in v] for n, v in samples.items() if n not in failed},
        "unavailable": failed,
    }


# ---------------------------------------------------------------- streaming


def api_streaming(a, svc, log):
    """Output of a command through the service, as a ratio to the same
    command through a plain pipe: NDJSON (`agentjail sandbox exec`, text:
    JSON escapes every NUL as 6 bytes, so the stream is `tr '\\0' x` of
    /dev/zero on both sides) and the WebSocket (raw bytes, the SDK reading)."""
    n = a.api_stream_bytes
    text = f"head -c {n} /dev/zero | tr '\\0' x"
    sb = Sandbox.create(client=svc.client, **POLICY)
    got = {}

    def ws():
        s = sb.attach(["head", "-c", str(n), "/dev/zero"], stdin=False)
        count = [0]
        try:
            st = s.run(on_stdout=lambda d: count.__setitem__(0, count[0] + len(d)))
        finally:
            s.close()
        check_exit(st["agentjail"]["exit_code"])
        if count[0] != n:
            raise RuntimeError(f"WebSocket: {count[0]} of {n} bytes")

    def ws_pipe():
        # the reference of the WebSocket row: the same bytes through a pipe
        # into a Python reader (the SDK's side of the WebSocket)
        r, w = os.pipe()
        pid = bench.spawn(["head", "-c", str(n), "/dev/zero"], stdout=w)
        os.close(w)
        total = 0
        while True:
            b = os.read(r, 1 << 16)
            if not b:
                break
            total += len(b)
        os.close(r)
        check_exit(bench.wait_status(pid))
        if total != n:
            raise RuntimeError("short pipe")

    cmds = {
        "plain pipe (text)": ["sh", "-c", text],
        "agentjail sandbox exec (HTTP NDJSON)": [svc.aj, "sandbox", "--socket", svc.sock, "exec",
                                                 sb.id, "--", "sh", "-c", text],
    }
    log(f"API streaming: {n >> 20} MiB x {a.stream_reps} interleaved")
    secs = {k: [] for k in list(cmds) + ["plain pipe into Python", "WebSocket (SDK)"]}
    try:
        for _ in range(a.stream_reps):
            order = list(cmds) + ["plain pipe into Python", "WebSocket (SDK)"]
            import random
            random.shuffle(order)
            for k in order:
                if k in cmds:
                    secs[k].append(bench.pipe_throughput(cmds[k], n))
                else:
                    secs[k].append(timed(ws if k.startswith("WebSocket") else ws_pipe) / 1e3)
    finally:
        sb.kill()
    mibs = {k: [n / (1 << 20) / s for s in v] for k, v in secs.items()}
    med = {k: statistics.median(v) for k, v in mibs.items()}
    got["bytes"] = n
    got["seconds"] = secs
    got["mib_per_s"] = {k: bench.summary(v) for k, v in mibs.items()}
    got["ratio_http"] = round(med["agentjail sandbox exec (HTTP NDJSON)"] / med["plain pipe (text)"], 3)
    got["ratio_ws"] = round(med["WebSocket (SDK)"] / med["plain pipe into Python"], 3)
    got["note"] = ("HTTP: `agentjail sandbox exec ID -- sh -c \"head -c N /dev/zero | tr '\\0' x\"` "
                   "into cat vs the same pipeline on the host; WebSocket: raw /dev/zero read by "
                   "the Python SDK vs a pipe read by Python; wall times include the exec's start")
    return got


# ---------------------------------------------------------------- files


def api_files(a, svc, log):
    """Upload and download of one file through the API (`agentjail sandbox
    cp`, streamed) vs cp on the same disk; the sandbox's workspace is a host
    directory, so both write to the same filesystem."""
    n = a.files_bytes
    work = tempfile.mkdtemp(prefix="ajbench-files.", dir="/var/tmp")
    ws = os.path.join(work, "ws")
    os.mkdir(ws)
    os.chmod(work, 0o755)
    os.chmod(ws, 0o777)
    src = os.path.join(work, "src.bin")
    with open(src, "wb") as f:
        chunk = os.urandom(1 << 20)
        for _ in range(n >> 20):
            f.write(chunk)
    os.chmod(src, 0o644)
    log(f"files: {n >> 20} MiB x {a.files_reps}")
    sb = Sandbox.create(client=svc.client, workspace=ws, **POLICY)
    secs = {"cp": [], "upload (sandbox cp)": [], "download (sandbox cp)": []}
    try:
        for i in range(a.files_reps):
            dst = os.path.join(work, f"cp-{i}.bin")
            secs["cp"].append(timed(lambda: subprocess.run(["cp", src, dst], check=True)) / 1e3)
            os.unlink(dst)
            secs["upload (sandbox cp)"].append(
                timed(lambda: svc.cli("cp", src, f"{sb.id}:/workspace/up.bin")) / 1e3)
            if os.path.getsize(os.path.join(ws, "up.bin")) != n:
                raise RuntimeError("upload: wrong size")
            down = os.path.join(work, "down.bin")
            secs["download (sandbox cp)"].append(
                timed(lambda: svc.cli("cp", f"{sb.id}:/workspace/up.bin", down)) / 1e3)
            if os.path.getsize(down) != n:
                raise RuntimeError("download: wrong size")
            os.unlink(down)
            os.unlink(os.path.join(ws, "up.bin"))
    finally:
        sb.kill()
        shutil.rmtree(work, ignore_errors=True)
    mibs = {k: [n / (1 << 20) / s for s in v] for k, v in secs.items()}
    return {"bytes": n, "seconds": secs, "mib_per_s": {k: bench.summary(v) for k, v in mibs.items()}}


# ---------------------------------------------------------------- density, scale


def proc_mem(pid):
    """PSS, RSS and page tables (VmPTE: kernel memory of the process that
    PSS does not show) in bytes."""
    m = bench.mem_of(pid)
    m["pte"] = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmPTE:"):
                    m["pte"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return m


def ppid_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    return int(s[s.rindex(")") + 2:].split()[1])


def create_exec_delete(svc):
    sb = Sandbox.create(client=svc.client, **POLICY)
    try:
        check_exit(sb.exec(["/bin/true"]).exit_code)
    finally:
        sb.kill()


def scale_point(svc, clients, per_client):
    """create + exec true + delete, `clients` threads at once; ms each."""
    lat, errors = [], []
    lock = threading.Lock()

    def worker():
        for _ in range(per_client):
            try:
                dt = timed(lambda: create_exec_delete(svc))
                with lock:
                    lat.append(dt)
            except Exception as e:  # noqa: BLE001
                with lock:
                    errors.append(repr(e)[:200])

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    return lat, errors, wall


def density_scale(a, svc, log):
    """Idle sandboxes of the service, held at once; at each step their
    memory, and the latency of create+exec+delete by one client and by
    several at once."""
    steps = a.service_steps
    log(f"service density and scale: steps {steps}, {a.scale_clients} concurrent clients")
    base = bench.meminfo()
    svc_base = proc_mem(svc.pid)
    boxes, curve = [], []
    try:
        for target in steps:
            while len(boxes) < target:
                boxes.append(Sandbox.create(client=svc.client, **POLICY))
            time.sleep(0.3)
            mi = bench.meminfo()
            inits = [b.info["pid"] for b in boxes]
            keepers = [ppid_of(p) for p in inits]
            km = [proc_mem(p) for p in keepers]
            im = [proc_mem(p) for p in inits]
            cg = [bench.cgroup_memory(p) for p in inits]
            sm = proc_mem(svc.pid)
            svc_growth = max(0, sm["pss"] + sm["pte"] - svc_base["pss"] - svc_base["pte"])
            per = [k["pss"] + k["pte"] + i["pss"] + i["pte"] + (c or 0)
                   for k, i, c in zip(km, im, cg)]
            single, _, _ = scale_point(svc, 1, a.scale_samples)
            conc, errors, wall = scale_point(svc, a.scale_clients, a.scale_samples)
            point = {
                "sandboxes": target,
                "per_sandbox_bytes": statistics.median(per) + svc_growth / target,
                "keeper_pss_median": statistics.median(k["pss"] for k in km),
                "keeper_rss_median": statistics.median(k["rss"] for k in km),
                "keeper_pte_median": statistics.median(k["pte"] for k in km),
                "init_pss_median": statistics.median(i["pss"] for i in im),
                "init_pte_median": statistics.median(i["pte"] for i in im),
                "cgroup_memory_median": statistics.median(c for c in cg if c is not None)
                if any(c is not None for c in cg) else None,
                "service_growth_bytes": svc_growth,
                "service_pss": sm["pss"],
                "host_used_delta_bytes": base["MemFree"] - mi["MemFree"],
                "create_exec_ms": bench.summary(single),
                "create_exec_concurrent_ms": bench.summary(conc),
                "concurrent_per_s": round(len(conc) / wall, 2) if wall else None,
                "errors": errors[:5],
            }
            curve.append(point)
            log(f"  {target} alive: {point['per_sandbox_bytes'] / 2**20:.2f} MiB each, "
                f"create+exec {point['create_exec_ms']['median']:.0f} ms, "
                f"{a.scale_clients} clients {point['create_exec_concurrent_ms']['median']:.0f} ms")
    finally:
        for b in boxes:
            try:
                b.kill()
            except Exception:  # noqa: BLE001
                pass
    last = curve[-1]
    avail = base["MemAvailable"]
    limits = {
        "memory": int(avail / max(last["per_sandbox_bytes"], 1)),
        "uid slots": 16384,
        "pid_max / 3 processes per sandbox": int(open("/proc/sys/kernel/pid_max").read()) // 3,
    }
    return {
        "policy": POLICY,
        "clients": a.scale_clients,
        "curve": curve,
        "capacity_limits": limits,
        "capacity": min(limits.values()),
        "note": "per sandbox = keeper PSS + page tables + init PSS + page tables + the "
        "sandbox cgroup's memory accounting (init's own pages are charged there too: an "
        "upper bound) + the service's own PSS growth / sandboxes",
    }


# ---------------------------------------------------------------- levels

LEVELS = ("process", "gvisor")


def cgroup_of(pid):
    """(directory, memory.current or v1 usage) of the sandbox's own cgroup
    holding pid (its basename starts agentjail-), or (None, None)."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None, None
    cands = []
    for line in lines:
        _, ctrl, path = line.split(":", 2)
        if not os.path.basename(path).startswith("agentjail-"):
            continue
        if "memory" in ctrl.split(","):
            cands.append((f"/sys/fs/cgroup/memory{path}", "memory.usage_in_bytes"))
        elif line.startswith("0::"):
            cands += [("/sys/fs/cgroup" + path, "memory.current"),
                      ("/sys/fs/cgroup/unified" + path, "memory.current")]
    for d, fn in cands:
        try:
            with open(f"{d}/{fn}") as f:
                return d, int(f.read())
        except OSError:
            continue
    return None, None


def holders(svc_pid, pid):
    """The host processes that hold a sandbox whose JSON names pid: pid's
    ancestors below the service (level 1: the keeper; level 2: whatever
    runs runsc), all their descendants (init; runsc's sandbox and gofer),
    and every process of the sandbox's cgroup."""
    kids = bench.proc_children()
    top = pid
    for _ in range(16):
        try:
            pp = ppid_of(top)
        except OSError:
            break
        if pp in (0, 1, svc_pid):
            break
        top = pp
    procs, stack = set(), [top]
    while stack:
        q = stack.pop()
        if q not in procs:
            procs.add(q)
            stack += kids.get(q, [])
    d, _ = cgroup_of(pid)
    if d:
        try:
            with open(f"{d}/cgroup.procs") as f:
                procs |= {int(x) for x in f.read().split()}
        except OSError:
            pass
    return procs


def box_memory(svc, sb):
    """Host memory of one idle sandbox: RSS, PSS and page tables of the
    processes that hold it, its cgroup's memory accounting."""
    info = svc.client.json("GET", f"/v1/sandboxes/{sb.id}")
    pid = info.get("pid")
    if not pid:
        return {"incomplete": "the sandbox's JSON names no pid"}
    procs = sorted(holders(svc.pid, pid))
    ms = [proc_mem(p) for p in procs]
    _, cg = cgroup_of(pid)
    comm = []
    for p in procs:
        try:
            with open(f"/proc/{p}/comm") as f:
                comm.append(f.read().strip())
        except OSError:
            comm.append("?")
    out = {"processes": len(procs), "comm": comm,
           "rss": sum(m["rss"] for m in ms), "pss": sum(m["pss"] for m in ms),
           "pte": sum(m["pte"] for m in ms), "cgroup": cg}
    out["total"] = out["pss"] + out["pte"] + (cg or 0)
    return out


def levels(a, svc, log):
    """Level 1 and level 2 side by side through the service: exec `true` in
    a live sandbox of each (interleaved with a direct spawn), then the host
    memory of idle sandboxes of each. A level the service cannot create is
    recorded with the service's answer."""
    boxes = {lv: [] for lv in LEVELS}
    out = {"levels": {}}
    try:
        for lv in LEVELS:
            try:
                boxes[lv].append(Sandbox.create(client=svc.client, isolation=lv))
                out["levels"][lv] = {"isolation": boxes[lv][0].info.get("isolation")}
            except AgentjailError as e:
                out["levels"][lv] = {"unavailable": f"create: HTTP {e.status} {e.code}: "
                                                    f"{e.message}"[:300]}
            except Exception as e:  # noqa: BLE001
                out["levels"][lv] = {"unavailable": f"create: {e!r}"[:300]}
        live = [lv for lv in LEVELS if boxes[lv]]

        def direct():
            check_exit(bench.wait_status(bench.spawn(["/bin/true"])))

        def exec_in(sb):
            return lambda: check_exit(sb.exec(["/bin/true"]).exit_code)

        fns = {"direct /bin/true": direct}
        fns.update({f"exec ({lv})": exec_in(boxes[lv][0]) for lv in live})
        log(f"levels: API exec in {', '.join(live) or 'no level'}: {a.rounds} interleaved rounds")
        samples, failed = interleaved_fns(fns, a.rounds, a.warmup)
        out["exec_ms"] = {n: bench.summary(v) for n, v in samples.items() if n not in failed}
        out["exec_samples_ms"] = {n: [round(x, 3) for x in v] for n, v in samples.items()
                                  if n not in failed}
        out["exec_failed"] = failed
        n = a.svc_gv_boxes
        for lv in live:
            try:
                while len(boxes[lv]) < n:
                    boxes[lv].append(Sandbox.create(client=svc.client, isolation=lv))
            except Exception as e:  # noqa: BLE001
                out["levels"][lv]["memory_note"] = f"only {len(boxes[lv])} created: {e!r}"[:300]
        time.sleep(0.5)
        for lv in live:
            per = [box_memory(svc, b) for b in boxes[lv]]
            ok = [m for m in per if "incomplete" not in m]
            lvo = out["levels"][lv]
            lvo["idle_boxes"] = len(boxes[lv])
            if not ok:
                lvo["memory"] = {"incomplete": per[0]["incomplete"]}
                continue

            def med(k, ok=ok):
                xs = [m[k] for m in ok if m[k] is not None]
                return statistics.median(xs) if xs else None

            lvo["memory"] = {k: med(k) for k in ("total", "pss", "rss", "pte", "cgroup",
                                                  "processes")}
            lvo["memory"]["comm"] = ok[0]["comm"]
        log("levels: " + ", ".join(
            f"{lv} {out['levels'][lv]['memory']['total'] / 2**20:.2f} MiB idle"
            for lv in live if "total" in out["levels"][lv].get("memory", {})))
    finally:
        for lv in LEVELS:
            for b in boxes[lv]:
                try:
                    b.kill()
                except Exception:  # noqa: BLE001
                    pass
    out["note"] = ("exec: POST /v1/sandboxes/{id}/exec of /bin/true through the SDK (HTTP), a "
                   "sandbox created with only {\"isolation\": LEVEL}; memory per idle sandbox: "
                   "the PSS and page tables of the host processes that hold it (the sandbox "
                   "JSON's pid, its ancestors below the service and their descendants, its "
                   "cgroup's processes) + its cgroup's memory accounting (an upper bound: the "
                   "pages of processes in the cgroup count in both)")
    return out


# ---------------------------------------------------------------- python cell

CELL = (
    "import pandas as pd, matplotlib\n"
    "matplotlib.use('Agg')\n"
    "import matplotlib.pyplot as plt\n"
    "df = pd.DataFrame({'x': range(200), 'y': [i * i % 97 for i in range(200)]})\n"
    "ax = df.plot(x='x', y='y')\n"
    "plt.savefig('/tmp/cell.png')\n"
    "print(len(df), round(df.y.mean(), 3))\n"
)


def python_image_cell(a, aj, svc, log):
    """`import pandas` + a small plot in a fresh sandbox of the python image
    (images/python.json): `agentjail run --image python`, and through the
    service (create with image + exec + delete)."""
    if a.quick:
        return {"unavailable": {"all": "skipped in --quick mode (a fresh pandas + matplotlib "
                                       "start takes seconds; the full run measures it)"}}
    p = subprocess.run([aj, "image", "inspect", "python"], capture_output=True, text=True)
    if p.returncode != 0:
        return {"unavailable": {"all": "no image 'python' (build it: agentjail image build python "
                                       "--recipe images/python.json)"}}
    run = [aj, "run", "-T", "--image", "python", "--memory", "1G", "--", "python3", "-c", CELL]

    def via_run():
        check_exit(bench.wait_status(bench.spawn(run)))

    def via_api():
        sb = Sandbox.create(client=svc.client, image="python", memory="1G", pids=64)
        try:
            r = sb.exec(["python3", "-c", CELL])
            check_exit(r.exit_code)
        finally:
            sb.kill()

    fns = {"agentjail run --image python": via_run, "API create + exec + delete": via_api}
    rounds = max(3, a.py_rounds // 2)  # seconds each
    log(f"python cell (pandas + plot): {rounds} interleaved rounds")
    samples, failed = interleaved_fns(fns, rounds, 1)
    return {"code": CELL, "summary": {n: bench.summary(v) for n, v in samples.items()},
            "unavailable": failed}


# ---------------------------------------------------------------- level 4

WASM_MOD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "wasm",
                        "mod.c")


def wasm_level(a, svc, log):
    """Level 4 through the service next to level 1, interleaved: exec a tiny
    WASI module (tests/wasm/mod.c `exit 0`, level 4's `true`) and
    `python3 -c pass` (node and Pyodide started for each), and run_code
    `pass` in a warm context (Pyodide kept in the bridge) against level 1's
    exec `true` and run_code `pass` (ipykernel); then the host memory of an
    idle level-4 sandbox, and of one whose default context is warm, against
    level 1's with a warm kernel."""
    if not shutil.which("clang-14"):
        return {"unavailable": "clang-14 is not installed (scripts/setup.sh)"}
    tmp = tempfile.mkdtemp(prefix="ajbench-wasm.")
    mod = os.path.join(tmp, "t.wasm")
    subprocess.run(["clang-14", "--target=wasm32-wasi", "-O2", "-o", mod, WASM_MOD], check=True)
    with open(mod, "rb") as f:
        wasm = f.read()
    shutil.rmtree(tmp, ignore_errors=True)
    boxes = []
    out = {}
    try:
        w = Sandbox.create(client=svc.client, isolation="wasm")
        boxes.append(w)
        w.files.write("/tmp/t.wasm", wasm)
        p1 = Sandbox.create(client=svc.client, **POLICY)
        boxes.append(p1)
        kernel = True
        try:
            p1.run_code("pass")
        except Exception as e:  # noqa: BLE001  (no ipykernel here)
            kernel = False
            out["process_code_unavailable"] = f"{e!r}"[:300]

        def run(sb, cmd):
            return lambda: check_exit(sb.exec(cmd).exit_code)

        def code(sb):
            def f():
                ex = sb.run_code("pass")
                if ex.error:
                    raise RuntimeError(f"run_code: {ex.error}")
            return f

        def direct():
            check_exit(bench.wait_status(bench.spawn(["/bin/true"])))

        fns = {"direct /bin/true": direct,
               "exec `true` (process)": run(p1, ["/bin/true"]),
               "exec a tiny module (wasm)": run(w, ["/tmp/t.wasm", "exit", "0"]),
               "exec `python3 -c pass` (wasm)": run(w, ["python3", "-c", "pass"]),
               "run_code `pass` (wasm, warm)": code(w)}
        if kernel:
            fns["run_code `pass` (process, ipykernel)"] = code(p1)
        rounds = max(3, a.py_rounds)  # python3 -c pass: seconds each
        log(f"level 4: {len(fns)} x {rounds} interleaved rounds")
        samples, failed = interleaved_fns(fns, rounds, 1)
        out["ms"] = {n: bench.summary(v) for n, v in samples.items() if n not in failed}
        out["failed"] = failed
        idle = Sandbox.create(client=svc.client, isolation="wasm")
        boxes.append(idle)
        time.sleep(0.5)
        out["memory"] = {"wasm idle": box_memory(svc, idle),
                         "wasm, default context warm": box_memory(svc, w)}
        w.create_code_context(id="c2")
        w.run_code("pass", context="c2")
        out["memory"]["wasm, two contexts warm"] = box_memory(svc, w)
        if kernel:
            out["memory"]["process, a kernel warm"] = box_memory(svc, p1)
        log("level 4: " + ", ".join(f"{k} {m['total'] / 2**20:.1f} MiB"
                                    for k, m in out["memory"].items() if "total" in m))
    finally:
        for b in boxes:
            try:
                b.kill()
            except Exception:  # noqa: BLE001
                pass
    out["note"] = ("through the Python SDK (HTTP); sandboxes created with {\"isolation\": "
                   "\"wasm\"} and level 1's POLICY; memory as in the levels group (PSS + page "
                   "tables of the holding processes + the cgroup's accounting, an upper bound)")
    return out


def wasm_rows(res):
    fmt_ms, mib = bench.fmt_ms, bench.mib
    if _why(res) or not res:
        return [_row("level 4 through the service (exec, run_code, memory)", "—",
                     "unavailable: " + (_why(res) or "not measured"))]
    ms = res.get("ms", {})
    d = ms.get("direct /bin/true")
    rows = []
    for n, s in ms.items():
        if n == "direct /bin/true":
            continue
        rows.append(_row(f"service: {n}", "—", fmt_ms(s), f"direct /bin/true {fmt_ms(d)}",
                         f"{s['median'] / d['median']:.1f}× direct" if s and d else "n/a"))
    for n, why in res.get("failed", {}).items():
        rows.append(_row(f"service: {n}", "—", f"unavailable: {why}"))
    mem = res.get("memory", {})
    k1 = mem.get("process, a kernel warm", {}).get("total")
    for n, m in mem.items():
        ratio = (f"{m['total'] / k1:.2f}× process with a kernel"
                 if k1 and m.get("total") and n.startswith("wasm,") else "n/a")
        meas = (f"{mib(m['total'])} (PSS {mib(m['pss'])} + page tables {mib(m['pte'])} of "
                f"{m['processes']} host processes, cgroup memory {mib(m['cgroup'])})"
                if "total" in m else "incomplete: " + m.get("incomplete", "?"))
        rows.append(_row(f"service: host memory per sandbox, {n}", "—", meas,
                         f"RSS {mib(m.get('rss'))}", ratio))
    return rows


def run_all(a, aj, log):
    out = {}
    try:
        svc = Service(aj, max(a.service_steps) + a.scale_clients + 2 * a.svc_gv_boxes + 4)
    except (OSError, RuntimeError) as e:
        return {"unavailable": f"agentjail serve: {e}"}
    try:
        for name, fn in (("api_exec", lambda: api_exec(a, svc, log)),
                         ("levels", lambda: levels(a, svc, log)),
                         ("wasm_level", lambda: wasm_level(a, svc, log)),
                         ("api_streaming", lambda: api_streaming(a, svc, log)),
                         ("api_files", lambda: api_files(a, svc, log)),
                         ("service_density", lambda: density_scale(a, svc, log)),
                         ("python_image", lambda: python_image_cell(a, aj, svc, log))):
            try:
                out[name] = fn()
            except Exception as e:  # noqa: BLE001
                log(f"{name}: failed: {e!r}")
                out[name] = {"unavailable": f"failed: {e!r}"[:300]}
    finally:
        svc.stop()
    return out


# ---------------------------------------------------------------- report


def _row(metric, target, measured, peers="", ratio="n/a", met=None):
    return {"metric": metric, "target": target, "measured": measured, "peers": peers,
            "ratio": ratio, "met": met}


def _why(part):
    u = part.get("unavailable") if isinstance(part, dict) else None
    return u if isinstance(u, str) else None


def level_rows(lv_res):
    """Level 1 and level 2 through the service, next to each other."""
    fmt_ms, mib = bench.fmt_ms, bench.mib
    if _why(lv_res) or not lv_res:
        return [_row("API exec and idle memory per isolation level", "—",
                     "unavailable: " + (_why(lv_res) or "not measured"))]
    L = lv_res["levels"]
    ex = lv_res.get("exec_ms", {})
    d = ex.get("direct /bin/true")
    p1 = ex.get("exec (process)")
    rows = []
    for lv in LEVELS:
        s = ex.get(f"exec ({lv})")
        if "unavailable" in L.get(lv, {}):
            meas = "unavailable: " + L[lv]["unavailable"]
        elif s:
            meas = fmt_ms(s)
        else:
            meas = "unavailable: " + lv_res.get("exec_failed", {}).get(f"exec ({lv})", "?")
        ratio = f"{s['median'] / d['median']:.2f}× direct" if s and d else "n/a"
        if s and p1 and lv != "process":
            ratio += f", {s['median'] / p1['median']:.1f}× process"
        of = f" (median, p95 of {s['n']})" if s else ""
        rows.append(_row(f"API exec `true` in a live sandbox, `\"isolation\": \"{lv}\"`{of}",
                         "—", meas,
                         f"direct /bin/true {fmt_ms(d)}", ratio))
    m1 = L.get("process", {}).get("memory", {})
    for lv in LEVELS:
        lvo = L.get(lv, {})
        m = lvo.get("memory", {})
        if "unavailable" in lvo:
            meas = "unavailable: " + lvo["unavailable"]
        elif "incomplete" in m or "total" not in m:
            meas = "incomplete: " + m.get("incomplete", "not measured")
        else:
            meas = (f"{mib(m['total'])} (PSS {mib(m['pss'])} + page tables {mib(m['pte'])} of "
                    f"{m['processes']:.0f} host processes, cgroup memory {mib(m['cgroup'])})")
        peers = (f"RSS {mib(m['rss'])} ({', '.join(sorted(set(m['comm'])))})"
                 if m.get("rss") is not None else "")
        ratio = "n/a"
        if lv != "process" and m.get("total") and m1.get("total"):
            ratio = f"{m['total'] / m1['total']:.1f}× process"
        rows.append(_row(f"service: host memory per idle sandbox, `\"isolation\": \"{lv}\"` "
                         f"({lvo.get('idle_boxes', 0)} alive)", "—", meas, peers, ratio))
    return rows


def report_rows(res):
    fmt_ms, mib = bench.fmt_ms, bench.mib
    rows = []
    if "unavailable" in res and isinstance(res["unavailable"], str):
        return [_row("the service's rows (API exec, streaming, files, density, scale)", "—",
                     "unavailable: " + res["unavailable"])]
    ex = res.get("api_exec", {})
    if _why(ex):
        rows.append(_row("API exec round trip (HTTP, WebSocket)", "≤ 2× direct spawn",
                         "unavailable: " + _why(ex)))
    else:
        sm = ex["summary"]
        d = sm.get("direct /bin/true")
        for name in ("API exec (HTTP, SDK)", "API exec (WebSocket, SDK)",
                     "agentjail sandbox exec (CLI)"):
            s = sm.get(name)
            target = "≤ 2× direct spawn" if "SDK" in name else "—"
            rows.append(_row(
                f"{name}: `/bin/true` in an existing sandbox", target,
                fmt_ms(s) if s else "unavailable: " + ex["unavailable"].get(name, "?"),
                f"direct /bin/true {fmt_ms(d)}",
                f"{s['median'] / d['median']:.2f}× direct" if s and d else "n/a",
                (s["median"] <= 2 * d["median"]) if s and d and "SDK" in name else None))
    rows += level_rows(res.get("levels", {}))
    rows += wasm_rows(res.get("wasm_level", {}))
    st = res.get("api_streaming", {})
    if _why(st):
        rows.append(_row("streaming through the API", "≥ 50% of a plain pipe",
                         "unavailable: " + _why(st)))
    else:
        m = st["mib_per_s"]
        n = st["bytes"] >> 20
        rows.append(_row(
            f"streaming through the API (HTTP NDJSON, `agentjail sandbox exec`), {n} MiB of text",
            "≥ 50% of a plain pipe",
            f"{m['agentjail sandbox exec (HTTP NDJSON)']['median']:.0f} MiB/s",
            f"plain pipe {m['plain pipe (text)']['median']:.0f} MiB/s",
            f"{100 * st['ratio_http']:.0f}% of the pipe", st["ratio_http"] >= 0.5))
        rows.append(_row(
            f"streaming through the API (WebSocket, Python SDK), {n} MiB of /dev/zero",
            "≥ 50% of a plain pipe",
            f"{m['WebSocket (SDK)']['median']:.0f} MiB/s",
            f"pipe into Python {m['plain pipe into Python']['median']:.0f} MiB/s",
            f"{100 * st['ratio_ws']:.0f}% of the pipe", st["ratio_ws"] >= 0.5))
    fi = res.get("api_files", {})
    if _why(fi):
        rows.append(_row("file upload/download (API) vs cp", "—", "unavailable: " + _why(fi)))
    else:
        m = fi["mib_per_s"]
        cp = m["cp"]["median"]
        for k in ("upload (sandbox cp)", "download (sandbox cp)"):
            rows.append(_row(f"file {k}, {fi['bytes'] >> 20} MiB", "—",
                             f"{m[k]['median']:.0f} MiB/s", f"cp {cp:.0f} MiB/s",
                             f"{m[k]['median'] / cp:.2f}× cp"))
    de = res.get("service_density", {})
    if _why(de):
        rows.append(_row("service: memory per idle sandbox, scale", "≤ 1 MiB",
                         "unavailable: " + _why(de)))
    else:
        last = de["curve"][-1]
        per = last["per_sandbox_bytes"]
        rows.append(_row(
            f"service: host memory per idle sandbox ({last['sandboxes']} alive)", "≤ 1 MiB",
            f"{mib(per)} (keeper PSS {mib(last['keeper_pss_median'])} + page tables "
            f"{mib(last['keeper_pte_median'])}, init PSS {mib(last['init_pss_median'])} + "
            f"{mib(last['init_pte_median'])}, cgroup {mib(last['cgroup_memory_median'])}, service "
            f"growth {mib(last['service_growth_bytes'] / last['sandboxes'])})",
            f"keeper RSS {mib(last['keeper_rss_median'])}",
            f"{per / (1 << 20):.2f}× target", per <= (1 << 20)))
        rows.append(_row(
            "service: idle sandboxes this machine holds (extrapolated)", "—",
            str(de["capacity"]),
            ", ".join(f"{k}: {v}" for k, v in de["capacity_limits"].items())
            + f" (measured: {last['sandboxes']} alive)"))
        first = de["curve"][0]
        for p in de["curve"]:
            c1, cc = p["create_exec_ms"], p["create_exec_concurrent_ms"]
            rows.append(_row(
                f"service: create + exec `true` + delete with {p['sandboxes']} alive", "—",
                f"{fmt_ms(c1)}; {len(de['curve']) and de_clients(de)} clients at once "
                f"{fmt_ms(cc)} ({p['concurrent_per_s']}/s)",
                "", f"{c1['median'] / first['create_exec_ms']['median']:.2f}× with "
                f"{first['sandboxes']} alive" if c1 and first["create_exec_ms"] else "n/a"))
    py = res.get("python_image", {})
    if _why(py) or "all" in py.get("unavailable", {}):
        rows.append(_row("python cell (`import pandas` + a small plot) in a fresh sandbox", "—",
                         "unavailable: " + (_why(py) or py["unavailable"]["all"])))
    else:
        for n, s in py["summary"].items():
            rows.append(_row(f"python cell (`import pandas` + a small plot): {n}", "—",
                             fmt_ms(s) if s else "unavailable: " + py["unavailable"].get(n, "?")))
    return rows


def de_clients(de):
    return de.get("clients", "?")


if __name__ == "__main__":
    # one group on its own: bench_service.py AGENTJAIL GROUP [ROUNDS]
    # (e.g. wasm_level; the whole run is bench/run.sh)
    import types
    aj, group = os.path.abspath(sys.argv[1]), sys.argv[2]
    a = types.SimpleNamespace(rounds=20, warmup=2, py_rounds=int(sys.argv[3]) if len(sys.argv) > 3
                              else 10, svc_gv_boxes=3)
    svc = Service(aj, 16)
    try:
        r = globals()[group](a, svc, lambda m: print(f"bench: {m}", file=sys.stderr, flush=True))
    finally:
        svc.stop()
    json.dump(r, sys.stdout, indent=1)
    print()
    for row in wasm_rows(r) if group == "wasm_level" else []:
        print(f"| {row['metric']} | {row['measured']} | {row['peers']} | {row['ratio']} |")
    print(f"load {os.getloadavg()}")
