/* SPDX-License-Identifier: MIT */
/* Carrying out the mount plan: detached trees (open_tree/mount_setattr/
 * move_mount), the fresh root, /proc, /dev, tmpfs, and pivot_root. */
#include "mount.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "etc.h"
#include "inroot.h"
#include "mask.h"
#include "mountapi.h"
#include "net_addr.h"
#include "protect.h"
#include "userns.h"
#include "util.h"

#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

/* Where the sandbox is assembled, inside the child's private staging tmpfs. */
#define STAGE_DIR "/tmp"
#define NEWROOT "/newroot"
#define OLDROOT "/oldroot"
#define SCRATCH "/scratch"

/* Open src as a detached copy of its mount with the op's attributes.
 * root_prefix is "" (parent, host view) or OLDROOT (child, after staging).
 * No symlink is followed anywhere in the path. */
static int open_detached(const aj_mount_op *op, const char *root_prefix, int userns_fd,
			 aj_error *err)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s%s", root_prefix, op->src);
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int pfd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (pfd < 0) {
		if (op->optional && (errno == ENOENT || errno == ELOOP))
			return -ENOENT;
		return aj_err(err, errno, "cannot open '%s' to mount it at %s", op->src, op->dest);
	}
	unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH;
	if (op->recursive)
		flags |= AT_RECURSIVE;
	int fd = aj_open_tree(pfd, "", flags);
	if (fd < 0)
		return aj_err(err, errno, "cannot clone the mount of '%s'", op->src);
	unsigned long long set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	if (!op->writable)
		set |= MOUNT_ATTR_RDONLY;
	if (op->kind == AJ_MOUNT_BIND && strncmp(op->src, "/dev/", 5) == 0)
		set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
	unsigned rec = op->recursive ? AT_RECURSIVE : 0;
	if (aj_mount_setattr(fd, "", AT_EMPTY_PATH | rec, set, 0, -1) < 0) {
		int e = errno;
		close(fd);
		return aj_err(err, e, "cannot make the mount of '%s' read-only/nosuid", op->src);
	}
	if (userns_fd >= 0 &&
	    aj_mount_setattr(fd, "", AT_EMPTY_PATH, MOUNT_ATTR_IDMAP, 0, userns_fd) < 0) {
		int e = errno;
		close(fd);
		aj_err(err, e, "cannot create an idmapped mount of '%s'", op->src);
		aj_err_hint(err,
			    "the filesystem of '%s' must support idmapped mounts (ext4, xfs, "
			    "btrfs, tmpfs >= 6.3); see agentjail doctor",
			    op->src);
		return -e;
	}
	return fd;
}

int aj_mount_plan_open(aj_mount_plan *plan, const char *sandbox_map, uid_t host_uid, gid_t host_gid,
		       aj_error *err)
{
	_cleanup_close_ int sandbox_ns = -1;
	for (size_t i = 0; i < plan->n; i++) {
		aj_mount_op *op = &plan->ops[i];
		if (op->kind == AJ_MOUNT_SYMLINK)
			continue;
		_cleanup_close_ int ns = -1;
		int userns_fd = -1;
		if (op->idmap == AJ_IDMAP_OWNER) {
			/* disk owner <-> the sandbox user's host id */
			char um[64], gm[64];
			snprintf(um, sizeof(um), "%u %u 1\n", (unsigned)op->owner_uid,
				 (unsigned)host_uid);
			snprintf(gm, sizeof(gm), "%u %u 1\n", (unsigned)op->owner_gid,
				 (unsigned)host_gid);
			ns = aj_userns_make_fd(um, gm, err);
			if (ns < 0)
				return ns;
			userns_fd = ns;
		} else if (op->idmap == AJ_IDMAP_SANDBOX) {
			if (sandbox_ns < 0 &&
			    (sandbox_ns = aj_userns_make_fd(sandbox_map, sandbox_map, err)) < 0)
				return sandbox_ns;
			userns_fd = sandbox_ns;
		}
		int fd = open_detached(op, "", userns_fd, err);
		if (fd == -ENOENT && op->optional) {
			op->skip = true;
			continue;
		}
		if (fd < 0)
			return fd;
		op->fd = fd;
	}
	return 0;
}

