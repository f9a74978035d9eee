/* SPDX-License-Identifier: MIT */
/* Files in a sandbox (supervisor ops files.*): every path is resolved inside the sandbox's root
 * (openat2 RESOLVE_IN_ROOT on a descriptor of the root its init opened), as the
 * sandbox's user (setfsuid/setfsgid of this thread), so a symlink planted
 * inside can never lead to the host, and what the service writes belongs
 * to the sandbox user. For a download or an upload the front gets the
 * opened regular file's fd (never a directory's: it could walk out) and
 * moves the bytes chunk by chunk.
 *
 * What is refused is decided by what was opened, not by how the path is
 * spelled (docs/security.md, "Files API: by what is opened"): a file or
 * directory on a kernel file system (proc, sysfs, devpts, cgroup, ...;
 * fstatfs) or on the sandbox's /dev mounts (by mount id: /dev is a bind of
 * a plain directory, /dev/shm one of the sandbox's tmpfs) is 403 for read,
 * list, write, mkdir and remove, whatever symlink or ".." led there. A path
 * is any bytes but NUL: "path" (JSON: UTF-8) or "path_b64"; a name that is
 * not UTF-8 is listed with "name_b64". A listing is paged (limit, cursor). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "backends.h"
#include "request.h"
#include "audit.h"
#include "files.h"
#include "registry.h"
#include "threads.h"
#include "util.h"

#define LIST_DEFAULT 1000
#define LIST_MAX 10000
#define LIST_BYTES (1u << 20) /* a page's JSON, about: the IPC takes 4 MiB */
#define RM_DEPTH 64
#define PATH_CAP 4096
#define E_KERNEL_FS (EACCES + 1000) /* check_fs's refusal, for fail_errno: 403 */

typedef struct as_user {
	int uid, gid;
} as_user;

/* Become the sandbox's user for file system checks (this thread only). */
static as_user enter(const aj_sandbox *sb)
{
	as_user u = {-1, -1};
	aj_inst_info in;
	sb->be->info(sb->inst, &in);
	if (geteuid() == 0) {
		u.gid = setfsgid(in.gid);
		u.uid = setfsuid(in.uid);
	}
	return u;
}

static void leave(as_user u)
{
	if (u.uid >= 0) {
		setfsuid((uid_t)u.uid);
		setfsgid((gid_t)u.gid);
	}
}

