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
#include <linux/filter.h>
#include <linux/openat2.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_frame.h"
#include "etc.h"
#include "mask.h"
#include "mount.h"
#include "net_addr.h"
#include "boot.h"
#include "console.h"
#include "rootimg.h"
#include "snap.h"
#include "microvm.h"
#include "protect.h"
#include "redact.h"
#include "sysfilter.h"
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

json_t *aj_mv_exec_rlimits(const aj_policy *p, json_t *q)
{
	json_t *rl = json_pack("{s:[i,i]}", "core", 0, 0);
	const struct {
		const char *name;
		unsigned long long v;
	} lim[] = {{"nofile", p->nofile}, {"fsize", p->fsize}};
	for (size_t k = 0; rl && k < AJ_ARRAY_SIZE(lim); k++)
		if (lim[k].v && json_object_set_new(rl, lim[k].name,
						    json_pack("[I,I]", (json_int_t)lim[k].v,
							      (json_int_t)lim[k].v)) < 0) {
			json_decref(rl);
			rl = NULL;
		}
	if (!q || !rl || json_object_set_new(q, "rlimits", rl) < 0) { /* (set_new takes rl) */
		if (!q)
			json_decref(rl);
		json_decref(q); /* never a request without them */
		return NULL;
	}
	return q;
}

json_t *aj_mv_exec_profile(const aj_mv_vm *m, json_t *q)
{
	if (q && m->profile &&
	    json_object_set_new(q, "seccomp_profile", json_string(m->profile)) < 0) {
		json_decref(q);
		return NULL;
	}
	return q;
}

/* --seccomp-profile: parsed and compiled on the host by level 1's code
 * (seccomp_profile.c: a bad one is 125 with its error, before anything
 * starts), sent with each exec as the x86_64 BPF program, 16 hex digits
 * an instruction (code, jt, jf, k), for the guest's agent to load
 * (agent_seccomp.c). */
static int compile_profile(aj_mv_vm *m, aj_error *err)
{
	if (!aj_policy_has_profile(m->p))
		return 0;
	aj_bpf bpf;
	int r = aj_seccomp_compile_profile(m->p, &bpf, err);
	if (r < 0) {
		aj_err_hint(err, "fix the profile (docs/cli.md, --seccomp-profile)");
		return r;
	}
	if (bpf.len > BPF_MAXINSNS) { /* the guest kernel's bound: refused before a boot */
		aj_err(err, E2BIG, "--seccomp-profile: %zu BPF instructions, at most %d", bpf.len,
		       BPF_MAXINSNS);
		aj_err_hint(err, "merge its rules (one rule may list many syscalls)");
		aj_bpf_free(&bpf);
		return -E2BIG;
	}
	char *hex = malloc(bpf.len * 16 + 1);
	if (hex)
		hex[0] = '\0';
	for (size_t i = 0; hex && i < bpf.len; i++)
		snprintf(hex + i * 16, 17, "%04x%02x%02x%08x", bpf.insns[i].code, bpf.insns[i].jt,
			 bpf.insns[i].jf, bpf.insns[i].k);
	aj_bpf_free(&bpf);
	if (!hex)
		return aj_err(err, ENOMEM, "--seccomp-profile");
	m->profile = hex;
	return 0;
}

/* What this first slice of level 3 does not do yet stops the run (125). */
/* dest is path or below it */
static bool below(const char *dest, const char *path)
{
	size_t n = strlen(path);
	return !strncmp(dest, path, n) && (dest[n] == '\0' || dest[n] == '/');
}

/* --ro/--rw: a --ro bind is served by the root's virtiofsd (an image's:
 * by one of the --ro binds' own), read-only there and in the guest, a --rw
 * one by a virtiofsd of its own, which shares a directory; none over the
 * guest's kernel file systems or the workspace (another virtiofs). */
