/* SPDX-License-Identifier: MIT */
/* aj_policy -> an OCI runtime-spec bundle for runsc: config.json and a
 * skeleton root. The skeleton holds only mount points and the synthesized
 * /etc; the host's /usr, /bin, /lib... come in as read-only binds, as the
 * default root of level 1 (mount_plan.c), or those of --rootfs DIR. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "etc.h"
#include "agent_proto.h"
#include "gvisor.h"
#include "image.h"
#include "inroot.h"
#include "mask.h"
#include "mount.h"
#include "net_addr.h"
#include "plan.h"
#include "userns.h"
#include "util.h"

#define MASK_MAX_DEPTH 16
#define MASK_MAX_ENTRIES 100000

typedef struct bundle {
	const aj_policy *p;
	const char *dir;
	json_t *mounts;
	size_t n_files; /* replacements written to dir/files */
	size_t entries;
	aj_gv_staged *staged;
	const aj_gv_ids *ids;
	aj_error *err;
} bundle;

void aj_gv_staged_free(aj_gv_staged *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->src[i]);
	s->n = 0;
}

/* A mount point dir/binds/N for host path src (see aj_gv_staged); out: its
 * path, the source runsc is given. */
static int stage(bundle *b, const char *src, char *out, size_t len)
{
	struct stat st;
	if (stat(src, &st) < 0)
		return aj_err(b->err, errno, "cannot use %s", src);
	if (b->staged->n >= AJ_GV_MAX_STAGED)
		return aj_err(b->err, E2BIG, "too many binds");
	snprintf(out, len, "%s/binds", b->dir);
	(void)mkdir(out, 0755);
	snprintf(out, len, "%s/binds/%zu", b->dir, b->staged->n);
	int r = S_ISDIR(st.st_mode) ? (mkdir(out, 0755) < 0 ? -errno : 0)
				    : aj_write_file(out, "", 0444);
	if (r < 0)
		return aj_err(b->err, -r, "bundle: cannot create %s", out);
	if (!(b->staged->src[b->staged->n] = strdup(src)))
		return aj_err(b->err, ENOMEM, "bundle");
	b->staged->n++;
	return 0;
}

static int add_mount(bundle *b, const char *dest, const char *type, const char *src,
		     const char *opts_csv)
{
	json_t *opts = json_array();
	_cleanup_free_ char *o = strdup(opts_csv ? opts_csv : "");
	if (!opts || !o)
		return aj_err(b->err, ENOMEM, "bundle");
	char *save = NULL;
	for (char *t = strtok_r(o, ",", &save); t; t = strtok_r(NULL, ",", &save))
		json_array_append_new(opts, json_string(t));
	json_t *m = json_pack("{s:s,s:s,s:s,s:o}", "destination", dest, "type", type, "source", src,
			      "options", opts);
	if (!m || json_array_append_new(b->mounts, m) < 0)
		return aj_err(b->err, ENOMEM, "bundle");
	return 0;
}

static int add_bind(bundle *b, const char *src, const char *dest, bool writable)
{
	return add_mount(b, dest, "bind", src,
			 writable ? "rbind,rw,nosuid,nodev" : "rbind,ro,nosuid,nodev");
}

/* A mount point in the skeleton for a host path: a directory or an empty
 * file, its parents made; a symlink is copied as a symlink (no mount). */
static int mount_point(bundle *b, const char *dest, const struct stat *st)
{
	/* made inside the root, never through a link a hostile root or image
	 * planted on the way (the bundle is written as root) */
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%s/rootfs", b->dir);
	_cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return aj_err(b->err, errno, "bundle: cannot open %s", root);
	int fd = S_ISDIR(st->st_mode) ? aj_mkdir_in_root(rootfd, dest, 0755)
				      : aj_mkfile_in_root(rootfd, dest, 0444);
	if (fd < 0)
		return aj_err(b->err, -fd, "bundle: cannot create %s in the root", dest);
	close(fd);
	return 0;
}