static int openat2_in(int root, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {.flags = (unsigned long long)flags | O_CLOEXEC,
			       .mode = (flags & O_CREAT) ? mode : 0,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	long fd = syscall(SYS_openat2, root, rel, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* A path for a message: bytes that are not UTF-8, and control characters,
 * as \xNN (into buf). */
static const char *shown(const char *path, char *buf, size_t len)
{
	size_t o = 0, n = strlen(path);
	const unsigned char *p = (const unsigned char *)path;
	for (size_t i = 0; i < n && o + 5 < len;) {
		size_t ok = aj_utf8_prefix(p + i, n - i);
		for (size_t k = 0; k < ok && o + 5 < len; k++, i++)
			if (p[i] < 0x20 || p[i] == 0x7f)
				o += (size_t)snprintf(buf + o, len - o, "\\x%02x", p[i]);
			else
				buf[o++] = (char)p[i];
		if (i < n && !ok && o + 5 < len)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", p[i++]);
	}
	buf[o] = '\0';
	return buf;
}

/* A path (or a name) into o: as "KEY" when it is UTF-8, else as "KEY_b64"
 * (and "KEY": null). */
static void set_path(json_t *o, const char *key, const char *path)
{
	size_t n = strlen(path);
	if (aj_utf8_valid(path, n)) {
		json_object_set_new(o, key, json_stringn(path, n));
		return;
	}
	char k[32], *b64 = malloc(n * 4 / 3 + 8);
	snprintf(k, sizeof(k), "%s_b64", key);
	if (b64 && lws_b64_encode_string(path, (int)n, b64, (int)(n * 4 / 3 + 8)) >= 0) {
		json_object_set_new(o, key, json_null());
		json_object_set_new(o, k, json_string(b64));
	}
	free(b64);
}

/* The path argument: "path" (a JSON string) or "path_b64" (any bytes but
 * NUL), absolute; into buf (len bytes). Resolved later in the root. */
static const char *path_arg(json_t *args, aj_reply *rep, char *buf, size_t len)
{
	const char *b64 = json_string_value(json_object_get(args, "path_b64"));
	size_t n = 0;
	if (b64) {
		if (aj_b64_decode(b64, strlen(b64), (unsigned char *)buf, len - 2, &n) < 0 ||
		    memchr(buf, '\0', n)) {
			aj_reply_error(rep, 400, "bad_path",
				       "'path_b64' must be the base64 of an absolute path "
				       "(no NUL, at most %zu bytes)",
				       len - 2);
			return NULL;
		}
		buf[n] = '\0';
	} else {
		const char *p = aj_arg_str(args, "path", len - 2, false, rep);
		if (!p)
			return NULL;
		snprintf(buf, len, "%s", p);
	}
	if (buf[0] != '/') {
		aj_reply_error(rep, 400, "bad_path",
			       "'path' must be an absolute path in the sandbox");
		return NULL;
	}
	return buf;
}

/* The mount ids of the sandbox's /dev and the mounts below it that it
 * has (ids[n], 0 where absent). */
static void dev_mounts(const aj_sandbox *sb, unsigned long long ids[5])
{
	static const char *const dirs[] = {"dev", "dev/shm", "dev/pts", "dev/mqueue",
					   "dev/hugepages"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(dirs); i++) {
		ids[i] = 0;
		struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS |
						  RESOLVE_NO_MAGICLINKS};
		long fd = syscall(SYS_openat2, sb->root_fd, dirs[i], &how, sizeof(how));
		struct statx stx;
		if (fd >= 0 && statx((int)fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) == 0 &&
		    (stx.stx_mask & STATX_MNT_ID))
			ids[i] = stx.stx_mnt_id;
		if (fd >= 0)
			close((int)fd);
	}
}

/* The kernel's views: never files to move (some need no mount to reach:
 * they are what /proc, /sys and /dev are made of). */
static bool kernel_magic(long type)
{
	static const long magics[] = {PROC_SUPER_MAGIC,
				      SYSFS_MAGIC,
				      DEVPTS_SUPER_MAGIC,
				      CGROUP_SUPER_MAGIC,
				      CGROUP2_SUPER_MAGIC,
				      DEBUGFS_MAGIC,
				      TRACEFS_MAGIC,
				      SECURITYFS_MAGIC,
				      BPF_FS_MAGIC,
				      PSTOREFS_MAGIC,
				      EFIVARFS_MAGIC,
				      SELINUX_MAGIC,
				      SMACK_MAGIC,
				      BINFMTFS_MAGIC,
				      NSFS_MAGIC,
				      0x19800202 /* mqueue */,
				      0x62656570 /* configfs */,
				      0x65735543 /* fusectl */,
				      HUGETLBFS_MAGIC};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(magics); i++)
		if (type == magics[i])
			return true;
	return false;
}

/* 0, or -EACCES when fd is on a kernel file system or on the sandbox's
 * /dev (or a mount below it). */
static int check_fs(const aj_sandbox *sb, int fd)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return -errno;
	if (kernel_magic((long)sf.f_type))
		return -EACCES;
	struct statx stx;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
		return -EACCES; /* cannot tell: refused */
	unsigned long long dev[5];
	dev_mounts(sb, dev);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(dev); i++)
		if (dev[i] && dev[i] == stx.stx_mnt_id)
			return -EACCES;
	return 0;
}

static void forbidden(aj_reply *rep, const char *path)
{
	char b[PATH_CAP];
	aj_reply_error(rep, 403, "forbidden_path",
		       "%s is on /proc, /sys, /dev or another kernel file system: not reachable "
		       "through the files API",
		       shown(path, b, sizeof(b)));
}

static const char *rel_of(const char *p)
{
	while (*p == '/')
		p++;
	return *p ? p : ".";
}

static int status_of(int e)
{
	switch (e) {
	case ENOENT: return 404;
	case EACCES:
	case EPERM:
	case EROFS: return 403;
	case EEXIST:
	case ENOTEMPTY: return 409;
	case ENOSPC:
	case EDQUOT: return 507;
	default: return 400;
	}
}

