/* SPDX-License-Identifier: MIT */
/* Tree sync for snapshots and forks. Every step is relative to an open
 * directory and never follows a symlink, so a sandbox that changes its
 * tree while it is copied cannot point the copy anywhere else. */
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caps.h"
#include "util.h"

#define MAX_DEPTH 256

typedef struct walk {
	const aj_tree_ids *ids;
	uint64_t src_mnt, dst_mnt;
	char path[PATH_MAX]; /* relative path of the directory being copied */
	size_t plen;
	unsigned long long entries;
	unsigned long long bytes; /* apparent size of the regular files copied */
	aj_error *err;
} walk;

static int xstat(int dir, const char *name, struct statx *sx)
{
	if (statx(dir, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (*name ? 0 : AT_EMPTY_PATH),
		  STATX_BASIC_STATS | STATX_MNT_ID, sx) < 0)
		return -errno;
	return 0;
}

static int fail(walk *w, int e, const char *what, const char *name)
{
	return aj_err(w->err, e, "%s %s/%s", what, w->plen ? w->path : "", name);
}

static uid_t shift(uint32_t id, uint32_t from, uint32_t to, unsigned range)
{
	return id >= from && id - from < range ? to + (id - from) : to + 65534;
}

static int set_owner_mode(walk *w, int fd, const char *name, const struct statx *sx)
{
	uid_t u = shift(sx->stx_uid, w->ids->from_uid, w->ids->to_uid, w->ids->range);
	gid_t g = shift(sx->stx_gid, w->ids->from_gid, w->ids->to_gid, w->ids->range);
	if (fchown(fd, u, g) < 0)
		return fail(w, errno, "cannot set the owner of", name);
	if (fchmod(fd, sx->stx_mode & 07777) < 0)
		return fail(w, errno, "cannot set the mode of", name);
	struct timespec ts[2] = {{sx->stx_atime.tv_sec, sx->stx_atime.tv_nsec},
				 {sx->stx_mtime.tv_sec, sx->stx_mtime.tv_nsec}};
	(void)futimens(fd, ts);
	return 0;
}

