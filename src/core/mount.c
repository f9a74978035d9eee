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
#include "mask.h"
#include "protect.h"
#include "userns.h"
#include "util.h"

#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

struct aj_mount_attr {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

/* Where the sandbox is assembled, inside the child's private staging tmpfs. */
#define STAGE_DIR "/tmp"
#define NEWROOT "/newroot"
#define OLDROOT "/oldroot"
#define SCRATCH "/scratch"

int aj_open_tree(int dfd, const char *path, unsigned flags)
{
	return (int)syscall(SYS_open_tree, dfd, path, flags);
}

int aj_move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags)
{
	return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

int aj_mount_setattr(int dfd, const char *path, unsigned flags, unsigned long long set,
		     unsigned long long clr, int userns_fd)
{
	struct aj_mount_attr a = {.attr_set = set,
				  .attr_clr = clr,
				  .userns_fd = userns_fd >= 0 ? (unsigned long long)userns_fd : 0};
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, &a, sizeof(a));
}

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

/* Create the mount point for dest below NEWROOT: a directory, or an empty
 * file when the source is a file. made (may be NULL) holds the last parent
 * directory made: most binds share theirs (/newroot/etc), one mkdir less. */
static int make_mountpoint(const char *path, bool is_dir, char *made, size_t made_len)
{
	char parent[4096];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (!made || strcmp(made, parent) != 0) {
			int r = aj_mkdir_p(parent, 0755);
			if (r < 0)
				return r;
			if (made)
				snprintf(made, made_len, "%s", parent);
		}
	}
	if (is_dir)
		return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int attach_op(aj_mount_op *op, const char *root, char *made, size_t made_len, aj_error *err)
{
	char dest[4096];
	snprintf(dest, sizeof(dest), "%s%s", root, op->dest);
	if (op->kind == AJ_MOUNT_SYMLINK) {
		char parent[4096];
		snprintf(parent, sizeof(parent), "%s", dest);
		*strrchr(parent, '/') = '\0';
		(void)aj_mkdir_p(parent, 0755);
		if (symlink(op->src, dest) < 0 && errno != EEXIST)
			return aj_err(err, errno, "cannot create symlink %s", op->dest);
		return 0;
	}
	if (op->skip)
		return 0;
	if (op->fd < 0) {
		int fd = open_detached(op, OLDROOT, -1, err);
		if (fd == -ENOENT && op->optional)
			return 0;
		if (fd < 0)
			return fd;
		op->fd = fd;
	}
	struct stat st;
	if (fstat(op->fd, &st) < 0)
		return aj_err(err, errno, "cannot stat the mount of '%s'", op->src);
	int r = make_mountpoint(dest, S_ISDIR(st.st_mode), made, made_len);
	if (r < 0)
		return aj_err(err, -r, "cannot create mount point %s", op->dest);
	if (aj_move_mount(op->fd, "", AT_FDCWD, dest, MOVE_MOUNT_F_EMPTY_PATH) < 0)
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
	for (size_t i = 0; i < AJ_ARRAY_SIZE(dirs); i++) {
		char d[64];
		snprintf(d, sizeof(d), SCRATCH "/%s", dirs[i].name);
		if (mkdir(d, dirs[i].mode) < 0 || chmod(d, dirs[i].mode) < 0)
			return aj_err(err, errno, "cannot create %s", d);
	}
	if (chown(SCRATCH "/home", p->uid, p->gid) < 0)
		return aj_err(err, errno, "cannot hand the home directory to uid %u",
			      (unsigned)p->uid);
	return 0;
}

/* Bind a directory of the scratch tmpfs at dest. */
static int bind_scratch(const char *name, const char *dest, aj_error *err)
{
	char src[64];
	snprintf(src, sizeof(src), SCRATCH "/%s", name);
	int r = aj_mkdir_p(dest, 0755);
	if (r < 0)
		return aj_err(err, -r, "cannot create %s", dest);
	if (mount(src, dest, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, dest, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, NULL) < 0)
		return aj_err(err, errno, "cannot mount %s", dest);
	return 0;
}

/* --allow with --rootfs: the image's /etc/resolv.conf (in the overlay's
 * upper layer) names agentjail's resolver. /etc and the file are looked up
 * as the sandbox will see them: a symlink in the image can't point the
 * write at the host. */
