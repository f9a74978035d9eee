/* SPDX-License-Identifier: MIT */
/* Lookups and creation inside an untrusted tree (see inroot.h). The kernel
 * resolves every path (openat2, RESOLVE_IN_ROOT); what we create is made
 * with mkdirat/openat(O_CREAT|O_EXCL|O_NOFOLLOW) in a directory the kernel
 * resolved, so nothing is ever made or opened outside the tree, even when
 * the tree changes meanwhile. A dangling symlink is the one case the kernel
 * cannot finish for us (there is nothing to open): we read it and go on
 * with its target, in the tree, as the kernel would have. */
#include "inroot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mountapi.h"
#include "util.h"

#define MAX_LINKS 40	/* as the kernel's MAXSYMLINKS */
#define RESTART INT_MIN /* make_walk: the path was rewritten, walk it again */

int aj_open_in_root(int rootfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {.flags = (unsigned long long)flags | O_CLOEXEC,
			       .mode = flags & (O_CREAT | O_TMPFILE) ? mode : 0,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	while (*path == '/')
		path++;
	/* EAGAIN: a rename raced with a ".." (the kernel asks to retry) */
	for (int i = 0; i < 32; i++) {
		long fd = syscall(SYS_openat2, rootfd, *path ? path : ".", &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN)
			return -errno;
	}
	return -EAGAIN;
}

/* What fd is must be a directory (dir) or anything else; fd is closed
 * when not. */
static int kind_ok(int fd, bool dir)
{
	struct stat st;
	int r = fstat(fd, &st) < 0	     ? -errno
		: S_ISLNK(st.st_mode)	     ? -ELOOP /* O_PATH|O_NOFOLLOW: replaced meanwhile */
		: dir != S_ISDIR(st.st_mode) ? (dir ? -ENOTDIR : -EISDIR)
					     : 0;
	if (r < 0)
		close(fd);
	return r < 0 ? r : fd;
}

/* Make name (a directory, or when !dir an empty file) in parent. 0, or
 * -EEXIST when something is there (a dangling link, or it was made
 * meanwhile), or -errno. */
static int make_one(int parent, const char *name, mode_t mode, bool dir)
{
	if (dir)
		return mkdirat(parent, name, mode) < 0 ? -errno : 0;
	int fd = openat(parent, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* cur names a dangling link at [start, end) in the directory cur[0, start):
 * replace that component with the link's target, the rest kept. */
static int follow_dangling(int parent, char *cur, size_t start, size_t end)
{
	char target[PATH_MAX], next[PATH_MAX];
	char c = cur[end];
	cur[end] = '\0';
	ssize_t n = readlinkat(parent, cur + start, target, sizeof(target) - 1);
	cur[end] = c;
	if (n < 0)
		return errno == EINVAL ? RESTART : -errno; /* no longer a link: again */
	target[n] = '\0';
	cur[start] = '\0';
	int w = target[0] == '/' ? snprintf(next, sizeof(next), "%s%s", target, cur + end)
				 : snprintf(next, sizeof(next), "%s/%s%s", cur, target, cur + end);
	if (w < 0 || (size_t)w >= sizeof(next))
		return -ENAMETOOLONG;
	memcpy(cur, next, (size_t)w + 1);
	return RESTART;
}

/* One walk of cur from the root, component by component, each resolved by
 * the kernel from rootfd; a missing one is made in its parent, once check
 * (when given) passed that parent. Returns the fd, or RESTART when a
 * dangling link rewrote cur, or -errno. */
static int make_walk(int rootfd, char *cur, mode_t mode, bool dir, aj_inroot_check check, void *ctx)
{
	_cleanup_close_ int parent = aj_open_in_root(rootfd, "", O_PATH | O_DIRECTORY, 0);
	if (parent < 0)
		return parent;
	size_t pos = 0;
	for (;;) {
		while (cur[pos] == '/')
			pos++;
		if (!cur[pos]) /* "/", or a path ending in "." or ".." */
			return dir ? kind_ok(steal_fd(&parent), true) : -EISDIR;
		size_t start = pos, end = pos;
		while (cur[end] && cur[end] != '/')
			end++;
		size_t after = end;
		while (cur[after] == '/')
			after++;
		bool last = !cur[after];
		char c = cur[end];
		cur[end] = '\0';
		const char *name = cur + start;
		bool dots = !strcmp(name, ".") || !strcmp(name, "..");
		int fd = aj_open_in_root(rootfd, cur, O_PATH, 0);
		if (fd == -ENOENT && !dots) {
			int m = check ? check(parent, ctx) : 0;
			if (m < 0) {
				cur[end] = c;
				return m;
			}
			m = make_one(parent, name, mode, dir || !last);
			cur[end] = c;
			if (m == -EEXIST)
				return follow_dangling(parent, cur, start, end);
			if (m < 0)
				return m;
			cur[end] = '\0';
			/* what we made, in the parent the kernel resolved */
			fd = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			fd = fd < 0 ? -errno : fd;
		}
		cur[end] = c;
		if (fd < 0)
			return fd;
		if ((fd = kind_ok(fd, last ? dir : true)) < 0 || last)
			return fd;
		close(parent);
		parent = fd;
		pos = end;
	}
}

static int make_in_root(int rootfd, const char *path, mode_t mode, bool dir, aj_inroot_check check,
			void *ctx)
{
	char cur[PATH_MAX];
	if ((size_t)snprintf(cur, sizeof(cur), "%s", path) >= sizeof(cur))
		return -ENAMETOOLONG;
	for (int links = 0; links <= MAX_LINKS; links++) {
		int r = make_walk(rootfd, cur, mode, dir, check, ctx);
		if (r != RESTART)
			return r;
	}
	return -ELOOP;
}

int aj_mkdir_in_root(int rootfd, const char *path, mode_t mode)
{
	int fd = aj_open_in_root(rootfd, path, O_PATH | O_DIRECTORY, 0);
	if (fd != -ENOENT)
		return fd;
	return make_in_root(rootfd, path, mode, true, NULL, NULL);
}

int aj_mkfile_in_root(int rootfd, const char *path, mode_t mode)
{
	int fd = aj_open_in_root(rootfd, path, O_PATH, 0);
	if (fd >= 0)
		return kind_ok(fd, false);
	if (fd != -ENOENT)
		return fd;
	return make_in_root(rootfd, path, mode, false, NULL, NULL);
}

int aj_make_in_root_checked(int rootfd, const char *path, mode_t mode, bool dir,
			    aj_inroot_check check, void *ctx)
{
	int fd = aj_open_in_root(rootfd, path, O_PATH | (dir ? O_DIRECTORY : 0), 0);
	if (fd == -ENOENT)
		fd = make_in_root(rootfd, path, mode, dir, check, ctx);
	else if (fd >= 0 && !dir)
		fd = kind_ok(fd, false);
	if (fd < 0)
		return fd;
	int r = check(fd, ctx);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int aj_mount_in_root(int mnt, int rootfd, const char *dest, bool is_dir, aj_error *err)
{
	_cleanup_close_ int t =
	    is_dir ? aj_mkdir_in_root(rootfd, dest, 0755) : aj_mkfile_in_root(rootfd, dest, 0644);
	if (t < 0)
		return aj_err(err, -t,
			      "cannot make the mount point %s inside the sandbox's root: %s", dest,
			      strerror(-t));
	if (aj_move_mount(mnt, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return aj_err(err, errno, "cannot mount at %s", dest);
	return 0;
}