/* Bind host path src (named msrc in the bundle) read-only at dest, or
 * copy its symlink. */
static int bind_ro_at(bundle *b, const char *src, const char *msrc, const char *dest)
{
	struct stat st;
	if (lstat(src, &st) < 0)
		return 0;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/rootfs%s", b->dir, dest);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(src, target, sizeof(target) - 1);
		if (n < 0)
			return 0;
		target[n] = '\0';
		char parent[PATH_MAX];
		snprintf(parent, sizeof(parent), "%s", path);
		*strrchr(parent, '/') = '\0';
		(void)aj_mkdir_p(parent, 0755);
		if (symlink(target, path) < 0 && errno != EEXIST)
			return aj_err(b->err, errno, "bundle: cannot create %s", path);
		return 0;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return 0;
	int r = mount_point(b, dest, &st);
	return r < 0 ? r : add_bind(b, msrc, dest, false);
}

static int host_ro(bundle *b, const char *src)
{
	return bind_ro_at(b, src, src, src);
}

/* The synthesized /etc files, in the skeleton's /etc, or (the host /etc
 * copy is /etc) in its AJ_ETC_GENERATED_DIR, where the copy's links
 * point. */
static int etc_files(bundle *b, bool cached)
{
	aj_etc_files f;
	if (aj_etc_prepare(b->p, b->ids->resolv_conf, &f) < 0)
		return aj_err(b->err, ENOMEM, "bundle: /etc");
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/rootfs%s", b->dir, cached ? AJ_ETC_GENERATED_DIR : "/etc");
	int r = aj_mkdir_p(dir, 0755);
	r = r < 0 ? aj_err(b->err, -r, "bundle: cannot create %s", dir)
		  : aj_etc_write_dir(dir, &f, b->err);
	aj_etc_free(&f);
	return r;
}

static bool generated(const char *name)
{
	for (size_t i = 0; i < AJ_ETC_FILES; i++)
		if (!strcmp(name, aj_etc_generated[i]))
			return true;
	return false;
}

/* --rootfs DIR: its top-level entries and those of its /etc (but the
 * synthesized files), read-only in the skeleton; the skeleton's own /proc,
 * /dev, /sys, /tmp, /home and /workspace. (runsc's gofer would otherwise
 * make mount points in DIR itself.) */
static int image_root(bundle *b, const char *top, const char *mtop, const char *at)
{
	DIR *d = opendir(top);
	if (!d)
		return aj_err(b->err, errno, "--rootfs: cannot read %s", top);
	static const char *const own[] = {"proc", "dev", "sys", "tmp", "home", "workspace", "etc"};
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		const char *n = de->d_name;
		/* a level-2 snapshot's memory is for runsc restore, not the sandbox */
		bool skip = !strcmp(n, ".") || !strcmp(n, "..") ||
			    (!*at && !strcmp(n, AJ_IMAGE_CHECKPOINT_DIR));
		for (size_t i = 0; !*at && i < AJ_ARRAY_SIZE(own); i++)
			skip = skip || !strcmp(n, own[i]);
		if (skip || (*at && generated(n)))
			continue;
		char src[PATH_MAX], msrc[PATH_MAX], dest[PATH_MAX];
		if ((size_t)snprintf(src, sizeof(src), "%s/%s", top, n) >= sizeof(src) ||
		    (size_t)snprintf(msrc, sizeof(msrc), "%s/%s", mtop, n) >= sizeof(msrc))
			continue;
		snprintf(dest, sizeof(dest), "%s/%s", at, n);
		r = bind_ro_at(b, src, msrc, dest);
	}
	closedir(d);
	if (r == 0 && !*at) {
		char etc[PATH_MAX], metc[PATH_MAX];
		snprintf(etc, sizeof(etc), "%s/etc", top);
		snprintf(metc, sizeof(metc), "%s/etc", mtop);
		struct stat st;
		if (lstat(etc, &st) == 0 && S_ISDIR(st.st_mode))
			r = image_root(b, etc, metc, "/etc");
	}
	return r;
}