static int check_binds(const aj_policy *p, aj_error *err)
{
	unsigned rw = 0;
	for (size_t i = 0; i < p->n_binds; i++) {
		const aj_bind *b = &p->binds[i];
		struct stat st;
		static const char *const kernel[] = {"/proc", "/sys", "/dev", AJ_WORKSPACE_DIR};
		for (size_t k = 0; k < AJ_ARRAY_SIZE(kernel); k++)
			if (below(b->dest, kernel[k]) || !strcmp(b->dest, "/")) {
				aj_err(err, EINVAL,
				       "--ro/--rw %s: not at %s or below it with --isolation "
				       "microvm",
				       b->dest, !strcmp(b->dest, "/") ? "/" : kernel[k]);
				aj_err_hint(err, "bind it elsewhere (e.g. /mnt/NAME)");
				return -EINVAL;
			}
		/* a --ro one's mount point would be in the host's directory (an
		 * image's are its own: the guest makes it in its overlay) */
		static const char *const sys[] = {"/usr",   "/bin",   "/sbin",	 "/lib",
						  "/lib32", "/lib64", "/libx32", "/etc"};
		for (size_t k = 0; k < AJ_ARRAY_SIZE(sys) && !b->writable && !p->rootfs; k++)
			if (below(b->dest, sys[k])) {
				aj_err(err, EINVAL,
				       "--ro %s: not below %s with --isolation microvm (the "
				       "host's, read-only in the VM)",
				       b->dest, sys[k]);
				aj_err_hint(err, "bind it elsewhere (e.g. /mnt/NAME)");
				return -EINVAL;
			}
		/* a --ro one staged on the host's view is mounted by its path, which
		 * must not lead through another --ro bind's content (its links) */
		for (size_t j = 0; j < p->n_binds && !b->writable && !p->rootfs; j++)
			if (j != i && !p->binds[j].writable && below(b->dest, p->binds[j].dest)) {
				aj_err(err, EINVAL,
				       "--ro %s: not at or below another --ro bind (%s) with "
				       "--isolation microvm",
				       b->dest, p->binds[j].dest);
				aj_err_hint(err, "bind them side by side (e.g. /mnt/A and /mnt/B)");
				return -EINVAL;
			}
		if (!b->writable)
			continue;
		if (stat(b->src, &st) < 0)
			return aj_err(err, errno, "--rw %s", b->src);
		if (!S_ISDIR(st.st_mode)) {
			aj_err(
			    err, ENOTDIR,
			    "--rw %s: --isolation microvm shares directories read-write, not files",
			    b->src);
			aj_err_hint(err, "bind its directory, or use --ro for the file");
			return -ENOTDIR;
		}
		if (++rw > AJ_MV_MAX_RW) {
			aj_err(err, E2BIG, "--rw: at most %d with --isolation microvm",
			       AJ_MV_MAX_RW);
			aj_err_hint(err, "bind a common parent directory instead");
			return -E2BIG;
		}
	}
	return 0;
}

static int refuse(const aj_policy *p, bool need_argv, aj_error *err)
{
	int r;
	/* --publish: a run's (publish.c); the service has its ports proxy */
	const char *what = p->n_publish && !need_argv ? "--publish" : NULL;
	if (what) {
		aj_err(err, ENOTSUP, "%s: not available with --isolation microvm yet", what);
		aj_err_hint(err, "use --isolation process for it (docs/levels.md, level 3)");
		if (err) { /* the service's answer */
			err->status = 501;
			snprintf(err->api_code, sizeof(err->api_code), "%s", "not_supported");
		}
		return -ENOTSUP;
	}
	if ((r = check_binds(p, err)) < 0)
		return r;
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

/* src bound read-only at rel of the staged root by the root's virtiofsd's
 * process, idmapped, or from fd (> 0, a --ro bind's: ro_open), which the
 * VM then holds (close_ro_fds) */
static int hold(aj_mv_vm *m, const char *src, const char *rel, bool dir, int fd, aj_error *err)
{
	if (m->rootfs.n >= AJ_ARRAY_SIZE(m->rootfs.bind) ||
	    m->n_holders + 2 > AJ_ARRAY_SIZE(m->holders)) {
		if (fd > 0)
			close(fd);
		return aj_err(err, E2BIG, "microvm: too many binds");
	}
	char *onto = aj_asprintf("%s/%s", m->root, rel), *s = strdup(src);
	if (!onto || !s) {
		free(onto), free(s);
		if (fd > 0)
			close(fd);
		return aj_err(err, ENOMEM, "microvm");
	}
	m->holders[m->n_holders++] = onto;
	m->holders[m->n_holders++] = s;
	int r = dir ? aj_mkdir_p(onto, 0755) : aj_write_file(onto, "", 0644);
	if (r < 0) {
		if (fd > 0)
			close(fd);
		return aj_err(err, -r, "microvm: cannot create %s", onto);
	}
	size_t i = m->rootfs.n++;
	m->rootfs.bind[i] = s, m->rootfs.onto[i] = onto, m->rootfs.ro[i] = true;
	m->rootfs.src_fd[i] = fd > 0 ? fd : 0;
	return 0;
}

static void close_ro_fds(aj_mv_vm *m)
{
	for (size_t i = 0; i < m->rootfs.n; i++)
		if (m->rootfs.src_fd[i] > 0) {
			close(m->rootfs.src_fd[i]);
			m->rootfs.src_fd[i] = 0;
		}
}

/* A --ro bind's source, opened once with no symlink followed anywhere in
 * its path (as level 1's binds, and the shares: share_stat): the root's
 * virtiofsd binds this fd, so a path component swapped for a link since
 * the command line was read is refused here, and one swapped after is not
 * followed. *st: what it is. Returns the fd (> 0), or -errno (125). */
static int ro_open(const aj_bind *b, struct stat *st, aj_error *err)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, b->src, &how, sizeof(how));
	if (fd == 0) { /* 0 is no fd to aj_mv_spawn's src_fd */
		fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
		close(0);
	}
	int e = fd < 0 ? errno : fstat(fd, st) < 0 ? errno : 0;
	if (!e && !S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode))
		e = EINVAL;
	if (!e)
		return fd;
	if (fd >= 0)
		close(fd);
	aj_err(err, e, "--ro %s%s", b->src,
	       e == ELOOP    ? ": a symbolic link in its path (not followed; it changed since "
			       "it was given?)"
	       : e == EINVAL ? ": neither a regular file nor a directory now"
			     : "");
	aj_err_hint(err, "give the real path, e.g. $(realpath PATH), and keep it in place");
	return -e;
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
	return hold(m, path, path + 1, S_ISDIR(st.st_mode), -1, err);
}

