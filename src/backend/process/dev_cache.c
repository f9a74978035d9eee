/* SPDX-License-Identifier: MIT */
/* The sandbox's /dev, made once: STATE/dev-cache/dev.1 holds the six device
 * nodes a sandbox gets (null, zero, full, random, urandom, tty: what /dev
 * gives every host user), the fd/stdin/stdout/stderr/ptmx links and the pts
 * and shm mount points. A sandbox mounts it read-only, nosuid, noexec in
 * one bind, with its own devpts and shm on top: six bind mounts and a tmpfs
 * less per sandbox (docs/performance.md, round 10). Used as root only, and
 * only where the state directory's filesystem allows device nodes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dev_cache.h"

#include "cache.h"
#include "mountapi.h"
#include "util.h"

#define DEV_CACHE "dev-cache"
/* the layout's version: a new one is a new name */
#define DEV_TREE "dev.1"

static const struct {
	const char *name;
	unsigned major, minor;
} nodes[] = {{"null", 1, 3},   {"zero", 1, 5},	  {"full", 1, 7},
	     {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};

static const char *const links[][2] = {{"fd", "/proc/self/fd"},
				       {"stdin", "/proc/self/fd/0"},
				       {"stdout", "/proc/self/fd/1"},
				       {"stderr", "/proc/self/fd/2"},
				       {"ptmx", "pts/ptmx"}};

/* Are the nodes of the tree what they must be (character devices, these
 * numbers, root's, 0666)? */
static bool nodes_ok(int tree)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(nodes); i++) {
		struct stat st;
		if (fstatat(tree, nodes[i].name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISCHR(st.st_mode) || st.st_rdev != makedev(nodes[i].major, nodes[i].minor) ||
		    st.st_uid != 0 || (st.st_mode & 07777) != 0666)
			return false;
	}
	return true;
}

/* Make the tree under a temporary name and rename it in place: whoever
 * comes second finds it made. */
static void make_tree(int dir)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), ".dev.%ld", (long)getpid());
	(void)aj_rm_tree_at(dir, tmp, 2);
	if (mkdirat(dir, tmp, 0700) < 0)
		return;
	_cleanup_close_ int t = openat(dir, tmp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool ok = t >= 0;
	for (size_t i = 0; ok && i < AJ_ARRAY_SIZE(nodes); i++)
		ok = mknodat(t, nodes[i].name, S_IFCHR | 0600,
			     makedev(nodes[i].major, nodes[i].minor)) == 0 &&
		     fchmodat(t, nodes[i].name, 0666, 0) == 0;
	for (size_t i = 0; ok && i < AJ_ARRAY_SIZE(links); i++)
		ok = symlinkat(links[i][1], t, links[i][0]) == 0;
	ok = ok && mkdirat(t, "pts", 0755) == 0 && fchmodat(t, "pts", 0755, 0) == 0 &&
	     mkdirat(t, "shm", 0755) == 0 && fchmodat(t, "shm", 0755, 0) == 0 &&
	     fchmodat(dir, tmp, 0755, 0) == 0 && nodes_ok(t);
	if (!ok || renameat(dir, tmp, dir, DEV_TREE) < 0)
		(void)aj_rm_tree_at(dir, tmp, 2);
}

int aj_dev_cache_open(void)
{
	if (geteuid() != 0)
		return -1;
	_cleanup_close_ int dir = aj_cache_dir(DEV_CACHE, true);
	if (dir < 0)
		return -1;
	_cleanup_close_ int tree =
	    openat(dir, DEV_TREE, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tree < 0 && errno == ENOENT) {
		make_tree(dir);
		tree = openat(dir, DEV_TREE, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	struct statvfs vfs;
	/* a filesystem mounted nodev would make the nodes useless */
	if (tree < 0 || !aj_cache_trusted(tree, true) || fstatvfs(tree, &vfs) < 0 ||
	    (vfs.f_flag & ST_NODEV) || !nodes_ok(tree))
		return -1;
	int bind = aj_open_tree(tree, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (bind < 0)
		return -1;
	if (aj_mount_setattr(bind, "", AT_EMPTY_PATH,
			     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0,
			     -1) < 0) {
		close(bind);
		return -1;
	}
	return bind;
}