static int rootfs_root(bundle *b)
{
	char m[PATH_MAX];
	int r = stage(b, b->p->rootfs, m, sizeof(m));
	return r < 0 ? r : image_root(b, b->p->rootfs, m, "");
}

/* The state directory's copy of the host /etc entries (staged->etc_tree),
 * attached at dir/binds/etc before runsc starts, as the bundle's /etc. */
static int etc_copy(bundle *b)
{
	char m[PATH_MAX];
	snprintf(m, sizeof(m), "%s/binds", b->dir);
	(void)mkdir(m, 0755);
	snprintf(m, sizeof(m), "%s/binds/etc", b->dir);
	if (mkdir(m, 0755) < 0)
		return aj_err(b->err, errno, "bundle: cannot create %s", m);
	return add_bind(b, m, "/etc", false);
}

static int etc_glob(bundle *b)
{
	int r = 0;
	DIR *d = opendir("/etc");
	struct dirent *de;
	while (r == 0 && d && (de = readdir(d))) {
		if (!aj_etc_allowed_name(de->d_name))
			continue;
		char src[PATH_MAX];
		snprintf(src, sizeof(src), "/etc/%s", de->d_name);
		r = host_ro(b, src);
	}
	if (d)
		closedir(d);
	return r;
}

/* The root of the compiled plan (plan.c, as level 1's): --rootfs, or the
 * host's system directories and harmless /etc entries read-only (the copy
 * of them, or one bind each). /dev is runsc's own. */
static int plan_root(bundle *b, const aj_plan *pl)
{
	int r = 0;
	bool etc_done = false;
	for (size_t i = 0; i < pl->n && r == 0; i++) {
		const aj_plan_mount *m = &pl->m[i];
		switch (m->role) {
		case AJ_PLAN_ROOTFS: r = rootfs_root(b); break;
		case AJ_PLAN_SYSTEM: r = host_ro(b, m->source); break;
		case AJ_PLAN_ETC_HOST:
		case AJ_PLAN_ETC_GLOB:
			if (b->staged->etc_tree >= 0)
				r = etc_done ? 0 : etc_copy(b);
			else
				r = m->role == AJ_PLAN_ETC_HOST ? host_ro(b, m->source)
								: etc_glob(b);
			etc_done = true;
			break;
		case AJ_PLAN_DEV_NODE:
		case AJ_PLAN_WORKSPACE:
		case AJ_PLAN_BIND: break;
		}
	}
	return r;
}

/* Cover /workspace/rel with its replacement (aj_mask_replacement: an empty
 * directory or file, or the file with its secrets replaced); content: an
 * fd of the original or -1. */
static int mask_one(bundle *b, const char *rel, const char *name, bool is_dir, int content)
{
	char repl[PATH_MAX], dest[PATH_MAX];
	snprintf(repl, sizeof(repl), "%s/files/mask-%zu", b->dir, b->n_files++);
	if ((size_t)snprintf(dest, sizeof(dest), AJ_WORKSPACE_DIR "/%s", rel) >= sizeof(dest))
		return 0;
	int r = aj_mask_replacement(b->p, repl, rel, name, is_dir, content, b->err);
	return r < 0 ? r : add_bind(b, repl, dest, false);
}

/* A symlink with a matching name: mask what it leads to when that is in
 * the workspace (resolved with the workspace as the root, as a link to
 * /workspace/... would be inside; a link out of it reaches no host file). */
