#!/usr/bin/env python3
"""agentjail benchmarks against its peers, in one run (python3 stdlib only).

Every latency is measured in interleaved rounds (each round runs every
command once, in a random order), so the noise of a shared machine falls on
all of them alike; figures are reported as ratios to peers of the same run.
Writes OUT/<timestamp>.json (raw samples) and OUT/report.md; plots.gp turns
the .dat files written beside them into PNGs.
"""
import argparse
import datetime
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

DEVNULL = os.open(os.devnull, os.O_RDWR)


# ---------------------------------------------------------------- helpers


def spawn(argv, stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL):
    fa = [
        (os.POSIX_SPAWN_DUP2, stdin, 0),
        (os.POSIX_SPAWN_DUP2, stdout, 1),
        (os.POSIX_SPAWN_DUP2, stderr, 2),
    ]
    return os.posix_spawnp(argv[0], argv, os.environ, file_actions=fa)


def wait_status(pid):
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st)


def time_once(argv):
    """Wall time in ms of one run, or raise on a non-zero exit."""
    t0 = time.perf_counter_ns()
    pid = spawn(argv)
    rc = wait_status(pid)
    dt = (time.perf_counter_ns() - t0) / 1e6
    if rc != 0:
        raise RuntimeError(f"exit {rc}")
    return dt


def probe(argv, timeout=60):
    """None when argv runs and exits 0, else the reason it cannot."""
    if not shutil.which(argv[0]):
        return f"{argv[0]} not installed"
    try:
        p = subprocess.run(argv, stdin=DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout}s"
    except OSError as e:
        return str(e)
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).decode(errors="replace").strip().splitlines()
        last = lines[-1] if lines else ""
        return f"exit {p.returncode}: {last[:200]}"
    return None


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summary(xs):
    if not xs:
        return None
    return {
        "n": len(xs),
        "median": round(statistics.median(xs), 3),
        "p95": round(pct(xs, 0.95), 3),
        "mean": round(statistics.fmean(xs), 3),
        "min": round(min(xs), 3),
        "max": round(max(xs), 3),
    }