static int rm_tree(walk *w, int dir, const char *name, int depth)
{
	if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return fail(w, errno, "cannot remove", name);
	if (depth > MAX_DEPTH)
		return fail(w, ELOOP, "too deep:", name);
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct statx sx;
	if (fd < 0 || xstat(fd, "", &sx) < 0 || sx.stx_mnt_id != w->dst_mnt) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return fd < 0 ? fail(w, e, "cannot remove", name) : 0; /* a mount point: kept */
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return fail(w, errno, "cannot remove", name);
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = rm_tree(w, dirfd(d), de->d_name, depth + 1);
	closedir(d);
	if (r == 0 && unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = fail(w, errno, "cannot remove", name);
	return r;
}

static int copy_reg(walk *w, int s, int d, const char *name, const struct statx *sx)
{
	_cleanup_close_ int in =
	    openat(s, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0)
		return errno == ENOENT ? 0 : fail(w, errno, "cannot read", name);
	if (!S_ISREG(st.st_mode))
		return 0; /* replaced while we looked: left out */
	/* grown since it was counted (the copy goes to this size) */
	if (w->ids->max_bytes && (unsigned long long)st.st_size > sx->stx_size &&
	    (w->bytes += (unsigned long long)st.st_size - sx->stx_size) > w->ids->max_bytes)
		return fail(w, EDQUOT, "the apparent size of the files passes the limit at", name);
	_cleanup_close_ int out =
	    openat(d, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return fail(w, errno, "cannot create", name);
	int r = aj_copy_fd(in, out);
	if (r < 0)
		return fail(w, -r, "cannot copy", name);
	return set_owner_mode(w, out, name, sx);
}

static int copy_link(walk *w, int s, int d, const char *name, const struct statx *sx)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(s, name, target, sizeof(target) - 1);
	if (n < 0)
		return errno == ENOENT ? 0 : fail(w, errno, "cannot read the link", name);
	target[n] = '\0';
	if (symlinkat(target, d, name) < 0)
		return fail(w, errno, "cannot create the link", name);
	uid_t u = shift(sx->stx_uid, w->ids->from_uid, w->ids->to_uid, w->ids->range);
	gid_t g = shift(sx->stx_gid, w->ids->from_gid, w->ids->to_gid, w->ids->range);
	if (fchownat(d, name, u, g, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(w, errno, "cannot set the owner of", name);
	struct timespec ts[2] = {{sx->stx_atime.tv_sec, sx->stx_atime.tv_nsec},
				 {sx->stx_mtime.tv_sec, sx->stx_mtime.tv_nsec}};
	(void)utimensat(d, name, ts, AT_SYMLINK_NOFOLLOW);
	return 0;
}

static int copy_fifo(walk *w, int d, const char *name, const struct statx *sx)
{
	if (mkfifoat(d, name, 0600) < 0)
		return fail(w, errno, "cannot create", name);
	_cleanup_close_ int fd = openat(d, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	uid_t u = shift(sx->stx_uid, w->ids->from_uid, w->ids->to_uid, w->ids->range);
	gid_t g = shift(sx->stx_gid, w->ids->from_gid, w->ids->to_gid, w->ids->range);
	if (fd < 0 || fchownat(d, name, u, g, AT_SYMLINK_NOFOLLOW) < 0 ||
	    fchmodat(d, name, sx->stx_mode & 07777, 0) < 0)
		return fail(w, errno, "cannot set the owner of", name);
	return 0;
}

/* The same file on both sides: an overlay's lower file neither changed. */
static bool same_file(const struct statx *a, const struct statx *b)
{
	return S_ISREG(a->stx_mode) && S_ISREG(b->stx_mode) && a->stx_ino == b->stx_ino &&
	       a->stx_size == b->stx_size && a->stx_ctime.tv_sec == b->stx_ctime.tv_sec &&
	       a->stx_ctime.tv_nsec == b->stx_ctime.tv_nsec;
}

static bool same_link(int s, int d, const char *name)
{
	char a[PATH_MAX], b[PATH_MAX];
	ssize_t na = readlinkat(s, name, a, sizeof(a)), nb = readlinkat(d, name, b, sizeof(b));
	return na >= 0 && na == nb && memcmp(a, b, (size_t)na) == 0;
}

static int sync_dir(walk *w, int s, int d, int depth);

static int sync_subdir(walk *w, int s, int d, const char *name, const struct statx *sx,
		       bool have_dst, int depth)
{
	if (!have_dst && mkdirat(d, name, 0700) < 0)
		return fail(w, errno, "cannot create", name);
	if (sx->stx_mnt_id != w->src_mnt) /* a mount point: only the directory */
		return have_dst				? 0
		       : fchmodat(d, name, 0755, 0) < 0 ? fail(w, errno, "chmod", name)
							: 0;
	if (depth >= MAX_DEPTH)
		return fail(w, ELOOP, "too deep:", name);
	_cleanup_close_ int sd = openat(s, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int dd = openat(d, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct statx dx;
	if (sd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0
							   : fail(w, errno, "cannot open", name);
	if (dd < 0 || xstat(dd, "", &dx) < 0)
		return fail(w, errno, "cannot open", name);
	if (dx.stx_mnt_id != w->dst_mnt)
		return 0; /* a mount point of the destination (its own /proc, /tmp...) */
	size_t old = w->plen;
	int n = snprintf(w->path + old, sizeof(w->path) - old, "%s%s", old ? "/" : "", name);
	if (n < 0 || (size_t)n >= sizeof(w->path) - old)
		return fail(w, ENAMETOOLONG, "path too long:", name);
	w->plen += (size_t)n;
	int r = sync_dir(w, sd, dd, depth + 1);
	w->path[w->plen = old] = '\0';
	return r < 0 ? r : set_owner_mode(w, dd, name, sx);
}

static int sync_entry(walk *w, int s, int d, const char *name, int depth)
{
	struct statx sx, dx;
	int r = xstat(s, name, &sx);
	if (r == -ENOENT)
		return 0; /* gone meanwhile */
	if (r < 0)
		return fail(w, -r, "cannot stat", name);
	if (++w->entries > 10000000)
		return fail(w, EFBIG, "too many files at", name);
	bool is_dir = S_ISDIR(sx.stx_mode);
	if (!is_dir && sx.stx_mnt_id != w->src_mnt)
		return 0; /* a file bound over (e.g. a mask): never copied */
	if (!is_dir && !S_ISREG(sx.stx_mode) && !S_ISLNK(sx.stx_mode) && !S_ISFIFO(sx.stx_mode))
		return 0; /* sockets, devices */
	bool have = xstat(d, name, &dx) == 0;
	if (have && is_dir && S_ISDIR(dx.stx_mode))
		return sync_subdir(w, s, d, name, &sx, true, depth);
	if (have && same_file(&sx, &dx))
		return 0;
	if (have && S_ISLNK(sx.stx_mode) && S_ISLNK(dx.stx_mode) && same_link(s, d, name) &&
	    dx.stx_uid == shift(sx.stx_uid, w->ids->from_uid, w->ids->to_uid, w->ids->range))
		return 0;
	if (have && dx.stx_mnt_id != w->dst_mnt)
		return 0; /* the destination's own mount point */
	if (have && (r = rm_tree(w, d, name, depth)) < 0)
		return r;
	if (is_dir)
		return sync_subdir(w, s, d, name, &sx, false, depth);
	if (S_ISREG(sx.stx_mode) && w->ids->max_bytes &&
	    (w->bytes += sx.stx_size) > w->ids->max_bytes)
		return fail(w, EDQUOT, "the apparent size of the files passes the limit at", name);
	if (S_ISREG(sx.stx_mode))
		return copy_reg(w, s, d, name, &sx);
	if (S_ISLNK(sx.stx_mode))
		return copy_link(w, s, d, name, &sx);
	return copy_fifo(w, d, name, &sx);
}

/* Each entry of s into d, then what d has and s has not removed. */
static int sync_dir(walk *w, int s, int d, int depth)
{
	int fd = fcntl(s, F_DUPFD_CLOEXEC, 3);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return fail(w, errno, "cannot list", ".");
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = sync_entry(w, s, d, de->d_name, depth);
	closedir(dir);
	if (r < 0 || (fd = fcntl(d, F_DUPFD_CLOEXEC, 3)) < 0 || !(dir = fdopendir(fd))) {
		if (r == 0 && fd >= 0)
			close(fd);
		return r < 0 ? r : fail(w, errno, "cannot list", ".");
	}
	while (r == 0 && (de = readdir(dir))) {
		struct statx sx;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (xstat(s, de->d_name, &sx) == -ENOENT)
			r = rm_tree(w, d, de->d_name, depth);
	}
	closedir(dir);
	return r;
}

static int du_dir(int fd, uint64_t mnt, int depth, unsigned long long *sum, unsigned long long *n)
{
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		if (dup >= 0)
			close(dup);
		return -errno;
	}
	int r = 0;
	for (struct dirent *de; r == 0 && (de = readdir(d));) {
		struct statx sx;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    xstat(fd, de->d_name, &sx) < 0 || sx.stx_mnt_id != mnt)
			continue;
		if (++*n > 10000000)
			r = -EFBIG;
		else if (S_ISREG(sx.stx_mode))
			*sum += sx.stx_size;
		else if (S_ISDIR(sx.stx_mode) && depth < MAX_DEPTH) {
			int sub =
			    openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				r = du_dir(sub, mnt, depth + 1, sum, n);
				close(sub);
			}
		}
	}
	closedir(d);
	return r;
}

int aj_tree_apparent_size(int dir, unsigned long long *bytes)
{
	struct statx sx;
	int r = xstat(dir, "", &sx);
	unsigned long long n = 0;
	*bytes = 0;
	return r < 0 ? r : du_dir(dir, sx.stx_mnt_id, 0, bytes, &n);
}

/* Create files as the destination's root (so that a filesystem mounted in
 * the sandbox's user namespace takes them), keeping the capabilities that
 * set any owner and read any file. Only the calling thread's ids change. */
static int become(const aj_tree_ids *ids, aj_error *err)
{
	if (ids->to_uid == 0)
		return 0;
	setfsgid(ids->to_gid);
	setfsuid(ids->to_uid);
	if ((uid_t)setfsuid((uid_t)-1) != ids->to_uid)
		return aj_err(err, EPERM, "cannot take the sandbox's file ids");
	static const int v[] = {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER,
				CAP_FSETID};
	int r = aj_caps_raise_effective(v, AJ_ARRAY_SIZE(v));
	return r < 0 ? aj_err(err, -r, "cannot keep the file capabilities") : 0;
}

typedef struct job {
	int src, dst;
	const aj_tree_ids *ids;
	aj_error *err;
	int r;
} job;

static void *run(void *arg)
{
	job *j = arg;
	walk w = {.ids = j->ids, .err = j->err};
	struct statx a, b;
	if ((j->r = become(j->ids, j->err)) < 0)
		return NULL;
	if (xstat(j->src, "", &a) < 0 || xstat(j->dst, "", &b) < 0) {
		j->r = aj_err(j->err, errno, "cannot stat the trees to copy");
		return NULL;
	}
	w.src_mnt = a.stx_mnt_id;
	w.dst_mnt = b.stx_mnt_id;
	j->r = sync_dir(&w, j->src, j->dst, 0);
	return NULL;
}

int aj_tree_sync(int src, int dst, const aj_tree_ids *ids, aj_error *err)
{
	/* a thread of its own: its file ids and capabilities change */
	job j = {.src = src, .dst = dst, .ids = ids, .err = err};
	pthread_t t;
	int e = pthread_create(&t, NULL, run, &j);
	if (e)
		return aj_err(err, e, "cannot start the copy");
	pthread_join(t, NULL);
	return j.r;
}