static void fail_errno(aj_reply *r, const char *what, const char *path, int e)
{
	if (e == E_KERNEL_FS) { /* check_fs's refusal */
		forbidden(r, path);
		return;
	}
	char b[PATH_CAP];
	aj_reply_error(r, status_of(e), e == ENOENT ? "not_found" : "file_error", "%s %s: %s", what,
		       shown(path, b, sizeof(b)), strerror(e));
}

static int kernel_err(const aj_sandbox *sb, int fd)
{
	int e = check_fs(sb, fd);
	return e == -EACCES ? -E_KERNEL_FS : e;
}

/* Open the parent directory of path; its last component in *base. */
static int open_parent(aj_sandbox *sb, char *path, const char **base)
{
	char *slash = strrchr(path, '/');
	while (slash && slash[1] == '\0' && slash != path) { /* trailing slashes */
		*slash = '\0';
		slash = strrchr(path, '/');
	}
	if (!slash || !slash[1] || !strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
		return -EINVAL;
	*base = slash + 1;
	*slash = '\0';
	int fd = openat2_in(sb->root_fd, rel_of(path), O_PATH | O_DIRECTORY, 0);
	*slash = '/';
	int e = fd >= 0 ? kernel_err(sb, fd) : 0;
	if (e < 0) {
		close(fd);
		return e;
	}
	return fd;
}

static json_t *entry_json(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return NULL;
	const char *type = S_ISDIR(st.st_mode)	 ? "dir"
			   : S_ISREG(st.st_mode) ? "file"
			   : S_ISLNK(st.st_mode) ? "symlink"
						 : "other";
	json_t *o = json_pack("{s:s, s:I, s:i, s:I}", "type", type, "size", (json_int_t)st.st_size,
			      "mode", (int)(st.st_mode & 07777), "mtime", (json_int_t)st.st_mtime);
	if (o)
		set_path(o, "name", name);
	return o;
}

/* The page's size: "limit" (1 to LIST_MAX, LIST_DEFAULT when absent) and
 * where it starts: "cursor" (from the page before; "" the start). */
static int page_args(json_t *args, aj_reply *r, size_t *limit, long *start)
{
	json_t *l = json_object_get(args, "limit");
	const char *c = json_string_value(json_object_get(args, "cursor"));
	*limit = LIST_DEFAULT;
	*start = 0;
	if (l && (!json_is_integer(l) || json_integer_value(l) < 1 ||
		  json_integer_value(l) > LIST_MAX)) {
		aj_reply_error(r, 400, "bad_request", "'limit' must be 1 to %d", LIST_MAX);
		return -1;
	}
	if (l)
		*limit = (size_t)json_integer_value(l);
	unsigned long long v = 0;
	if (c && c[0] && (c[0] != 'o' || aj_parse_uint(c + 1, ~0ULL, &v) < 0)) {
		aj_reply_error(r, 400, "bad_request",
			       "'cursor' must be the next_cursor of the listing's page before");
		return -1;
	}
	*start = (long)v;
	return 0;
}

/* One page of the directory's entries, from the position start: at most
 * limit entries and about LIST_BYTES of JSON; next_cursor says where the
 * next page starts (null: this is the last). */
static void list_dir(aj_reply *r, int fd, const char *path, size_t limit, long start)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		fail_errno(r, "cannot list", path, errno);
		return;
	}
	if (start)
		seekdir(d, start);
	json_t *a = json_array();
	struct dirent *de;
	size_t n = 0, bytes = 0;
	long next = 0;
	bool more = false;
	for (;;) {
		long here = telldir(d);
		errno = 0;
		if (!(de = readdir(d)))
			break;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n >= limit || bytes >= LIST_BYTES) {
			next = here;
			more = true;
			break;
		}
		json_t *e = entry_json(dirfd(d), de->d_name);
		if (e) {
			json_array_append_new(a, e);
			n++;
			bytes += 120 + strlen(de->d_name) * 6; /* escaped at worst, or base64 */
		}
	}
	closedir(d);
	json_t *o = json_pack("{s:o, s:b}", "entries", a, "truncated", more);
	set_path(o, "path", path);
	char cur[32];
	snprintf(cur, sizeof(cur), "o%lu", (unsigned long)next);
	json_object_set_new(o, "next_cursor", more ? json_string(cur) : json_null());
	aj_reply_json(r, 200, o);
}

