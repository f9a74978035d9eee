/* SPDX-License-Identifier: MIT */
/* agentjail-guest-init: PID 1 of a level-3 microVM (docs/levels.md), in the
 * initramfs agentjail builds (microvm/initramfs.c), linked statically. It
 * loads the virtio modules the Debian kernel has as modules, mounts the
 * root (the host's read-only view shared by virtiofs, under a tmpfs
 * overlay capped by aj.disk=), the workspace (virtiofs, read-write), moves
 * into that root, and then serves the agent protocol (agent_proto.h) on
 * the virtio-serial ports "aj.agent", "aj.agent.1" ... (aj.ports=N): on
 * each, one agentjail-agent process per request, its stdin and stdout the
 * port, started when the host's request arrives (so the ports serve
 * requests side by side). It reaps every orphan, thaws the guest's
 * processes an agent froze and died without thawing, and kills an agent
 * the host writes to while it is stopped (stopped_agents). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "init_reset.h"
#include "inroot.h"
#include "nicup.h"

#define PORT_NAME "aj.agent"
#define MAX_PORTS 8
#define AGENT "/agentjail-agent"

/* in load order: each needs only those before it (their symbols) */
static const char *const modules[] = {"virtio_ring", "virtio",	 "virtio_mmio", "virtio_console",
				      "fuse",	     "virtiofs", "overlay",	"virtio-rng"};
/* an image's root (aj.root=blk): its squashfs on virtio-blk */
static const char *const blk_modules[] = {"virtio_blk", "squashfs"};
/* a snapshot's machine (aj.pci=1): its workspace and NIC hot-plugged on
 * PCIe (the NIC's driver ready here: the agent addresses it, agent_net.c) */
static const char *const pci_modules[] = {"virtio_pci_legacy_dev",
					  "virtio_pci_modern_dev",
					  "virtio_pci",
					  "failover",
					  "net_failover",
					  "virtio_net"};

/* A line on the console (ttyS0) in one write: the host shows the fatal
 * one ("agentjail-guest: fatal: ...", boot.c) when the VM fails, not an
 * earlier word of ours or the lines after it. */
static void say_as(const char *tag, const char *what, const char *a, int e)
{
	char line[512];
	snprintf(line, sizeof(line), "agentjail-guest: %s%s%s%s%s\n", tag, what, *a ? " " : "", a,
		 e ? ": " : "");
	if (e)
		snprintf(line + strlen(line) - 1, sizeof(line) - strlen(line) + 1, "%s\n",
			 strerror(e));
	(void)!write(2, line, strlen(line));
}

static void say(const char *what, const char *a, int e)
{
	say_as("", what, a, e);
}

