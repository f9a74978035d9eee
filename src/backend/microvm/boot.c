/* SPDX-License-Identifier: MIT */
/* The boot of a level-3 microVM (boot.h), for a one-shot run (run.c) and a
 * sandbox of the service (box.c). A private directory holds the staged root (the host's /usr and
 * the harmless /etc entries, bound read-only in virtiofsd's own mount namespace, and the
 * synthesized /etc files), the VM's sockets and its console. Two virtiofsd serve the root
 * (read-only, as an unused uid) and the workspace (as its owner, never host root); qemu runs
 * confined as the unused uid with -sandbox on. The command's stdio, signals and exit go through the
 * guest's agentjail-agent on virtio-serial ports (agent_proto.h), one agent per request on each
 * port (guest/init.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_frame.h"
#include "etc.h"
#include "mask.h"
#include "boot.h"
#include "rootimg.h"
#include "snap.h"
#include "microvm.h"
#include "protect.h"
#include "redact.h"
#include "userns.h"
#include "util.h"

#define MIN_MEMORY (128ULL << 20)
#define DEFAULT_MEMORY (512ULL << 20)
/* the VMM's host cgroup: the guest's RAM and this for qemu's own (TCG's
 * code buffers, its binary's pages) and virtiofsd's (docs/levels.md) */
#define VMM_OVERHEAD (256ULL << 20)
#define VMM_PIDS 512
#define BOOT_TIMEOUT_MS 60000ULL

static unsigned long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000;
}

void aj_mv_warn(aj_mv_vm *m, const char *msg)
{
	if (!m->p->quiet && m->hooks && m->hooks->warn)
		m->hooks->warn(m->hooks->ctx, msg);
}

/* What this first slice of level 3 does not do yet stops the run (125). */
static int refuse(const aj_policy *p, bool need_argv, aj_error *err)
{
	const char *what = p->n_publish		     ? "--publish"
			   : p->n_binds		     ? "--ro/--rw binds"
			   : p->tty == AJ_TTY_ALWAYS ? "--tty"
			   : p->seccomp_profile	     ? "--seccomp-profile"
			   : p->uid || p->gid	     ? "--user"
						     : NULL;
	if (what) {
		aj_err(err, ENOTSUP, "%s: not available with --isolation microvm yet", what);
		aj_err_hint(err, "use --isolation process for it (docs/levels.md, level 3)");
		if (err) { /* the service's answer */
			err->status = 501;
			snprintf(err->api_code, sizeof(err->api_code), "%s", "not_supported");
		}
		return -ENOTSUP;
	}
	if (need_argv && (!p->argv || !p->argv[0]))
		return aj_err(err, EINVAL, "no command given (agentjail run -- COMMAND)");
	if (p->memory && p->memory < MIN_MEMORY) {
		aj_err(err, EINVAL,
		       "--memory: a microVM needs at least 128 MiB (its kernel's own)");
		aj_err_hint(err, "give --memory 128m or more");
		return -EINVAL;
	}
	return 0;
}

/* ---- the staged root ---- */

static int hold(aj_mv_vm *m, const char *src, const char *rel, bool dir, aj_error *err)
{
	if (m->rootfs.n >= AJ_ARRAY_SIZE(m->rootfs.bind) ||
	    m->n_holders + 2 > AJ_ARRAY_SIZE(m->holders))
		return aj_err(err, E2BIG, "microvm: too many binds");
	char *onto = aj_asprintf("%s/%s", m->root, rel), *s = strdup(src);
	if (!onto || !s) {
		free(onto), free(s);
		return aj_err(err, ENOMEM, "microvm");
	}
	m->holders[m->n_holders++] = onto;
	m->holders[m->n_holders++] = s;
	int r = dir ? aj_mkdir_p(onto, 0755) : aj_write_file(onto, "", 0644);
	if (r < 0)
		return aj_err(err, -r, "microvm: cannot create %s", onto);
	size_t i = m->rootfs.n++;
	m->rootfs.bind[i] = s, m->rootfs.onto[i] = onto, m->rootfs.ro[i] = true;
	return 0;
}