/* ---- every target in the new root is resolved inside it (inroot.h) ----
 *
 * The new root may be an image or a --rootfs whose links point anywhere
 * (`home -> /oldroot/tmp`, `tmp -> ../../../tmp`), and binds may land in
 * directories the sandbox could write (the workspace): a path string
 * below NEWROOT would follow them to the host. So each mount point is
 * looked up and made through descriptors, as if the new root were "/", and
 * each mount is moved onto the descriptor (MOVE_MOUNT_T_EMPTY_PATH). */

/* A new detached filesystem of type with opts ("key=value" or "flag",
 * NULL-terminated) and the mount attributes attrs, or -errno. */
static int new_fs(const char *type, const char *const *opts, unsigned attrs, aj_error *err)
{
	_cleanup_close_ int fs = fsopen(type, FSOPEN_CLOEXEC);
	if (fs < 0)
		return aj_err(err, errno, "cannot make a %s filesystem", type);
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", type, 0) < 0)
		return aj_err(err, errno, "%s: option source refused", type);
	for (size_t i = 0; opts && opts[i]; i++) {
		char key[64];
		const char *eq = strchr(opts[i], '=');
		snprintf(key, sizeof(key), "%.*s", eq ? (int)(eq - opts[i]) : 63, opts[i]);
		if (fsconfig(fs, eq ? FSCONFIG_SET_STRING : FSCONFIG_SET_FLAG, key,
			     eq ? eq + 1 : NULL, 0) < 0)
			return aj_err(err, errno, "%s: option %s refused", type, opts[i]);
	}
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return aj_err(err, errno, "cannot make a %s filesystem", type);
	int m = fsmount(fs, FSMOUNT_CLOEXEC, attrs);
	return m < 0 ? aj_err(err, errno, "cannot mount a %s filesystem", type) : m;
}

/* The op's detached tree in op->fd (opened now, from the host root at
 * OLDROOT, when the parent did not). 1: an optional source is missing. */
static int op_tree(aj_mount_op *op, aj_error *err)
{
	if (op->skip)
		return 1;
	if (op->fd >= 0)
		return 0;
	int fd = open_detached(op, OLDROOT, -1, err);
	if (fd == -ENOENT && op->optional)
		return 1;
	if (fd < 0)
		return fd;
	op->fd = fd;
	return 0;
}

/* dest's parent directory inside the root (made when missing) and its last
 * name. *cache holds the last parent opened (most binds share theirs,
 * /etc): one lookup less. */
typedef struct parent_cache {
	char path[4096];
	int fd;
} parent_cache;

static int parent_in_root(int rootfd, const char *dest, parent_cache *cache, const char **base)
{
	const char *slash = strrchr(dest, '/');
	size_t n = slash ? (size_t)(slash - dest) : 0;
	*base = slash ? slash + 1 : dest;
	if (n >= sizeof(cache->path))
		return -ENAMETOOLONG;
	if (cache->fd >= 0 && strlen(cache->path) == n && !strncmp(cache->path, dest, n))
		return cache->fd;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%.*s", (int)n, dest);
	int fd = aj_mkdir_in_root(rootfd, dir, 0755);
	if (fd < 0)
		return fd;
	if (cache->fd >= 0)
		close(cache->fd);
	cache->fd = fd;
	memcpy(cache->path, dir, n + 1);
	return fd;
}

/* The mount point dest: made in its (cached) parent when it is missing;
 * else what dest resolves to inside the root (a link is followed in it). */