/* ---- levels whose root the host cannot open (no AJ_CAP_ROOT_FD): the
 * backend's file ops (backend.h), resolved by the sandbox's own kernel ---- */

static bool via_ops(const aj_sandbox *sb)
{
	return !(sb->be->caps & AJ_CAP_ROOT_FD);
}

static void no_files(const aj_sandbox *sb, aj_reply *r)
{
	aj_error err;
	aj_err_clear(&err);
	(void)aj_backend_can(sb->be, AJ_CAP_FILES, &err);
	aj_reply_fail(r, 501, "not_supported", &err);
}

/* The ops' errors: a kernel file system (-EPERM) is the 403 of check_fs. */
static void ops_fail(aj_reply *r, const char *what, const char *path, int e, const aj_error *err)
{
	if (e == ENOTSUP || e == EOPNOTSUPP) {
		aj_reply_fail(r, 501, "not_supported", err);
		return;
	}
	/* the sandbox's agent gave up or is gone (a lost VM: its own code):
	 * the backend's message says why, not the file's errno */
	if ((err->status && err->api_code[0]) || e == ETIMEDOUT || e == EPIPE) {
		aj_reply_fail(r, 500, "file_error", err);
		return;
	}
	fail_errno(r, what, path, e == EPERM ? E_KERNEL_FS : e);
}

typedef struct page {
	json_t *a;
	size_t skip, limit, n, bytes;
	bool more;
} page;

static int page_add(void *ctx, const char *name, const aj_file_stat *st)
{
	page *pg = ctx;
	if (pg->skip) {
		pg->skip--;
		return 0;
	}
	if (pg->n >= pg->limit || pg->bytes >= LIST_BYTES) {
		pg->more = true;
		return -1;
	}
	const char *type = st->type == 'd'   ? "dir"
			   : st->type == 'f' ? "file"
			   : st->type == 'l' ? "symlink"
					     : "other";
	json_t *o = json_pack("{s:s, s:I, s:i, s:I}", "type", type, "size", (json_int_t)st->size,
			      "mode", (int)(st->mode & 07777), "mtime", (json_int_t)st->mtime);
	if (o) {
		set_path(o, "name", name);
		json_array_append_new(pg->a, o);
		pg->n++;
		pg->bytes += 120 + strlen(name) * 6;
	}
	return 0;
}

/* files.get through the ops; the cursor is "o" and the entries before the
 * page (a level's directory order is stable while it is not changed). */
/* downloads are audited like uploads, at every level (docs/api.md, Audit) */
static void audit_download(json_t *args, const char *path, long long size)
{
	json_t *a = json_pack("{s:s?, s:s, s:I}", "sandbox",
			      json_string_value(json_object_get(args, "sandbox")), "peer",
			      aj_arg_peer(args), "size", (json_int_t)size);
	if (a)
		set_path(a, "path", path);
	aj_audit("download", a);
}

static void ops_get(aj_sandbox *sb, aj_reply *r, json_t *args, const char *path, size_t limit,
		    long start)
{
	aj_error err;
	aj_err_clear(&err);
	aj_file_stat st;
	int e = sb->be->file_stat(sb->inst, path, &st, &err);
	if (e == 0 && st.type == 'd') {
		page pg = {.a = json_array(), .skip = (size_t)start, .limit = limit};
		e = sb->be->file_list(sb->inst, path, page_add, &pg, &err);
		if (e < 0) {
			json_decref(pg.a);
			ops_fail(r, "cannot list", path, -e, &err);
			return;
		}
		json_t *o = json_pack("{s:o, s:b}", "entries", pg.a, "truncated", pg.more);
		set_path(o, "path", path);
		char cur[32];
		snprintf(cur, sizeof(cur), "o%zu", (size_t)start + pg.n);
		json_object_set_new(o, "next_cursor", pg.more ? json_string(cur) : json_null());
		aj_reply_json(r, 200, o);
		return;
	}
	if (e == 0 && st.type != 'f') {
		char b[PATH_CAP];
		aj_reply_error(r, 400, "not_a_file", "%s is not a regular file or a directory",
			       shown(path, b, sizeof(b)));
		return;
	}
	int fd = -1;
	if (e == 0)
		e = sb->be->file_read(sb->inst, path, &fd, &st, &err);
	if (e < 0) {
		ops_fail(r, "cannot open", path, -e, &err);
		return;
	}
	r->fd = fd;
	json_t *o = json_pack("{s:I}", "size", (json_int_t)st.size);
	set_path(o, "path", path);
	audit_download(args, path, (long long)st.size);
	aj_reply_json(r, 200, o);
}