/* A --ro bind: in the staged root, served read-only by the root's
 * virtiofsd, bound from the fd ro_open opened and not idmapped (host
 * root's files there the overflow uid's, a 0600 one closed to guest root
 * as to level 1's sandbox root); the guest binds it from there over its
 * overlay, read-only
 * (guest/init.c). Its mount point is made in the staged root only: no
 * symlink on the way (an absolute one would lead out to the host); one
 * below a host directory the root shows was refused (check_binds). */
static int stage_bind(aj_mv_vm *m, const aj_bind *b, aj_error *err)
{
	if (b->writable) /* its own virtiofsd; the guest makes its mount point */
		return 0;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s%s", m->root, b->dest);
	for (char *q = path + strlen(m->root) + 1; (q = strchr(q, '/')); q++) {
		struct stat st;
		*q = '\0';
		bool link = lstat(path, &st) == 0 && !S_ISDIR(st.st_mode);
		*q = '/';
		if (link)
			return aj_err(err, ENOTDIR,
				      "--ro %s: its path passes a link of the VM's root", b->dest);
	}
	struct stat st;
	int fd = ro_open(b, &st, err);
	if (fd < 0)
		return fd;
	char *slash = strrchr(path, '/');
	*slash = '\0';
	int r = aj_mkdir_p(path, 0755);
	*slash = '/';
	if (r < 0) {
		close(fd);
		return aj_err(err, -r, "microvm: cannot create %s", path);
	}
	return hold(m, b->src, b->dest + 1, S_ISDIR(st.st_mode), fd, err);
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
	 * virtiofsd's own, as the host's directories below it (a --ro bind's
	 * are not: stage_bind) */
	if (hold(m, m->root, "", true, -1, err) < 0)
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
	for (size_t i = 0; i < m->p->n_binds && r == 0; i++)
		r = stage_bind(m, &m->p->binds[i], err);
	return r;
}

/* --image/--rootfs: its squashfs, and the initramfs with the /etc layer
 * (rootimg.c) */
static int root_image(aj_mv_vm *m, aj_error *err)
{
	aj_mv_rootimg ri;
	/* the sandbox's resolver in a booted VM's /etc; a snapshot's is every
	 * sandbox's (its agent writes the resolver after the NIC's plug) */
	int r = aj_mv_rootimg_make(m->p, m->dir, m->h.initramfs,
				   m->snap ? NULL : aj_mv_net_resolv(m->net), &ri, err);
	if (r < 0)
		return r;
	snprintf(m->rootimg, sizeof(m->rootimg), "%s", ri.sqfs);
	snprintf(m->h.initramfs, sizeof(m->h.initramfs), "%s", ri.initrd);
	m->etc_hash = ri.etc_hash;
	return 0;
}

/* An image's --ro binds: no root virtiofsd there (the root is a squashfs),
 * so they get a share of their own, dir/root with a mount point rK per --ro
 * bind (its source bound there read-only from its fd, not idmapped, as in
 * the staged root: stage_bind), served read-only by one virtiofsd (tag
 * "ro"); the guest binds rK at its destination, resolved inside the
 * image's root (guest/init.c). */
static int stage_ro_share(aj_mv_vm *m, aj_error *err)
{
	unsigned k = 0;
	for (size_t i = 0; i < m->p->n_binds; i++) {
		const aj_bind *b = &m->p->binds[i];
		struct stat st;
		char rel[16];
		if (b->writable)
			continue;
		if (!k && hold(m, m->root, "", true, -1, err) < 0)
			return -1;
		int fd = ro_open(b, &st, err);
		if (fd < 0)
			return fd;
		snprintf(rel, sizeof(rel), "r%u", k++);
		if (hold(m, b->src, rel, S_ISDIR(st.st_mode), fd, err) < 0)
			return -1;
	}
	return 0;
}