/* host path -> the same place in the staged root: a symlink as it is, a
 * directory or file bound read-only */
static int stage_host(aj_mv_vm *m, const char *path, aj_error *err)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	char dst[PATH_MAX];
	snprintf(dst, sizeof(dst), "%s%s", m->root, path);
	char *slash = strrchr(dst, '/');
	*slash = '\0';
	(void)aj_mkdir_p(dst, 0755);
	*slash = '/';
	if (S_ISLNK(st.st_mode)) {
		char t[PATH_MAX];
		ssize_t n = readlink(path, t, sizeof(t) - 1);
		if (n < 0)
			return 0;
		t[n] = '\0';
		return symlink(t, dst) < 0 && errno != EEXIST
			   ? aj_err(err, errno, "symlink %s", dst)
			   : 0;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return 0;
	return hold(m, path, path + 1, S_ISDIR(st.st_mode), err);
}

static int stage_root(aj_mv_vm *m, aj_error *err)
{
	static const char *const dirs[] = {"proc", "sys", "dev",     "workspace", "root",
					   "home", "run", "var/tmp", "tmp",	  "etc"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(dirs); i++) {
		char d[PATH_MAX];
		snprintf(d, sizeof(d), "%s/%s", m->root, dirs[i]);
		if (aj_mkdir_p(d, 0755) < 0)
			return aj_err(err, errno, "microvm: cannot create %s", d);
		if (!strcmp(dirs[i], "tmp") || !strcmp(dirs[i], "var/tmp"))
			chmod(d, 01777);
		if (!strcmp(dirs[i], "root"))
			chmod(d, 0700);
	}
	/* the staged root itself, idmapped (hold): its files are the root
	 * virtiofsd's own, as the binds below it */
	if (hold(m, m->root, "", true, err) < 0)
		return -1;
	static const char *const sys[] = {"/usr",   "/bin",   "/sbin",	"/lib",
					  "/lib32", "/lib64", "/libx32"};
	int r = 0;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(sys) && r == 0; i++)
		r = stage_host(m, sys[i], err);
	aj_etc_files f;
	if (r == 0 && aj_etc_prepare(m->p, aj_mv_net_resolv(m->net), &f) < 0)
		return aj_err(err, ENOMEM, "microvm: /etc");
	char etc[PATH_MAX];
	snprintf(etc, sizeof(etc), "%s/etc", m->root);
	if (r == 0) {
		r = aj_etc_write_dir(etc, &f, err);
		aj_etc_free(&f);
	}
	for (size_t i = 0; i < aj_etc_allowed_n && r == 0; i++)
		r = stage_host(m, aj_etc_allowed[i], err);
	DIR *d = r == 0 ? opendir("/etc") : NULL;
	struct dirent *de;
	while (d && r == 0 && (de = readdir(d))) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "/etc/%s", de->d_name);
		if (aj_etc_allowed_name(de->d_name))
			r = stage_host(m, path, err);
	}
	if (d)
		closedir(d);
	return r;
}

/* --image/--rootfs: its squashfs, and the initramfs with the /etc layer
 * (rootimg.c) */
static int root_image(aj_mv_vm *m, aj_error *err)
{
	aj_mv_rootimg ri;
	int r = aj_mv_rootimg_make(m->p, m->dir, m->h.initramfs, &ri, err);
	if (r < 0)
		return r;
	snprintf(m->rootimg, sizeof(m->rootimg), "%s", ri.sqfs);
	snprintf(m->h.initramfs, sizeof(m->h.initramfs), "%s", ri.initrd);
	m->etc_hash = ri.etc_hash;
	return 0;
}

/* ---- the VM ---- */