static void answer_path(aj_reply *r, int status, const char *path, json_t *more)
{
	json_t *o = more ? more : json_object();
	set_path(o, "path", path);
	aj_reply_json(r, status, o);
}

/* An upload through the ops: the front fills a pipe, which a thread of
 * ours writes into the sandbox (the level's file_write, to the pipe's
 * EOF); then the front asks files.put_done, which waits for that write to
 * end (the agent's answer at level 2), so that the API answers once the
 * whole file is there. An upload nobody asks about is dropped a minute
 * after it ended. */
typedef struct upload {
	aj_sandbox *sb;
	char sb_id[AJ_SANDBOX_ID_SIZE];
	char *path;
	unsigned mode;
	int fd;
	unsigned long long id;
	bool done, claimed;
	int e; /* the write's -errno */
	aj_error err;
	time_t done_at;
	struct upload *next;
} upload;

#define UPLOAD_KEEP_S 60
#define UPLOAD_WAIT_S 300

static pthread_mutex_t up_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t up_cv = PTHREAD_COND_INITIALIZER;
static upload *uploads;
static unsigned long long up_next;

static time_t mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void upload_free(upload *u)
{
	free(u->path);
	free(u);
}

/* Ended uploads nobody asked about for UPLOAD_KEEP_S (up_mu held). */
static void uploads_prune(void)
{
	time_t now = mono_s();
	for (upload **pp = &uploads; *pp;) {
		upload *u = *pp;
		if (u->done && !u->claimed && now - u->done_at > UPLOAD_KEEP_S) {
			*pp = u->next;
			upload_free(u);
		} else {
			pp = &u->next;
		}
	}
}

/* Fills the file from what the front writes into the pipe, to its EOF. */
static void *upload_thread(void *arg)
{
	upload *u = arg;
	aj_error err;
	aj_err_clear(&err);
	int e = u->sb->be->file_write(u->sb->inst, u->path, u->fd, ~0ULL, u->mode, &err);
	if (e < 0)
		aj_audit("upload_failed", json_pack("{s:s, s:s, s:s}", "sandbox", u->sb->id, "path",
						    u->path, "error", err.msg));
	close(u->fd);
	aj_sandbox_unref(u->sb);
	pthread_mutex_lock(&up_mu);
	u->sb = NULL;
	u->e = e;
	u->err = err;
	u->done = true;
	u->done_at = mono_s();
	pthread_cond_broadcast(&up_cv);
	pthread_mutex_unlock(&up_mu);
	aj_worker_leave();
	return NULL;
}

/* files.put through the ops: the file is made (empty) first, so that a
 * refused path is answered now; then the front fills a pipe. The answer
 * has the upload's id for files.put_done. */
