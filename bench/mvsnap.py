#!/usr/bin/env python3
"""Level 3's snapshot mechanism, measured below agentjail (issue 24): the
guest agentjail boots (its kernel, initramfs and an image's squashfs on
virtio-blk, as `run --isolation microvm --image`) cold to a ready agent,
then saved with qemu's migration to a file (`migrate fd:`, the fd handed
over QMP: qemu 7.2 has no `file:` and -sandbox forbids `exec:`) and
restored from it (`-incoming fd:`) to a ready agent, N times each.
Ready: the guest agent answers a stat of / on its virtio-serial port.

Not agentjail's path yet (no confinement, no cgroup): the mechanism's cost
on this accelerator, for docs/performance.md round 25.

usage (root, under the test lock): bench/mvsnap.py STATE_DIR IMAGE_SQFS [N]
  STATE_DIR: an agentjail state dir whose microvm/initramfs-*.cpio exists
  (any level-3 run made it); IMAGE_SQFS: a squashfs of a root with /bin/sh.
"""
import array, glob, json, os, socket, statistics, subprocess, sys, tempfile, time

ASSETS = os.environ.get("AGENTJAIL_MICROVM_DIR", "/var/cache/agentjail/microvm")


def frame(t, b):
    return t.encode() + len(b).to_bytes(4, "little") + b


def agent_ready(path, deadline):
    """Connect to the agent port and wait for the answer to a stat of /."""
    while True:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            break
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise TimeoutError("agent socket")
            time.sleep(0.001)
    s.sendall(frame("Q", json.dumps({"op": "stat", "path": "/"}).encode()))
    buf = b""
    s.settimeout(max(0.1, deadline - time.monotonic()))
    while True:
        while len(buf) >= 5:
            n = int.from_bytes(buf[1:5], "little")
            if len(buf) < 5 + n:
                break
            t = chr(buf[0])
            buf = buf[5 + n:]
            if t == "X":
                s.close()
                return
        d = s.recv(65536)
        if not d:
            raise RuntimeError("agent closed")
        buf += d


class Qmp:
    def __init__(self, path, deadline):
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX)
                self.s.connect(path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.002)
        self.f = self.s.makefile("rb")
        self.f.readline()  # greeting
        self.cmd("qmp_capabilities")

    def cmd(self, name, fds=None, **args):
        msg = json.dumps({"execute": name, "arguments": args}).encode()
        if fds:
            self.s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        else:
            self.s.sendall(msg)
        while True:
            r = json.loads(self.f.readline())
            if "return" in r or "error" in r:
                if "error" in r:
                    raise RuntimeError(f"{name}: {r['error']}")
                return r["return"]


def qemu_argv(d, initrd, sqfs, extra):
    append = ("console=ttyS0 quiet panic=-1 aj.disk=0 aj.pids=0 aj.ws=0 aj.host=agentjail "
              "aj.ports=1 aj.root=blk")
    return ["qemu-system-x86_64", "-M", "microvm", "-accel", "tcg", "-cpu", "max", "-m", "512M",
            "-smp", "1", "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
            "-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
            "-global", "virtio-mmio.force-legacy=false",
            "-chardev", f"file,id=con,path={d}/console", "-serial", "chardev:con",
            "-device", "virtio-serial-device", "-device", "virtio-rng-device",
            "-kernel", f"{ASSETS}/vmlinux", "-initrd", initrd, "-append", append,
            "-drive", f"file={sqfs},format=raw,readonly=on,if=none,id=root",
            "-device", "virtio-blk-device,drive=root",
            "-chardev", f"socket,id=ag0,path={d}/agent0.sock,server=on,wait=off",
            "-device", "virtserialport,chardev=ag0,name=aj.agent",
            "-qmp", f"unix:{d}/qmp.sock,server=on,wait=off"] + extra


def run(state, sqfs, n):
    cpio = sorted(glob.glob(f"{state}/microvm/initramfs-*.cpio"), key=os.path.getmtime)[-1]
    d = tempfile.mkdtemp(prefix="agentjail-mvsnap-")
    # the /etc layer the guest stacks over an image (rootimg.c does the same)
    os.makedirs(f"{d}/l/aj-etc/etc")
    with open(f"{d}/l/aj-etc/etc/hostname", "w") as f:
        f.write("agentjail\n")
    initrd = f"{d}/initrd"
    with open(initrd, "wb") as out:
        out.write(open(cpio, "rb").read())
        out.flush()
        subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"], cwd=f"{d}/l",
                       input=b"aj-etc\naj-etc/etc\naj-etc/etc/hostname\n", stdout=out, check=True)
    cold, restore, sizes = [], [], []
    snap = f"{d}/snap"
    for i in range(n):
        for p in glob.glob(f"{d}/*.sock"):
            os.unlink(p)
        t0 = time.monotonic()
        q = subprocess.Popen(qemu_argv(d, initrd, sqfs, []))
        agent_ready(f"{d}/agent0.sock", t0 + 60)
        cold.append(time.monotonic() - t0)
        if i == 0:  # the snapshot: the idle VM stopped and saved
            m = Qmp(f"{d}/qmp.sock", time.monotonic() + 10)
            fd = os.open(snap, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            # not stopped first: the stream's run state would keep the
            # restored VM paused (qemu stops it itself at the end)
            m.cmd("getfd", fds=[fd], fdname="snap")
            os.close(fd)
            m.cmd("migrate", uri="fd:snap")
            while m.cmd("query-migrate").get("status") not in ("completed", "failed"):
                time.sleep(0.005)
            st = m.cmd("query-migrate")["status"]
            if st != "completed":
                raise RuntimeError(f"migration {st}")
        q.kill()
        q.wait()
    for i in range(n):
        for p in glob.glob(f"{d}/*.sock"):
            os.unlink(p)
        t0 = time.monotonic()
        fd = os.open(snap, os.O_RDONLY)
        q = subprocess.Popen(qemu_argv(d, initrd, sqfs, ["-incoming", f"fd:{fd}"]), pass_fds=[fd])
        os.close(fd)
        agent_ready(f"{d}/agent0.sock", t0 + 60)
        restore.append(time.monotonic() - t0)
        q.kill()
        q.wait()
    sizes.append(os.path.getsize(snap))
    subprocess.run(["rm", "-rf", d])
    c, r = statistics.median(cold), statistics.median(restore)
    print(f"cold boot to ready: median {c*1000:.0f} ms ({', '.join(f'{x*1000:.0f}' for x in cold)})")
    print(f"restore to ready:   median {r*1000:.0f} ms ({', '.join(f'{x*1000:.0f}' for x in restore)})")
    print(f"ratio restore/cold: {r/c:.3f}x; snapshot file {sizes[0]/2**20:.1f} MiB (512 MiB guest)")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 5)