static int make_dirs(aj_mv_vm *m, aj_error *err)
{
	snprintf(m->dir, sizeof(m->dir), AJ_MV_DIR_PREFIX "%d-XXXXXX", getpid());
	if (!mkdtemp(m->dir)) {
		m->dir[0] = '\0';
		return aj_err(err, errno, "microvm: cannot create its directory in /tmp");
	}
	snprintf(m->root, sizeof(m->root), "%s/root", m->dir);
	snprintf(m->vm, sizeof(m->vm), "%s/vm", m->dir);
	snprintf(m->wsd, sizeof(m->wsd), "%s/ws", m->dir);
	snprintf(m->wsws, sizeof(m->wsws), "%s/ws/workspace", m->dir);
	/* dir/ws: where the workspace is bound for its virtiofsd (its owner's) */
	if (chmod(m->dir, 0711) < 0 || mkdir(m->root, 0755) < 0 || mkdir(m->vm, 0700) < 0 ||
	    chown(m->vm, m->base, m->base) < 0 || mkdir(m->wsd, 0700) < 0 ||
	    chown(m->wsd, m->ws_uid, m->ws_gid) < 0 || mkdir(m->wsws, 0700) < 0 ||
	    chown(m->wsws, m->ws_uid, m->ws_gid) < 0)
		return aj_err(err, errno, "microvm: cannot prepare %s", m->dir);
	return 0;
}

/* In the workspace virtiofsd's mount namespace, as host root: level 1's
 * masks over the workspace's secrets (the replacements in dir/masks) and
 * its host-run files bound read-only (protect.h), before virtiofsd serves
 * it. */
static int ws_prepare(void *ctx)
{
	aj_mv_vm *m = ctx;
	char scratch[PATH_MAX];
	snprintf(scratch, sizeof(scratch), "%s/masks", m->dir);
	int r = aj_mask_workspace(m->p, m->wsd, scratch, NULL);
	if (r >= 0 && m->prot)
		r = aj_protect_apply_dir(m->prot, m->wsws, NULL);
	return r < 0 ? -r : 0;
}

/* A listening socket at path that only qemu's uid may connect to: made
 * here and handed to virtiofsd (--fd), which would make it its own uid's. */
static int listen_at(aj_mv_vm *m, const char *path, aj_error *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1) < 0 ||
	    chown(path, m->base, m->base) < 0 || chmod(path, 0600) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return aj_err(err, e, "microvm: socket %s", path);
	}
	return fd;
}

static pid_t virtiofsd(aj_mv_vm *m, aj_mv_spawn *s, const char *sock, const char *src, bool ro,
		       aj_error *err)
{
	char sockopt[PATH_MAX] = "--fd=3", srcopt[PATH_MAX];
	_cleanup_close_ int lfd = listen_at(m, sock, err);
	if (lfd < 0)
		return lfd;
	s->pass_fd = lfd;
	snprintf(srcopt, sizeof(srcopt), "source=%s,cache=none%s", src,
		 ro ? ",no_posix_lock,no_flock" : "");
	char *argv[] = {m->h.virtiofsd, sockopt, "-o", srcopt, NULL};
	s->argv = argv;
	s->log = m->console;
	s->cg = m->have_cg ? &m->cg : NULL;
	return aj_mv_spawn_confined(s, err);
}