static int ops_put(aj_sandbox *sb, aj_reply *r, const char *path, unsigned mode,
		   unsigned long long *id)
{
	aj_error err;
	aj_err_clear(&err);
	int none = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int e = none < 0 ? -errno : sb->be->file_write(sb->inst, path, none, 0, mode, &err);
	int p[2] = {-1, -1};
	if (none >= 0)
		close(none);
	if (e < 0) {
		ops_fail(r, "cannot write", path, -e, &err);
		return e;
	}
	upload *u = calloc(1, sizeof(*u));
	if (!u || !(u->path = strdup(path)) || pipe2(p, O_CLOEXEC) < 0) {
		if (u)
			free(u->path);
		free(u);
		aj_reply_error(r, 500, "internal", "cannot start the upload: %s", strerror(errno));
		return -ENOMEM;
	}
	u->sb = sb, u->mode = mode, u->fd = p[0];
	snprintf(u->sb_id, sizeof(u->sb_id), "%s", sb->id);
	aj_sandbox_ref(sb);
	aj_worker_enter();
	pthread_mutex_lock(&up_mu);
	uploads_prune();
	u->id = *id = ++up_next;
	u->next = uploads;
	uploads = u;
	pthread_mutex_unlock(&up_mu);
	if (aj_thread_start(upload_thread, u) != 0) {
		pthread_mutex_lock(&up_mu);
		for (upload **pp = &uploads; *pp; pp = &(*pp)->next)
			if (*pp == u) {
				*pp = u->next;
				break;
			}
		pthread_mutex_unlock(&up_mu);
		aj_worker_leave();
		aj_sandbox_unref(sb);
		close(p[0]);
		close(p[1]);
		upload_free(u);
		aj_reply_error(r, 503, "busy", "cannot start the upload");
		return -EAGAIN;
	}
	r->fd = p[1];
	return 0;
}

/* files.put_done {sandbox, upload}: after the front closed the upload's
 * pipe, wait for the sandbox's write to end; 200, or its error. */
void aj_op_files_put_done(json_t *args, aj_reply *r)
{
	aj_sandbox *sb = aj_arg_sandbox(args, r);
	if (!sb)
		return;
	json_int_t id = json_integer_value(json_object_get(args, "upload"));
	pthread_mutex_lock(&up_mu);
	upload *u = uploads;
	while (u && (u->id != (unsigned long long)id || strcmp(u->sb_id, sb->id) || u->claimed))
		u = u->next;
	aj_sandbox_unref(sb);
	if (!u) {
		pthread_mutex_unlock(&up_mu);
		aj_reply_error(r, 404, "not_found", "no upload %lld in this sandbox",
			       (long long)id);
		return;
	}
	u->claimed = true;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += UPLOAD_WAIT_S;
	int w = 0;
	while (!u->done && w != ETIMEDOUT)
		w = pthread_cond_timedwait(&up_cv, &up_mu, &until);
	if (!u->done) {
		u->claimed = false;
		pthread_mutex_unlock(&up_mu);
		aj_reply_error(r, 504, "timeout", "the sandbox did not finish writing the file");
		return;
	}
	for (upload **pp = &uploads; *pp; pp = &(*pp)->next)
		if (*pp == u) {
			*pp = u->next;
			break;
		}
	uploads_prune();
	pthread_mutex_unlock(&up_mu);
	if (u->e < 0)
		ops_fail(r, "cannot write", u->path, -u->e, &u->err);
	else
		answer_path(r, 200, u->path, NULL);
	upload_free(u);
}

/* files.get {sandbox, path | path_b64, limit, cursor}: a directory's
 * listing (a page), or a regular file's fd (read-only) and {"size"}. */
void aj_op_files_get(json_t *args, aj_reply *r)
{
	char buf[PATH_CAP];
	size_t limit;
	long start;
	const char *path = path_arg(args, r, buf, sizeof(buf));
	if (!path || page_args(args, r, &limit, &start) < 0)
		return;
	aj_sandbox *sb = aj_arg_running(args, r);
	if (!sb)
		return;
	if (via_ops(sb)) {
		if (aj_backend_can(sb->be, AJ_CAP_FILES, NULL))
			ops_get(sb, r, args, path, limit, start);
		else
			no_files(sb, r);
		aj_sandbox_unref(sb);
		return;
	}
	as_user u = enter(sb);
	int fd = openat2_in(sb->root_fd, rel_of(path), O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	if (fd == -EACCES || fd == -EPERM) { /* say so when it is a kernel file */
		int pfd = openat2_in(sb->root_fd, rel_of(path), O_PATH, 0);
		if (pfd >= 0 && kernel_err(sb, pfd) == -E_KERNEL_FS)
			fd = -E_KERNEL_FS;
		if (pfd >= 0)
			close(pfd);
	}
	leave(u);
	int e = fd >= 0 ? kernel_err(sb, fd) : 0;
	aj_sandbox_unref(sb);
	struct stat st;
	if (e == 0 && fd >= 0 && fstat(fd, &st) < 0)
		e = -errno;
	if (e < 0 && fd >= 0) {
		close(fd);
		fd = e;
	}
	if (fd < 0) {
		fail_errno(r, "cannot open", path, -fd);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		list_dir(r, fd, path, limit, start);
		return;
	}
	char b[PATH_CAP];
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		aj_reply_error(r, 400, "not_a_file", "%s is not a regular file or a directory",
			       shown(path, b, sizeof(b)));
		return;
	}
	r->fd = fd;
	json_t *o = json_pack("{s:I}", "size", (json_int_t)st.st_size);
	set_path(o, "path", path);
	audit_download(args, path, st.st_size);
	aj_reply_json(r, 200, o);
}