def interleaved(cmds, rounds, warmup, log, timer=None, errors=(RuntimeError, OSError)):
    """cmds: {name: argv} (or, with timer, {name: what timer(what) times in
    ms}). Returns {name: [ms...]} and {name: reason} for the ones that
    stopped working during the run."""
    timer = timer or time_once
    samples = {n: [] for n in cmds}
    failed = {}
    names = list(cmds)
    for r in range(warmup + rounds):
        random.shuffle(names)
        for n in names:
            if n in failed:
                continue
            try:
                dt = timer(cmds[n])
            except errors as e:
                failed[n] = f"failed during the run: {e}"[:300]
                continue
            if r >= warmup:
                samples[n].append(dt)
        if log and (r + 1) % max(1, (warmup + rounds) // 5) == 0:
            log(f"  round {r + 1}/{warmup + rounds}")
    return samples, failed


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            out[k] = int(v.split()[0]) * 1024
    return out


def proc_children():
    """{ppid: [pid...]} for every process."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def mem_of(pid):
    """RSS and PSS in bytes of one process (smaps_rollup)."""
    out = {"rss": 0, "pss": 0}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    out["rss"] = int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    out["pss"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return out


def page_tables(pid):
    """VmPTE of pid in bytes (0 when unreadable)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmPTE:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cgroup_memory(pid):
    """Kernel memory accounting of the sandbox's own cgroup holding pid (v1
    or v2), bytes; None when pid is not in one (unprivileged: no cgroup)."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, ctrl, path = line.split(":", 2)
        if "memory" in ctrl.split(",") and os.path.basename(path).startswith("agentjail-"):
            base = f"/sys/fs/cgroup/memory{path}"
            files = ["memory.usage_in_bytes"]
            break
    else:
        v2 = [ln for ln in lines if ln.startswith("0::")]
        if not v2 or not os.path.basename(v2[0]).startswith("agentjail-"):
            return None
        base = "/sys/fs/cgroup" + v2[0][3:]
        if not os.path.exists(base + "/memory.current"):
            base = "/sys/fs/cgroup/unified" + v2[0][3:]
        files = ["memory.current"]
    for fn in files:
        try:
            with open(f"{base}/{fn}") as f:
                return int(f.read())
        except OSError:
            continue
    return None


# ---------------------------------------------------------------- metrics


def cold_start(a, aj, log):
    peers = {
        "direct /bin/true": ["/bin/true"],
        "unshare -Urfpmin": ["unshare", "-Urfpmin", "--mount-proc", "/bin/true"],
        "bwrap --unshare-all": [
            "bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "/bin/true",
        ],
        "firejail --net=none": ["firejail", "--quiet", "--noprofile", "--net=none", "/bin/true"],
        "runsc do": ["runsc", "--network=none", "do", "/bin/true"],
        "agentjail run": [aj, "run", "--memory", "256M", "--pids", "64", "--", "/bin/true"],
        "agentjail run --net open": [
            aj, "run", "--memory", "256M", "--pids", "64", "--net", "open", "--", "/bin/true",
        ],
        "agentjail run --allow": [
            aj, "run", "--memory", "256M", "--pids", "64", "--allow", "example.com", "--",
            "/bin/true",
        ],
    }
    unavailable = {}
    if os.geteuid() != 0:
        unavailable["agentjail run --net open"] = "needs root"
        unavailable["agentjail run --allow"] = "needs root"
    cmds = {}
    for name, argv in peers.items():
        if name in unavailable:
            continue
        why = probe(argv)
        if why:
            unavailable[name] = why
        else:
            cmds[name] = argv
    log(f"cold start: {len(cmds)} commands x {a.rounds} interleaved rounds")
    samples, failed = interleaved(cmds, a.rounds, a.warmup, log)
    unavailable.update(failed)
    return {
        "commands": {n: " ".join(v) for n, v in peers.items()},
        "samples_ms": {n: [round(x, 3) for x in v] for n, v in samples.items() if n not in failed},
        "summary": {n: summary(v) for n, v in samples.items() if n not in failed},
        "unavailable": unavailable,
    }


# ---------------------------------------------------------------- level 2

# runsc's flags as agentjail passes them (src/backend/gvisor/runsc.c, start())
RUNSC_FLAGS = ["--platform=ptrace", "--network=none", "--ignore-cgroups", "--overlay2=none",
               "--oci-seccomp"]


def runsc_bundle(d):
    """A hand-written OCI bundle equivalent to agentjail's level-2 default
    (bundle.c): the host's /usr and /etc read-only over an empty read-only
    root with the merged-/usr links, /proc, tmpfs /tmp, /dev/shm and home,
    uid 0 mapped to an unused host range, the pid, mount, ipc, uts, user and
    network namespaces, no capabilities, no new privileges, the same
    setid-file seccomp rules; `/bin/true`."""
    root = os.path.join(d, "rootfs")
    for sub in ("proc", "dev", "sys", "tmp", "usr", "etc", "home/agent", "workspace"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    for link in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):
        if os.path.islink("/" + link):
            os.symlink(os.readlink("/" + link), os.path.join(root, link))
        elif os.path.isdir("/" + link):  # not merged-/usr: bind it as /usr is
            os.makedirs(os.path.join(root, link), exist_ok=True)

    def mnt(dst, typ, src, opts):
        return {"destination": dst, "type": typ, "source": src, "options": opts}

    size = f"size={512 << 20}"
    mounts = [mnt("/proc", "proc", "proc", ["nosuid", "noexec", "nodev"])]
    for top in ("usr", "etc", "bin", "lib", "lib32", "lib64", "libx32", "sbin"):
        if os.path.isdir("/" + top) and not os.path.islink("/" + top):
            mounts.append(mnt("/" + top, "bind", "/" + top, ["rbind", "ro", "nosuid", "nodev"]))
    mounts += [mnt("/tmp", "tmpfs", "tmpfs", ["nosuid", "nodev", "mode=1777", size]),
               mnt("/dev/shm", "tmpfs", "tmpfs", ["nosuid", "nodev", "mode=1777", size]),
               mnt("/home/agent", "tmpfs", "tmpfs", ["nosuid", "nodev", "mode=0755", "uid=0",
                                                     "gid=0", size])]
    ids = [{"containerID": 0, "hostID": 3 << 30, "size": 65536}]

    def setid(name, arg):
        return {"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
                "args": [{"index": arg, "value": 0o6000, "valueTwo": 0o6000,
                          "op": "SCMP_CMP_MASKED_EQ"}]}

    caps = {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")}
    cfg = {
        "ociVersion": "1.0.2",
        "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "args": ["/bin/true"],
                    "env": ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/agent"],
                    "cwd": "/home/agent", "noNewPrivileges": True, "capabilities": caps,
                    "rlimits": [{"type": "RLIMIT_CORE", "hard": 0, "soft": 0}]},
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "sandbox",
        "mounts": mounts,
        "linux": {
            "namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts", "user", "network")],
            "uidMappings": ids, "gidMappings": ids,
            "seccomp": {"defaultAction": "SCMP_ACT_ALLOW",
                        "syscalls": [setid(n, i) for n, i in (
                            ("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("creat", 1),
                            ("mknod", 1), ("mknodat", 2))]},
        },
    }
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)


def gvisor_cold_start(a, aj, log):
    """Level 2's cold start against runsc itself, in interleaved rounds:
    `agentjail run --isolation gvisor -- /bin/true` (defaults), `runsc run`
    of a hand-written bundle with agentjail's runsc flags, `runsc do`, and
    level 1 and bwrap for scale."""
    if not shutil.which("runsc"):
        return {"unavailable": "runsc not installed"}
    if os.geteuid() != 0:
        return {"unavailable": "needs root (runsc run, and level 2 is rootful only: rootless "
                               "runsc is not wired in)"}
    tmp = tempfile.mkdtemp(prefix="ajbench-runsc.")
    os.chmod(tmp, 0o755)  # the sandbox (a mapped uid) reads the bundle
    try:
        bundle, state = os.path.join(tmp, "bundle"), os.path.join(tmp, "state")
        os.mkdir(state, 0o700)
        runsc_bundle(bundle)
        seq = [0]

        def runsc_run():
            seq[0] += 1
            return ["runsc", f"--root={state}", *RUNSC_FLAGS, "run", "--bundle", bundle,
                    f"ajbench-{os.getpid()}-{seq[0]}"]

        peers = {
            "agentjail run --isolation gvisor": [aj, "run", "--isolation", "gvisor", "--",
                                                 "/bin/true"],
            "runsc run (hand-written bundle)": runsc_run,
            "runsc do": ["runsc", "--network=none", "do", "/bin/true"],
            "agentjail run (level 1)": [aj, "run", "--", "/bin/true"],
            "bwrap --unshare-all": [
                "bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "/bin/true",
            ],
        }
        commands = {n: " ".join(v() if callable(v) else v).replace(f"-{os.getpid()}-1", "-N")
                    for n, v in peers.items()}
        unavailable, cmds = {}, {}
        for name, argv in peers.items():
            why = probe(argv() if callable(argv) else argv)
            if why:
                unavailable[name] = why
            else:
                cmds[name] = argv
        rounds = a.gv_rounds
        log(f"level 2 cold start: {len(cmds)} commands x {rounds} interleaved rounds")
        samples, failed = interleaved(
            cmds, rounds, a.warmup, log,
            timer=lambda w: time_once(w() if callable(w) else w))
        unavailable.update(failed)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "commands": commands,
        "runsc_flags": RUNSC_FLAGS,
        "samples_ms": {n: [round(x, 3) for x in v] for n, v in samples.items() if n not in failed},
        "summary": {n: summary(v) for n, v in samples.items() if n not in failed},
        "unavailable": unavailable,
    }


def gvisor_rows(g):
    metric = "cold start `run --isolation gvisor -- /bin/true` (level 2, defaults)"
    target = "≤ 1.1× runsc run of a hand-written bundle"
    if not g or isinstance(g.get("unavailable"), str):
        why = (g or {}).get("unavailable", "not measured")
        return [{"metric": metric, "target": target, "measured": f"unavailable: {why}",
                 "peers": "", "ratio": "n/a", "met": None}]
    sm, un = g["summary"], g["unavailable"]
    gv, rr = sm.get("agentjail run --isolation gvisor"), sm.get("runsc run (hand-written bundle)")
    peers = ", ".join(f"{n} {fmt_ms(s)}" for n, s in sm.items()
                      if n != "agentjail run --isolation gvisor")
    peers += "".join(f"; {n}: unavailable: {w}" for n, w in un.items()
                     if n != "agentjail run --isolation gvisor")
    l1 = sm.get("agentjail run (level 1)")
    return [{
        "metric": metric,
        "target": target,
        "measured": fmt_ms(gv) if gv else "unavailable: " + un.get(
            "agentjail run --isolation gvisor", "?"),
        "peers": peers,
        "ratio": f"{gv['median'] / rr['median']:.2f}× runsc run" if gv and rr else "n/a",
        "met": bool(gv["median"] <= 1.1 * rr["median"]) if gv and rr else None,
    }, {
        "metric": "level 2 against level 1 (cold start, defaults)",
        "target": "—",
        "measured": fmt_ms(gv) if gv else "n/a",
        "peers": f"agentjail run (level 1) {fmt_ms(l1)}",
        "ratio": f"{gv['median'] / l1['median']:.1f}× level 1" if gv and l1 else "n/a",
        "met": None,
    }]


def pipe_throughput(producer, nbytes):
    """Seconds to move producer's stdout through a pipe into cat > /dev/null."""
    r, w = os.pipe()
    t0 = time.perf_counter_ns()
    p1 = spawn(producer, stdout=w)
    os.close(w)
    p2 = spawn(["cat"], stdin=r)
    os.close(r)
    rc1, rc2 = wait_status(p1), wait_status(p2)
    dt = (time.perf_counter_ns() - t0) / 1e9
    if rc1 or rc2:
        raise RuntimeError(f"exit {rc1}/{rc2}")
    return dt


def streaming(a, aj, log):
    n = a.stream_bytes
    head = ["head", "-c", str(n), "/dev/zero"]
    cmds = {
        "plain pipe": head,
        "agentjail run": [aj, "run", "-T", "--"] + head,
        # redaction on the path: read, scan, write instead of splice
        "agentjail run --secret": [aj, "run", "-T", "--secret", "BENCH_KEY=sk-bench-3f9a2c71",
                                   "--"] + head,
    }
    log(f"streaming: {n >> 20} MiB x {a.stream_reps} interleaved")
    secs = {k: [] for k in cmds}
    for _ in range(a.stream_reps):
        for k in random.sample(list(cmds), len(cmds)):
            secs[k].append(pipe_throughput(cmds[k], n))
    mibs = {k: [n / (1 << 20) / s for s in v] for k, v in secs.items()}
    return {
        "bytes": n,
        "seconds": secs,
        "mib_per_s": {k: summary(v) for k, v in mibs.items()},
        "ratio": round(statistics.median(mibs["agentjail run"]) / statistics.median(mibs["plain pipe"]), 3),
        "ratio_secret": round(statistics.median(mibs["agentjail run --secret"])
                              / statistics.median(mibs["plain pipe"]), 3),
        "note": "wall time includes agentjail's start and teardown",
    }


def wait_started(pids, deadline):
    """{agentjail pid: (init pid, command pid)} once each has its command."""
    found = {}
    while time.time() < deadline and len(found) < len(pids):
        kids = proc_children()
        for p in pids:
            if p in found:
                continue
            for init in kids.get(p, []):
                cmd = kids.get(init, [])
                if cmd:
                    found[p] = (init, cmd[0])
        if len(found) < len(pids):
            time.sleep(0.05)
    return found


def density(a, aj, log):
    """Idle sandboxes (sleep) held at once; memory at each step of the curve."""
    steps = a.density_steps
    log(f"density: up to {steps[-1]} idle sandboxes, steps {steps}")
    argv = [aj, "run", "-T", "--memory", "256M", "--pids", "64", "--", "sleep", "3600"]
    base = meminfo()
    procs = []
    curve = []
    per = {}
    try:
        for target in steps:
            while len(procs) < target:
                procs.append(spawn(argv))
            found = wait_started(procs, time.time() + 60)
            if len(found) < len(procs):
                raise RuntimeError(f"only {len(found)} of {len(procs)} sandboxes started")
            time.sleep(0.3)
            mi = meminfo()
            used = base["MemFree"] - mi["MemFree"]
            # a fresh cold start with `target` sandboxes alive (scale curve for run)
            lat = []
            for _ in range(a.scale_samples):
                lat.append(time_once([aj, "run", "--", "/bin/true"]))
            aj_m = [mem_of(p) for p in procs]
            init_m = [mem_of(found[p][0]) for p in procs]
            cmd_m = [mem_of(found[p][1]) for p in procs]
            cg = [cgroup_memory(found[p][0]) for p in procs]
            cg = [x for x in cg if x is not None]
            pte = [page_tables(p) + page_tables(found[p][0]) for p in procs]
            per_total = [
                a_["pss"] + i_["pss"] + t_ + (c_ or 0)
                for a_, i_, t_, c_ in zip(aj_m, init_m, pte,
                                          [cgroup_memory(found[p][0]) for p in procs])
            ]
            point = {
                "accounted_bytes": sum(per_total),
                "sandboxes": target,
                "host_used_delta_bytes": used,
                "slab_delta_bytes": mi["Slab"] - base["Slab"],
                "agentjail_rss_median": statistics.median(m["rss"] for m in aj_m),
                "agentjail_pss_median": statistics.median(m["pss"] for m in aj_m),
                "init_rss_median": statistics.median(m["rss"] for m in init_m),
                "init_pss_median": statistics.median(m["pss"] for m in init_m),
                "command_pss_median": statistics.median(m["pss"] for m in cmd_m),
                "page_tables_median": statistics.median(pte),
                "cgroup_memory_median": statistics.median(cg) if cg else None,
                "cold_start_ms": summary(lat),
            }
            curve.append(point)
            log(f"  {target} alive: host used +{used >> 20} MiB, cold start median "
                f"{point['cold_start_ms']['median']:.1f} ms")
        last = curve[-1]
        n = last["sandboxes"]
        per = {
            "agentjail_pss": last["agentjail_pss_median"],
            "agentjail_rss": last["agentjail_rss_median"],
            "init_pss": last["init_pss_median"],
            "init_rss": last["init_rss_median"],
            "cgroup_memory": last["cgroup_memory_median"],
            "page_tables": last["page_tables_median"],
            "host_used_delta_per_sandbox": last["host_used_delta_bytes"] / n,
        }
        # agentjail + init (PSS: shared library pages split among users) and
        # the kernel's accounting of the sandbox's cgroup (init + command +
        # its tmpfs + kernel objects charged to it)
        # and both processes' page tables (kernel memory that PSS does not
        # show, charged to agentjail's cgroup, not the sandbox's)
        per["total"] = (per["agentjail_pss"] + per["init_pss"] + per["page_tables"]
                        + (per["cgroup_memory"] or 0))
    finally:
        for p in procs:
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            wait_status(p)
    avail = base["MemAvailable"]
    limits = {
        "memory": int(avail / max(per["total"], per["host_used_delta_per_sandbox"], 1)),
        "uid slots": 16384,
        "pid_max / 3 processes per sandbox": int(open("/proc/sys/kernel/pid_max").read()) // 3,
        "max_user_namespaces": int(open("/proc/sys/user/max_user_namespaces").read()),
    }
    return {
        "argv": " ".join(argv),
        "curve": curve,
        "per_sandbox_bytes": per,
        "mem_available_before": avail,
        "note": "total = agentjail PSS + init PSS + their page tables + the cgroup's memory "
        "accounting (an upper "
        "bound: init's own pages are charged to the cgroup too); MemFree is machine-wide "
        "and moves with other work on the host",
        "capacity_limits": limits,
        "capacity": min(limits.values()),
    }


def python_cell(a, aj, log):
    code = (
        "import json,csv,io,statistics\n"
        "rows=[{'x':i,'y':i*i%97} for i in range(2000)]\n"
        "b=io.StringIO();w=csv.DictWriter(b,['x','y']);w.writeheader();w.writerows(rows)\n"
        "d=list(csv.DictReader(io.StringIO(b.getvalue())))\n"
        "print(json.dumps({'mean':statistics.fmean(int(r['y']) for r in d)}))\n"
    )
    cmds = {
        "direct": ["python3", "-c", code],
        "agentjail run": [aj, "run", "-T", "--", "python3", "-c", code],
    }
    log(f"python cell: {a.py_rounds} interleaved rounds")
    samples, failed = interleaved(cmds, a.py_rounds, 2, None)
    out = {
        "code": code,
        "summary": {n: summary(v) for n, v in samples.items()},
        "samples_ms": samples,
        "unavailable": dict(failed),
    }
    for mod, pkg in (("pandas", "python3-pandas"), ("matplotlib", "python3-matplotlib")):
        if subprocess.run(["python3", "-c", f"import {mod}"], capture_output=True).returncode:
            out["unavailable"][f"import {mod}"] = f"{mod} not installed ({pkg})"
    return out


# ---------------------------------------------------------------- report


def fmt_ms(s):
    return f"{s['median']:.1f} ms (p95 {s['p95']:.1f})" if s else "n/a"


def fmt_load(la):
    return " / ".join(f"{x:.2f}" for x in la) if la else "n/a"


def mib(x):
    return f"{x / (1 << 20):.2f} MiB" if x is not None else "n/a"


def warm_pools(a, aj, log):
    """Warm pools and interpreters (bench/warm.py): needs root (serve --pool)."""
    if os.geteuid() != 0:
        return {"unavailable": "needs root (agentjail serve --pool)"}
    import warm

    try:
        return warm.measure(aj, a.warm_rounds, log=log, pairs=a.warm_pairs)
    except Exception as e:  # a row saying why, not a lost report
        return {"unavailable": f"{type(e).__name__}: {e}"}


def warm_rows(w):
    if not w or "unavailable" in w:
        why = (w or {}).get("unavailable", "not measured")
        return [{"metric": m, "target": t, "measured": f"unavailable: {why}", "peers": "",
                 "ratio": "n/a", "met": None}
                for m, t in (("warm create-from-pool + exec `true` (API)", "≤ 1.5× direct spawn"),
                             ("python cell with warm interpreters", "—"))]
    s = {k: summary(v) for k, v in w["samples_ms"].items()}
    d = s["direct"]
    return [
        {"metric": "warm create-from-pool + exec `true` (API)", "target": "≤ 1.5× direct spawn",
         "measured": fmt_ms(s["pool"]),
         "peers": f"direct /bin/true {fmt_ms(d)}, create without a pool + exec {fmt_ms(s['fresh'])}",
         "ratio": f"{s['pool']['median'] / d['median']:.2f}× direct",
         "met": s["pool"]["median"] <= 1.5 * d["median"]},
        {"metric": f"python cell with warm interpreters (first `{w['warmup']}` of a sandbox)",
         "target": "—", "measured": f"pooled, zygote ready: {fmt_ms(s['warm-py'])}",
         "peers": f"fresh sandbox of the same image: {fmt_ms(s['cold-py'])}",
         "ratio": f"{s['warm-py']['median'] / s['cold-py']['median']:.2f}× cold", "met": None},
    ]


def report_rows(res):
    rows = []
    cs = res["cold_start"]
    sm = cs["summary"]
    aj = sm.get("agentjail run")
    bw = sm.get("bwrap --unshare-all")
    peers = ", ".join(f"{n} {fmt_ms(s)}" for n, s in sm.items() if not n.startswith("agentjail"))
    peers += "".join(f"; {n}: unavailable: {w}" for n, w in cs["unavailable"].items()
                     if not n.startswith("agentjail"))
    rows.append({
        "metric": "cold start `run -- /bin/true` (full isolation, --memory 256M --pids 64)",
        "target": "≤ bwrap --unshare-all",
        "measured": fmt_ms(aj),
        "peers": peers,
        "ratio": f"{aj['median'] / bw['median']:.2f}× bwrap" if aj and bw else "n/a",
        "met": bool(aj and bw and aj["median"] <= bw["median"]),
    })
    rows += gvisor_rows(res.get("gvisor_cold_start"))
    for name, what in (("agentjail run --net open", "`--net open` (veth, NAT, nftables)"),
                       ("agentjail run --allow",
                        "`--allow example.com` (resolver, proxy, allow-list)")):
        s = sm.get(name)
        rows.append({
            "metric": f"cold start with {what}",
            "target": "—",
            "measured": fmt_ms(s) if s else "unavailable: " + cs["unavailable"].get(name, "?"),
            "peers": f"firejail --net=none {fmt_ms(sm.get('firejail --net=none'))}",
            "ratio": f"{s['median'] / aj['median']:.2f}× run" if s and aj else "n/a",
            "met": None,
        })
    st = res["streaming"]
    rows.append({
        "metric": f"stdout streaming, `head -c {st['bytes'] >> 20}M /dev/zero` through `run`",
        "target": "≥ 50% of a plain pipe",
        "measured": f"{st['mib_per_s']['agentjail run']['median']:.0f} MiB/s",
        "peers": f"plain pipe {st['mib_per_s']['plain pipe']['median']:.0f} MiB/s",
        "ratio": f"{100 * st['ratio']:.0f}% of the pipe",
        "met": st["ratio"] >= 0.5,
    })
    rows.append({
        "metric": "the same with `--secret` (every byte scanned by the redactor)",
        "target": "—",
        "measured": f"{st['mib_per_s']['agentjail run --secret']['median']:.0f} MiB/s",
        "peers": f"plain pipe {st['mib_per_s']['plain pipe']['median']:.0f} MiB/s",
        "ratio": f"{100 * st['ratio_secret']:.0f}% of the pipe",
        "met": None,
    })
    de = res["density"]
    per = de["per_sandbox_bytes"]
    rows.append({
        "metric": f"host memory per idle sandbox ({de['curve'][-1]['sandboxes']} alive)",
        "target": "≤ 1 MiB",
        "measured": f"{mib(per['total'])} (agentjail PSS {mib(per['agentjail_pss'])} + init PSS "
                    f"{mib(per['init_pss'])} + page tables {mib(per['page_tables'])} + cgroup "
                    f"{mib(per['cgroup_memory'])})",
        "peers": f"RSS: agentjail {mib(per['agentjail_rss'])}, init {mib(per['init_rss'])}; "
                 f"MemFree drop per sandbox {mib(per['host_used_delta_per_sandbox'])}",
        "ratio": f"{per['total'] / (1 << 20):.2f}× target",
        "met": per["total"] <= (1 << 20),
    })
    if per["cgroup_memory"] is None or not per["init_rss"]:
        # unprivileged: init belongs to the sandbox user (unreadable), no cgroup
        rows[-1]["measured"] += " — incomplete: init's memory or the cgroup not readable"
        rows[-1]["met"] = None
    rows.append({
        "metric": "idle sandboxes this machine holds (extrapolated)",
        "target": "—",
        "measured": str(de["capacity"]),
        "peers": ", ".join(f"{k}: {v}" for k, v in de["capacity_limits"].items()),
        "ratio": "n/a",
        "met": None,
    })
    py = res["python"]
    d, j = py["summary"].get("direct"), py["summary"].get("agentjail run")
    rows.append({
        "metric": "python cell (json, csv, statistics) in a fresh sandbox",
        "target": "—",
        "measured": fmt_ms(j),
        "peers": f"direct {fmt_ms(d)}",
        "ratio": f"{j['median'] / d['median']:.2f}× direct" if j and d else "n/a",
        "met": None,
    })
    for k, why in py["unavailable"].items():
        rows.append({"metric": f"python cell with `{k}`", "target": "—",
                     "measured": f"unavailable: {why}", "peers": "", "ratio": "n/a", "met": None})
    import bench_service  # here: it imports this file's helpers

    rows += bench_service.report_rows(res.get("service", {}))
    rows += warm_rows(res.get("warm"))
    return rows


def write_report(res, out, stamp):
    rows = res["rows"]
    m = res["meta"]
    L = [
        "# agentjail benchmark report",
        "",
        f"Run {stamp} ({'quick' if m['quick'] else 'full'} mode) on {m['host']}: "
        f"{m['cpus']} CPUs, {m['mem_total'] >> 30} GiB, kernel {m['kernel']}, "
        f"agentjail {m['agentjail_version']} ({m['commit']}). Raw samples: `{stamp}.json`.",
        "Medians (p95) over interleaved rounds: every command of a metric runs once per "
        "round in a random order, so a busy machine slows all of them alike.",
        f"Load average (1, 5, 15 min) at the start {fmt_load(m['loadavg_start'])}, at the end "
        f"{fmt_load(m.get('loadavg_end'))}: the machine is shared with other work; compare the "
        "ratios, not the milliseconds.",
        "",
        "| metric | target | measured | peers (same run) | ratio | met |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        met = {True: "yes", False: "**no**", None: ""}[r["met"]]
        L.append(f"| {r['metric']} | {r['target']} | {r['measured']} | {r['peers']} | "
                 f"{r['ratio']} | {met} |")
    L += ["", "## Cold start, all commands", "", "| command | median | p95 | min | n |",
          "| --- | --- | --- | --- | --- |"]
    cs = res["cold_start"]
    for n, s in sorted(cs["summary"].items(), key=lambda kv: kv[1]["median"]):
        L.append(f"| `{cs['commands'][n]}` | {s['median']:.2f} ms | {s['p95']:.2f} ms | "
                 f"{s['min']:.2f} ms | {s['n']} |")
    for n, w in cs["unavailable"].items():
        L.append(f"| {n} | unavailable: {w} | | | |")
    gv = res.get("gvisor_cold_start") or {}
    if gv.get("summary") or isinstance(gv.get("unavailable"), dict):
        L += ["", "## Level 2 cold start, all commands (runsc flags: `"
              + " ".join(gv["runsc_flags"]) + "`)", "",
              "| command | median | p95 | min | n |", "| --- | --- | --- | --- | --- |"]
        for n, s in sorted(gv["summary"].items(), key=lambda kv: kv[1]["median"]):
            L.append(f"| `{gv['commands'][n]}` | {s['median']:.2f} ms | {s['p95']:.2f} ms | "
                     f"{s['min']:.2f} ms | {s['n']} |")
        for n, w in gv["unavailable"].items():
            L.append(f"| {n} | unavailable: {w} | | | |")
    L += ["", "## Density curve (`" + res["density"]["argv"] + "`)", "",
          "| sandboxes alive | MemFree drop | per sandbox | slab drop | cgroup memory (median) "
          "| agentjail RSS / PSS | init RSS / PSS | cold start then |",
          "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for p in res["density"]["curve"]:
        n = p["sandboxes"]
        L.append(f"| {n} | {mib(p['host_used_delta_bytes'])} | {mib(p['host_used_delta_bytes'] / n)} "
                 f"| {mib(p['slab_delta_bytes'])} | {mib(p['cgroup_memory_median'])} | "
                 f"{mib(p['agentjail_rss_median'])} / {mib(p['agentjail_pss_median'])} | "
                 f"{mib(p['init_rss_median'])} / {mib(p['init_pss_median'])} | "
                 f"{fmt_ms(p['cold_start_ms'])} |")
    L += [
        "",
        "Per sandbox = agentjail PSS + init PSS + the kernel's accounting of the sandbox's "
        "cgroup (init's own pages are charged there too, so this is an upper bound). MemFree "
        "is machine-wide and moves with any other work on the host: a rough cross-check only.",
        "",
        "## Plots",
        "",
    ]
    for png in res.get("plots", []):
        L.append(f"![{png}]({png})")
    L.append("")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L))


def write_plot_data(res, out):
    """Data files for plots.gp: one CDF per cold-start command, density curve."""
    cs = res["cold_start"]
    names = sorted(cs["samples_ms"], key=lambda n: cs["summary"][n]["median"])
    with open(os.path.join(out, "latency.dat"), "w") as f:
        for n in names:
            xs = sorted(cs["samples_ms"][n])
            f.write(f'"{n}"\n')
            for i, x in enumerate(xs):
                f.write(f"{x} {(i + 1) / len(xs)}\n")
            f.write("\n\n")
    with open(os.path.join(out, "density.dat"), "w") as f:
        f.write("# alive memfree_drop_MiB per_sandbox_MiB cgroup_MiB cold_start_ms accounted_MiB\n")
        for p in res["density"]["curve"]:
            n = p["sandboxes"]
            f.write(f"{n} {p['host_used_delta_bytes'] / 2**20:.3f} "
                    f"{p['host_used_delta_bytes'] / n / 2**20:.3f} "
                    f"{(p['cgroup_memory_median'] or 0) / 2**20:.3f} "
                    f"{p['cold_start_ms']['median']:.3f} {p['accounted_bytes'] / 2**20:.3f}\n")
    de = res.get("service", {}).get("service_density", {})
    if de.get("curve"):
        with open(os.path.join(out, "scale.dat"), "w") as f:
            f.write("# alive create_exec_ms concurrent_ms per_sandbox_MiB\n")
            for p in de["curve"]:
                c1, cc = p["create_exec_ms"], p["create_exec_concurrent_ms"]
                f.write(f"{p['sandboxes']} {c1['median'] if c1 else 0:.3f} "
                        f"{cc['median'] if cc else 0:.3f} {p['per_sandbox_bytes'] / 2**20:.3f}\n")
    return len(names)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--agentjail", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--stamp", default=datetime.datetime.now().strftime("%Y%m%dT%H%M%S"))
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.warmup, a.stream_bytes, a.stream_reps = 8, 1, 64 << 20, 2
        a.density_steps, a.scale_samples, a.py_rounds = [1, 5, 10], 3, 3
        a.api_stream_bytes, a.files_bytes, a.files_reps = 16 << 20, 32 << 20, 1
        a.service_steps, a.scale_clients = [1, 5], 2
        a.warm_rounds, a.warm_pairs = 2, 1
        a.gv_rounds, a.svc_gv_boxes = 4, 1
    else:
        a.rounds, a.warmup, a.stream_bytes, a.stream_reps = 100, 5, 1 << 30, 5
        a.density_steps, a.scale_samples, a.py_rounds = [1, 10, 25, 50], 10, 20
        # the API's stream is 256 MiB: 1 GiB of NDJSON at ~40 MiB/s x 4 variants x reps
        # would be most of the run
        a.api_stream_bytes, a.files_bytes, a.files_reps = 256 << 20, 1 << 30, 3
        a.service_steps, a.scale_clients = [1, 10, 50, 100], 4
        a.warm_rounds, a.warm_pairs = 20, 3
        # runsc's ~0.1 s (run) and ~0.3 s (do) per round
        a.gv_rounds, a.svc_gv_boxes = 40, 5
    aj = os.path.abspath(a.agentjail)
    os.makedirs(a.out, exist_ok=True)

    def log(msg):
        print(f"bench: {msg}", file=sys.stderr, flush=True)

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=os.path.dirname(os.path.abspath(__file__)))
    mi = meminfo()
    res = {
        "meta": {
            "stamp": a.stamp,
            "quick": a.quick,
            "host": platform.node(),
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
            "mem_total": mi["MemTotal"],
            "loadavg_start": os.getloadavg(),
            "euid": os.geteuid(),
            "agentjail": aj,
            "agentjail_version": subprocess.run([aj, "--version"], capture_output=True,
                                                text=True).stdout.strip(),
            "commit": commit.stdout.strip() or "unknown",
            "rounds": a.rounds,
        }
    }
    t0 = time.time()
    res["cold_start"] = cold_start(a, aj, log)
    res["gvisor_cold_start"] = gvisor_cold_start(a, aj, log)
    res["streaming"] = streaming(a, aj, log)
    res["density"] = density(a, aj, log)
    res["python"] = python_cell(a, aj, log)
    import bench_service

    res["service"] = bench_service.run_all(a, aj, log)
    res["warm"] = warm_pools(a, aj, log)
    res["meta"]["seconds"] = round(time.time() - t0, 1)
    res["meta"]["loadavg_end"] = os.getloadavg()
    res["rows"] = report_rows(res)
    write_plot_data(res, a.out)
    res["plots"] = [f"{a.stamp}-latency.png", f"{a.stamp}-density.png"]
    if os.path.exists(os.path.join(a.out, "scale.dat")):
        res["plots"].append(f"{a.stamp}-scale.png")
    with open(os.path.join(a.out, f"{a.stamp}.json"), "w") as f:
        json.dump(res, f, indent=1)
    write_report(res, a.out, a.stamp)
    log(f"done in {res['meta']['seconds']}s: {a.out}/{a.stamp}.json, {a.out}/report.md")


if __name__ == "__main__":
    main()
