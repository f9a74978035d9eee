/* SPDX-License-Identifier: MIT */
/* The /etc cache: one copy, in the state directory, of the host /etc files
 * and directories the default root shows, mounted by a sandbox as its /etc
 * in one bind instead of a bind per file (~30 bind mounts, each ~20-80 us of
 * kernel work to make and to tear down here; docs/performance.md, round 10).
 *
 * STATE/etc-cache/current        the key of the newest copy
 * STATE/etc-cache/KEY/           a copy: files (owner, mode, times kept),
 *                                links, directories; and links for the
 *                                generated files, to AJ_ETC_GENERATED_DIR
 * STATE/etc-cache/KEY.manifest   what the copy was made from: every
 *                                directory and file, with the device, inode,
 *                                size, mode and times it had
 * STATE/etc-cache/.lock          taken to make or remove a copy
 *
 * A copy is used only while every entry of its manifest is unchanged on the
 * host. A link cannot change in place (a new one changes its directory's
 * times), so links are not listed. A copy is not kept when one of its
 * entries changed less than a second before: a second change within the
 * same clock tick could leave the times as they were.
 *
 * A sandbox holds its manifest locked shared for as long as it runs; a copy
 * whose manifest can be locked exclusively is unused, and is removed when a
 * newer one is made. Only root's own, not group- or world-writable files are
 * used. Whatever fails, the plan binds the files one by one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "etc_cache.h"

#include "cache.h"
#include "etc.h"
#include "image.h"
#include "mount.h"
#include "util.h"

#define CACHE_DIR "etc-cache"
#define CURRENT "current"
#define BUILD_DIR ".build"
#define LOCK_FILE ".lock"
#define MANIFEST_SUFFIX ".manifest"
/* the format, and where the links of the generated files point */
/* its number changes with aj_etc_allowed: a copy of another list is stale */
#define MAGIC "agentjail etc cache 3 " AJ_ETC_GENERATED_DIR "\n"
#define KEY_LEN 16
/* A copy is for configuration: past these, the host is left to binds. */
#define MAX_ENTRIES 20000
#define MAX_BYTES (64ULL << 20)
#define MAX_DEPTH 12
#define MAX_MANIFEST (4U << 20)
/* After a failed attempt (not a racy one), none for this long. */
#define RETRY_SECONDS 60

/* One entry of a manifest; its path (with its NUL) follows, padded to 8. */
struct rec {
	uint64_t dev, ino;
	int64_t size, mtime, ctime;
	uint32_t mtime_ns, ctime_ns, mode, path_len;
};

static void rec_of(struct rec *r, const struct stat *st, size_t path_len)
{
	*r = (struct rec){.dev = st->st_dev,
			  .ino = st->st_ino,
			  .size = st->st_size,
			  .mtime = st->st_mtim.tv_sec,
			  .ctime = st->st_ctim.tv_sec,
			  .mtime_ns = (uint32_t)st->st_mtim.tv_nsec,
			  .ctime_ns = (uint32_t)st->st_ctim.tv_nsec,
			  .mode = st->st_mode,
			  .path_len = (uint32_t)path_len};
}

static size_t rec_size(size_t path_len)
{
	return (sizeof(struct rec) + path_len + 7) & ~(size_t)7;
}