static void audit_path(const char *what, const aj_sandbox *sb, json_t *args, const char *path)
{
	json_t *o = json_pack("{s:s, s:s}", "sandbox", sb->id, "peer", aj_arg_peer(args));
	if (o)
		set_path(o, "path", path);
	aj_audit(what, o);
}

/* files.put {sandbox, path | path_b64, mode: "octal"}: the new (truncated)
 * regular file's fd, write-only, for the front to fill. Its directory is
 * checked before the file is made, the file once it is open. */
void aj_op_files_put(json_t *args, aj_reply *r)
{
	char buf[PATH_CAP], tmp[PATH_CAP];
	const char *path = path_arg(args, r, buf, sizeof(buf));
	if (!path)
		return;
	const char *m = aj_arg_str(args, "mode", 16, true, r);
	unsigned long long mode = 0644;
	if (r->body)
		return;
	if (m && (m[0] == '\0' || strspn(m, "01234567") != strlen(m) ||
		  sscanf(m, "%llo", &mode) != 1 || mode > 0777)) {
		aj_reply_error(r, 400, "bad_mode", "'mode' must be octal, at most 0777");
		return;
	}
	aj_sandbox *sb = aj_arg_running(args, r);
	if (!sb)
		return;
	unsigned long long up = 0;
	if (via_ops(sb)) {
		if (!aj_backend_can(sb->be, AJ_CAP_FILES, NULL))
			no_files(sb, r);
		else if (ops_put(sb, r, path, (unsigned)mode, &up) == 0) {
			audit_path("upload", sb, args, path);
			answer_path(r, 200, path, json_pack("{s:I}", "upload", (json_int_t)up));
		}
		aj_sandbox_unref(sb);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s", path); /* open_parent cuts it */
	const char *base;
	as_user u = enter(sb);
	int dfd = open_parent(sb, tmp, &base), fd = dfd;
	if (dfd >= 0) {
		fd = openat(dfd, base,
			    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
				O_CLOEXEC,
			    (mode_t)mode);
		if (fd < 0)
			fd = -errno;
		close(dfd);
	}
	leave(u);
	int e = fd >= 0 ? kernel_err(sb, fd) : 0;
	struct stat st;
	if (e == 0 && fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)))
		e = -EINVAL; /* a FIFO or a device: not a file to fill */
	if (e == 0 && fd >= 0 && fcntl(fd, F_SETFL, 0) < 0)
		e = -errno;
	if (e < 0 && fd >= 0) {
		close(fd);
		fd = e;
	}
	if (fd < 0) {
		aj_sandbox_unref(sb);
		fail_errno(r, "cannot write", path, -fd);
		return;
	}
	audit_path("upload", sb, args, path);
	aj_sandbox_unref(sb);
	r->fd = fd;
	answer_path(r, 200, path, NULL);
}

/* rm -r of dfd/name: never following a symlink, never leaving the mount it
 * began on (mnt: its id), never into a kernel file system. */