static int mountpoint(int rootfd, const char *dest, bool is_dir, parent_cache *cache)
{
	const char *base;
	int dir = parent_in_root(rootfd, dest, cache, &base);
	if (dir >= 0 && *base && strcmp(base, ".") && strcmp(base, "..")) {
		int m = is_dir ? mkdirat(dir, base, 0755)
			       : openat(dir, base,
					O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (!is_dir && m >= 0)
			m = close(m);
		if (m == 0) {
			int fd = openat(dir, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			return fd < 0 ? -errno : fd;
		}
	}
	/* there already (maybe a link), or the parent needs the whole lookup */
	return is_dir ? aj_mkdir_in_root(rootfd, dest, 0755)
		      : aj_mkfile_in_root(rootfd, dest, 0644);
}

static int attach_op(aj_mount_op *op, int rootfd, parent_cache *cache, aj_error *err)
{
	if (op->kind == AJ_MOUNT_SYMLINK) {
		const char *base;
		int dir = parent_in_root(rootfd, op->dest, cache, &base);
		if (dir < 0)
			return aj_err(err, -dir, "cannot make the directory of %s: %s", op->dest,
				      strerror(-dir));
		if (symlinkat(op->src, dir, base) < 0 && errno != EEXIST)
			return aj_err(err, errno, "cannot create symlink %s", op->dest);
		return 0;
	}
	int r = op_tree(op, err);
	if (r != 0)
		return r < 0 ? r : 0;
	struct stat st;
	if (fstat(op->fd, &st) < 0)
		return aj_err(err, errno, "cannot stat the mount of '%s'", op->src);
	int t = mountpoint(rootfd, op->dest, S_ISDIR(st.st_mode), cache);
	if (t < 0)
		return aj_err(err, -t,
			      "cannot make the mount point %s inside the sandbox's root: %s",
			      op->dest, strerror(-t));
	r = aj_move_mount(op->fd, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	close(t);
	if (r < 0)
		return aj_err(err, errno, "cannot mount '%s' at %s", op->src, op->dest);
	close(op->fd);
	op->fd = -1;
	return 0;
}

static int mount_tmpfs(const char *path, const char *opts, unsigned long flags, aj_error *err)
{
	int r = aj_mkdir_p(path, 0755);
	if (r < 0)
		return aj_err(err, -r, "cannot create %s", path);
	if (mount("tmpfs", path, "tmpfs", flags, opts) < 0)
		return aj_err(err, errno, "cannot mount tmpfs at %s", path);
	return 0;
}

/* Move the staging tmpfs to / and the host root to /oldroot, so that host
 * paths stay reachable (through /oldroot) while the new root is assembled. */
static int enter_staging(aj_error *err)
{
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return aj_err(err, errno, "cannot make the mount namespace private");
	if (mount("tmpfs", STAGE_DIR, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=1m") < 0)
		return aj_err(err, errno, "cannot mount the staging tmpfs on %s", STAGE_DIR);
	if (chdir(STAGE_DIR) < 0 || mkdir("oldroot", 0700) < 0 || mkdir("newroot", 0755) < 0)
		return aj_err(err, errno, "cannot prepare the staging directory");
	if (syscall(SYS_pivot_root, ".", "oldroot") < 0)
		return aj_err(err, errno, "pivot_root into the staging directory failed");
	if (chdir("/") < 0)
		return aj_err(err, errno, "chdir /");
	return 0;
}

unsigned long long aj_scratch_inodes(unsigned long long bytes)
{
	return bytes / 8192 < 4096 ? 4096 : bytes / 8192;
}

/* One size-capped tmpfs holds every writable area of the sandbox (the
 * overlay's upper layer, /tmp, home, /dev/shm), so --disk bounds them all
 * together, in bytes and in inodes. */
static int setup_scratch(const aj_policy *p, aj_error *err)
{
	char opts[128];
	snprintf(opts, sizeof(opts), "mode=0755,size=%llu,nr_inodes=%llu", p->tmp_size,
		 aj_scratch_inodes(p->tmp_size));
	int r = mount_tmpfs(SCRATCH, opts, MS_NOSUID | MS_NODEV, err);
	if (r < 0)
		return r;
	static const struct {
		const char *name;
		mode_t mode;
	} dirs[] = {
	    {"upper", 0755}, {"work", 0755}, {"tmp", 01777}, {"shm", 01777}, {"home", 0700}};
	/* the modes as given (sticky bits too): no umask for these, and no
	 * chmod after each mkdir; the command gets the umask back */
	mode_t old = umask(0);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(dirs); i++) {
		char d[64];
		snprintf(d, sizeof(d), SCRATCH "/%s", dirs[i].name);
		if (mkdir(d, dirs[i].mode) < 0) {
			int e = errno;
			umask(old);
			return aj_err(err, e, "cannot create %s", d);
		}
	}
	umask(old);
	if (chown(SCRATCH "/home", p->uid, p->gid) < 0)
		return aj_err(err, errno, "cannot hand the home directory to uid %u",
			      (unsigned)p->uid);
	return 0;
}

/* Bind a directory of the scratch tmpfs (nosuid, nodev) at dest inside the
 * new root. */
static int bind_scratch(const char *name, int rootfd, const char *dest, aj_error *err)
{
	char src[64];
	snprintf(src, sizeof(src), SCRATCH "/%s", name);
	_cleanup_close_ int fd = aj_open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd < 0 || aj_mount_setattr(fd, "", AT_EMPTY_PATH, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
				       0, -1) < 0)
		return aj_err(err, errno, "cannot bind %s for %s", src, dest);
	return aj_mount_in_root(fd, rootfd, dest, true, err);
}

/* One of agentjail's files over the image's in etc: 0 or -errno. */
static int etc_replace(int etc, const char *name, const char *text)
{
	if (unlinkat(etc, name, 0) < 0 && errno != ENOENT)
		return -errno;
	_cleanup_close_ int fd =
	    openat(etc, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	return text ? aj_write_all(fd, text, strlen(text)) : -ENOMEM;
}

/* An image's root: its own /etc (in the overlay's upper layer), with the
 * files agentjail owns written over the image's (etc.h: passwd and group
 * naming the sandbox's user, hosts, hostname, resolv.conf for the network
 * policy, nsswitch.conf), as level 2 binds them. /etc and each file are
 * looked up as the sandbox will see them: a symlink in the image can't
 * point a write at the host. need (--allow, whose resolver the sandbox
 * must find): every file or the run fails; else an image without /etc,
 * or whose /etc the sandbox's root may not change (unprivileged, owned by
 * an unmapped uid), keeps what it has. */
static int rootfs_etc(int root, const aj_etc_files *f, bool need, aj_error *err)
{
	_cleanup_close_ int etc = aj_open_in_root(root, "/etc", O_PATH | O_DIRECTORY, 0);
	if (etc < 0 && !need)
		return 0;
	if (etc < 0)
		return aj_err(err, -etc, "--allow: the --rootfs has no usable /etc");
	for (size_t i = 0; i < AJ_ETC_FILES; i++) {
		int r = etc_replace(etc, aj_etc_generated[i], f->text[i]);
		if (r < 0 && need)
			return aj_err(err, -r, "--allow: cannot write the --rootfs's /etc/%s",
				      aj_etc_generated[i]);
	}
	return 0;
}

static int setup_rootfs_overlay(const aj_policy *p, aj_mount_plan *plan, aj_error *err)
{
	aj_mount_op *lower = &plan->ops[0];
	int r = op_tree(lower, err);
	if (r != 0)
		return r < 0 ? r : aj_err(err, ENOENT, "cannot open --rootfs %s", p->rootfs);
	if (mkdir("/lower", 0755) < 0 ||
	    aj_move_mount(lower->fd, "", AT_FDCWD, "/lower", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return aj_err(err, errno, "cannot mount --rootfs %s as the overlay's lower layer",
			      p->rootfs);
	close(lower->fd);
	lower->fd = -1;
	const char *o1 =
	    "lowerdir=/lower,upperdir=" SCRATCH "/upper,workdir=" SCRATCH "/work,userxattr";
	const char *o2 = "lowerdir=/lower,upperdir=" SCRATCH "/upper,workdir=" SCRATCH "/work";
	if (mount("overlay", NEWROOT, "overlay", MS_NOSUID | MS_NODEV, o1) < 0 &&
	    mount("overlay", NEWROOT, "overlay", MS_NOSUID | MS_NODEV, o2) < 0) {
		aj_err(err, errno, "cannot mount the overlay over --rootfs %s", p->rootfs);
		aj_err_hint(err, "check overlayfs support with agentjail doctor");
		return -errno;
	}
	return 0;
}

static int mount_devpts_shm(int rootfd, aj_error *err)
{
	static const char *const opts[] = {"newinstance", "ptmxmode=0666", "mode=0620", NULL};
	_cleanup_close_ int pts =
	    new_fs("devpts", opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
	if (pts < 0)
		return pts;
	int r = aj_mount_in_root(pts, rootfd, "/dev/pts", true, err);
	return r < 0 ? r : bind_scratch("shm", rootfd, "/dev/shm", err);
}

/* /dev: the state directory's prepared one (dev_cache.c) or a small tmpfs
 * with the links and a bind per node (the plan's); a new devpts instance and
 * the scratch's shm on top. */
static int setup_dev(aj_mount_plan *plan, int rootfd, aj_error *err)
{
	if (plan->dev_cached) {
		int r = aj_mount_in_root(plan->dev_tree, rootfd, "/dev", true, err);
		if (r < 0)
			return r;
		close(plan->dev_tree);
		plan->dev_tree = -1;
		return mount_devpts_shm(rootfd, err);
	}
	static const char *const opts[] = {"mode=0755", "size=64k", NULL};
	_cleanup_close_ int dev = new_fs("tmpfs", opts, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
	if (dev < 0)
		return dev;
	/* filled while detached: dev is the new tmpfs itself */
	static const char *const links[][2] = {
	    {"/proc/self/fd", "fd"},	   {"/proc/self/fd/0", "stdin"},
	    {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"},
	    {"pts/ptmx", "ptmx"},
	};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(links); i++)
		if (symlinkat(links[i][0], dev, links[i][1]) < 0)
			return aj_err(err, errno, "cannot create /dev/%s", links[i][1]);
	if (mkdirat(dev, "pts", 0755) < 0)
		return aj_err(err, errno, "cannot create /dev/pts");
	int r = aj_mount_in_root(dev, rootfd, "/dev", true, err);
	return r < 0 ? r : mount_devpts_shm(rootfd, err);
}

/* The default root's /etc: the cached copy of the host's files
 * (etc_cache.c), whose links for the generated files point to
 * AJ_ETC_GENERATED_DIR; or, without a copy, the generated files in the root
 * and a bind per host file (the plan's). The root is agentjail's own tmpfs
 * here (no --rootfs), and nothing of the host is mounted in it yet. */
static int setup_etc(aj_mount_plan *plan, int rootfd, aj_error *err)
{
	if (!plan->etc_cached)
		return aj_etc_write(NEWROOT, &plan->etc, err);
	int r = aj_mkdir_p(NEWROOT AJ_ETC_GENERATED_DIR, 0755);
	if (r < 0)
		return aj_err(err, -r, "cannot create %s", AJ_ETC_GENERATED_DIR);
	if ((r = aj_etc_write_dir(NEWROOT AJ_ETC_GENERATED_DIR, &plan->etc, err)) < 0)
		return r;
	if ((r = aj_mount_in_root(plan->etc_tree, rootfd, "/etc", true, err)) < 0)
		return r;
	close(plan->etc_tree);
	plan->etc_tree = -1;
	return 0;
}

static int setup_tmp_home(int rootfd, aj_error *err)
{
	int r = bind_scratch("tmp", rootfd, "/tmp", err);
	return r < 0 ? r : bind_scratch("home", rootfd, AJ_SANDBOX_HOME, err);
}

static int pivot_into_newroot(bool readonly_root, aj_error *err)
{
	if (chdir(NEWROOT) < 0)
		return aj_err(err, errno, "chdir %s", NEWROOT);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return aj_err(err, errno, "pivot_root into the new root failed");
	/* The staging root (and the host root below it) is stacked under the
	 * new root: detach it so it is never reachable again. */
	if (umount2(".", MNT_DETACH) < 0)
		return aj_err(err, errno, "cannot detach the old root");
	if (chdir("/") < 0)
		return aj_err(err, errno, "chdir /");
	if (readonly_root &&
	    mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
		0)
		return aj_err(err, errno, "cannot make the root read-only");
	return 0;
}

/* /proc, /dev, /tmp, home, the default root's /etc, resolv.conf, then the
 * plan's binds: each at its place inside the root of rootfd. */
static int fill_root(const aj_policy *p, aj_mount_plan *plan, int rootfd, aj_error *err)
{
	_cleanup_close_ int proc =
	    new_fs("proc", NULL, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, err);
	int r = proc < 0 ? proc : aj_mount_in_root(proc, rootfd, "/proc", true, err);
	if (r < 0 || (r = setup_dev(plan, rootfd, err)) < 0 ||
	    (r = setup_tmp_home(rootfd, err)) < 0)
		return r;
	if (!p->rootfs && (r = setup_etc(plan, rootfd, err)) < 0)
		return r;
	if (p->rootfs && (r = rootfs_etc(rootfd, &plan->etc, p->net == AJ_NET_ALLOW, err)) < 0)
		return r;
	parent_cache cache = {.fd = -1};
	for (size_t i = p->rootfs ? 1 : 0; r == 0 && i < plan->n; i++)
		r = attach_op(&plan->ops[i], rootfd, &cache, err);
	if (cache.fd >= 0)
		close(cache.fd);
	return r;
}

/* HTTPS interception (net_addr.h): the root's CA bundle with netd's CA
 * added, written to the scratch tmpfs (out of the sandbox's view: a copy in
 * its root could be written there and show through the bind) and bound
 * read-only over AJ_NET_CA_BUNDLE (made in an image without one; a default
 * root without one fails the run). */
static int setup_ca(aj_mount_plan *plan, int rootfd, aj_error *err)
{
	static const char name[] = SCRATCH "/ca-certificates.crt";
	_cleanup_free_ char *old = NULL;
	size_t old_len = 0;
	int r = aj_etc_read_ca(rootfd, &old, &old_len, err);
	if (r < 0)
		return r;
	_cleanup_close_ int out =
	    open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	r = out < 0 ? -errno : 0;
	if (r == 0 && old_len)
		r = aj_write_all(out, old, old_len);
	if (r == 0 && old_len && old[old_len - 1] != '\n')
		r = aj_write_all(out, "\n", 1);
	if (r == 0)
		r = aj_write_all(out, plan->ca_pem, strlen(plan->ca_pem));
	if (r < 0)
		return aj_err(err, -r, "cannot write the sandbox's CA bundle");
	_cleanup_close_ int mnt = aj_open_tree(AT_FDCWD, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (mnt < 0 ||
	    aj_mount_setattr(mnt, "", AT_EMPTY_PATH,
			     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, -1) < 0)
		return aj_err(err, errno, "cannot bind the sandbox's CA bundle");
	if ((r = aj_mount_in_root(mnt, rootfd, AJ_NET_CA_BUNDLE, false, err)) < 0) {
		aj_err_prefix(err, "HTTPS interception for scoped secrets needs %s in the root",
			      AJ_NET_CA_BUNDLE);
		aj_err_hint(err, "install ca-certificates on the host (or in the image)");
		return r;
	}
	return 0;
}

int aj_mount_setup_root(const aj_policy *p, aj_mount_plan *plan, aj_error *err)
{
	int r = enter_staging(err);
	if (r < 0 || (r = setup_scratch(p, err)) < 0)
		return r;
	if (p->rootfs) {
		if ((r = setup_rootfs_overlay(p, plan, err)) < 0)
			return r;
	} else if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=8m") <
		   0) {
		return aj_err(err, errno, "cannot mount the root tmpfs");
	}
	_cleanup_close_ int rootfd = open(NEWROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return aj_err(err, errno, "cannot open the new root");
	if ((r = fill_root(p, plan, rootfd, err)) < 0)
		return r;
	if (plan->ca_pem && (r = setup_ca(plan, rootfd, err)) < 0)
		return r;
	if (p->workspace && (r = aj_mask_workspace(p, NEWROOT, SCRATCH "/masks", err)) < 0)
		return r;
	if (p->workspace && (r = aj_protect_apply(plan->protect, NEWROOT, err)) < 0)
		return r;
	return pivot_into_newroot(!p->rootfs || p->root_readonly, err);
}
