#!/usr/bin/env python3
"""Level 3's snapshots, measured below agentjail (issue 24): the guest
agentjail boots (its kernel, initramfs and an image's squashfs on
virtio-blk, as `run --isolation microvm --image`) cold to a ready agent,
is saved, and is restored to a ready agent, N times each, in one run; then
the memory of N idle VMs of each kind, all running at once. Ready: the
guest agent answers a stat of / on its virtio-serial port.

The snapshot as agentjail makes it (src/backend/microvm/snap.c): the VM to
save runs with its RAM in a memfd of ours (memory-backend-file on
/proc/self/fd/N, share=on); the migration (`migrate fd:`, the fd handed
over QMP) carries the devices only (x-ignore-shared); the RAM is copied
from that memfd (its data extents) into a sealed memfd. A restore maps
that memfd private (share=off: copy-on-write, the pages shared with every
other restore until written) and loads the devices (`-incoming fd:`). A
cold boot is agentjail's: memory-backend-memfd, share=on.

Memory: the PSS of each VM's qemu (/proc/PID/smaps_rollup), summed, for N
cold-booted and N restored idle VMs; the sealed snapshot (held once) is
reported beside the restored sum.

Not agentjail's path (no confinement, no cgroup, no identity request).

usage (root, under the test lock): bench/mvsnap.py STATE_DIR IMAGE_SQFS [N]
  STATE_DIR: an agentjail state dir whose microvm/initramfs-*.cpio exists
  (any level-3 run made it); IMAGE_SQFS: a squashfs of a root with /bin/sh.
"""
import array, fcntl, glob, json, os, socket, statistics, subprocess, sys, tempfile, time

ASSETS = os.environ.get("AGENTJAIL_MICROVM_DIR", "/var/cache/agentjail/microvm")
MEM = 512  # MiB
# the host's TSC, as agentjail gives it (vm.c: host_tsc_khz)
TSC_KHZ = next((int(float(l.split(":")[1]) * 1000) for l in open("/proc/cpuinfo")
                if l.startswith("cpu MHz")), 0)


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