/* The root's virtiofsd: the staged root's, or an image's --ro binds' share. */
static bool root_share(const aj_mv_vm *m)
{
	return !m->rootimg[0] || m->rootfs.n > 0;
}

/* HTTPS interception (net_addr.h): the root's CA bundle with netd's CA,
 * made once netd runs, before qemu starts. A staged root gets it at
 * AJ_ETC_GENERATED_DIR, which the guest's init binds read-only over the
 * root's; an image in its /etc layer (rootimg.c), a cpio of its own
 * appended to the initramfs, which the guest's init binds read-only over
 * itself (aj.ca=1 for both). */
static int stage_ca(aj_mv_vm *m, aj_error *err)
{
	const char *pem = aj_mv_net_ca(m->net);
	if (!pem)
		return aj_err(err, EPROTO, "the network helper gave no CA certificate");
	bool image = m->rootimg[0] != '\0';
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = aj_etc_ca_bundle(m->p->rootfs, image, pem, &text, &len, err);
	if (r < 0)
		return r;
	char dir[PATH_MAX], path[PATH_MAX + 32];
	if (image)
		snprintf(dir, sizeof(dir), "%s/calayer/aj-etc/etc/ssl/certs", m->dir);
	else
		snprintf(dir, sizeof(dir), "%s" AJ_ETC_GENERATED_DIR, m->root);
	snprintf(path, sizeof(path), "%s/ca-certificates.crt", dir);
	if ((r = aj_mkdir_p(dir, 0755)) < 0 || (r = aj_write_file(path, text, 0644)) < 0)
		return aj_err(err, -r, "microvm: cannot write the CA bundle %s", path);
	m->ca = true;
	if (!image)
		return 0;
	static const char list[] = "aj-etc\naj-etc/etc\naj-etc/etc/ssl\naj-etc/etc/ssl/certs\n"
				   "aj-etc/etc/ssl/certs/ca-certificates.crt\n";
	char layer[PATH_MAX];
	snprintf(layer, sizeof(layer), "%s/calayer", m->dir);
	_cleanup_close_ int out = open(m->h.initramfs, O_WRONLY | O_APPEND | O_CLOEXEC);
	r = out < 0 ? -errno : aj_mv_cpio(layer, list, out);
	(void)aj_rm_tree_at(AT_FDCWD, layer, 8);
	return r < 0 ? aj_err(err, -r, "microvm: cannot add the CA bundle to %s", m->h.initramfs)
		     : 0;
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
	    chown(m->vm, m->base, m->base_gid) < 0 || mkdir(m->wsd, 0700) < 0 ||
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
	    chown(path, m->base, m->base_gid) < 0 || chmod(path, 0600) < 0) {
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
	s->no_setid = true;
	return aj_mv_spawn_confined(s, err);
}

/* " aj.binds=rDEST,wDEST..." (r: --ro, w: --rw, the next tag bN) appended
 * at append+len: each destination's bytes beyond [A-Za-z0-9/._-] as %XX. */
static int binds_arg(const aj_policy *p, char *append, size_t size, size_t len)
{
	if (!p->n_binds)
		return 0;
	char *o = append + len, *end = append + size - 1;
	const char *head = " aj.binds=";
	if ((size_t)(end - o) <= strlen(head))
		return -E2BIG;
	o = stpcpy(o, head);
	for (size_t i = 0; i < p->n_binds; i++) {
		if (end - o < 2)
			return -E2BIG;
		if (i)
			*o++ = ',';
		*o++ = p->binds[i].writable ? 'w' : 'r';
		for (const unsigned char *c = (const unsigned char *)p->binds[i].dest; *c; c++) {
			if (end - o < 4)
				return -E2BIG;
			if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			    (*c >= '0' && *c <= '9') || strchr("/._-", *c))
				*o++ = (char)*c;
			else
				o += sprintf(o, "%%%02X", *c);
		}
	}
	*o = '\0';
	return 0;
}

