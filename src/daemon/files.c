/* SPDX-License-Identifier: MIT */
/* Files in a sandbox (supervisor ops files.*): every path is resolved inside the sandbox's root
 * (openat2 RESOLVE_IN_ROOT on a descriptor of the root its init opened), as the
 * sandbox's user (setfsuid/setfsgid of this thread), so a symlink planted
 * inside can never lead to the host, and what the service writes belongs
 * to the sandbox user. For a download or an upload the front gets the
 * opened regular file's fd (never a directory's: it could walk out) and
 * moves the bytes chunk by chunk. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sup.h"
#include "util.h"

#define LIST_MAX 10000
#define RM_DEPTH 64

typedef struct as_user {
	int uid, gid;
} as_user;

/* Become the sandbox's user for file system checks (this thread only). */
static as_user enter(const aj_sandbox *sb)
{
	as_user u = {-1, -1};
	if (geteuid() == 0) {
		u.gid = setfsgid(sb->box.info.gid);
		u.uid = setfsuid(sb->box.info.uid);
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

/* The path argument: absolute, no NUL, resolved later in the root; copied
 * into buf (len bytes). */
static const char *path_arg(json_t *args, aj_reply *rep, char *buf, size_t len)
{
	const char *p = aj_arg_str(args, "path", len - 2, false, rep);
	if (!p || p[0] != '/') {
		aj_reply_error(rep, 400, "bad_path",
			       "'path' must be an absolute path in the sandbox");
		return NULL;
	}
	snprintf(buf, len, "%s", p);
	/* the kernel's views of the sandbox are not files to move */
	const char *rel = buf + strspn(buf, "/");
	static const char *const kernel[] = {"proc", "sys", "dev"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(kernel); i++) {
		size_t n = strlen(kernel[i]);
		if (!strncmp(rel, kernel[i], n) && (rel[n] == '\0' || rel[n] == '/')) {
			aj_reply_error(rep, 403, "forbidden_path",
				       "%s is not reachable through the files API", buf);
			return NULL;
		}
	}
	return buf;
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
	aj_reply_error(r, status_of(e), e == ENOENT ? "not_found" : "file_error", "%s %s: %s", what,
		       path, strerror(e));
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
	return json_pack("{s:s, s:s, s:I, s:i, s:I}", "name", name, "type", type, "size",
			 (json_int_t)st.st_size, "mode", (int)(st.st_mode & 07777), "mtime",
			 (json_int_t)st.st_mtime);
}

static void list_dir(aj_reply *r, int fd, const char *path)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		fail_errno(r, "cannot list", path, errno);
		return;
	}
	json_t *a = json_array();
	struct dirent *de;
	size_t n = 0;
	bool truncated = false;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n++ >= LIST_MAX) {
			truncated = true;
			break;
		}
		json_t *e = entry_json(dirfd(d), de->d_name);
		if (e)
			json_array_append_new(a, e);
	}
	closedir(d);
	aj_reply_json(
	    r, 200,
	    json_pack("{s:s, s:o, s:b}", "path", path, "entries", a, "truncated", truncated));
}

/* files.get {sandbox, path}: a directory's listing, or a regular file's
 * fd (read-only) and {"size"}. */
void aj_op_files_get(json_t *args, aj_reply *r)
{
	char buf[4096];
	const char *path = path_arg(args, r, buf, sizeof(buf));
	aj_sandbox *sb = path ? aj_arg_running(args, r) : NULL;
	if (!sb)
		return;
	as_user u = enter(sb);
	int fd = openat2_in(sb->root_fd, rel_of(path), O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	leave(u);
	aj_sandbox_unref(sb);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) < 0) {
		close(fd);
		fd = -errno;
	}
	if (fd < 0) {
		fail_errno(r, "cannot open", path, -fd);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		list_dir(r, fd, path);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		aj_reply_error(r, 400, "not_a_file", "%s is not a regular file or a directory",
			       path);
		return;
	}
	r->fd = fd;
	aj_reply_json(r, 200,
		      json_pack("{s:s, s:I}", "path", path, "size", (json_int_t)st.st_size));
}

/* files.put {sandbox, path, mode: "octal"}: the new (truncated) regular
 * file's fd, write-only, for the front to fill. */
void aj_op_files_put(json_t *args, aj_reply *r)
{
	char buf[4096];
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
	as_user u = enter(sb);
	int fd = openat2_in(sb->root_fd, rel_of(path),
			    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK,
			    (mode_t)mode);
	leave(u);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -EINVAL; /* a FIFO or a device: not a file to fill */
	}
	if (fd >= 0 && fcntl(fd, F_SETFL, 0) < 0) {
		close(fd);
		fd = -errno;
	}
	if (fd < 0) {
		aj_sandbox_unref(sb);
		fail_errno(r, "cannot write", path, -fd);
		return;
	}
	aj_audit("upload", json_pack("{s:s, s:s, s:s}", "sandbox", sb->id, "peer",
				     aj_arg_peer(args), "path", path));
	aj_sandbox_unref(sb);
	r->fd = fd;
	aj_reply_json(r, 200, json_pack("{s:s}", "path", path));
}

/* rm -r below dfd/name, never following a symlink or leaving the tree. */
void aj_op_files_delete(json_t *args, aj_reply *r)
{
	char buf[4096];
	const char *path = path_arg(args, r, buf, sizeof(buf));
	aj_sandbox *sb = path ? aj_arg_running(args, r) : NULL;
	if (!sb)
		return;
	bool recursive = aj_arg_bool(args, "recursive");
	const char *base;
	as_user u = enter(sb);
	int dfd = open_parent(sb, buf, &base), e = 0;
	if (dfd >= 0) {
		if (recursive)
			e = -aj_rm_tree_at(dfd, base, RM_DEPTH);
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
		aj_audit("rm", json_pack("{s:s, s:s, s:s}", "sandbox", sb->id, "peer",
					 aj_arg_peer(args), "path", path));
		aj_reply_json(r, 200, json_pack("{s:s, s:b}", "path", path, "removed", 1));
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
	char buf[4096];
	const char *path = path_arg(args, r, buf, sizeof(buf));
	aj_sandbox *sb = path ? aj_arg_running(args, r) : NULL;
	if (!sb)
		return;
	bool parents = aj_arg_bool(args, "parents");
	as_user u = enter(sb);
	int e = 0;
	for (char *s = buf + 1; parents && !e && (s = strchr(s, '/')); s++) {
		*s = '\0';
		e = mkdir_one(sb, buf, true);
		*s = '/';
	}
	if (!e)
		e = mkdir_one(sb, buf, parents);
	leave(u);
	aj_sandbox_unref(sb);
	if (e) {
		fail_errno(r, "cannot create directory", path, e);
		return;
	}
	aj_reply_json(r, 201, json_pack("{s:s}", "path", path));
}