static pid_t qemu(aj_mv_vm *m, aj_error *err)
{
	const aj_policy *p = m->p;
	unsigned long long mem = p->memory ? p->memory : DEFAULT_MEMORY;
	mem = (mem + (1ULL << 20) - 1) >> 20; /* MiB */
	unsigned cpus = p->cpu_millis ? (unsigned)((p->cpu_millis + 999) / 1000) : 1;
	char memarg[32], memobj[96], smp[16], append[512], kern[128], initrd[128], con[160],
	    fsr[160], fsw[160], net[64];
	char agent[AJ_MV_MAX_PORTS][160], port[AJ_MV_MAX_PORTS][64];
	snprintf(memarg, sizeof(memarg), "%lluM", mem);
	snprintf(memobj, sizeof(memobj), "memory-backend-memfd,id=mem,size=%lluM,share=on", mem);
	snprintf(smp, sizeof(smp), "%u", cpus);
	snprintf(kern, sizeof(kern), "%s/vmlinux", m->vm);
	snprintf(initrd, sizeof(initrd), "%s/initramfs", m->vm);
	snprintf(con, sizeof(con), "file,id=con,path=%s/console", m->vm);
	snprintf(fsr, sizeof(fsr), "socket,id=fsr,path=%s/root.sock", m->vm);
	snprintf(fsw, sizeof(fsw), "socket,id=fsw,path=%s/ws.sock", m->vm);
	/* the writable layer is guest RAM: --disk caps it; aj.pids counts the
	 * commands and one agent per port (guest/init.c) */
	snprintf(append, sizeof(append),
		 "console=ttyS0 %spanic=-1 tsc_early_khz=%lu aj.disk=%llu aj.pids=%llu aj.ws=%d "
		 "aj.host=%s aj.ports=%u%s%s",
		 getenv("AGENTJAIL_MICROVM_DEBUG") ? "" : "quiet ", m->h.tsc_khz, p->tmp_size,
		 p->pids ? p->pids + m->nports - 1 : 0, p->workspace ? 1 : 0,
		 p->hostname ? p->hostname : AJ_DEFAULT_HOSTNAME, m->nports,
		 m->rootimg[0] ? " aj.root=blk" : "",
		 (aj_mv_net_cmdline(m->net, net, sizeof(net)), net));
	char *argv[64 + 4 * AJ_MV_MAX_PORTS] = {
	    m->h.qemu, "-M", "microvm,memory-backend=mem", "-accel", m->h.kvm ? "kvm" : "tcg",
	    "-cpu", "max", "-m", memarg, "-object", memobj, "-smp", smp, "-nodefaults",
	    "-no-user-config", "-nographic", "-no-reboot",
	    /* no spawning, no setuid, no obsolete calls: qemu's seccomp */
	    "-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
	    "-global", "virtio-mmio.force-legacy=false", "-chardev", con, "-serial", "chardev:con",
	    "-device", "virtio-serial-device", "-device", "virtio-rng-device", "-kernel", kern,
	    "-initrd", initrd, "-append", append};
	size_t n = 0;
	while (argv[n])
		n++;
	/* the root: the image's squashfs on virtio-blk (rootimg.c), else the
	 * staged host view by virtiofs */
	char img[128], drive[192];
	snprintf(img, sizeof(img), "%s/rootfs.img", m->vm);
	snprintf(drive, sizeof(drive), "file=%s,format=raw,readonly=on,if=none,id=root", img);
	argv[n++] = m->rootimg[0] ? "-drive" : "-chardev";
	argv[n++] = m->rootimg[0] ? drive : fsr;
	argv[n++] = "-device";
	argv[n++] = m->rootimg[0] ? "virtio-blk-device,drive=root"
				  : "vhost-user-fs-device,chardev=fsr,tag=root";
	/* the agent's ports: aj.agent, then aj.agent.1 ... (a socket each) */
	for (unsigned k = 0; k < m->nports; k++) {
		snprintf(agent[k], sizeof(agent[k]),
			 "socket,id=ag%u,path=%s/agent%u.sock,server=on,wait=off", k, m->vm, k);
		if (k)
			snprintf(port[k], sizeof(port[k]),
				 "virtserialport,chardev=ag%u,name=aj.agent.%u", k, k);
		else
			snprintf(port[k], sizeof(port[k]),
				 "virtserialport,chardev=ag0,name=aj.agent");
		argv[n++] = "-chardev";
		argv[n++] = agent[k];
		argv[n++] = "-device";
		argv[n++] = port[k];
	}
	if (p->workspace) {
		argv[n++] = "-chardev";
		argv[n++] = fsw;
		argv[n++] = "-device";
		argv[n++] = "vhost-user-fs-device,chardev=fsw,tag=ws";
	}
	/* a snapshot's VM (snap.c): its monitor, and the state it restores */
	char qmp[128];
	snprintf(qmp, sizeof(qmp), "unix:%s/qmp.sock,server=on,wait=off", m->vm);
	if (m->snap) {
		aj_mv_snap_path(m->dir, argv, n, m->rootimg, m->etc_hash, m->snapfile,
				sizeof(m->snapfile));
		m->snapfd = open(m->snapfile, O_RDONLY | O_CLOEXEC);
		m->restored = m->snapfd >= 0;
		argv[n++] = "-qmp";
		argv[n++] = qmp;
		if (m->restored) {
			argv[n++] = "-incoming";
			argv[n++] = "fd:3";
		}
	}
	/* the NIC: the tap made in the VM's own network namespace (net.c) */
	int nsfd, tap = aj_mv_net_fds(m->net, &nsfd);
	if (tap >= 0) {
		argv[n++] = "-netdev";
		argv[n++] = "tap,id=net0,fd=3";
		argv[n++] = "-device";
		argv[n++] = "virtio-net-device,netdev=net0";
	}
	argv[n] = NULL;
	aj_write_file(kern, "", 0644);
	aj_write_file(initrd, "", 0644);
	aj_mv_spawn s = {.argv = argv,
			 .uid = m->base,
			 .gid = m->base,
			 .log = m->console,
			 .n = 2,
			 .idmap = -1,
			 .pass_fd = tap,
			 .netns = nsfd,
			 .cg = m->have_cg ? &m->cg : NULL};
	s.bind[0] = m->h.kernel, s.onto[0] = kern, s.ro[0] = true;
	s.bind[1] = m->h.initramfs, s.onto[1] = initrd, s.ro[1] = true;
	if (m->restored)
		s.pass_fd = m->snapfd;
	if (m->rootimg[0]) {
		aj_write_file(img, "", 0644);
		s.bind[s.n] = m->rootimg, s.onto[s.n] = img, s.ro[s.n++] = true;
	}
	return aj_mv_spawn_confined(&s, err);
}

