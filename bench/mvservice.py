#!/usr/bin/env python3
"""A level-3 create restored from its snapshot through the service, against
the bare restore and a cold boot below agentjail, in one run (issue 24;
docs/performance.md, "Round 30"). With --aj-before, another build's
service (e.g. main's) is measured in the same rounds.

  service restore   POST /v1/sandboxes {"image": "tiny", "isolation":
                    "microvm", "env": {...}} (no pool; the env differs each
                    time, as a client's would) to its 201: the VMM
                    confined in its cgroup, the snapshot restored, the
                    agent's first answer and the identity request
  bare restore      qemu restored from a snapshot of the same guest (bench/
                    mvsnap.py's: RAM copy-on-write from a sealed memfd,
                    devices over QMP), to the agent's answer to a stat of /
  cold boot         the same guest booted (mvsnap.py) to that answer

The service and the bare VMs share the kernel, the initramfs, the image's
squashfs, 512 MiB and 1 vCPU; the accelerator is TCG both ways unless
AGENTJAIL_MICROVM_ACCEL says kvm. Each round runs the three in a random
order, one VM at a time; what a case made is deleted outside its timing.
The service's first create (a boot and the snapshot's save) and its first
restore (the snapshot's RAM not loaded before) are reported beside them.

Needs root, qemu and the guest kernel (scripts/setup.sh); hold the test
lock (the level-3 tests' residue checks look for any qemu).
usage: bench/mvservice.py [--quick] [--rounds N] [--aj build/agentjail]
       [--aj-before OLD/agentjail] [--json OUT] [--no-bare]
"""
import argparse
import glob
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "sdk", "python"))
os.environ.setdefault("AGENTJAIL_MICROVM_ACCEL", "tcg")
import mvsnap  # noqa: E402
from agentjail import Client  # noqa: E402


def tiny_root(d):
    """A root of sh, cat and ls with their libraries (as the tests' mk_tiny_root)."""
    for b in ("sh", "cat", "ls"):
        src = shutil.which(b)
        os.makedirs(f"{d}/bin", exist_ok=True)
        shutil.copy(src, f"{d}/bin/{b}")
        for lib in subprocess.run(["ldd", src], capture_output=True, text=True).stdout.split():
            if lib.startswith("/") and not os.path.exists(d + lib):
                os.makedirs(os.path.dirname(d + lib), exist_ok=True)
                shutil.copy(lib, d + lib)
    for sub in ("etc", "tmp", "proc", "dev", "root"):
        os.makedirs(f"{d}/{sub}", exist_ok=True)
    with open(f"{d}/etc/motd", "w") as f:
        f.write("base\n")
    subprocess.run(["chmod", "-R", "a+rX", d], check=True)