static int rm_tree(const aj_sandbox *sb, int dfd, const char *name, unsigned long long mnt,
		   int depth)
{
	if (unlinkat(dfd, name, 0) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth >= RM_DEPTH)
		return -ELOOP;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct statx stx;
	int r = kernel_err(sb, fd);
	if (r == 0 && (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 ||
		       (mnt && stx.stx_mnt_id != mnt)))
		r = -EBUSY; /* a mount point inside: not removed through it */
	DIR *d = r == 0 ? fdopendir(fd) : NULL;
	if (!d) {
		r = r ? r : -errno;
		close(fd);
		return r;
	}
	if (!mnt)
		mnt = stx.stx_mnt_id;
	struct dirent *de;
	while (r == 0 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = rm_tree(sb, dirfd(d), de->d_name, mnt, depth + 1);
	closedir(d);
	if (r == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		r = -errno;
	return r;
}

/* files.delete {sandbox, path | path_b64, recursive}: the name in its
 * directory (checked), a directory's tree when recursive (rm_tree). */
void aj_op_files_delete(json_t *args, aj_reply *r)
{
	char buf[PATH_CAP], tmp[PATH_CAP];
	const char *path = path_arg(args, r, buf, sizeof(buf));
	aj_sandbox *sb = path ? aj_arg_running(args, r) : NULL;
	if (!sb)
		return;
	bool recursive = aj_arg_bool(args, "recursive");
	if (via_ops(sb)) {
		aj_error err;
		aj_err_clear(&err);
		int e = !aj_backend_can(sb->be, AJ_CAP_FILES, NULL)
			    ? (no_files(sb, r), 0)
			    : sb->be->file_remove(sb->inst, path, recursive, &err);
		if (e < 0)
			ops_fail(r, "cannot remove", path, -e, &err);
		else if (!r->body) {
			audit_path("rm", sb, args, path);
			answer_path(r, 200, path, json_pack("{s:b}", "removed", 1));
		}
		aj_sandbox_unref(sb);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s", path);
	const char *base;
	as_user u = enter(sb);
	int dfd = open_parent(sb, tmp, &base), e = 0;
	/* the name itself: a mount point of a kernel file system (/proc in /) */
	int tfd = dfd >= 0 ? openat(dfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (tfd >= 0) {
		e = -kernel_err(sb, tfd);
		close(tfd);
	}
	if (dfd >= 0 && e) {
		close(dfd);
	} else if (dfd >= 0) {
		if (recursive)
			e = -rm_tree(sb, dfd, base, 0, 0);
		else if (unlinkat(dfd, base, 0) < 0)
			e = errno == EISDIR && unlinkat(dfd, base, AT_REMOVEDIR) == 0 ? 0 : errno;
		close(dfd);
	} else {
		e = -dfd;
	}
	leave(u);
	if (e)
		fail_errno(r, "cannot remove", path, e);
	else {
		audit_path("rm", sb, args, path);
		answer_path(r, 200, path, json_pack("{s:b}", "removed", 1));
	}
	aj_sandbox_unref(sb);
}

static int mkdir_one(aj_sandbox *sb, char *path, bool exist_ok)
{
	const char *base;
	int dfd = open_parent(sb, path, &base), e = 0;
	if (dfd < 0)
		return -dfd;
	if (mkdirat(dfd, base, 0755) < 0 && !(errno == EEXIST && exist_ok))
		e = errno;
	close(dfd);
	return e;
}

void aj_op_files_mkdir(json_t *args, aj_reply *r)
{
	char buf[PATH_CAP], tmp[PATH_CAP];
	const char *path = path_arg(args, r, buf, sizeof(buf));
	aj_sandbox *sb = path ? aj_arg_running(args, r) : NULL;
	if (!sb)
		return;
	bool parents = aj_arg_bool(args, "parents");
	if (via_ops(sb)) {
		aj_error err;
		aj_err_clear(&err);
		int e = !aj_backend_can(sb->be, AJ_CAP_FILES, NULL)
			    ? (no_files(sb, r), 0)
			    : sb->be->file_mkdir(sb->inst, path, parents, &err);
		if (e < 0)
			ops_fail(r, "cannot create directory", path, -e, &err);
		else if (!r->body)
			answer_path(r, 201, path, NULL);
		aj_sandbox_unref(sb);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s", path);
	as_user u = enter(sb);
	int e = 0;
	for (char *s = tmp + 1; parents && !e && (s = strchr(s, '/')); s++) {
		*s = '\0';
		e = mkdir_one(sb, tmp, true);
		*s = '/';
	}
	if (!e)
		e = mkdir_one(sb, tmp, parents);
	leave(u);
	aj_sandbox_unref(sb);
	if (e) {
		fail_errno(r, "cannot create directory", path, e);
		return;
	}
	answer_path(r, 201, path, NULL);
}