static int mask_link(bundle *b, int ws_fd, const char *rel, const char *name)
{
	struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT};
	_cleanup_close_ int t = (int)syscall(SYS_openat2, ws_fd, rel, &how, sizeof(how));
	struct stat st;
	if (t < 0 || fstat(t, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
		return 0;
	char link[64], target[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", t);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	size_t wl = strlen(b->p->workspace);
	if (n < 0)
		return 0;
	target[n] = '\0';
	if (strncmp(target, b->p->workspace, wl) || target[wl] != '/')
		return 0;
	return mask_one(b, target + wl + 1, name, S_ISDIR(st.st_mode), t);
}

static int mask_walk(bundle *b, int ws_fd, int dfd, const char *rel, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		const char *name = de->d_name;
		struct stat st;
		char sub[PATH_MAX];
		if (!strcmp(name, ".") || !strcmp(name, "..") || ++b->entries > MASK_MAX_ENTRIES ||
		    fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    (size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", name) >=
			sizeof(sub))
			continue;
		bool is_dir = S_ISDIR(st.st_mode);
		if (S_ISLNK(st.st_mode)) {
			if (aj_mask_matches(b->p, sub, name, false) ||
			    aj_mask_matches(b->p, sub, name, true))
				r = mask_link(b, ws_fd, sub, name);
			continue;
		}
		if ((is_dir || S_ISREG(st.st_mode)) && aj_mask_matches(b->p, sub, name, is_dir)) {
			_cleanup_close_ int c =
			    is_dir ? -1
				   : openat(dirfd(d), name,
					    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			r = mask_one(b, sub, name, is_dir, c);
			continue;
		}
		if (!is_dir || depth >= MASK_MAX_DEPTH || !strcmp(name, "node_modules") ||
		    !strcmp(name, ".git"))
			continue;
		int fd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			r = mask_walk(b, ws_fd, fd, sub, depth + 1);
	}
	closedir(d);
	return r;
}

static int workspace(bundle *b)
{
	const aj_policy *p = b->p;
	if (!p->workspace)
		return 0;
	char m[PATH_MAX];
	b->staged->workspace = (int)b->staged->n;
	int r = stage(b, p->workspace, m, sizeof(m));
	if (r == 0)
		r = add_bind(b, m, AJ_WORKSPACE_DIR, true);
	if (r < 0 || (p->no_default_masks && p->n_masks == 0))
		return r;
	_cleanup_close_ int ws = open(p->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = open(p->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || ws < 0) {
		if (fd >= 0)
			close(fd);
		return aj_err(b->err, errno, "mask: cannot open the workspace");
	}
	return mask_walk(b, ws, fd, "", 0);
}

/* The workspace and the --ro/--rw binds of the compiled plan. */
static int plan_binds(bundle *b, const aj_plan *pl)
{
	int r = 0;
	for (size_t i = 0; i < pl->n && r == 0; i++) {
		const aj_plan_mount *m = &pl->m[i];
		if (m->role == AJ_PLAN_WORKSPACE) {
			r = workspace(b);
		} else if (m->role == AJ_PLAN_BIND) {
			struct stat st;
			char dir[PATH_MAX];
			if (stat(m->source, &st) == 0)
				(void)mount_point(b, m->target, &st);
			r = stage(b, m->source, dir, sizeof(dir));
			if (r == 0)
				r = add_bind(b, dir, m->target, !m->ro);
		}
	}
	return r;
}

/* agentjail-agent (the persistent sandbox's init and its helper for
 * commands and files), read-only at AJ_AGENT_PATH */
static int agent(bundle *b)
{
	struct stat st;
	char m[PATH_MAX];
	if (stat(b->ids->agent, &st) < 0 || !S_ISREG(st.st_mode))
		return aj_err(b->err, ENOENT, "the sandbox's agent %s is missing", b->ids->agent);
	int r = mount_point(b, AJ_AGENT_PATH, &st);
	if (r == 0)
		r = stage(b, b->ids->agent, m, sizeof(m));
	return r < 0 ? r : add_bind(b, m, AJ_AGENT_PATH, false);
}

/* HTTPS interception (net_addr.h): dir/files/ca-certificates.crt, bound
 * read-only over the root's CA bundle, which runsc.c fills with the
 * root's own and netd's CA before runsc starts. An image without a
 * bundle gets one; a root where there is no place for it fails. */
static int ca_bundle(bundle *b)
{
	const char *rootfs = b->p->rootfs;
	struct stat st = {.st_mode = S_IFREG | 0444};
	_cleanup_close_ int root = rootfs ? open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	_cleanup_close_ int have = rootfs ? aj_open_in_root(root, AJ_NET_CA_BUNDLE, O_PATH, 0)
					  : open(AJ_NET_CA_BUNDLE, O_PATH | O_CLOEXEC);
	if (have >= 0 && aj_etc_ca_check(have, b->err) < 0) /* a FIFO would hang runsc.c */
		return -EINVAL;
	_cleanup_close_ int ssl =
	    rootfs && have < 0 ? aj_open_in_root(root, "/etc/ssl", O_PATH, 0) : -1;
	if (have < 0 && (!rootfs || ssl >= 0)) {
		aj_err(b->err, ENOENT,
		       "HTTPS interception for scoped secrets needs %s in the root%s",
		       AJ_NET_CA_BUNDLE, rootfs ? " (the image has /etc/ssl without it)" : "");
		aj_err_hint(b->err, "install ca-certificates on the host (or in the image)");
		return -ENOENT;
	}
	/* the directories first: a file's mount point gets parents of its mode */
	struct stat dir = {.st_mode = S_IFDIR | 0755};
	int r = have < 0 ? mount_point(b, "/etc/ssl/certs", &dir) : 0;
	if (r == 0 && have < 0)
		r = mount_point(b, AJ_NET_CA_BUNDLE, &st);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/files/ca-certificates.crt", b->dir);
	if (r == 0 && (r = aj_write_file(path, "", 0644)) < 0)
		return aj_err(b->err, -r, "bundle: cannot create %s", path);
	b->staged->ca = r == 0;
	return r < 0 ? r : add_bind(b, path, AJ_NET_CA_BUNDLE, false);
}

static int mounts(bundle *b)
{
	const aj_policy *p = b->p;
	char opt[128];
	aj_plan pl;
	int r = aj_plan_mounts(p, &pl, b->err);
	if (r == 0)
		r = add_mount(b, "/proc", "proc", "proc", "nosuid,noexec,nodev");
	if (r == 0)
		r = plan_root(b, &pl);
	if (r == 0)
		r = etc_files(b, !p->rootfs && b->staged->etc_tree >= 0);
	snprintf(opt, sizeof(opt), "nosuid,nodev,mode=1777,size=%llu", p->tmp_size);
	if (r == 0)
		r = add_mount(b, "/tmp", "tmpfs", "tmpfs", opt);
	if (r == 0) /* gVisor's own /dev/shm has no size: capped as /tmp */
		r = add_mount(b, "/dev/shm", "tmpfs", "tmpfs", opt);
	snprintf(opt, sizeof(opt), "nosuid,nodev,mode=0755,uid=%u,gid=%u,size=%llu",
		 (unsigned)p->uid, (unsigned)p->gid, p->tmp_size);
	if (r == 0)
		r = add_mount(b, AJ_SANDBOX_HOME, "tmpfs", "tmpfs", opt);
	if (r == 0 && b->ids->agent)
		r = agent(b);
	if (r == 0)
		r = plan_binds(b, &pl);
	return r == 0 && aj_net_tls_wanted(p) ? ca_bundle(b) : r;
}

/* uidMappings: container ids 0..65535 to the unused range at base, except
 * the sandbox user, which maps to the workspace's owner when that is not
 * root (files it writes there are the owner's, as at level 1). */
static json_t *idmap(uid_t inside, uid_t base, uid_t owner, bool mapped)
{
	json_t *a = json_array();
	if (!mapped) {
		json_array_append_new(a, json_pack("{s:I,s:I,s:I}", "containerID", (json_int_t)0,
						   "hostID", (json_int_t)base, "size",
						   (json_int_t)AJ_UID_RANGE));
		return a;
	}
	if (inside > 0)
		json_array_append_new(a, json_pack("{s:I,s:I,s:I}", "containerID", (json_int_t)0,
						   "hostID", (json_int_t)base, "size",
						   (json_int_t)inside));
	json_array_append_new(a, json_pack("{s:I,s:I,s:I}", "containerID", (json_int_t)inside,
					   "hostID", (json_int_t)owner, "size", (json_int_t)1));
	if (inside + 1 < AJ_UID_RANGE)
		json_array_append_new(a, json_pack("{s:I,s:I,s:I}", "containerID",
						   (json_int_t)inside + 1, "hostID",
						   (json_int_t)base + inside + 1, "size",
						   (json_int_t)(AJ_UID_RANGE - inside - 1)));
	return a;
}

static json_t *rlimits(const aj_policy *p)
{
	json_t *a = json_array();
	json_array_append_new(a, json_pack("{s:s,s:I,s:I}", "type", "RLIMIT_CORE", "hard",
					   (json_int_t)0, "soft", (json_int_t)0));
	if (p->nofile)
		json_array_append_new(a, json_pack("{s:s,s:I,s:I}", "type", "RLIMIT_NOFILE", "hard",
						   (json_int_t)p->nofile, "soft",
						   (json_int_t)p->nofile));
	/* --pids inside: gVisor's kernel counts the sandbox's tasks (the host
	 * cgroup, which also counts the Sentry's threads, is the backstop) */
	if (p->pids)
		json_array_append_new(a,
				      json_pack("{s:s,s:I,s:I}", "type", "RLIMIT_NPROC", "hard",
						(json_int_t)p->pids, "soft", (json_int_t)p->pids));
	if (p->fsize)
		json_array_append_new(a, json_pack("{s:s,s:I,s:I}", "type", "RLIMIT_FSIZE", "hard",
						   (json_int_t)p->fsize, "soft",
						   (json_int_t)p->fsize));
	return a;
}

static json_t *process(const aj_policy *p, char *const *extra)
{
	char **env = aj_policy_build_env(p, NULL, extra);
	json_t *args = json_array(), *envj = json_array();
	for (char **a = p->argv; a && *a; a++)
		json_array_append_new(args, json_string(*a));
	for (char **e = env; e && *e; e++)
		json_array_append_new(envj, json_string(*e));
	aj_strv_free(env);
	const char *cwd = p->cwd ? p->cwd : p->workspace ? AJ_WORKSPACE_DIR : AJ_SANDBOX_HOME;
	/* no capabilities at all, even for uid 0, and no new privileges */
	json_t *caps = json_pack("{s:[],s:[],s:[],s:[],s:[]}", "bounding", "effective",
				 "inheritable", "permitted", "ambient");
	return json_pack("{s:b,s:{s:I,s:I},s:o,s:o,s:s,s:b,s:o,s:o}", "terminal", 0, "user", "uid",
			 (json_int_t)p->uid, "gid", (json_int_t)p->gid, "args", args, "env", envj,
			 "cwd", cwd, "noNewPrivileges", 1, "capabilities", caps, "rlimits",
			 rlimits(p));
}

/* One OCI seccomp rule: EPERM for name when argument arg has bit set (and,
 * with flag, argument farg has flag set). */
static json_t *setid_rule(const char *name, unsigned arg, unsigned long bit, int farg,
			  unsigned long flag)
{
	json_t *args = json_pack("[{s:i,s:I,s:I,s:s}]", "index", (int)arg, "value", (json_int_t)bit,
				 "valueTwo", (json_int_t)bit, "op", "SCMP_CMP_MASKED_EQ");
	if (args && farg >= 0)
		json_array_append_new(
		    args, json_pack("{s:i,s:I,s:I,s:s}", "index", farg, "value", (json_int_t)flag,
				    "valueTwo", (json_int_t)flag, "op", "SCMP_CMP_MASKED_EQ"));
	return json_pack("{s:[s],s:s,s:i,s:o}", "names", name, "action", "SCMP_ACT_ERRNO",
			 "errnoRet", EPERM, "args", args);
}

/* No setuid or setgid file may be made: runsc's gofer writes the
 * workspace as its owner on the host, so such a file would be setuid to
 * that owner there (level 1's rule, seccomp.c; runsc --oci-seccomp applies
 * it inside the Sentry). */
static json_t *seccomp_section(void)
{
	static const struct {
		const char *name;
		unsigned arg;
		int flags_arg; /* -1: the mode counts always, else only with O_CREAT/O_TMPFILE */
	} calls[] = {{"chmod", 1, -1}, {"fchmod", 1, -1},  {"fchmodat", 2, -1}, {"creat", 1, -1},
		     {"mknod", 1, -1}, {"mknodat", 2, -1}, {"open", 2, 1},	{"openat", 3, 2}};
	static const unsigned long bits[] = {S_ISUID, S_ISGID};
	static const unsigned long creat[] = {O_CREAT, __O_TMPFILE};
	json_t *rules = json_array();
	for (size_t i = 0; i < AJ_ARRAY_SIZE(calls); i++)
		for (size_t k = 0; k < AJ_ARRAY_SIZE(bits); k++)
			for (size_t c = 0; c < (calls[i].flags_arg < 0 ? 1 : AJ_ARRAY_SIZE(creat));
			     c++)
				json_array_append_new(rules, setid_rule(calls[i].name, calls[i].arg,
									bits[k], calls[i].flags_arg,
									creat[c]));
	return json_pack("{s:s,s:[s],s:o}", "defaultAction", "SCMP_ACT_ALLOW", "architectures",
			 "SCMP_ARCH_X86_64", "syscalls", rules);
}

int aj_gvisor_bundle_write(const aj_policy *p, const aj_gv_ids *ids, const char *dir,
			   aj_gv_staged *staged, aj_error *err)
{
	bundle b = {
	    .p = p, .dir = dir, .mounts = json_array(), .staged = staged, .ids = ids, .err = err};
	char path[PATH_MAX];
	static const char *const skel[] = {"rootfs",	       "rootfs/proc", "rootfs/dev",
					   "rootfs/sys",       "rootfs/tmp",  "rootfs/home/agent",
					   "rootfs/workspace", "rootfs/etc",  "files"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(skel); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, skel[i]);
		int r = aj_mkdir_p(path, 0755);
		if (r < 0) {
			json_decref(b.mounts);
			return aj_err(err, -r, "bundle: cannot create %s", path);
		}
	}
	int r = mounts(&b);
	if (r < 0) {
		json_decref(b.mounts);
		return r;
	}
	json_t *ns = json_pack("[{s:s},{s:s},{s:s},{s:s},{s:s}]", "type", "pid", "type", "mount",
			       "type", "ipc", "type", "uts", "type", "user");
	/* a network namespace of its own, or the one agentjail's net layer
	 * set up for runsc run (--net open, --allow): runsc run joins that
	 * path (its own) for the sandbox and takes its veth into its netstack */
	json_array_append_new(ns, ids->runsc_netns ? json_pack("{s:s,s:s}", "type", "network",
							       "path", "/proc/self/ns/net")
						   : json_pack("{s:s}", "type", "network"));
	json_t *linux_ = json_pack(
	    "{s:o,s:o,s:o,s:o}", "namespaces", ns, "uidMappings",
	    idmap(p->uid, ids->base, ids->ws_uid, ids->owner_mapped), "gidMappings",
	    idmap(p->gid, ids->base, ids->ws_gid, ids->owner_mapped), "seccomp", seccomp_section());
	json_t *cfg = json_pack(
	    "{s:s,s:o,s:{s:s,s:b},s:s,s:o,s:o}", "ociVersion", "1.0.2", "process",
	    process(p, ids->extra_env), "root", "path", "rootfs", "readonly", 1, "hostname",
	    p->hostname ? p->hostname : AJ_DEFAULT_HOSTNAME, "mounts", b.mounts, "linux", linux_);
	if (!cfg)
		return aj_err(err, ENOMEM, "bundle: config.json");
	snprintf(path, sizeof(path), "%s/config.json", dir);
	r = json_dump_file(cfg, path, JSON_COMPACT);
	json_decref(cfg);
	return r < 0 ? aj_err(err, EIO, "bundle: cannot write %s", path) : 0;
}