static int rootfs_resolv(const char *text, aj_error *err)
{
	_cleanup_close_ int root = open(NEWROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int etc =
	    root < 0 ? -1 : (int)syscall(SYS_openat2, root, "etc", &how, sizeof(how));
	if (etc < 0)
		return aj_err(err, errno, "--allow: the --rootfs has no usable /etc");
	if (unlinkat(etc, "resolv.conf", 0) < 0 && errno != ENOENT)
		return aj_err(err, errno,
			      "--allow: cannot replace the --rootfs's /etc/resolv.conf");
	_cleanup_close_ int fd =
	    openat(etc, "resolv.conf", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || aj_write_all(fd, text, strlen(text)) < 0)
		return aj_err(err, errno, "--allow: cannot write the --rootfs's /etc/resolv.conf");
	return 0;
}

static int setup_rootfs_overlay(const aj_policy *p, aj_mount_plan *plan, aj_error *err)
{
	aj_mount_op *lower = &plan->ops[0];
	int r;
	if (mkdir("/lower", 0755) < 0)
		return aj_err(err, errno, "cannot prepare the overlay directories");
	lower->dest[0] = '\0'; /* attach at /lower */
	if ((r = attach_op(lower, "/lower", NULL, 0, err)) < 0)
		return r;
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

static int mount_devpts_shm(aj_error *err)
{
	if (mount("devpts", NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") < 0)
		return aj_err(err, errno, "cannot mount a new devpts instance");
	return bind_scratch("shm", NEWROOT "/dev/shm", err);
}

/* /dev: the state directory's prepared one (dev_cache.c) or a small tmpfs
 * with the links and a bind per node (the plan's); a new devpts instance and
 * the scratch's shm on top. */
static int setup_dev(aj_mount_plan *plan, aj_error *err)
{
	if (plan->dev_cached) {
		if ((mkdir(NEWROOT "/dev", 0755) < 0 && errno != EEXIST) ||
		    aj_move_mount(plan->dev_tree, "", AT_FDCWD, NEWROOT "/dev",
				  MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return aj_err(err, errno, "cannot mount the prepared /dev");
		close(plan->dev_tree);
		plan->dev_tree = -1;
		return mount_devpts_shm(err);
	}
	int r = mount_tmpfs(NEWROOT "/dev", "mode=0755,size=64k", MS_NOSUID | MS_NOEXEC, err);
	if (r < 0)
		return r;
	static const char *const links[][2] = {
	    {"/proc/self/fd", NEWROOT "/dev/fd"},	{"/proc/self/fd/0", NEWROOT "/dev/stdin"},
	    {"/proc/self/fd/1", NEWROOT "/dev/stdout"}, {"/proc/self/fd/2", NEWROOT "/dev/stderr"},
	    {"pts/ptmx", NEWROOT "/dev/ptmx"},
	};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(links); i++)
		if (symlink(links[i][0], links[i][1]) < 0)
			return aj_err(err, errno, "cannot create %s", links[i][1]);
	if (mkdir(NEWROOT "/dev/pts", 0755) < 0)
		return aj_err(err, errno, "cannot create /dev/pts");
	return mount_devpts_shm(err);
}

/* The default root's /etc: the cached copy of the host's files
 * (etc_cache.c), whose links for the generated files point to
 * AJ_ETC_GENERATED_DIR; or, without a copy, the generated files in the root
 * and a bind per host file (the plan's). */
static int setup_etc(aj_mount_plan *plan, aj_error *err)
{
	if (!plan->etc_cached)
		return aj_etc_write(NEWROOT, &plan->etc, err);
	int r = aj_mkdir_p(NEWROOT AJ_ETC_GENERATED_DIR, 0755);
	if (r < 0)
		return aj_err(err, -r, "cannot create %s", AJ_ETC_GENERATED_DIR);
	if ((r = aj_etc_write_dir(NEWROOT AJ_ETC_GENERATED_DIR, &plan->etc, err)) < 0)
		return r;
	if (mkdir(NEWROOT "/etc", 0755) < 0 ||
	    aj_move_mount(plan->etc_tree, "", AT_FDCWD, NEWROOT "/etc", MOVE_MOUNT_F_EMPTY_PATH) <
		0)
		return aj_err(err, errno, "cannot mount the copy of the host's /etc");
	close(plan->etc_tree);
	plan->etc_tree = -1;
	return 0;
}

static int setup_tmp_home(aj_error *err)
{
	int r = bind_scratch("tmp", NEWROOT "/tmp", err);
	return r < 0 ? r : bind_scratch("home", NEWROOT AJ_SANDBOX_HOME, err);
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

int aj_mount_setup_root(const aj_policy *p, aj_mount_plan *plan, aj_error *err)
{
	int r = enter_staging(err);
	if (r < 0 || (r = setup_scratch(p, err)) < 0)
		return r;
	size_t first = 0;
	if (p->rootfs) {
		if ((r = setup_rootfs_overlay(p, plan, err)) < 0)
			return r;
		first = 1;
	} else if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=8m") <
		   0) {
		return aj_err(err, errno, "cannot mount the root tmpfs");
	}
	if (mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 &&
	    (aj_mkdir_p(NEWROOT "/proc", 0755) < 0 ||
	     mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0))
		return aj_err(err, errno, "cannot mount a fresh /proc");
	if ((r = setup_dev(plan, err)) < 0 || (r = setup_tmp_home(err)) < 0)
		return r;
	if (!p->rootfs && (r = setup_etc(plan, err)) < 0)
		return r;
	if (p->rootfs && p->net == AJ_NET_ALLOW && (r = rootfs_resolv(plan->resolv_conf, err)) < 0)
		return r;
	char made[4096] = "";
	for (size_t i = first; i < plan->n; i++)
		if ((r = attach_op(&plan->ops[i], NEWROOT, made, sizeof(made), err)) < 0)
			return r;
	if (p->workspace && (r = aj_mask_workspace(p, NEWROOT, SCRATCH "/masks", err)) < 0)
		return r;
	if (p->workspace && (r = aj_protect_apply(plan->protect, NEWROOT, err)) < 0)
		return r;
	return pivot_into_newroot(!p->rootfs, err);
}