static _Noreturn void die(const char *what, const char *a)
{
	say_as("fatal: ", what, a, errno);
	sync();
	reboot(RB_POWER_OFF);
	_exit(1);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void load_modules(const char *const *mods, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char path[128];
		snprintf(path, sizeof(path), "/lib/modules/%s.ko", mods[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("cannot open", path);
		if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
			die("cannot load", path);
		close(fd);
	}
}

/* A value of the kernel command line "aj.NAME=VALUE", or def. */
static const char *arg(const char *cmdline, const char *name, char *out, size_t len,
		       const char *def)
{
	char key[64];
	snprintf(key, sizeof(key), " aj.%s=", name);
	const char *p = strstr(cmdline, key);
	if (!p)
		return def;
	p += strlen(key);
	size_t n = strcspn(p, " \n");
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = '\0';
	return out;
}

static void must_mount(const char *src, const char *dst, const char *type, unsigned long flags,
		       const char *data)
{
	/* virtiofs devices probe asynchronously after the module loads */
	for (int i = 0; mount(src, dst, type, flags, data) < 0; i++)
		if (errno != ENOENT || i > 200)
			die("cannot mount", dst);
		else
			sleep_ms(5);
}

/* The new root (/newroot), its paths resolved inside it: an image's links
 * (`proc -> /oldroot/x`, `dev -> ../../..`) are followed as if the root
 * were /, never into the initramfs, as level 1 does (inroot.c). */
static int newroot = -1;

/* REL in the new root as a path mount(2) takes (/proc/self/fd/N in out,
 * the fd returned): a directory made with its parents when missing (dir),
 * else what is there; dies naming REL when it can't be had. */
static int in_root(const char *rel, bool dir, mode_t mode, char *out, size_t len)
{
	int fd =
	    dir ? aj_mkdir_in_root(newroot, rel, mode) : aj_open_in_root(newroot, rel, O_PATH, 0);
	if (fd < 0) {
		errno = -fd;
		die("cannot resolve in the root", rel);
	}
	snprintf(out, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* mount at REL of the new root (resolved inside it) */
static void mount_at(const char *src, const char *rel, const char *type, unsigned long flags,
		     const char *data, mode_t mode)
{
	char at[64];
	int fd = in_root(rel, true, mode, at, sizeof(at));
	must_mount(src, at, type, flags, data);
	close(fd);
}

/* FROM of the tree of root (the new root, or the root's share) bound
 * read-only at AT of the new root, each resolved inside its root */
static void bind_ro(int root, const char *from, const char *rel, unsigned long extra)
{
	char at[64], src[64];
	int s = aj_open_in_root(root, from, O_PATH, 0);
	if (s < 0) {
		errno = -s;
		die("cannot resolve in the root", from);
	}
	snprintf(src, sizeof(src), "/proc/self/fd/%d", s);
	int fd = in_root(rel, false, 0, at, sizeof(at));
	must_mount(src, at, NULL, MS_BIND, NULL);
	close(fd);
	close(s);
	fd = in_root(rel, false, 0, at, sizeof(at));
	must_mount(NULL, at, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | extra,
		   NULL);
	close(fd);
}

/* The virtio-serial port named name (/sys/class/virtio-ports/vportNpM/name). */
static int open_port(const char *want)
{
	for (int i = 0; i < 400; i++) {
		DIR *d = opendir("/sys/class/virtio-ports");
		struct dirent *de;
		while (d && (de = readdir(d))) {
			char p[PATH_MAX], name[64] = "";
			snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", de->d_name);
			FILE *f = fopen(p, "re");
			if (!f)
				continue;
			if (!fgets(name, sizeof(name), f))
				name[0] = '\0';
			fclose(f);
			name[strcspn(name, "\n")] = '\0';
			if (strcmp(name, want))
				continue;
			snprintf(p, sizeof(p), "/dev/%s", de->d_name);
			int fd = open(p, O_RDWR | O_CLOEXEC | O_NOCTTY);
			/* ENXIO until the host's end is connected */
			if (fd >= 0) {
				closedir(d);
				return fd;
			}
		}
		if (d)
			closedir(d);
		sleep_ms(10);
	}
	die("no virtio-serial port", want);
}

/* The mounts a bind's mount point may be on: the root's overlay, then
 * each bind's as it is mounted (a bind in another's place). */
static unsigned long long bind_mnts[128];
static size_t n_bind_mnts;

static unsigned long long mnt_id(int fd)
{
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &sx) < 0 ||
	    !(sx.stx_mask & STATX_MNT_ID))
		return 0;
	return sx.stx_mnt_id;
}

/* fd's path in the new root, for an error ("/newroot/x" -> "/x") */
static void root_path(int fd, char *out, size_t len)
{
	char l[64], p[PATH_MAX];
	snprintf(l, sizeof(l), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(l, p, sizeof(p) - 1);
	p[n < 0 ? 0 : n] = '\0';
	const char *r = strncmp(p, "/newroot", 8) ? p : p + 8;
	snprintf(out, len, "%s", *r ? r : "/");
}

/* aj_inroot_check: fd on a mount a bind may be made in (ctx: its path
 * when not) */
static int bind_place(int fd, void *ctx)
{
	unsigned long long id = mnt_id(fd);
	for (size_t i = 0; id && i < n_bind_mnts; i++)
		if (id == bind_mnts[i])
			return 0;
	root_path(fd, ctx, PATH_MAX);
	return -EXDEV;
}

/* A bind's mount point at DEST, resolved inside the new root (an image's
 * links followed as if the root were /, never into the initramfs), made
 * there as a directory or an empty file (dir) when missing: only on the
 * root's overlay or an earlier bind, never the root itself nor in /proc,
 * /sys, /dev or the workspace, wherever the root's links lead (boot.c
 * check_binds refuses those as written). Dies naming the place; nothing
 * is made there. */
static int bind_point(const char *flag, const char *dest, bool dir, char *at, size_t len)
{
	static char where[PATH_MAX];
	char msg[2 * PATH_MAX];
	struct stat st, r;
	int fd = aj_make_in_root_checked(newroot, dest, dir ? 0755 : 0644, dir, bind_place, where);
	if (fd >= 0 && fstat(fd, &st) == 0 && fstat(newroot, &r) == 0 && st.st_dev == r.st_dev &&
	    st.st_ino == r.st_ino) {
		close(fd);
		fd = -EXDEV;
		snprintf(where, sizeof(where), "/");
	}
	if (fd == -EXDEV) {
		snprintf(msg, sizeof(msg),
			 "%s %s: its path leads to %s (a link of the root's), on the root itself "
			 "or a mount of the guest's (/proc, /sys, /dev, the workspace): no bind "
			 "there",
			 flag, dest, where);
		errno = 0;
		die(msg, "");
	}
	if (fd < 0) {
		errno = -fd;
		snprintf(msg, sizeof(msg), "%s: cannot make the bind's mount point in the root",
			 flag);
		die(msg, dest);
	}
	snprintf(at, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* The mount at DEST just made: a place for the binds after it. */
static void bind_made(const char *dest)
{
	int fd = aj_open_in_root(newroot, dest, O_PATH, 0);
	unsigned long long id = fd >= 0 ? mnt_id(fd) : 0;
	if (fd >= 0)
		close(fd);
	if (id && n_bind_mnts < sizeof(bind_mnts) / sizeof(bind_mnts[0]))
		bind_mnts[n_bind_mnts++] = id;
}

/* A --ro bind: SRC (an fd of the root's share or the --ro binds' own)
 * bound read-only at DEST (bind_point) */
static void bind_ro_at(int s, const char *dest)
{
	char src[64], at[64];
	struct stat st;
	if (fstat(s, &st) < 0)
		die("cannot stat the --ro bind's source for", dest);
	int fd = bind_point("--ro", dest, S_ISDIR(st.st_mode), at, sizeof(at));
	snprintf(src, sizeof(src), "/proc/self/fd/%d", s);
	must_mount(src, at, NULL, MS_BIND, NULL);
	close(fd);
	close(s);
	fd = in_root(dest, false, 0, at, sizeof(at));
	must_mount(NULL, at, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
	close(fd);
	bind_made(dest);
}

/* An image's --ro bind (aj.root=blk): rK of the --ro binds' own share (tag
 * "ro", read-only, mounted once at /mnt/robinds; boot.c stage_ro_share). */
static int ro_share_src(int *share, unsigned k)
{
	if (*share < 0) {
		mkdir("/mnt/robinds", 0755);
		must_mount("ro", "/mnt/robinds", "virtiofs", MS_RDONLY | MS_NOSUID | MS_NODEV,
			   NULL);
		if ((*share = open("/mnt/robinds", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			die("cannot open", "/mnt/robinds");
	}
	char from[16];
	snprintf(from, sizeof(from), "r%u", k);
	int s = aj_open_in_root(*share, from, O_PATH, 0);
	if (s < 0) {
		errno = -s;
		die("cannot open the --ro bind's source", from);
	}
	return s;
}

/* aj.binds=rDEST,wDEST... (boot.c, %XX-escaped): a --ro bind is the root's
 * share's (its virtiofsd's view is read-only; an image's: the --ro binds'
 * own share) bound over the overlay, read-only; a --rw one the next
 * virtiofs tag b0, b1 ... */
static void mount_binds(const char *cmdline)
{
	static char list[2048];
	if (!*arg(cmdline, "binds", list, sizeof(list), ""))
		return;
	unsigned rw = 0, ro = 0;
	int lower = -1, share = -1;
	bool blk = strstr(cmdline, " aj.root=blk") != NULL;
	n_bind_mnts = 0;
	if (!(bind_mnts[n_bind_mnts++] = mnt_id(newroot)))
		die("cannot read the mount id of", "/newroot");
	for (char *s = list, *save = NULL, *t; (t = strtok_r(s, ",", &save)); s = NULL) {
		char dest[PATH_MAX], *o = dest;
		for (const char *c = t + 1; *c && o < dest + sizeof(dest) - 1; c++) {
			unsigned x;
			if (*c == '%' && sscanf(c + 1, "%2x", &x) == 1)
				*o++ = (char)x, c += 2;
			else
				*o++ = *c;
		}
		*o = '\0';
		if (t[0] == 'r' && blk) {
			bind_ro_at(ro_share_src(&share, ro++), dest);
		} else if (t[0] == 'r') {
			/* staged by the host at the same path of the root's share */
			if (lower < 0 &&
			    (lower = open("/mnt/lower", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
				die("cannot open", "/mnt/lower");
			int src = aj_open_in_root(lower, dest, O_PATH, 0);
			if (src < 0) {
				errno = -src;
				die("cannot resolve in the root", dest);
			}
			bind_ro_at(src, dest);
		} else {
			char tag[16], at[64];
			snprintf(tag, sizeof(tag), "b%u", rw++);
			int fd = bind_point("--rw", dest, true, at, sizeof(at));
			must_mount(tag, at, "virtiofs", MS_NOSUID | MS_NODEV, NULL);
			close(fd);
			bind_made(dest);
		}
	}
	if (lower >= 0)
		close(lower);
	if (share >= 0)
		close(share);
}

/* The guest kernel's knobs read-only: guest root has no capabilities, yet
 * the owner bits of /proc/sys would let it set core_pattern or modprobe
 * (a way to full root in the guest). */
static void guest_proc_ro(void)
{
	bind_ro(newroot, "proc/sys", "proc/sys", MS_NOEXEC);
	bind_ro(newroot, "proc/sysrq-trigger", "proc/sysrq-trigger", MS_NOEXEC);
}

/* The guest kernel's addresses, log and memory kept from guest root, as
 * level 1 keeps the host's (docs/security.md, "Level 3 holes"): kernel
 * pointers hidden from everyone, the log from those without CAP_SYSLOG,
 * whatever this kernel's build defaults are; /proc/kcore and the
 * physical pages' counts and flags (which guest root, their owner, could
 * read with no capability) masked by an empty mode-000 file bound
 * read-only: EACCES without CAP_DAC_OVERRIDE, as at level 1. */
static void guest_kernel_info(void)
{
	static const char *const knobs[][2] = {{"/proc/sys/kernel/kptr_restrict", "2"},
					       {"/proc/sys/kernel/dmesg_restrict", "1"}};
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		int fd = open(knobs[i][0], O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, knobs[i][1], 1) != 1)
			die("cannot set", knobs[i][0]);
		close(fd);
	}
	int m = open("/aj-mask", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
	int top = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (m < 0 || fchmod(m, 0) < 0 || top < 0)
		die("cannot make", "/aj-mask");
	close(m);
	/* and the kernel's heap and free pages' layouts (0400 root's, for
	 * exploits' heap grooming), as level 1's host keeps them */
	static const char *const masked[] = {
	    "proc/kcore",    "proc/kpagecount",	  "proc/kpageflags", "proc/kpagecgroup",
	    "proc/slabinfo", "proc/pagetypeinfo", "proc/vmallocinfo"};
	for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++) {
		int fd = aj_open_in_root(newroot, masked[i], O_PATH, 0);
		if (fd == -ENOENT) /* not in this kernel's build */
			continue;
		if (fd >= 0)
			close(fd);
		bind_ro(top, "aj-mask", masked[i], MS_NOEXEC);
	}
	close(top);
	/* SLUB's per-cache counts in sysfs (0400 root's: slabinfo again) */
	int slab = aj_open_in_root(newroot, "sys/kernel/slab", O_PATH, 0);
	if (slab >= 0) {
		close(slab);
		mount_at("none", "sys/kernel/slab", "tmpfs",
			 MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0", 0);
	}
}

/* /dev as level 1 has it: a tmpfs with the harmless devices only, not the
 * guest's devtmpfs (/dev/mem, /dev/port, the agent's virtio ports) */
static void guest_dev(void)
{
	static const struct {
		const char *name;
		unsigned maj, min;
	} nodes[] = {{"null", 1, 3},   {"zero", 1, 5},	  {"full", 1, 7},
		     {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
	static const char *const links[][2] = {{"ptmx", "pts/ptmx"},
					       {"fd", "/proc/self/fd"},
					       {"stdin", "/proc/self/fd/0"},
					       {"stdout", "/proc/self/fd/1"},
					       {"stderr", "/proc/self/fd/2"}};
	mount_at("dev", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k", 0755);
	char at[64];
	/* the fresh tmpfs, made in through its fd */
	int dev = in_root("dev", true, 0755, at, sizeof(at));
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++)
		if (mknodat(dev, nodes[i].name, S_IFCHR | 0666,
			    makedev(nodes[i].maj, nodes[i].min)) < 0 ||
		    fchmodat(dev, nodes[i].name, 0666, 0) < 0)
			die("cannot make in /dev", nodes[i].name);
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlinkat(links[i][1], dev, links[i][0]) < 0)
			die("cannot make in /dev", links[i][0]);
	close(dev);
}

/* CAP_FOWNER in init's effective set, or not (the overlay keeps its
 * mounter's credentials) */
static void caps_fowner(bool on)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		die("capget", strerror(errno));
	if (on)
		d[0].effective |= 1u << CAP_FOWNER;
	else
		d[0].effective &= ~(1u << CAP_FOWNER);
	if (syscall(SYS_capset, &h, d) < 0)
		die("capset", strerror(errno));
}

static void setup_root(const char *cmdline)
{
	char disk[32], ws[8], host[65], opts[128], root[8];
	arg(cmdline, "disk", disk, sizeof(disk), "0");
	mkdir("/mnt", 0755);
	mkdir("/mnt/lower", 0755);
	mkdir("/mnt/rw", 0755);
	mkdir("/newroot", 0755);
	/* an image: /dev/vda (the only disk), and the files agentjail owns in
	 * its /etc (the host appended aj-etc/ to the initramfs) stacked over it */
	bool blk = !strcmp(arg(cmdline, "root", root, sizeof(root), ""), "blk");
	if (blk)
		must_mount("/dev/vda", "/mnt/lower", "squashfs", MS_RDONLY | MS_NODEV, NULL);
	else
		must_mount("root", "/mnt/lower", "virtiofs", MS_RDONLY | MS_NODEV, NULL);
	/* the writable layer: tmpfs capped by --disk (0: half the RAM), in
	 * bytes and inodes (aj.inodes=, level 1's count); it holds /dev/shm
	 * too, so one cap bounds every writable place, as level 1's scratch */
	char inodes[32];
	arg(cmdline, "inodes", inodes, sizeof(inodes), "0");
	snprintf(opts, sizeof(opts), "mode=0755%s%s%s%s", strcmp(disk, "0") ? ",size=" : "",
		 strcmp(disk, "0") ? disk : "", strcmp(inodes, "0") ? ",nr_inodes=" : "",
		 strcmp(inodes, "0") ? inodes : "");
	must_mount("rw", "/mnt/rw", "tmpfs", MS_NODEV, opts);
	mkdir("/mnt/rw/upper", 0755);
	mkdir("/mnt/rw/work", 0755);
	/* (named as where it shows: its mountinfo root is its mount point) */
	if (mkdir("/mnt/rw/dev", 0755) < 0 || mkdir("/mnt/rw/dev/shm", 01777) < 0 ||
	    chmod("/mnt/rw/dev/shm", 01777) < 0)
		die("cannot make", "/mnt/rw/dev/shm");
	/* nodev: a device node in a --rootfs tree (kept by mksquashfs) opens
	 * nothing; the guest's /dev is a tmpfs of its own on top */
	/* a non-root caller's root share (aj.nonroot=1): the host's files are
	 * no id its virtiofsd owns, which may not open them O_NOATIME; an
	 * overlay mounted without CAP_FOWNER does not ask for it */
	bool fowner = strstr(cmdline, " aj.nonroot=1") != NULL;
	if (fowner)
		caps_fowner(false);
	must_mount("overlay", "/newroot", "overlay", MS_NOSUID | MS_NODEV,
		   blk ? "lowerdir=/aj-etc:/mnt/lower,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work"
		       : "lowerdir=/mnt/lower,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work");
	if (fowner)
		caps_fowner(true);
	newroot = open("/newroot", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (newroot < 0)
		die("cannot open", "/newroot");
	/* mount points an image may lack (the overlay makes them in RAM) */
	static const char *const points[] = {"proc", "sys", "dev", "root", "tmp"};
	for (size_t i = 0; blk && i < sizeof(points) / sizeof(points[0]); i++) {
		char at[64];
		close(in_root(points[i], true,
			      i == 3   ? 0700
			      : i == 4 ? 01777
				       : 0755,
			      at, sizeof(at)));
	}
	mount_at("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, 0755);
	mount_at("sysfs", "sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, 0755);
	guest_proc_ro();
	guest_kernel_info();
	guest_dev();
	mount_at("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		 "newinstance,ptmxmode=0666,mode=0620", 0755);
	/* /dev/shm: the writable tmpfs's directory (one --disk cap) */
	char shm_at[64];
	int shm = in_root("dev/shm", true, 01777, shm_at, sizeof(shm_at));
	must_mount("/mnt/rw/dev/shm", shm_at, NULL, MS_BIND, NULL);
	close(shm);
	shm = in_root("dev/shm", true, 01777, shm_at, sizeof(shm_at));
	must_mount(NULL, shm_at, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, NULL);
	close(shm);
	/* /dev read-only, as level 1's prepared tree: its nodes can't be
	 * removed, renamed or replaced by a file, nothing made beside them */
	char dev_at[64];
	int dev = in_root("dev", false, 0, dev_at, sizeof(dev_at));
	must_mount(NULL, dev_at, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
		   NULL);
	close(dev);
	if (strcmp(arg(cmdline, "ws", ws, sizeof(ws), "0"), "0"))
		mount_at("ws", "workspace", "virtiofs", MS_NOSUID | MS_NODEV, NULL, 0755);
	/* the command's home (HOME, as level 1's), in the overlay: root's, or
	 * --user's (aj.uid=, aj.gid=) */
	char uid[16], gid[16], home_at[64];
	int home = in_root("home/agent", true, 0755, home_at, sizeof(home_at));
	if (strcmp(arg(cmdline, "uid", uid, sizeof(uid), "0"), "0") &&
	    fchownat(home, "", (uid_t)strtoul(uid, NULL, 10),
		     (gid_t)strtoul(arg(cmdline, "gid", gid, sizeof(gid), "0"), NULL, 10),
		     AT_EMPTY_PATH) < 0)
		die("cannot chown", "/home/agent");
	close(home);
	arg(cmdline, "host", host, sizeof(host), "agentjail");
	(void)!sethostname(host, strlen(host));
	mount_binds(cmdline);
	/* HTTPS interception (aj.ca=1, boot.c): the CA bundle with netd's CA,
	 * staged at /.agentjail (bound over the root's) or in the image's /etc
	 * layer, read-only at each of its names: the overlay would copy up a
	 * write there, which the bind shows */
	if (strstr(cmdline, " aj.ca=1")) {
		static const char ca[] = "etc/ssl/certs/ca-certificates.crt";
		const char *src = blk ? ca : ".agentjail/ca-certificates.crt";
		for (int i = blk; i < 2; i++)
			bind_ro(newroot, src, i ? ca : src, 0);
	}
	close(newroot);
	newroot = -1;
}

/* The guest's cgroup2 tree, in the initramfs (out of the commands' view
 * after the switch of roots): "cmd" holds every agent and its commands,
 * each exec's in a cgroup of its own below (agent_cpu.c: its CPU time)
 * (--pids, aj.pids=N: its pids.max, the agent one of them), "tree" an
 * agent that froze "cmd" for a snapshot's copy (agent.c op "tree").
 * Returns the root's fd; *procs is cmd's cgroup.procs. */
static int guest_cgroups(const char *cmdline, int *procs)
{
	char pids[24];
	unsigned long n = strtoul(arg(cmdline, "pids", pids, sizeof(pids), "0"), NULL, 10);
	mkdir("/cg", 0700);
	/* nsdelegate: a command in a cgroup namespace of its own (a user
	 * namespace's root may make one) can't write cmd's pids.max or freeze */
	must_mount("cgroup2", "/cg", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, "nsdelegate");
	int fd = open("/cg/cgroup.subtree_control", O_WRONLY | O_CLOEXEC);
	if (n && (fd < 0 || write(fd, "+pids", 5) != 5))
		die("cannot enable", "the pids controller");
	if (fd >= 0)
		close(fd);
	if (mkdir("/cg/cmd", 0755) < 0 || mkdir("/cg/tree", 0755) < 0)
		die("cannot create", "/cg/cmd and /cg/tree");
	snprintf(pids, sizeof(pids), "%lu", n + 1);
	fd = n ? open("/cg/cmd/pids.max", O_WRONLY | O_CLOEXEC) : -2;
	if (fd == -1 || (n && write(fd, pids, strlen(pids)) != (ssize_t)strlen(pids)))
		die("cannot set", "pids.max");
	if (fd >= 0)
		close(fd);
	if ((*procs = open("/cg/cmd/cgroup.procs", O_WRONLY | O_CLOEXEC)) < 0)
		die("cannot open", "/cg/cmd/cgroup.procs");
	int root = open("/cg", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		die("cannot open", "/cg");
	return root;
}

/* A file of the cgroup tree has the line want ("frozen 1"...). */
static bool cg_has(int root, const char *file, const char *want)
{
	char buf[256];
	int fd = openat(root, file, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, want) != NULL;
}

/* After an agent ended: "cmd" frozen with no agent in "tree" left (it died
 * mid-walk, else it thawed "cmd" itself) is thawed. The freeze is read
 * before "tree": an agent joins "tree" before it freezes. */
static void thaw_orphaned(int root)
{
	if (!cg_has(root, "cmd/cgroup.freeze", "1") ||
	    cg_has(root, "tree/cgroup.events", "populated 1"))
		return;
	int fd = openat(root, "cmd/cgroup.freeze", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		say("cannot thaw", "/cg/cmd", errno);
	if (fd >= 0)
		close(fd);
}

static unsigned long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000;
}

/* pid is stopped (a SIGSTOP, or a tracer's stop): /proc/PID/stat's state. */
static bool is_stopped(pid_t pid)
{
	char path[32], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/* The network (aj.net=IP/PREFIX,GW: --net open or --allow, net.c on the
 * host): the NIC's modules, eth0 addressed and up, the default route via
 * the host's side of the /30 (nicup.c, as the agent does for a restored
 * VM's hot-plugged NIC). The loopback is up either way, as at level 1. */
static void setup_net(const char *cmdline)
{
	errno = -aj_nic_link_up("lo");
	if (errno)
		die("cannot bring up", "lo");
	char v[64];
	if (!arg(cmdline, "net", v, sizeof(v), NULL))
		return;
	char *pre = strchr(v, '/'), *gw = strchr(v, ',');
	struct in_addr ip, via;
	unsigned prefix = pre ? (unsigned)strtoul(pre + 1, NULL, 10) : 0;
	if (!pre || !gw || (*pre = '\0', *gw = '\0', inet_pton(AF_INET, v, &ip) != 1) ||
	    inet_pton(AF_INET, gw + 1, &via) != 1 || prefix < 1 || prefix > 32) {
		errno = EINVAL;
		die("bad", "aj.net=");
	}
	static const char *const nic[] = {"failover", "net_failover", "virtio_net"};
	load_modules(nic, sizeof(nic) / sizeof(nic[0]));
	const char *step;
	errno = -aj_nic_up("eth0", ip, prefix, via, 2000, &step);
	if (errno)
		die("cannot bring up eth0:", step);
}

int main(void)
{
	if (getpid() != 1)
		return 2;
	mount("dev", "/dev", "devtmpfs", MS_NOSUID, NULL);
	int con = open("/dev/console", O_RDWR | O_NOCTTY);
	if (con >= 0 && con != 2) {
		dup2(con, 0), dup2(con, 1), dup2(con, 2);
		if (con > 2)
			close(con);
	}
	mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount("sys", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	static char cmdline[4096] = " ";
	int cf = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = cf >= 0 ? read(cf, cmdline + 1, sizeof(cmdline) - 2) : -1;
	cmdline[n > 0 ? n + 1 : 1] = '\0';
	if (cf >= 0)
		close(cf);
	if (strstr(cmdline, " aj.canary=1")) { /* the accelerator's probe (vm.c) */
		say("canary ok", "", 0);
		reboot(RB_POWER_OFF);
	}
	load_modules(modules, sizeof(modules) / sizeof(modules[0]));
	if (strstr(cmdline, " aj.root=blk"))
		load_modules(blk_modules, sizeof(blk_modules) / sizeof(blk_modules[0]));
	if (strstr(cmdline, " aj.pci=1"))
		load_modules(pci_modules, sizeof(pci_modules) / sizeof(pci_modules[0]));
	setup_root(cmdline);
	setup_net(cmdline);
	int cg, cgroot = guest_cgroups(cmdline, &cg);
	char nbuf[8];
	unsigned long nports = strtoul(arg(cmdline, "ports", nbuf, sizeof(nbuf), "1"), NULL, 10);
	if (nports < 1 || nports > MAX_PORTS)
		nports = 1;
	int port[MAX_PORTS];
	pid_t serving[MAX_PORTS] = {0}; /* the agent on each port, 0: waiting */
	/* stopped_agents: a busy port's input is looked at from look[k] on (a
	 * running agent reads it itself); after its stopped agent was killed,
	 * what comes on it is dropped until it is quiet from drop[k] on (a
	 * new agent would read the rest of a frame as a request) */
	unsigned long long look[MAX_PORTS] = {0}, drop[MAX_PORTS] = {0};
	/* a given-up port the host makes anew (init_reset.c): its filler and
	 * reset read by init once no agent is on it */
	static port_reset rs[MAX_PORTS];
	for (unsigned long k = 0; k < nports; k++) {
		char name[32];
		if (k)
			snprintf(name, sizeof(name), "%s.%lu", PORT_NAME, k);
		else
			snprintf(name, sizeof(name), "%s", PORT_NAME);
		port[k] = open_port(name);
	}
	int agent = open(AGENT, O_RDONLY | O_CLOEXEC);
	if (agent < 0)
		die("cannot open", AGENT);
	/* switch_root: the overlay becomes / (the initramfs stays below, unseen) */
	if (chdir("/newroot") < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 ||
	    chdir("/") < 0)
		die("cannot enter", "/newroot");
	signal(SIGPIPE, SIG_IGN);
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die("cannot make", "a signalfd");
	for (;;) {
		/* a port with no agent: polled for the host's next request; one
		 * with an agent: for input it leaves unread (stopped_agents) */
		struct pollfd pf[MAX_PORTS + 1];
		unsigned long long t = now_ms();
		int tmo = -1;
		for (unsigned long k = 0; k < nports; k++) {
			bool later = serving[k] && look[k] > t;
			pf[k] = (struct pollfd){later ? -1 : port[k], POLLIN, 0};
			if (later && (tmo < 0 || look[k] - t < (unsigned long long)tmo))
				tmo = (int)(look[k] - t);
		}
		pf[nports] = (struct pollfd){sfd, POLLIN, 0};
		if (poll(pf, nports + 1, tmo) < 0 && errno != EINTR)
			die("cannot poll", "the agent ports");
		t = now_ms();
		for (unsigned long k = 0; k < nports; k++) {
			if (!pf[k].revents)
				continue;
			if (serving[k]) {
				/* stopped_agents: the host wrote to an agent a command
				 * stopped (a request, bytes, the host's stop after its
				 * cut-off): it would never read them; killed, its port
				 * then free (and "cmd" thawed if it froze it) */
				if ((pf[k].revents & POLLIN) && is_stopped(serving[k])) {
					kill(serving[k], SIGKILL);
					drop[k] = t + 500;
				}
				look[k] = t + 200;
				continue;
			}
			if (!(pf[k].revents & POLLIN)) { /* the host's end is not connected */
				sleep_ms(10);
				continue;
			}
			/* the killed agent's stream dropped (until quiet), or the
			 * host's filler read: what comes first, init's */
			unsigned char in[4096];
			size_t used = 0;
			int rr = 0;
			if (drop[k] && drop[k] <= t && !rs[k].have) {
				/* quiet: zeros that ended the dropped stream are no filler */
				drop[k] = 0;
				rs[k].zeros = 0;
			}
			if (drop[k] > t || aj_reset_busy(&rs[k])) {
				ssize_t got = read(port[k], in, sizeof(in));
				rr = got > 0 ? aj_reset_scan(&rs[k], in, (size_t)got, &used) : 0;
				if (drop[k] > t || rr < 0)
					drop[k] = t + 500;
				if (rr != 1)
					continue;
			} else if (read(port[k], in, 1) != 1) {
				continue;
			} else if (!in[0]) { /* the host's filler begins */
				rs[k].zeros = 1;
				continue;
			}
			/* the agent: for the request whose first byte init read, or
			 * (a reset read whole) after init's answer, for a hello */
			char start[32] = AJ_AGENT_START_ENV "=hello";
			if (rr != 1)
				snprintf(start, sizeof(start), AJ_AGENT_START_ENV "=%u", in[0]);
			drop[k] = 0;
			pid_t a = fork();
			if (a == 0) {
				sigprocmask(SIG_UNBLOCK, &chld, NULL);
				char *argv[] = {"agentjail-agent", "cg", NULL},
				     *envp[] = {start, NULL};
				/* the agent and its commands in "cmd" (--pids: the agent
				 * is one), the cgroup tree's root its fd 3 */
				if (write(cg, "0", 1) != 1 || dup2(port[k], 0) < 0 ||
				    dup2(port[k], 1) < 0 ||
				    (cgroot == 3 ? fcntl(3, F_SETFD, 0) : dup2(cgroot, 3)) < 0)
					_exit(1);
				if (rr == 1 && aj_reset_ack(1, &rs[k]) < 0)
					_exit(1);
				fexecve(agent, argv, envp);
				_exit(127);
			}
			rs[k] = (port_reset){0};
			if (a < 0)
				die("cannot fork", AGENT);
			serving[k] = a;
		}
		if (pf[nports].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si))
				;
		}
		/* reap everything; a port whose agent ended waits for the next request */
		pid_t w;
		bool agent_ended = false;
		while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
			for (unsigned long k = 0; k < nports; k++)
				if (serving[k] == w)
					serving[k] = 0, agent_ended = true;
		if (agent_ended)
			thaw_orphaned(cgroot);
	}
}