static pid_t qemu(aj_mv_vm *m, aj_error *err)
{
	const aj_policy *p = m->p;
	unsigned long long mem = p->memory ? p->memory : DEFAULT_MEMORY;
	mem = (mem + (1ULL << 20) - 1) >> 20; /* MiB */
	unsigned cpus = p->cpu_millis ? (unsigned)((p->cpu_millis + 999) / 1000) : 1;
	char memarg[32], memobj[128], smp[16], append[2048], kern[128], initrd[128], con[160],
	    fsr[160], fsw[160], net[64];
	char agent[AJ_MV_MAX_PORTS][160], port[AJ_MV_MAX_PORTS][64];
	char fsb[AJ_MV_MAX_RW][160], devb[AJ_MV_MAX_RW][64];
	snprintf(memarg, sizeof(memarg), "%lluM", mem);
	/* a VM that may be saved or is restored: its RAM our memfd (fd 4, snap.c) */
	snprintf(memobj, sizeof(memobj),
		 m->snap ? "memory-backend-file,id=mem,size=%lluM,mem-path=/proc/self/fd/4"
			 : "memory-backend-memfd,id=mem,size=%lluM,share=on",
		 mem);
	snprintf(smp, sizeof(smp), "%u", cpus);
	snprintf(kern, sizeof(kern), "%s/vmlinux", m->vm);
	snprintf(initrd, sizeof(initrd), "%s/initramfs", m->vm);
	/* its stdout: the console's pipe (console.c), never a file it grows */
	snprintf(con, sizeof(con), "file,id=con,path=/proc/self/fd/1");
	snprintf(fsr, sizeof(fsr), "socket,id=fsr,path=%s/root.sock", m->vm);
	snprintf(fsw, sizeof(fsw), "socket,id=fsw,path=%s/ws.sock", m->vm);
	/* the writable layer is guest RAM: --disk caps it; aj.pids counts the
	 * commands and one agent per port (guest/init.c); a snapshot's VM
	 * gets its workspace hot-plugged (box.c): none at boot */
	int al =
	    snprintf(append, sizeof(append),
		     "console=ttyS0 %spanic=-1 tsc_early_khz=%lu aj.disk=%llu aj.pids=%llu "
		     "aj.ws=%d aj.host=%s aj.ports=%u%s",
		     getenv("AGENTJAIL_MICROVM_DEBUG") ? "" : "quiet ", m->h.tsc_khz, p->tmp_size,
		     p->pids ? p->pids + m->nports - 1 : 0, p->workspace && !m->snap ? 1 : 0,
		     p->hostname ? p->hostname : AJ_DEFAULT_HOSTNAME, m->nports,
		     (aj_mv_net_cmdline(m->snap ? NULL : m->net, net, sizeof(net)), net));
	if (m->rootimg[0]) /* the image's squashfs (rootimg.c) */
		al += snprintf(append + al, sizeof(append) - (size_t)al, " aj.root=blk");
	/* --disk caps the writable layer's inodes too, as level 1's scratch */
	al += snprintf(append + al, sizeof(append) - (size_t)al, " aj.inodes=%llu",
		       aj_scratch_inodes(p->tmp_size));
	/* a snapshot's machine: PCIe slots for the workspace's and the NIC's
	 * hotplug (qemu's microvm ACPI grants no _OSC: the ports' driver
	 * forced); the guest loads the virtio-pci and NIC drivers */
	if (m->snap)
		al += snprintf(append + al, sizeof(append) - (size_t)al,
			       " pcie_ports=native aj.pci=1");
	if (geteuid() != 0) /* the root share's files not its virtiofsd's (guest/init.c) */
		al += snprintf(append + al, sizeof(append) - (size_t)al, " aj.nonroot=1");
	if (m->ca) /* the CA bundle to bind read-only (stage_ca) */
		al += snprintf(append + al, sizeof(append) - (size_t)al, " aj.ca=1");
	if (p->uid || p->gid)
		al += snprintf(append + al, sizeof(append) - (size_t)al, " aj.uid=%u aj.gid=%u",
			       (unsigned)p->uid, (unsigned)p->gid);
	if (binds_arg(p, append, sizeof(append), (size_t)al) < 0) {
		aj_err(err, E2BIG,
		       "--ro/--rw: the binds' paths do not fit the guest kernel's "
		       "command line (2 KiB)");
		aj_err_hint(err, "use fewer or shorter bind destinations");
		return -E2BIG;
	}
	char *argv[64 + 4 * AJ_MV_MAX_PORTS + 4 * AJ_MV_MAX_RW] = {
	    m->h.qemu, "-M",
	    m->snap ? "microvm,pcie=on,memory-backend=mem" : "microvm,memory-backend=mem", "-accel",
	    m->h.kvm ? "kvm" : "tcg", "-cpu", "max", "-m", memarg, "-object", memobj, "-smp", smp,
	    "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
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
	if (m->rootimg[0] && root_share(m)) { /* an image's --ro binds (stage_ro_share) */
		argv[n++] = "-chardev";
		argv[n++] = fsr;
		argv[n++] = "-device";
		argv[n++] = "vhost-user-fs-device,chardev=fsr,tag=ro";
	}
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
	/* a snapshot's machine: a PCIe slot for each device hot-plugged after
	 * a restore (the workspace, the NIC: aj_mv_snap_ports) */
	char rp[8][64];
	for (size_t k = 0; m->snap && k < aj_mv_snap_n_ports && k < AJ_ARRAY_SIZE(rp); k++) {
		snprintf(rp[k], sizeof(rp[k]), "pcie-root-port,id=%s,chassis=%zu,slot=0",
			 aj_mv_snap_ports[k], k + 1);
		argv[n++] = "-device";
		argv[n++] = rp[k];
	}
	if (p->workspace && !m->snap) {
		argv[n++] = "-chardev";
		argv[n++] = fsw;
		argv[n++] = "-device";
		argv[n++] = "vhost-user-fs-device,chardev=fsw,tag=ws";
	}
	for (unsigned k = 0; k < m->n_rw; k++) { /* the --rw binds: tags b0, b1 ... */
		snprintf(fsb[k], sizeof(fsb[k]), "socket,id=fsb%u,path=%s/b%u.sock", k, m->vm, k);
		snprintf(devb[k], sizeof(devb[k]), "vhost-user-fs-device,chardev=fsb%u,tag=b%u", k,
			 k);
		argv[n++] = "-chardev";
		argv[n++] = fsb[k];
		argv[n++] = "-device";
		argv[n++] = devb[k];
	}
	/* a snapshot's VM (snap.c): its monitor, and the state it restores */
	char qmp[128];
	snprintf(qmp, sizeof(qmp), "unix:%s/qmp.sock,server=on,wait=off", m->vm);
	if (m->snap) {
		/* a save is of a stopped VM (snap.c): its copies start running */
		argv[n++] = "-global";
		argv[n++] = "migration.store-global-state=off";
		aj_mv_snap_path(m->dir, argv, n, m->rootimg, m->etc_hash, m->snapfile,
				sizeof(m->snapfile));
		if (m->restore_dir[0]) { /* a fork's copy: its source's whole stream */
			char key[NAME_MAX + 1];
			snprintf(key, sizeof(key), "%s", strrchr(m->snapfile, '/') + 1);
			snprintf(m->snapfile, sizeof(m->snapfile), "%s/%s", m->restore_dir, key);
			m->snapfd = open(m->snapfile, O_RDONLY | O_CLOEXEC);
			m->restored = m->snapfd >= 0;
			if (!m->restored) {
				aj_err(err, ESTALE,
				       "microvm: the saved VM does not fit this one (its image or "
				       "configuration changed since)");
				return -ESTALE;
			}
		} else {
			aj_error serr;
			aj_err_clear(&serr);
			int e = aj_mv_snap_open(m->snapfile, &m->snapfd, &m->ramfd, &serr);
			if (e < 0 && e != -ENOENT && getenv("AGENTJAIL_MICROVM_DEBUG"))
				fprintf(stderr, "agentjail: microvm: no restore: %s\n", serr.msg);
			m->restored = m->pair = e == 0;
			/* a workspace's vhost-user device maps the RAM shared: a
			 * copy of the snapshot's of its own, not copy-on-write */
			m->cow = m->pair && !p->workspace;
			if (m->pair && !m->cow) {
				int own =
				    aj_mv_snap_ram_copy(m->ramfd, m->have_cg ? &m->cg : NULL, err);
				close(m->ramfd);
				if ((m->ramfd = own) < 0)
					return own;
			}
		}
		/* a snapshot's restore maps its RAM private (copy-on-write); a boot
		 * (or a fork's copy) shares a fresh memfd with us, for a save */
		if (!m->pair && (m->ramfd = memfd_create("agentjail-vm-ram", MFD_CLOEXEC)) >= 0 &&
		    ftruncate(m->ramfd, (off_t)(mem << 20)) < 0) {
			close(m->ramfd);
			m->ramfd = -1;
		}
		if (m->ramfd < 0)
			return aj_err(err, errno, "microvm: the VM's RAM (memfd)");
		strcat(memobj, m->cow ? ",share=off" : ",share=on");
		argv[n++] = "-qmp";
		argv[n++] = qmp;
		if (m->restored) { /* a snapshot's state comes over QMP (aj_mv_snap_incoming) */
			argv[n++] = "-incoming";
			argv[n++] = m->pair ? "defer" : "fd:3";
		}
	}
	/* the NIC: the tap made in the VM's own network namespace (net.c); a
	 * snapshot's VM gets it hot-plugged once ready (box.c), none at boot */
	int nsfd, tap = aj_mv_net_fds(m->net, &nsfd);
	if (m->snap)
		tap = -1;
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
			 .cg = m->have_cg ? &m->cg : NULL,
			 /* a non-root caller's qemu: its root only this and the system's */
			 .jail = geteuid() != 0 ? m->vm : NULL};
	s.bind[0] = m->h.kernel, s.onto[0] = kern, s.ro[0] = true;
	s.bind[1] = m->h.initramfs, s.onto[1] = initrd, s.ro[1] = true;
	if (m->restored)
		s.pass_fd = m->snapfd;
	if (m->snap)
		s.pass_fd4 = m->ramfd;
	if (m->rootimg[0]) {
		aj_write_file(img, "", 0644);
		s.bind[s.n] = m->rootimg, s.onto[s.n] = img, s.ro[s.n++] = true;
	}
	pid_t pid = aj_mv_spawn_confined(&s, err);
	/* qemu has its own: ours would keep a fork's save on disk (its
	 * directory removed) as long as this VM lives */
	if (m->snapfd >= 0)
		close(m->snapfd);
	m->snapfd = -1;
	return pid;
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
	_cleanup_free_ char *c = NULL;
	size_t n = 0;
	out[0] = '\0';
	/* the guest init's reason, which the virtiofsd's lines after it would
	 * push out of the tail */
	if (aj_mv_console_read(m->con, &c, &n) < 0 || !n || aj_mv_console_fatal(c, out, len))
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

/* --user U:G: a read-write share's virtiofsd runs as the unused uid and
 * maps U:G to its owner, so that the files the command (U in the guest)
 * makes there are the owner's on the host and the guest shows the share
 * as U's (virtiofsd makes each file with the guest caller's ids). */
static void as_user(aj_mv_vm *m, aj_mv_spawn *s)
{
	if (!m->p->uid) /* a guest root's files are the virtiofsd's own */
		return;
	s->in_uid = m->p->uid;
	s->in_gid = m->p->gid;
	s->out_uid = s->uid, s->out_gid = s->gid;
	s->uid = s->gid = m->base;
	/* a root-owned share is the unused uid's already (share_idmap): 0
	 * inside is then the range's next id (one outside id maps once) */
	if (s->out_uid == m->base)
		s->uid = m->base + 1;
	if (s->out_gid == m->base)
		s->gid = m->base + 1;
}

/* A share's owner and identity, from the directory itself: opened with no
 * symlink followed (the bind reopens it so and checks it is the same). */
static int share_stat(const char *path, const char *what, struct stat *st, aj_error *err)
{
	_cleanup_close_ int fd = aj_mv_share_open(path);
	if (fd < 0 || fstat(fd, st) < 0) {
		int e = fd < 0 ? -fd : errno;
		aj_err(err, e, "%s %s%s", what, path,
		       e == ELOOP ? ": a symbolic link in its path (not followed)" : "");
		if (e == ELOOP)
			aj_err_hint(err, "give the real path, e.g. $(realpath PATH)");
		return -e;
	}
	return 0;
}

/* A root-owned share (the workspace, a --rw directory): bound idmapped,
 * host root's files there appearing as the unused uid's (its virtiofsd's,
 * or --user's through its map), so that the guest may write there and the
 * files it makes are root's on the host, as level 1's idmapped workspace
 * makes them the owner's. The process stays the unused uid. *fd: the user
 * namespace (the caller closes it), or -1 for a share of another owner. */
static int share_idmap(aj_mv_vm *m, const struct stat *st, int *fd, aj_error *err)
{
	*fd = -1;
	if (st->st_uid != 0)
		return 0;
	char um[64], gm[64];
	snprintf(um, sizeof(um), "0 %u 1\n", (unsigned)m->base);
	snprintf(gm, sizeof(gm), "%u %u 1\n", (unsigned)st->st_gid, (unsigned)m->base);
	*fd = aj_userns_make_fd(um, gm, err);
	return *fd < 0 ? *fd : 0;
}

/* A --rw bind: a virtiofsd of its own as the directory's owner (root's:
 * the unused uid, as the workspace), so that the guest's files there are
 * the owner's on the host; bound at dir/bK/d, where that uid reaches it. */
static int rw_bind(aj_mv_vm *m, const aj_bind *b, unsigned k, aj_error *err)
{
	struct stat st;
	int r = share_stat(b->src, "--rw", &st, err);
	if (r < 0)
		return r;
	uid_t uid = st.st_uid ? st.st_uid : m->base;
	gid_t gid = st.st_uid && st.st_gid ? st.st_gid : m->base;
	char top[PATH_MAX], at[PATH_MAX], sock[PATH_MAX];
	snprintf(top, sizeof(top), "%s/b%u", m->dir, k);
	snprintf(at, sizeof(at), "%s/d", top);
	snprintf(sock, sizeof(sock), "%s/b%u.sock", m->vm, k);
	if (mkdir(top, 0700) < 0 || chown(top, uid, gid) < 0 || mkdir(at, 0700) < 0 ||
	    chown(at, uid, gid) < 0)
		return aj_err(err, errno, "microvm: cannot prepare %s", top);
	aj_mv_spawn s = {.uid = uid, .gid = gid, .n = 1, .umask = 077, .idmap = -1};
	as_user(m, &s);
	s.bind[0] = b->src, s.onto[0] = at, s.ro[0] = false;
	s.rw_dev = st.st_dev, s.rw_ino = st.st_ino;
	_cleanup_close_ int idm = -1;
	if ((r = share_idmap(m, &st, &idm, err)) < 0)
		return r;
	s.rw_idmap = idm;
	pid_t pid = virtiofsd(m, &s, sock, at, false, err);
	if (pid < 0)
		return (int)pid;
	m->pids[3 + k] = pid;
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
	if (r == 0 && m->rootimg[0])
		r = stage_ro_share(m, err);
	char log[PATH_MAX], sock[PATH_MAX];
	snprintf(log, sizeof(log), "%s/console", m->vm);
	if (r == 0)
		r = aj_mv_console_open(&m->con, log, m->base, m->base_gid, &m->console, err);
	unsigned long long deadline = now_ms() + 10000;
	/* a non-root caller's: no idmap (only host root may make one) */
	if (r == 0 && root_share(m) && geteuid() == 0) {
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
	if (r == 0 && root_share(m)) {
		snprintf(sock, sizeof(sock), "%s/root.sock", m->vm);
		m->pids[1] = virtiofsd(m, &m->rootfs, sock, m->root, true, err);
		r = m->pids[1] < 0 ? (int)m->pids[1] : 0;
	}
	close_ro_fds(m); /* bound in its process (or never: no root share) */
	if (r == 0 && m->p->workspace) {
		snprintf(sock, sizeof(sock), "%s/ws.sock", m->vm);
		aj_mv_spawn s = {
		    .uid = m->ws_uid, .gid = m->ws_gid, .n = 1, .umask = 077, .idmap = -1};
		as_user(m, &s);
		/* the workspace, bound where its owner can reach it (its parents
		 * may be closed to it) */
		s.bind[0] = m->p->workspace, s.onto[0] = m->wsws, s.ro[0] = false;
		s.prepare = ws_prepare, s.ctx = m;
		struct stat st;
		_cleanup_close_ int idm = -1;
		if ((r = share_stat(m->p->workspace, "--workspace", &st, err)) == 0) {
			s.rw_dev = st.st_dev, s.rw_ino = st.st_ino;
			r = share_idmap(m, &st, &idm, err);
		}
		s.rw_idmap = idm;
		if (r == 0 && (r = aj_protect_prepare(m->p, &m->prot, err)) == 0)
			m->pids[2] = virtiofsd(m, &s, sock, m->wsws, false, err);
		else
			m->pids[2] = 0;
		if (r == 0)
			r = m->pids[2] < 0 ? (int)m->pids[2] : 0;
	}
	for (size_t i = 0, k = 0; r == 0 && i < m->p->n_binds; i++) {
		const aj_bind *b = &m->p->binds[i];
		if (b->writable) {
			r = rw_bind(m, b, (unsigned)k++, err);
			m->n_rw = (unsigned)k;
		}
	}
	if (r == 0)
		r = aj_mv_net_setup(m->net, m->p, err);
	if (r == 0 && aj_net_tls_wanted(m->p))
		r = stage_ca(m, err);
	if (r == 0) {
		m->pids[0] = qemu(m, err);
		r = m->pids[0] < 0 ? (int)m->pids[0] : 0;
	}
	if (r == 0 && m->pair)
		r = aj_mv_snap_incoming(m->vm, err);
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
	if (m->ramfd >= 0)
		close(m->ramfd);
	m->snapfd = m->ramfd = -1;
	if (m->rootfs.idmap >= 0)
		close(m->rootfs.idmap);
	close_ro_fds(m);
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
	aj_mv_console_close(&m->con); /* its last lines kept (for the DEBUG copy) */
	aj_mv_net_teardown(&m->net);
	/* the binds were in the VMM's mount namespaces, gone with them: the
	 * directory holds only what we made */
	/* AGENTJAIL_MICROVM_DEBUG=1: the kernel's messages in dir/vm/console, kept */
	if (m->dir[0] && !getenv("AGENTJAIL_MICROVM_DEBUG"))
		(void)aj_rm_tree_at(AT_FDCWD, m->dir, 16);
	for (size_t i = 0; i < m->n_holders; i++)
		free(m->holders[i]);
	aj_protect_release(m->prot);
	free(m->profile);
	m->profile = NULL;
}

static int ids(aj_mv_vm *m, aj_error *err)
{
	aj_idmap im;
	int r = aj_userns_plan(&im, 0, 0, err);
	if (r < 0)
		return r;
	m->base = im.host_base;
	m->base_gid = m->base;
	if (geteuid() != 0) /* the caller's own ids (vm.c's spawn maps them) */
		m->base = geteuid(), m->base_gid = (gid_t)-1;
	m->ws_uid = m->base, m->ws_gid = m->base_gid;
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
	m->snapfd = m->ramfd = -1;
}

int aj_mv_boot(aj_mv_vm *m, bool need_argv, aj_error *err)
{
	int r = refuse(m->p, need_argv, err);
	if (r == 0)
		r = aj_mv_nonroot_refuse(m->p, need_argv, err);
	if (r == 0)
		r = compile_profile(m, err);
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