/* The socket appears once virtiofsd (or qemu) listens. */
static int wait_socket(const char *path, pid_t pid, unsigned long long deadline)
{
	struct stat st;
	while (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		if (now_ms() > deadline || waitpid(pid, NULL, WNOHANG) == pid)
			return -ETIMEDOUT;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

static int connect_agent(aj_mv_vm *m, unsigned k, unsigned long long deadline)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s/agent%u.sock", m->vm, k);
	int r = wait_socket(a.sun_path, m->pids[0], deadline);
	if (r < 0)
		return r;
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
		r = -errno;
		if (fd >= 0)
			close(fd);
		/* bound, not listening yet */
		if (r != -ECONNREFUSED || now_ms() > deadline)
			return r;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

/* The console's last lines, for an error. */
void aj_mv_console_tail(aj_mv_vm *m, char *out, size_t len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/console", m->vm);
	_cleanup_free_ char *c = NULL;
	size_t n = 0;
	out[0] = '\0';
	if (aj_read_file(path, &c, &n) < 0 || !n)
		return;
	while (n && (c[n - 1] == '\n' || c[n - 1] == '\r'))
		c[--n] = '\0';
	const char *t = c + n;
	for (int lines = 0; t > c && lines < 3; t--)
		if (t[-1] == '\n')
			lines++;
	snprintf(out, len, "%s", t);
	for (char *q = out; *q; q++)
		if (*q == '\n' || *q == '\r')
			*q = ' ';
}

/* The VMM's cgroup on the host: the guest's RAM and the VMM's overhead,
 * the vCPUs' quota, a bound on its threads. Fails closed as level 1's
 * limits do (exit 125), unless --limits best-effort. */
static int make_cgroup(aj_mv_vm *m, aj_error *err)
{
	const aj_policy *p = m->p;
	aj_policy q = *p; /* a shallow copy: only the limits differ */
	q.memory = (p->memory ? p->memory : DEFAULT_MEMORY) + VMM_OVERHEAD;
	q.pids = VMM_PIDS; /* --pids is the guest's */
	unsigned r32 = 0;
	if (getrandom(&r32, sizeof(r32), 0) != sizeof(r32))
		r32 = (unsigned)now_ms();
	char name[64];
	snprintf(name, sizeof(name), "agentjail-%d-%08x", (int)getpid(), r32);
	int r = aj_cgroup_create(&m->cg, name, &q, err);
	if (r < 0)
		return r;
	m->have_cg = m->cg.n > 0;
	/* a box's pause: the VMM frozen (its cgroup's freezer) */
	if (m->have_cg && m->freezer && (r = aj_cgroup_add_freezer(&m->cg, err)) < 0)
		return r;
	if (m->cg.missing) {
		char names[64], msg[700];
		aj_cgroup_limit_names(m->cg.missing, names, sizeof(names));
		snprintf(msg, sizeof(msg), "limits NOT enforced (--limits best-effort): %s: %s",
			 names, m->cg.why);
		aj_mv_warn(m, msg);
	}
	return 0;
}

static int start(aj_mv_vm *m, aj_error *err)
{
	int r = make_dirs(m, err);
	if (r == 0)
		r = make_cgroup(m, err);
	if (r == 0)
		r = aj_mv_net_prepare(&m->net, m->p, err);
	/* an image: its squashfs (rootimg.c); else the host's view, staged */
	if (r == 0)
		r = m->p->rootfs ? root_image(m, err) : stage_root(m, err);
	char log[PATH_MAX], sock[PATH_MAX];
	snprintf(log, sizeof(log), "%s/console", m->vm);
	m->console = r == 0 ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;
	if (r == 0 && (m->console < 0 || fchown(m->console, m->base, m->base) < 0))
		r = aj_err(err, errno, "microvm: %s", log);
	unsigned long long deadline = now_ms() + 10000;
	if (r == 0 && !m->rootimg[0]) {
		snprintf(sock, sizeof(sock), "%s/root.sock", m->vm);
		m->rootfs.uid = m->rootfs.gid = m->base;
		m->rootfs.umask = 077;
		/* the host's files as the root's virtiofsd's own (it runs as base):
		 * overlayfs in the guest opens lower files O_NOATIME, which only
		 * their owner may */
		char map[64];
		snprintf(map, sizeof(map), "0 %u %u\n", (unsigned)m->base, AJ_UID_RANGE);
		if ((m->rootfs.idmap = aj_userns_make_fd(map, map, err)) < 0)
			r = m->rootfs.idmap;
	}
	if (r == 0 && !m->rootimg[0]) {
		m->pids[1] = virtiofsd(m, &m->rootfs, sock, m->root, true, err);
		r = m->pids[1] < 0 ? (int)m->pids[1] : 0;
	}
	if (r == 0 && m->p->workspace) {
		snprintf(sock, sizeof(sock), "%s/ws.sock", m->vm);
		aj_mv_spawn s = {
		    .uid = m->ws_uid, .gid = m->ws_gid, .n = 1, .umask = 077, .idmap = -1};
		/* the workspace, bound where its owner can reach it (its parents
		 * may be closed to it) */
		s.bind[0] = m->p->workspace, s.onto[0] = m->wsws, s.ro[0] = false;
		s.prepare = ws_prepare, s.ctx = m;
		if ((r = aj_protect_prepare(m->p, &m->prot, err)) == 0)
			m->pids[2] = virtiofsd(m, &s, sock, m->wsws, false, err);
		else
			m->pids[2] = 0;
		if (r == 0)
			r = m->pids[2] < 0 ? (int)m->pids[2] : 0;
	}
	if (r == 0)
		r = aj_mv_net_setup(m->net, m->p, err);
	if (r == 0) {
		m->pids[0] = qemu(m, err);
		r = m->pids[0] < 0 ? (int)m->pids[0] : 0;
	}
	for (unsigned k = 0; r == 0 && k < m->nports; k++)
		if ((m->ports[k] = connect_agent(m, k, deadline)) < 0) {
			char tail[512];
			aj_mv_console_tail(m, tail, sizeof(tail));
			r = aj_err(err, -m->ports[k], "microvm: qemu did not start%s%s",
				   *tail ? ": " : "", tail);
		}
	return r;
}

void aj_mv_teardown(aj_mv_vm *m)
{
	for (unsigned k = 0; k < m->nports; k++)
		if (m->ports[k] >= 0) {
			close(m->ports[k]);
			m->ports[k] = -1;
		}
	if (m->console >= 0)
		close(m->console);
	if (m->snapfd >= 0)
		close(m->snapfd);
	m->snapfd = -1;
	if (m->rootfs.idmap >= 0)
		close(m->rootfs.idmap);
	if (m->have_cg) /* a paused VM's processes die only once thawed */
		aj_cgroup_thaw(&m->cg);
	/* qemu first: each virtiofsd then sees its guest go and ends, its
	 * process in its own pid namespace (a child) before it */
	if (m->pids[0] > 0) {
		kill(m->pids[0], SIGKILL);
		waitpid(m->pids[0], NULL, 0);
	}
	unsigned long long until = now_ms() + 2000;
	for (size_t i = 1; i < AJ_ARRAY_SIZE(m->pids); i++) {
		while (m->pids[i] > 0 && now_ms() < until &&
		       waitpid(m->pids[i], NULL, WNOHANG) == 0) {
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, NULL);
		}
		if (m->pids[i] > 0 && waitpid(m->pids[i], NULL, WNOHANG) == 0) {
			kill(m->pids[i], SIGKILL); /* its child gets its death signal */
			waitpid(m->pids[i], NULL, 0);
		}
	}
	if (m->have_cg) {
		aj_cgroup_destroy(&m->cg); /* kills what is left of the VMM */
		m->have_cg = false;
	}
	aj_mv_net_teardown(&m->net);
	/* the binds were in the VMM's mount namespaces, gone with them: the
	 * directory holds only what we made */
	/* AGENTJAIL_MICROVM_DEBUG=1: the kernel's messages in dir/vm/console, kept */
	if (m->dir[0] && !getenv("AGENTJAIL_MICROVM_DEBUG"))
		(void)aj_rm_tree_at(AT_FDCWD, m->dir, 16);
	for (size_t i = 0; i < m->n_holders; i++)
		free(m->holders[i]);
	aj_protect_release(m->prot);
}

/* A guest OOM kill: the command died of SIGKILL and the guest kernel said so. */
bool aj_mv_guest_oom(aj_mv_vm *m)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/console", m->vm);
	_cleanup_free_ char *c = NULL;
	return aj_read_file(path, &c, NULL) == 0 && strstr(c, "Out of memory");
}