static uint64_t fnv1a64(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static bool is_key(const char *s)
{
	return strlen(s) == KEY_LEN && strspn(s, "0123456789abcdef") == KEY_LEN;
}

/* Is every entry of the manifest m (len bytes) unchanged on the host? */
static bool manifest_current(const char *m, size_t len)
{
	size_t off = sizeof(MAGIC) - 1;
	if (len < off || memcmp(m, MAGIC, off) != 0)
		return false;
	while (off < len) {
		struct rec r;
		if (len - off < sizeof(r))
			return false;
		memcpy(&r, m + off, sizeof(r));
		const char *path = m + off + sizeof(r);
		if (r.path_len < 2 || r.path_len > PATH_MAX || len - off < rec_size(r.path_len) ||
		    path[r.path_len - 1] != '\0' || path[0] != '/')
			return false;
		struct stat st;
		struct rec now;
		if (lstat(path, &st) < 0)
			return false;
		rec_of(&now, &st, r.path_len);
		if (memcmp(&now, &r, sizeof(r)) != 0)
			return false;
		off += rec_size(r.path_len);
	}
	return true;
}

/* The copy key, when current: *lock is its manifest, locked shared. */
static int open_copy(int dir, const char *key, int *lock, int *tree)
{
	char name[64];
	snprintf(name, sizeof(name), "%s" MANIFEST_SUFFIX, key);
	_cleanup_close_ int m = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (m < 0)
		return -errno;
	struct stat st;
	/* shared until the sandbox is gone; a removal holds it exclusively and
	 * unlinks the manifest first (nlink 0 then) */
	if (flock(m, LOCK_SH) < 0 || fstat(m, &st) < 0)
		return -errno;
	if (st.st_nlink == 0 || !aj_cache_trusted(m, false) || st.st_size > MAX_MANIFEST)
		return -ESTALE;
	size_t len = (size_t)st.st_size;
	_cleanup_free_ char *text = malloc(len ? len : 1);
	if (!text)
		return -ENOMEM;
	if (aj_read_all(m, text, len) < 0 || !manifest_current(text, len))
		return -ESTALE;
	int t = openat(dir, key, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (t < 0)
		return -errno;
	if (!aj_cache_trusted(t, true)) {
		close(t);
		return -ESTALE;
	}
	*lock = steal_fd(&m);
	*tree = t;
	return 0;
}

static int read_current(int dir, char key[KEY_LEN + 1])
{
	_cleanup_close_ int fd = openat(dir, CURRENT, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char buf[KEY_LEN + 2];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n != KEY_LEN + 1 || buf[KEY_LEN] != '\n')
		return -ESTALE;
	memcpy(key, buf, KEY_LEN);
	key[KEY_LEN] = '\0';
	return is_key(key) ? 0 : -ESTALE;
}

/* Remove the copy key and its manifest unless a sandbox uses them. Under
 * the build lock. */
static void remove_copy(int dir, const char *key)
{
	char name[64];
	snprintf(name, sizeof(name), "%s" MANIFEST_SUFFIX, key);
	_cleanup_close_ int m = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (m >= 0 && flock(m, LOCK_EX | LOCK_NB) < 0)
		return; /* in use */
	if (m >= 0)
		(void)unlinkat(dir, name, 0);
	(void)aj_rm_tree_at(dir, key, MAX_DEPTH + 4);
}

/* Every copy but keep that no sandbox uses. Under the build lock. */
static void collect(int dir, const char *keep)
{
	int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	char keys[64][KEY_LEN + 1];
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < AJ_ARRAY_SIZE(keys)) {
		char key[KEY_LEN + 1];
		snprintf(key, sizeof(key), "%.16s", de->d_name);
		const char *rest = de->d_name + strlen(key);
		if (!is_key(key) || strcmp(key, keep) == 0 ||
		    (*rest && strcmp(rest, MANIFEST_SUFFIX) != 0))
			continue;
		bool seen = false;
		for (size_t i = 0; i < n && !seen; i++)
			seen = strcmp(keys[i], key) == 0;
		if (!seen)
			snprintf(keys[n++], sizeof(keys[0]), "%s", key);
	}
	closedir(d);
	for (size_t i = 0; i < n; i++)
		remove_copy(dir, keys[i]);
}

/* ---- making a copy ---- */

typedef struct builder {
	int root; /* the copy being made */
	char *man;
	size_t len, cap;
	size_t entries;
	unsigned long long bytes;
	struct timespec start; /* CLOCK_REALTIME, like file times */
} builder;

static int record(builder *b, const char *path, const struct stat *st)
{
	/* changed within the last second: a second change in the same clock
	 * tick could keep these times, and the copy would go stale unseen */
	if (st->st_ctim.tv_sec >= b->start.tv_sec - 1)
		return -EAGAIN;
	if (++b->entries > MAX_ENTRIES)
		return -EFBIG;
	size_t pl = strlen(path) + 1, sz = rec_size(pl);
	if (b->len + sz > b->cap) {
		size_t cap = (b->cap ? b->cap * 2 : 8192) + sz;
		char *m = realloc(b->man, cap);
		if (!m)
			return -ENOMEM;
		b->man = m;
		b->cap = cap;
	}
	struct rec r;
	rec_of(&r, st, pl);
	memset(b->man + b->len, 0, sz);
	memcpy(b->man + b->len, &r, sizeof(r));
	memcpy(b->man + b->len + sizeof(r), path, pl);
	b->len += sz;
	return 0;
}

/* The same version of a file: what a manifest records of it is equal. */
static bool same_version(const struct stat *a, const struct stat *b)
{
	struct rec ra, rb;
	rec_of(&ra, a, 0);
	rec_of(&rb, b, 0);
	return memcmp(&ra, &rb, sizeof(ra)) == 0;
}

/* The copy's rel: owner, mode and times of st. */
static int set_meta(builder *b, const char *rel, const struct stat *st)
{
	struct timespec times[2] = {st->st_atim, st->st_mtim};
	if (fchownat(b->root, rel, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
	    fchmodat(b->root, rel, st->st_mode & 0777, 0) < 0 ||
	    utimensat(b->root, rel, times, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

static int copy_file(builder *b, const char *path, const char *rel, const struct stat *want)
{
	if ((b->bytes += (unsigned long long)want->st_size) > MAX_BYTES)
		return -EFBIG;
	_cleanup_close_ int src =
	    open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (src < 0 || fstat(src, &st) < 0 || !same_version(&st, want))
		return -EAGAIN;
	_cleanup_close_ int dst =
	    openat(b->root, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (dst < 0)
		return -errno;
	int r = aj_copy_fd(src, dst);
	if (r < 0)
		return r;
	/* changed while copied */
	if (fstat(src, &st) < 0 || !same_version(&st, want))
		return -EAGAIN;
	return 0;
}

/* Copy the host's path (below /etc) to rel in the copy, directories whole. */
static int copy_entry(builder *b, const char *path, int depth)
{
	const char *rel = path + strlen("/etc/");
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		return symlinkat(target, b->root, rel) < 0 ? -errno : 0;
	}
	if (S_ISREG(st.st_mode)) {
		int r = record(b, path, &st);
		if (r == 0)
			r = copy_file(b, path, rel, &st);
		return r < 0 ? r : set_meta(b, rel, &st);
	}
	if (!S_ISDIR(st.st_mode))
		return 0; /* devices, sockets, fifos: not configuration */
	if (depth > MAX_DEPTH)
		return -EFBIG;
	int r = record(b, path, &st);
	if (r < 0 || (r = mkdirat(b->root, rel, 0700) < 0 ? -errno : 0) < 0)
		return r;
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char child[PATH_MAX];
		if ((size_t)snprintf(child, sizeof(child), "%s/%s", path, de->d_name) >=
		    sizeof(child))
			r = -ENAMETOOLONG;
		else
			r = copy_entry(b, child, depth + 1);
	}
	closedir(d);
	struct stat after; /* an entry added or removed meanwhile */
	if (r == 0 && (lstat(path, &after) < 0 || !same_version(&st, &after)))
		r = -EAGAIN;
	return r < 0 ? r : set_meta(b, rel, &st);
}

/* The directories leading to an allowed entry (/etc/ssl for
 * /etc/ssl/certs), made in the copy and recorded (an entry appearing there
 * changes their times). */
static int copy_parents(builder *b, const char *path)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = strchr(p + strlen("/etc/"), '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		struct stat st;
		const char *rel = p + strlen("/etc/");
		if (faccessat(b->root, rel, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
			*s = '/';
			continue;
		}
		if (lstat(p, &st) < 0)
			return errno == ENOENT ? 1 : -errno;
		if (!S_ISDIR(st.st_mode))
			return 1; /* not a directory on the host: nothing below */
		int r = record(b, p, &st);
		if (r < 0 || mkdirat(b->root, rel, 0755) < 0 || set_meta(b, rel, &st) < 0)
			return r < 0 ? r : -errno;
		*s = '/';
	}
	return 0;
}

static int fill(builder *b)
{
	struct stat st;
	if (lstat("/etc", &st) < 0)
		return -errno;
	int r = record(b, "/etc", &st);
	for (size_t i = 0; r == 0 && i < aj_etc_allowed_n; i++) {
		r = copy_parents(b, aj_etc_allowed[i]);
		if (r == 0)
			r = copy_entry(b, aj_etc_allowed[i], 1);
		else if (r > 0)
			r = 0;
	}
	DIR *d = r == 0 ? opendir("/etc") : NULL;
	struct dirent *de;
	while (d && r == 0 && (de = readdir(d))) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "/etc/%s", de->d_name);
		if (aj_etc_allowed_name(de->d_name))
			r = copy_entry(b, path, 1);
	}
	if (d)
		closedir(d);
	else if (r == 0)
		r = -errno;
	for (size_t i = 0; r == 0 && i < AJ_ETC_FILES; i++) {
		char target[128];
		snprintf(target, sizeof(target), AJ_ETC_GENERATED_DIR "/%s", aj_etc_generated[i]);
		if (symlinkat(target, b->root, aj_etc_generated[i]) < 0)
			r = -errno;
	}
	/* /etc itself: an allowed name added meanwhile */
	struct stat after;
	if (r == 0 && (lstat("/etc", &after) < 0 || !same_version(&st, &after)))
		r = -EAGAIN;
	return r;
}

static int write_file_at(int dir, const char *name, const char *data, size_t len)
{
	_cleanup_close_ int fd =
	    openat(dir, ".new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || fchmod(fd, 0644) < 0 || aj_write_all(fd, data, len) < 0 ||
	    renameat(dir, ".new", dir, name) < 0) {
		int e = errno ? errno : EIO;
		(void)unlinkat(dir, ".new", 0);
		return -e;
	}
	return 0;
}

/* Make a copy of the host's files, make it current, remove unused ones.
 * Under the build lock. */
static int build_copy(int dir)
{
	(void)aj_rm_tree_at(dir, BUILD_DIR, MAX_DEPTH + 4); /* what a crash left */
	builder b = {.root = -1};
	clock_gettime(CLOCK_REALTIME, &b.start);
	int r = mkdirat(dir, BUILD_DIR, 0700) < 0 ? -errno : 0;
	if (r == 0 && (b.root = openat(dir, BUILD_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = -errno;
	if (r == 0 && !(b.man = malloc(b.cap = 16384)))
		r = -ENOMEM;
	if (r == 0) {
		memcpy(b.man, MAGIC, sizeof(MAGIC) - 1);
		b.len = sizeof(MAGIC) - 1;
		r = fill(&b);
	}
	/* the copy's root: /etc's mode, the sandbox's users look up in it */
	if (r == 0 && fchmodat(dir, BUILD_DIR, 0755, 0) < 0)
		r = -errno;
	char key[KEY_LEN + 1];
	snprintf(key, sizeof(key), "%016" PRIx64, fnv1a64(b.man, b.len));
	char name[64];
	snprintf(name, sizeof(name), "%s" MANIFEST_SUFFIX, key);
	bool in_use = false;
	if (r == 0) {
		remove_copy(dir, key); /* an unused one of the same name: stale */
		/* still there: in use, made from this same host state (its
		 * manifest, locked by its users, stays as it is) */
		if (renameat(dir, BUILD_DIR, dir, key) < 0) {
			in_use = errno == ENOTEMPTY || errno == EEXIST;
			r = in_use ? 0 : -errno;
			(void)aj_rm_tree_at(dir, BUILD_DIR, MAX_DEPTH + 4);
		}
	}
	if (r == 0 && !in_use)
		r = write_file_at(dir, name, b.man, b.len);
	if (r == 0) {
		char line[KEY_LEN + 2];
		snprintf(line, sizeof(line), "%s\n", key);
		r = write_file_at(dir, CURRENT, line, KEY_LEN + 1);
	}
	if (b.root >= 0)
		close(b.root);
	free(b.man);
	if (r < 0) {
		(void)aj_rm_tree_at(dir, BUILD_DIR, MAX_DEPTH + 4);
		return r;
	}
	collect(dir, key);
	return 0;
}

/* Make a new copy unless one was just made, or an attempt failed less than
 * RETRY_SECONDS ago (a host whose /etc cannot be copied pays for one
 * attempt a minute, not one per sandbox). */
static void make_current(int dir)
{
	_cleanup_close_ int bl =
	    openat(dir, LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat st;
	if (bl < 0 || flock(bl, LOCK_EX) < 0 || fstat(bl, &st) < 0)
		return;
	char key[KEY_LEN + 1];
	int lock = -1, tree = -1;
	if (read_current(dir, key) == 0 && open_copy(dir, key, &lock, &tree) == 0) {
		close(lock); /* made while we waited for the lock */
		close(tree);
		return;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	if (st.st_size == 1 && now.tv_sec - st.st_mtim.tv_sec < RETRY_SECONDS)
		return;
	int r = build_copy(dir);
	/* remember a failure that would recur (its time: the file's) */
	if (r < 0 && r != -EAGAIN && pwrite(bl, "x", 1, 0) == 1)
		(void)futimens(bl, NULL);
	else if (r == 0 && ftruncate(bl, 0) < 0)
		return;
}

bool aj_etc_cache_use(aj_mount_plan *plan, int *lock)
{
	if (plan->etc_cached || geteuid() != 0)
		return false;
	_cleanup_close_ int dir = aj_cache_dir(CACHE_DIR, false);
	char key[KEY_LEN + 1];
	int m = -1, tree = -1;
	if (dir < 0 || read_current(dir, key) < 0 || open_copy(dir, key, &m, &tree) < 0) {
		if (dir < 0 && (dir = aj_cache_dir(CACHE_DIR, true)) < 0)
			return false;
		make_current(dir);
		if (read_current(dir, key) < 0 || open_copy(dir, key, &m, &tree) < 0)
			return false;
	}
	/* a detached read-only bind of the copy, attached by the child */
	int bind = aj_open_tree(tree, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	close(tree);
	if (bind < 0 ||
	    aj_mount_setattr(bind, "", AT_EMPTY_PATH,
			     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, -1) < 0) {
		if (bind >= 0)
			close(bind);
		close(m);
		return false;
	}
	plan->etc_tree = bind;
	plan->etc_cached = true;
	*lock = m;
	return true;
}