class Bare:
    """mvsnap.py's guest on the service's initramfs and squashfs: saved once
    (from a cold boot), then restored or booted cold on demand."""

    def __init__(self, state):
        self.d = tempfile.mkdtemp(prefix="agentjail-mvservice-")
        cpio = sorted(glob.glob(f"{state}/microvm/initramfs-*.cpio"), key=os.path.getmtime)[-1]
        self.sqfs = glob.glob(f"{state}/microvm/rootfs-*.sqfs")[0]
        os.makedirs(f"{self.d}/l/aj-etc/etc")
        with open(f"{self.d}/l/aj-etc/etc/hostname", "w") as f:
            f.write("agentjail\n")
        self.initrd = f"{self.d}/initrd"
        with open(self.initrd, "wb") as out:
            out.write(open(cpio, "rb").read())
            out.flush()
            subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"],
                           cwd=f"{self.d}/l", check=True, stdout=out,
                           input=b"aj-etc\naj-etc/etc\naj-etc/etc/hostname\n")
        self.state_file = f"{self.d}/snap.vmstate"
        self.snap = None
        self.n = 0

    def cold(self):
        q, t, _ = mvsnap.start(self.d, self.next(), self.initrd, self.sqfs,
                               f"memory-backend-memfd,id=mem,size={mvsnap.MEM}M,share=on",
                               None, [])
        q.kill()
        q.wait()
        return t * 1000

    def next(self):
        self.n += 1
        return self.n

    def save(self):
        """A cold boot (its time returned) saved as mvsnap.py saves it."""
        src = os.memfd_create("agentjail-mvservice-src")
        os.ftruncate(src, mvsnap.MEM << 20)
        q, t, vd = mvsnap.start(
            self.d, "s", self.initrd, self.sqfs,
            f"memory-backend-file,id=mem,size={mvsnap.MEM}M,mem-path=/proc/self/fd/{src},share=on",
            None, [src])
        try:
            m = mvsnap.Qmp(f"{vd}/qmp.sock", time.monotonic() + 10)
            m.cmd("migrate-set-capabilities",
                  capabilities=[{"capability": "x-ignore-shared", "state": True}])
            fd = os.open(self.state_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            m.cmd("getfd", fds=[fd], fdname="snap")
            os.close(fd)
            m.cmd("migrate", uri="fd:snap")
            while m.cmd("query-migrate").get("status") not in ("completed", "failed"):
                time.sleep(0.005)
            if m.cmd("query-migrate")["status"] != "completed":
                raise RuntimeError("migration failed")
            self.snap = os.memfd_create("agentjail-mvservice-ram", os.MFD_ALLOW_SEALING)
            mvsnap.copy_data(src, self.snap)
            import fcntl
            fcntl.fcntl(self.snap, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK |
                        fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        finally:
            q.kill()
            q.wait()
            os.close(src)
        return t * 1000

    def restore(self):
        fd = os.open(self.state_file, os.O_RDONLY)
        obj = (f"memory-backend-file,id=mem,size={mvsnap.MEM}M,"
               f"mem-path=/proc/self/fd/{self.snap},share=off")
        try:
            q, t, _ = mvsnap.start(self.d, self.next(), self.initrd, self.sqfs, obj, f"fd:{fd}",
                                   [fd, self.snap])
        finally:
            os.close(fd)
        q.kill()
        q.wait()
        return t * 1000

    def close(self):
        if self.snap is not None:
            os.close(self.snap)
        shutil.rmtree(self.d, ignore_errors=True)


class Service:
    """agentjail serve on a socket and state directory of its own, with an
    image "tiny" (built first: the service finds images by
    AGENTJAIL_STATE_DIR)."""

    def __init__(self, aj):
        self.dir = tempfile.mkdtemp(prefix="ajbench-mvservice.")
        os.chmod(self.dir, 0o755)
        self.state = os.path.join(self.dir, "state")
        self.sock = os.path.join(self.dir, "s.sock")
        env = dict(os.environ, AGENTJAIL_STATE_DIR=self.state)
        tiny_root(f"{self.dir}/tree")
        subprocess.run([aj, "image", "build", "tiny", "--from-dir", f"{self.dir}/tree"],
                       env=env, check=True, capture_output=True)
        self.log = open(os.path.join(self.dir, "serve.log"), "w")
        self.proc = subprocess.Popen([aj, "serve", "--quiet", "--socket", self.sock,
                                      "--state-dir", self.state], env=env,
                                     stdin=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 20
        while not os.path.exists(self.sock):
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("agentjail serve did not start: " + self.log_tail())
            time.sleep(0.05)
        self.client = Client(socket_path=self.sock, timeout=600)

    def log_tail(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-300:]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def summary(v):
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v),
            "samples": [round(x, 1) for x in v]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--aj", default=os.path.join(HERE, "..", "build", "agentjail"))
    ap.add_argument("--aj-before", help="another build (e.g. main's) measured in the same "
                    "rounds: its service restore beside this one's")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 rounds (~30 s on TCG)")
    ap.add_argument("--json")
    ap.add_argument("--no-bare", action="store_true",
                    help="the service's creates only (no bare restore, no cold boot)")
    a = ap.parse_args()
    if a.quick:
        a.rounds = 2
    if os.geteuid() != 0:
        sys.exit("mvservice: needs root (level 3 in the service)")
    builds = {"service restore": os.path.realpath(a.aj)}
    if a.aj_before:
        builds["service restore (before)"] = os.path.realpath(a.aj_before)
    load0 = os.getloadavg()
    svcs, bare = {}, None
    res = {k: [] for k in (*builds, "bare restore", "cold boot")}
    first, first_restore = {}, {}
    body = {"image": "tiny", "isolation": "microvm", "memory": "512M"}  # mvsnap.MEM, 1 vCPU
    n = 0

    def create(svc):
        """A create's time to its answer (no pool: another env each time)."""
        nonlocal n
        n += 1
        t0 = time.perf_counter_ns()
        info = svc.client.json("POST", "/v1/sandboxes", dict(body, env={"ROUND": str(n)}))
        t = (time.perf_counter_ns() - t0) / 1e6
        svc.client.request("DELETE", f"/v1/sandboxes/{info['id']}").close()
        return t

    try:
        for k, aj in builds.items():
            svc = svcs[k] = Service(aj)
            first[k] = create(svc)  # booted, then saved: the snapshot the next ones restore
            if not glob.glob(f"{svc.state}/microvm/snap-*.vmstate"):
                raise RuntimeError("the service saved no snapshot: " + svc.log_tail())
            first_restore[k] = create(svc)  # the snapshot's RAM not yet in the service
        cases = {k: (lambda s=svcs[k]: create(s)) for k in builds}
        if not a.no_bare:
            bare = Bare(svcs["service restore"].state)
            res["cold boot"].append(bare.save())
            cases.update({"bare restore": bare.restore, "cold boot": bare.cold})
        else:
            del res["bare restore"], res["cold boot"]
        for r in range(a.rounds):
            names = list(cases)
            random.shuffle(names)
            for k in names:
                if k == "cold boot" and r == 0:
                    continue  # the save's boot is this round's
                res[k].append(cases[k]())
                print(f"mvservice: round {r + 1}: {k} {res[k][-1]:.0f} ms", file=sys.stderr,
                      flush=True)
    finally:
        if bare:
            bare.close()
        for svc in svcs.values():
            svc.stop()
    s = {k: summary(v) for k, v in res.items()}
    ratios = {}
    if not a.no_bare:
        br, cb = s["bare restore"]["median"], s["cold boot"]["median"]
        for k in builds:
            ratios[f"{k} / bare restore"] = s[k]["median"] / br
            ratios[f"{k} / cold boot"] = s[k]["median"] / cb
        ratios["bare restore / cold boot"] = br / cb
    if a.aj_before:
        ratios["service restore, after / before"] = (s["service restore"]["median"] /
                                                      s["service restore (before)"]["median"])
    out = {"rounds": a.rounds, "accel": os.environ["AGENTJAIL_MICROVM_ACCEL"],
           "loadavg_start": load0, "loadavg_end": os.getloadavg(), "builds": builds,
           "first create (boot + save)": first, "first restore": first_restore,
           "summary": s, "ratios": ratios}
    for k, v in s.items():
        print(f"{k:26} median {v['median']:6.0f} ms ({', '.join(f'{x:.0f}' for x in res[k])})")
    for k in builds:
        print(f"{k:26} first create (boot + save) {first[k]:.0f} ms, first restore "
              f"{first_restore[k]:.0f} ms")
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}x")
    print(f"load average: {load0[0]:.1f} at the start, {out['loadavg_end'][0]:.1f} at the end")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