def qemu_argv(d, initrd, sqfs, memobj, extra):
    append = (f"console=ttyS0 quiet panic=-1 tsc_early_khz={TSC_KHZ} aj.disk=0 aj.pids=0 "
              "aj.ws=0 aj.host=agentjail aj.ports=1 aj.root=blk")
    return ["qemu-system-x86_64", "-M", "microvm,memory-backend=mem", "-accel", "tcg",
            "-cpu", "max", "-m", f"{MEM}M", "-object", memobj,
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


def copy_data(src, dst):
    """src's data extents into dst (holes stay holes): bytes copied."""
    size, off, n = os.fstat(src).st_size, 0, 0
    os.ftruncate(dst, size)
    while off < size:
        try:
            off = os.lseek(src, off, os.SEEK_DATA)
        except OSError:
            break
        end = os.lseek(src, off, os.SEEK_HOLE)
        while off < end:
            b = os.pread(src, min(end - off, 1 << 20), off)
            os.pwrite(dst, b, off)
            off += len(b)
            n += len(b)
    return n


def pss_kib(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def start(d, i, initrd, sqfs, memobj, incoming, fds):
    vd = f"{d}/vm{i}"
    os.makedirs(vd, exist_ok=True)
    for p in glob.glob(f"{vd}/*.sock"):
        os.unlink(p)
    t0 = time.monotonic()
    extra = ["-incoming", "defer"] if incoming else []
    q = subprocess.Popen(qemu_argv(vd, initrd, sqfs, memobj, extra), pass_fds=fds)
    try:
        if incoming:  # the capability on both ends (qemu checks), then the state
            m = Qmp(f"{vd}/qmp.sock", t0 + 10)
            m.cmd("migrate-set-capabilities",
                  capabilities=[{"capability": "x-ignore-shared", "state": True}])
            m.cmd("migrate-incoming", uri=incoming)
        agent_ready(f"{vd}/agent0.sock", t0 + 30)
    except BaseException:
        q.kill()
        q.wait()
        raise
    return q, time.monotonic() - t0, vd


def idle_pss(vms):
    time.sleep(2)  # settle: the guest idle after its first answer
    return sum(pss_kib(q.pid) for q in vms)


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
    vms, cold, restore = [], [], []
    state_file = f"{d}/snap.vmstate"
    try:
        # the VM to save: its RAM in our memfd, shared with qemu
        src = os.memfd_create("agentjail-mvsnap-src")
        os.ftruncate(src, MEM << 20)
        q, t, vd = start(d, "s", initrd, sqfs,
                         f"memory-backend-file,id=mem,size={MEM}M,mem-path=/proc/self/fd/{src},share=on",
                         None, [src])
        vms.append(q)
        t0 = time.monotonic()
        m = Qmp(f"{vd}/qmp.sock", time.monotonic() + 10)
        m.cmd("migrate-set-capabilities",
              capabilities=[{"capability": "x-ignore-shared", "state": True}])
        fd = os.open(state_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        m.cmd("getfd", fds=[fd], fdname="snap")
        os.close(fd)
        m.cmd("migrate", uri="fd:snap")
        while m.cmd("query-migrate").get("status") not in ("completed", "failed"):
            time.sleep(0.005)
        if m.cmd("query-migrate")["status"] != "completed":
            raise RuntimeError("migration failed")
        snap = os.memfd_create("agentjail-mvsnap-ram", os.MFD_ALLOW_SEALING)
        ram = copy_data(src, snap)
        fcntl.fcntl(snap, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK |
                    fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        save = time.monotonic() - t0
        q.kill()
        q.wait()
        vms = []
        os.close(src)
        cold_obj = f"memory-backend-memfd,id=mem,size={MEM}M,share=on"

        def restore_one(i):
            fd = os.open(state_file, os.O_RDONLY)
            obj = f"memory-backend-file,id=mem,size={MEM}M,mem-path=/proc/self/fd/{snap},share=off"
            try:
                return start(d, i, initrd, sqfs, obj, f"fd:{fd}", [fd, snap])
            finally:
                os.close(fd)

        # times: one VM at a time (an idle TCG guest still takes CPU)
        for kind, times in (("cold", cold), ("restore", restore)):
            for i in range(n):
                q, t, _ = (start(d, i, initrd, sqfs, cold_obj, None, [])
                           if kind == "cold" else restore_one(i))
                times.append(t)
                q.kill()
                q.wait()
        # memory: N of a kind running at once, idle, then the next kind
        pss = {}
        for kind in ("cold", "restore"):
            for i in range(n):
                q = (start(d, i, initrd, sqfs, cold_obj, None, [])
                     if kind == "cold" else restore_one(i))[0]
                vms.append(q)
            pss[kind] = idle_pss(vms)
            for q in vms:
                q.kill()
                q.wait()
            vms = []
        cold_pss, rest_pss = pss["cold"], pss["restore"]
        st_size = os.path.getsize(state_file)
    finally:
        for q in vms:
            q.kill()
            q.wait()
        if not os.environ.get("MVSNAP_KEEP"):
            subprocess.run(["rm", "-rf", d])
    c, r = statistics.median(cold), statistics.median(restore)
    held = ram / 1024
    print(f"cold boot to ready: median {c*1000:.0f} ms ({', '.join(f'{x*1000:.0f}' for x in cold)})")
    print(f"restore to ready:   median {r*1000:.0f} ms ({', '.join(f'{x*1000:.0f}' for x in restore)})")
    print(f"ratio restore/cold: {r/c:.3f}x; save {save*1000:.0f} ms; device state "
          f"{st_size/2**10:.0f} KiB, RAM {ram/2**20:.1f} MiB of data ({MEM} MiB guest)")
    print(f"idle PSS, {n} cold VMs: {cold_pss/1024:.0f} MiB ({cold_pss/n/1024:.0f} MiB each)")
    print(f"idle PSS, {n} restored: {rest_pss/1024:.0f} MiB ({rest_pss/n/1024:.0f} MiB each); "
          f"ratio {rest_pss/cold_pss:.3f}x; bound with the whole sealed snapshot "
          f"({held/1024:.0f} MiB) added: {(rest_pss + held)/cold_pss:.3f}x")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 4)