static int ids(aj_mv_vm *m, aj_error *err)
{
	aj_idmap im;
	int r = aj_userns_plan(&im, 0, 0, err);
	if (r < 0)
		return r;
	m->base = im.host_base;
	m->ws_uid = m->ws_gid = m->base;
	struct stat st;
	if (m->p->workspace && stat(m->p->workspace, &st) == 0 && st.st_uid != 0) {
		/* never host root: a root-owned workspace gets the unused ids */
		m->ws_uid = st.st_uid;
		m->ws_gid = st.st_gid != 0 ? st.st_gid : m->base;
	}
	return 0;
}

void aj_mv_vm_init(aj_mv_vm *m, const aj_policy *p, const aj_run_hooks *hooks, unsigned nports)
{
	memset(m, 0, sizeof(*m));
	m->p = p;
	m->hooks = hooks;
	m->nports = nports < 1 ? 1 : nports > AJ_MV_MAX_PORTS ? AJ_MV_MAX_PORTS : nports;
	for (unsigned k = 0; k < AJ_MV_MAX_PORTS; k++)
		m->ports[k] = -1;
	m->console = -1;
	m->rootfs.idmap = -1;
	m->snapfd = -1;
}

int aj_mv_boot(aj_mv_vm *m, bool need_argv, aj_error *err)
{
	int r = refuse(m->p, need_argv, err);
	if (r == 0)
		r = aj_mv_host_find(&m->h, err);
	if (r < 0)
		return r;
	if (!m->h.kvm && !m->p->quiet) {
		char msg[400];
		snprintf(msg, sizeof(msg), "microvm: TCG (emulated CPU, slow): %s", m->h.accel_why);
		aj_mv_warn(m, msg);
	}
	if ((r = ids(m, err)) == 0)
		r = start(m, err);
	return r;
}
