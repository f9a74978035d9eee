/* SPDX-License-Identifier: MIT */
/* agentjail-agent: the program agentjail runs inside a level-2 sandbox
 * (bound read-only at AJ_AGENT_PATH), linked statically so that it needs
 * nothing of the sandbox's root. `agentjail-agent init` is the sandbox's
 * PID 1 (it reaps orphans and waits); `agentjail-agent` serves one request
 * of the agent protocol (agent_proto.h, docs/levels.md) on stdin/stdout:
 * run a command (its output, exit and signals as frames) or a file
 * operation, resolved by the sandbox's own kernel as the user runsc exec
 * gave it (root, for files). Paths on kernel filesystems are refused.
 * runsc exec gives a command none of the walls config.json gives the
 * container's init (seccomp, rlimits), so the agent sets them itself
 * before it execs the command, and fails closed (confine()). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <poll.h>
#include <search.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agent_hello.h"
#include "agent_net.h"
#include "agent_proto.h"
#include "agent_cpu.h"
#include "agent_fsid.h"
#include "agent_limits.h"
#include "agent_oom.h"
#include "agent_seccomp.h"
#include "loopback.h"

#define READ_MAX 65536
#define RM_MAX_DEPTH 64

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) { /* a non-blocking stream (op connect) */
			struct pollfd pf = {fd, POLLOUT, 0};
			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				return -1; /* never a spin */
			continue;
		}
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) { /* the rest of a frame, coming */
			struct pollfd pf = {fd, POLLIN, 0};
			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				return -1;
			continue;
		}
		if (n <= 0)
			return n == 0 ? 0 : -1;
		p += n;
		len -= (size_t)n;
	}
	return 1;
}

static bool host_gone;

static void frame(char type, const void *buf, size_t len)
{
	unsigned char h[AJ_AGENT_HDR];
	aj_agent_hdr(h, type, (uint32_t)len);
	if (host_gone || write_all(1, h, sizeof(h)) < 0 || (len && write_all(1, buf, len) < 0))
		host_gone = true;
}

/* j, consumed; an answer not built (out of memory): ENOMEM, never an
 * empty object the host would read as exit 0 */
static void frame_json(char type, json_t *j)
{
	static const char oom[] =
	    "{\"errno\":12,\"error\":\"the guest's agent ran out of memory\"}";
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	const char *none = type == AJ_AG_EXIT ? oom : "{}";
	frame(type, s ? s : none, s ? strlen(s) : strlen(none));
	free(s);
	json_decref(j);
}

/* the first byte of the host's stream, read by the guest's init */
static int first_byte = -1;

/* One frame from the host: 1, 0 at its end, -1 on a broken stream. */
static int read_frame(char *type, char **buf, uint32_t *len)
{
	unsigned char h[AJ_AGENT_HDR];
	int r = first_byte < 0 ? read_full(0, h, sizeof(h)) : read_full(0, h + 1, sizeof(h) - 1);
	if (first_byte >= 0)
		h[0] = (unsigned char)first_byte, first_byte = -1;
	if (r <= 0 || !h[0]) /* a zero type: the host's filler (agent_resync.h) */
		return r <= 0 ? r : -1;
	*type = (char)h[0];
	*len = aj_agent_len(h);
	if (*len > AJ_AGENT_MAX_FRAME)
		return -1;
	*buf = malloc(*len + 1);
	if (!*buf || (*len && read_full(0, *buf, *len) != 1)) {
		free(*buf);
		*buf = NULL;
		return -1;
	}
	(*buf)[*len] = '\0';
	return 1;
}

static int answer(int e)
{
	json_t *j = json_pack("{s:i}", "errno", e);
	if (e)
		json_object_set_new(j, "error", json_string(strerror(e)));
	frame_json(AJ_AG_EXIT, j);
	return e ? 1 : 0;
}

/* ---- files ---- */

/* Refuse a kernel filesystem (proc, sysfs, devpts ...) and the sandbox's
 * /dev (a tmpfs of its own): by the opened object, not by its name. */
static int kernel_fs(int fd)
{
	static const long magic[] = {PROC_SUPER_MAGIC,	 SYSFS_MAGIC,	      DEVPTS_SUPER_MAGIC,
				     CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, DEBUGFS_MAGIC,
				     SECURITYFS_MAGIC,	 BPF_FS_MAGIC,	      TRACEFS_MAGIC,
				     0x19800202 /* mqueue */};
	struct statfs sf;
	struct stat st, k;
	/* fail closed: gVisor's procfs has no statfs (ENOSYS) */
	if (fstatfs(fd, &sf) < 0 || fstat(fd, &st) < 0)
		return -EPERM;
	for (size_t i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if ((long)sf.f_type == magic[i])
			return -EPERM;
	static const char *const kdirs[] = {"/dev", "/proc", "/sys", "/dev/pts", "/dev/shm"};
	for (size_t i = 0; i < sizeof(kdirs) / sizeof(kdirs[0]); i++)
		if (stat(kdirs[i], &k) == 0 && k.st_dev == st.st_dev)
			return -EPERM;
	return 0;
}

/* An O_PATH fd on path's parent directory (checked) and its last name. */
static int open_parent(const char *path, char *name, size_t len)
{
	if (path[0] != '/')
		return -EINVAL;
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = '\0';
	char *slash = strrchr(dir, '/');
	if (snprintf(name, len, "%s", slash + 1) >= (int)len)
		return -ENAMETOOLONG;
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = kernel_fs(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* Open path (symlinks followed, as the sandbox sees them), checked. */
static int open_checked(const char *path, int flags)
{
	if (path[0] != '/')
		return -EINVAL;
	int fd = open(path, flags | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	int r = kernel_fs(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static json_t *stat_json(const struct stat *st)
{
	char t = S_ISREG(st->st_mode)	? 'f'
		 : S_ISDIR(st->st_mode) ? 'd'
		 : S_ISLNK(st->st_mode) ? 'l'
					: 'o';
	char ts[2] = {t, 0};
	return json_pack("{s:s,s:i,s:I,s:I}", "type", ts, "mode", (int)(st->st_mode & 07777),
			 "size", (json_int_t)st->st_size, "mtime", (json_int_t)st->st_mtime);
}

static int op_stat(const char *path)
{
	char name[NAME_MAX + 1];
	int dfd =
	    strcmp(path, "/") ? open_parent(path, name, sizeof(name)) : open_checked("/", O_PATH);
	if (dfd < 0)
		return answer(-dfd);
	struct stat st;
	int fd = strcmp(path, "/") ? openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC) : dup(dfd);
	int r = fd < 0 ? -errno : kernel_fs(fd);
	if (r == 0 && fstat(fd, &st) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	close(dfd);
	if (r < 0)
		return answer(-r);
	frame_json(AJ_AG_STAT, stat_json(&st));
	return answer(0);
}

static int op_read(const char *path)
{
	int fd = open_checked(path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return answer(-fd);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		close(fd);
		return answer(e);
	}
	(void)fcntl(fd, F_SETFL, 0);
	frame_json(AJ_AG_STAT, stat_json(&st));
	static char buf[READ_MAX];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		frame(AJ_AG_DATA, buf, (size_t)n);
	int e = n < 0 ? errno : 0;
	close(fd);
	frame(AJ_AG_DATA, NULL, 0);
	return answer(e);
}

static int op_write(const char *path, int mode)
{
	char name[NAME_MAX + 1];
	int dfd = open_parent(path, name, sizeof(name)), e = 0;
	if (dfd < 0)
		e = -dfd;
	int fd = -1;
	if (!e) {
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		bool made = fd >= 0;
		if (fd < 0 && errno == EEXIST)
			fd = openat(dfd, name,
				    O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		struct stat st;
		if (fd < 0)
			e = errno;
		else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
			e = EINVAL;
		else if (kernel_fs(fd) < 0)
			e = EPERM;
		else if (ftruncate(fd, 0) < 0 || (made && fchmod(fd, (mode_t)mode & 0777) < 0))
			e = errno;
	}
	if (dfd >= 0)
		close(dfd);
	/* the bytes follow as data frames (read to their end, even after an error) */
	for (;;) {
		char type, *buf = NULL;
		uint32_t len;
		if (read_frame(&type, &buf, &len) != 1) {
			e = e ? e : EPIPE;
			break;
		}
		bool end = type != AJ_AG_DATA || len == 0;
		if (!end && !e && write_all(fd, buf, len) < 0)
			e = errno ? errno : EIO;
		free(buf);
		if (end)
			break;
	}
	if (fd >= 0 && close(fd) < 0 && !e)
		e = errno;
	return answer(e);
}

static int op_list(const char *path)
{
	int fd = open_checked(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return answer(-fd);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return answer(errno);
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		json_t *j = stat_json(&st);
		json_object_set_new(j, "name", json_string(de->d_name));
		frame_json(AJ_AG_ENTRY, j);
	}
	closedir(d);
	return answer(0);
}

/* ---- the root as a stream (a snapshot: op "tree") ---- */

#define TREE_MAX_DEPTH 256

/* A microVM's cgroup2 root (fd 3 from its init, argv[1] "cg"; -1 else):
 * every process the agents start is in "cmd", and a freezing agent moves
 * itself to "tree" first. The guest's init thaws "cmd" when "tree" empties
 * with "cmd" still frozen (the agent killed mid-walk). */
static int cg_fd = -1;

static int cg_write(const char *file, const char *v)
{
	return aj_agent_cg_put(cg_fd, file, v);
}

/* The guest's processes frozen for the copy (cgroup.freeze, as level 1
 * freezes its cgroup: no signal a process sees), waited for up to 2 s (a
 * task in an uninterruptible wait freezes late; the copy goes on). */
static int freeze_others(void)
{
	if (cg_fd < 0)
		return -EOPNOTSUPP;
	int r = cg_write("tree/cgroup.procs", "0");
	if (r == 0)
		r = cg_write("cmd/cgroup.freeze", "1");
	for (int i = 0; r == 0 && i < 200; i++) {
		char ev[256];
		int fd = openat(cg_fd, "cmd/cgroup.events", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, ev, sizeof(ev) - 1);
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			break;
		ev[n] = '\0';
		if (strstr(ev, "frozen 1"))
			break;
		nanosleep(&(struct timespec){0, 10000000L}, NULL);
	}
	return r;
}

static void thaw_others(void)
{
	if (cg_fd >= 0)
		(void)cg_write("cmd/cgroup.freeze", "0");
}

/* A file of more than one name sent once: its other names as hard links to
 * the first one sent, by (device, inode). */
typedef struct tree_inode {
	unsigned maj, min;
	unsigned long long ino;
	char *path;
} tree_inode;

static int inode_cmp(const void *a, const void *b)
{
	const tree_inode *x = a, *y = b;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	if (x->maj != y->maj)
		return x->maj < y->maj ? -1 : 1;
	return x->min < y->min ? -1 : x->min > y->min;
}

typedef struct tree_walk {
	uint64_t mnt;	     /* the root's mount: others are left out */
	json_t *skip;	     /* directories sent empty ("tmp", "home/agent") */
	char path[PATH_MAX]; /* of the directory walked, relative ("" at the root) */
	int err;
	bool cancelled; /* the host said stop */
	void *inodes;	/* tree_inode of the files sent with more than one link */
} tree_walk;

static bool skipped(const tree_walk *w, const char *rel)
{
	size_t k;
	json_t *v;
	json_array_foreach(w->skip, k, v)
	{
		const char *s = json_string_value(v);
		if (s && !strcmp(s, rel))
			return true;
	}
	return false;
}

/* The host's stop (a signal frame: it refused the stream), polled. */
static bool tree_cancelled(tree_walk *w)
{
	struct pollfd pf = {0, POLLIN, 0};
	char type, *buf = NULL;
	uint32_t len;
	while (!w->cancelled && poll(&pf, 1, 0) == 1) {
		if (read_frame(&type, &buf, &len) != 1 || type == AJ_AG_SIGNAL)
			w->cancelled = true;
		free(buf);
		buf = NULL;
	}
	return w->cancelled;
}

/* A name as key k when it is UTF-8 (JSON's), else as hex in k"x" (a
 * file name is any bytes but '/' and NUL). */
static void name_json(json_t *j, const char *k, const char *name)
{
	json_t *v = json_string(name);
	if (v) {
		json_object_set_new(j, k, v);
		return;
	}
	size_t n = strlen(name);
	char *hex = malloc(2 * n + 1), key[8];
	for (size_t i = 0; hex && i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)name[i]);
	snprintf(key, sizeof(key), "%sx", k);
	if (hex)
		json_object_set_new(j, key, json_string(n ? hex : ""));
	free(hex);
}

/* One entry: its stat as an 'L' frame ({"p","t","m","u","g","s","mt","mn"}
 * and "l" for a symlink's target or, "t":"h", the name a hard link is to),
 * a regular file's bytes as 'D' frames after it (then an empty one). */
static void tree_entry(tree_walk *w, const struct statx *sx, const char *link, int fd)
{
	char t = S_ISREG(sx->stx_mode)	 ? (link ? 'h' : 'f')
		 : S_ISDIR(sx->stx_mode) ? 'd'
		 : S_ISLNK(sx->stx_mode) ? 'l'
					 : 'p';
	char ts[2] = {t, 0};
	json_t *j =
	    json_pack("{s:s,s:i,s:I,s:I,s:I,s:I,s:i}", "t", ts, "m", (int)(sx->stx_mode & 07777),
		      "u", (json_int_t)sx->stx_uid, "g", (json_int_t)sx->stx_gid, "s",
		      (json_int_t)(t == 'f' ? sx->stx_size : 0), "mt",
		      (json_int_t)sx->stx_mtime.tv_sec, "mn", (int)sx->stx_mtime.tv_nsec);
	name_json(j, "p", w->path);
	if (link)
		name_json(j, "l", link);
	frame_json(AJ_AG_ENTRY, j);
	if (t != 'f')
		return;
	static char buf[READ_MAX];
	ssize_t n;
	unsigned long long left = sx->stx_size;
	while (left && !tree_cancelled(w) &&
	       (n = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf))) > 0) {
		frame(AJ_AG_DATA, buf, (size_t)n);
		left -= (unsigned long long)n;
	}
	frame(AJ_AG_DATA, NULL, 0);
}

static void tree_dir(tree_walk *w, int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		w->err = w->err ? w->err : errno;
		return;
	}
	size_t plen = strlen(w->path);
	struct dirent *de;
	while (!host_gone && !tree_cancelled(w) && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(w->path + plen, sizeof(w->path) - plen, "%s%s", plen ? "/" : "",
			     de->d_name) >= (int)(sizeof(w->path) - plen)) {
			w->err = w->err ? w->err : ENAMETOOLONG;
			continue;
		}
		struct statx sx;
		if (statx(dirfd(d), de->d_name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
			  STATX_BASIC_STATS | STATX_MNT_ID, &sx) < 0)
			continue; /* gone meanwhile */
		bool other = sx.stx_mnt_id != w->mnt;
		if (S_ISDIR(sx.stx_mode)) {
			/* a mount point (/proc, /dev, /workspace, a bind) and the
			 * skipped ones: the directory, empty */
			tree_entry(w, &sx, NULL, -1);
			if (!other && !skipped(w, w->path) && depth < TREE_MAX_DEPTH) {
				int sub = openat(dirfd(d), de->d_name,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0)
					tree_dir(w, sub, depth + 1);
			}
		} else if (other) {
			continue; /* a file bound over */
		} else if (S_ISREG(sx.stx_mode)) {
			tree_inode key = {sx.stx_dev_major, sx.stx_dev_minor, sx.stx_ino, NULL},
				   **had;
			had = sx.stx_nlink > 1 ? tfind(&key, &w->inodes, inode_cmp) : NULL;
			int fd =
			    had ? -1
				: openat(dirfd(d), de->d_name,
					 O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
			if (had) {
				tree_entry(w, &sx, (*had)->path, -1);
			} else if (fd >= 0) {
				tree_entry(w, &sx, NULL, fd);
				close(fd);
				tree_inode *n = sx.stx_nlink > 1 ? malloc(sizeof(*n)) : NULL;
				if (n && (*n = key, n->path = strdup(w->path)) &&
				    tsearch(n, &w->inodes, inode_cmp))
					n = NULL;
				if (n)
					free(n->path);
				free(n);
			}
		} else if (S_ISLNK(sx.stx_mode)) {
			char t[PATH_MAX];
			ssize_t n = readlinkat(dirfd(d), de->d_name, t, sizeof(t) - 1);
			if (n >= 0) {
				t[n] = '\0';
				tree_entry(w, &sx, t, -1);
			}
		} else if (S_ISFIFO(sx.stx_mode)) {
			tree_entry(w, &sx, NULL, -1);
		} /* sockets and devices are left out */
		w->path[plen] = '\0';
	}
	w->path[plen] = '\0';
	closedir(d);
}

/* The root's own mount as entries, its processes frozen meanwhile (a
 * consistent copy, as level 1 freezes its cgroup): no freezer, no copy. */
static int op_tree(json_t *q)
{
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct statx sx;
	if (fd < 0 || statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0)
		return answer(errno);
	tree_walk w = {.mnt = sx.stx_mnt_id, .skip = json_object_get(q, "skip")};
	bool freeze = json_is_true(json_object_get(q, "freeze"));
	int r = freeze ? freeze_others() : 0;
	if (r < 0) {
		thaw_others();
		close(fd);
		return answer(-r);
	}
	tree_dir(&w, fd, 0);
	if (freeze)
		thaw_others();
	return answer(host_gone ? EPIPE : w.cancelled ? ECANCELED : w.err);
}

static int rm_tree(int dfd, const char *name, int depth)
{
	if (unlinkat(dfd, name, 0) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth >= RM_MAX_DEPTH)
		return -ELOOP;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (kernel_fs(fd) < 0) {
		close(fd);
		return -EPERM;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			r = rm_tree(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	if (r == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		r = -errno;
	return r;
}

static int op_remove(const char *path, bool recursive)
{
	char name[NAME_MAX + 1];
	int dfd = open_parent(path, name, sizeof(name));
	if (dfd < 0)
		return answer(-dfd);
	int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), r = fd < 0 ? -errno : 0;
	if (r == 0)
		r = kernel_fs(fd);
	if (fd >= 0)
		close(fd);
	if (r == 0 && recursive)
		r = rm_tree(dfd, name, 0);
	else if (r == 0 && unlinkat(dfd, name, 0) < 0)
		r = errno == EISDIR && unlinkat(dfd, name, AT_REMOVEDIR) == 0 ? 0 : -errno;
	close(dfd);
	return answer(-r);
}

static int op_mkdir(const char *path, bool parents)
{
	if (path[0] != '/')
		return answer(EINVAL);
	if (!parents) {
		char name[NAME_MAX + 1];
		int dfd = open_parent(path, name, sizeof(name));
		if (dfd < 0)
			return answer(-dfd);
		int r = mkdirat(dfd, name, 0755) < 0 ? errno : 0;
		close(dfd);
		return answer(r);
	}
	char *copy = strdup(path), *save = NULL;
	int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), e = dfd < 0 ? errno : 0;
	for (char *c = strtok_r(copy, "/", &save); c && !e; c = strtok_r(NULL, "/", &save)) {
		if (mkdirat(dfd, c, 0755) < 0 && errno != EEXIST)
			e = errno;
		int fd = e ? -1 : openat(dfd, c, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (!e && fd < 0)
			e = errno;
		if (!e && kernel_fs(fd) < 0)
			e = EPERM;
		close(dfd);
		dfd = fd;
	}
	if (dfd >= 0)
		close(dfd);
	free(copy);
	return answer(e);
}

/* ---- commands ---- */

typedef struct job {
	pid_t pid;
	int in, out, err; /* the command's stdin (ours to write), stdout, stderr (or the pty) */
	bool tty;
	char *pending; /* stdin bytes not written yet */
	size_t plen, poff;
	bool in_eof; /* close stdin once pending is written */
	bool exited;
	int status;
} job;

static char **strv(json_t *a)
{
	size_t n = json_array_size(a);
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; v && i < n; i++)
		v[i] = (char *)json_string_value(json_array_get(a, i));
	return v;
}

extern char **environ;

/* ---- the command's walls: what config.json gives the container's init
 * and runsc exec does not give the processes it starts ---- */

/* set by guard_self (below): this agent is a microVM's */
static bool guarded;

/* No setuid or setgid file may be made (bundle.c's seccomp section, level
 * 1's seccomp.c): a workspace file is its owner's on the host, so such a
 * file would be setuid to that owner there. openat2 (its mode in memory)
 * and fchmodat2 are ENOSYS, as at level 1 (libc falls back). */
static scmp_filter_ctx setid_filter(void)
{
	static const struct {
		int nr;
		unsigned arg;
		int flags_arg; /* -1: the mode counts always, else only with O_CREAT/O_TMPFILE */
	} calls[] = {{SCMP_SYS(chmod), 1, -1},	  {SCMP_SYS(fchmod), 1, -1},
		     {SCMP_SYS(fchmodat), 2, -1}, {SCMP_SYS(creat), 1, -1},
		     {SCMP_SYS(mknod), 1, -1},	  {SCMP_SYS(mknodat), 2, -1},
		     {SCMP_SYS(open), 2, 1},	  {SCMP_SYS(openat), 3, 2}};
	static const unsigned long bits[] = {S_ISUID, S_ISGID};
	static const unsigned long creat[] = {O_CREAT, __O_TMPFILE};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = ctx ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < sizeof(calls) / sizeof(calls[0]); i++)
		for (size_t b = 0; r == 0 && b < 2; b++) {
			struct scmp_arg_cmp mode =
			    SCMP_CMP(calls[i].arg, SCMP_CMP_MASKED_EQ, bits[b], bits[b]);
			if (calls[i].flags_arg < 0) {
				r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), calls[i].nr,
							   1, &mode);
				continue;
			}
			for (size_t f = 0; r == 0 && f < 2; f++) {
				struct scmp_arg_cmp cmp[2] = {SCMP_CMP((unsigned)calls[i].flags_arg,
								       SCMP_CMP_MASKED_EQ, creat[f],
								       creat[f]),
							      mode};
				r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), calls[i].nr,
							   2, cmp);
			}
		}
	/* in a microVM the command may be guest root (euid 0), whose F_SETOWN
	 * lets SIGIO/SIGURG (F_SETSIG: any signal) reach any guest process,
	 * the agent too, capabilities or not: no owner may be set */
	static const unsigned long own_fcntl[] = {F_SETOWN, F_SETOWN_EX};
	static const unsigned long own_ioctl[] = {FIOSETOWN, SIOCSPGRP};
	for (size_t k = 0; r == 0 && guarded && k < 2; k++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fcntl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, own_fcntl[k]));
		if (r == 0)
			r = seccomp_rule_add(
			    ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
			    SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, own_ioctl[k]));
	}
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	if (r == 0) /* fchmodat2: x86_64 number 452, newer than this libseccomp may be */
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), 452, 0);
	if (r < 0 && ctx) {
		seccomp_release(ctx);
		ctx = NULL;
	}
	return ctx;
}

/* The policy's rlimits (the request's "rlimits": {"core": [soft, hard],
 * ...}, config.json's): lowered to them, never raised past what the
 * command already has. */
static int set_rlimits(json_t *lim)
{
	static const struct {
		const char *name;
		int res;
	} names[] = {{"core", RLIMIT_CORE},
		     {"nofile", RLIMIT_NOFILE},
		     {"nproc", RLIMIT_NPROC},
		     {"fsize", RLIMIT_FSIZE}};
	if (lim && !json_is_object(lim))
		return -EINVAL;
	const char *k;
	json_t *v;
	json_object_foreach(lim, k, v)
	{
		size_t i = 0;
		while (i < sizeof(names) / sizeof(names[0]) && strcmp(names[i].name, k))
			i++;
		json_t *soft = json_array_get(v, 0), *hard = json_array_get(v, 1);
		if (i == sizeof(names) / sizeof(names[0]) || !json_is_integer(soft) ||
		    !json_is_integer(hard) || json_integer_value(soft) < 0 ||
		    json_integer_value(hard) < json_integer_value(soft))
			return -EINVAL;
		struct rlimit cur,
		    rl = {(rlim_t)json_integer_value(soft), (rlim_t)json_integer_value(hard)};
		if (getrlimit(names[i].res, &cur) < 0)
			return -errno;
		if (rl.rlim_max > cur.rlim_max)
			rl.rlim_max = cur.rlim_max;
		if (rl.rlim_cur > rl.rlim_max)
			rl.rlim_cur = rl.rlim_max;
		if (setrlimit(names[i].res, &rl) < 0)
			return -errno;
	}
	return 0;
}

/* No capabilities at all (config.json's empty sets): the bounding set
 * too where the command may drop it (CAP_SETPCAP); checked after. */
static int drop_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	if (d[0].effective & (1u << CAP_SETPCAP))
		for (int c = 0; c < 64; c++)
			if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
				if (errno == EINVAL)
					break;
				return -errno;
			}
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) < 0 || syscall(SYS_capget, &h, d) < 0)
		return -errno;
	for (int w = 0; w < 2; w++)
		if (d[w].effective || d[w].permitted || d[w].inheritable)
			return -EPERM;
	return 0;
}

/* How a command failed to start, for the host: its own errno (127/126),
 * or a wall that could not be set (the exec fails, never runs without). */
typedef struct start_err {
	int e;
	char what[64];
} start_err;

/* A microVM's agent (its init's argv "cg") is a guest process like its
 * commands, which run as guest root (or --user) without capabilities: a
 * kill(-1) or kill(PID) of theirs reaches every process of their uid. So
 * the agent runs as AJ_AGENT_GUEST_UID, no command's uid, keeping root's
 * capabilities and file access (fsuid 0): signals and ptrace of a command
 * never reach it (EPERM), and it starts each command as its uid. */
static int guard_self(void)
{
	const uid_t a = AJ_AGENT_GUEST_UID;
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setresuid(a, a, a) < 0 ||
	    prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0 || syscall(SYS_capget, &h, d) < 0)
		return -errno;
	d[0].effective = d[0].permitted, d[1].effective = d[1].permitted;
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	(void)setfsuid(0);
	uid_t ru, eu, su;
	if (getresuid(&ru, &eu, &su) < 0 || ru != a || eu != a || su != a ||
	    setfsuid((uid_t)-1) != 0 || !(d[0].effective & (1u << CAP_SETUID)))
		return -EPERM;
	/* the uid change made it non-dumpable, its /proc files root's: a
	 * command (fsuid 0) could then raise its oom_score_adj. Dumpable, they
	 * are AJ_AGENT_GUEST_UID's; ptrace and mem stay refused (another uid,
	 * no CAP_SYS_PTRACE); no core of its memory */
	struct rlimit no_core = {0, 0};
	if (setrlimit(RLIMIT_CORE, &no_core) < 0 || prctl(PR_SET_DUMPABLE, 1) < 0)
		return -errno;
	guarded = true;
	return 0;
}

static void child_fail(int errpipe, int e, const char *what)
{
	start_err se = {.e = e ? e : EINVAL};
	snprintf(se.what, sizeof(se.what), "%s", what ? what : "");
	(void)!write(errpipe, &se, sizeof(se));
	_exit(127);
}

static void child(json_t *q, job *j, int slave_or_in, int out, int err, int errpipe,
		  scmp_filter_ctx filter)
{
	/* until its exec, nothing of the agent's (fds) through /proc/PID/fd */
	prctl(PR_SET_DUMPABLE, 0);
	if (cg_fd >= 0)
		close(cg_fd);
	int r = aj_agent_cpu_join();
	if (r < 0)
		child_fail(errpipe, -r, "cpu cgroup");
	setsid();
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (j->tty) {
		ioctl(slave_or_in, TIOCSCTTY, 0);
		out = err = slave_or_in;
	}
	if (dup2(slave_or_in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		child_fail(errpipe, errno, NULL);
	const char *cwd = json_string_value(json_object_get(q, "cwd"));
	if (cwd && chdir(cwd) < 0)
		child_fail(errpipe, errno, NULL);
	char **argv = strv(json_object_get(q, "argv"));
	char **env = strv(json_object_get(q, "env"));
	if (!argv || !argv[0] || !env)
		child_fail(errpipe, EINVAL, NULL);
	r = set_rlimits(json_object_get(q, "rlimits"));
	if (r < 0)
		child_fail(errpipe, -r, "rlimits");
	/* "uid"/"gid" (level 3's --user): the command as that user, no
	 * supplementary groups; checked after. A guarded agent's host always
	 * sends them (0 for root): a request without them is refused, never
	 * run as root (fail closed), nor as the agent's uid. */
	json_t *u = json_object_get(q, "uid"), *g = json_object_get(q, "gid");
	if (guarded && (!u || !g))
		child_fail(errpipe, EINVAL, "user");
	if (u || g || guarded) {
		uid_t uid = (uid_t)json_integer_value(u);
		gid_t gid = (gid_t)json_integer_value(g);
		if (guarded && uid == AJ_AGENT_GUEST_UID)
			child_fail(errpipe, EPERM, "user");
		for (int c = 0; c < 64; c++) /* the bounding set while CAP_SETPCAP is had */
			if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno == EINVAL)
				break;
		errno = 0;
		if (!json_is_integer(u) || !json_is_integer(g) || setgroups(0, NULL) < 0 ||
		    setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
			child_fail(errpipe, errno ? errno : EINVAL, "user");
		uid_t ru, eu, su;
		if (getresuid(&ru, &eu, &su) < 0 || ru != uid || eu != uid || su != uid ||
		    getegid() != gid)
			child_fail(errpipe, EPERM, "user");
	}
	if ((r = drop_caps()) < 0)
		child_fail(errpipe, -r, "capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(errpipe, errno, "no_new_privs");
	if ((r = seccomp_load(filter)) < 0)
		child_fail(errpipe, -r, "seccomp filter");
	if ((r = aj_agent_profile_load(q)) < 0) /* level 3's --seccomp-profile: last */
		child_fail(errpipe, -r, "seccomp profile");
	environ = env;
	execvp(argv[0], argv);
	child_fail(errpipe, errno, NULL);
}

/* Start the command; 0, or -errno with se->what naming the wall that
 * could not be set (empty: the command's own error). */
static int start_job(json_t *q, job *j, start_err *se)
{
	int io[2] = {-1, -1}, o[2] = {-1, -1}, e[2] = {-1, -1}, ep[2];
	j->tty = json_is_true(json_object_get(q, "tty"));
	/* built before the fork, loaded by the child last before its exec */
	scmp_filter_ctx filter = setid_filter();
	if (!filter) {
		snprintf(se->what, sizeof(se->what), "seccomp filter");
		return -ENOMEM;
	}
	if (pipe2(ep, O_CLOEXEC) < 0)
		return -errno;
	if (j->tty) {
		int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
			return -errno;
		struct winsize ws = {
		    .ws_row = (unsigned short)json_integer_value(json_object_get(q, "rows")),
		    .ws_col = (unsigned short)json_integer_value(json_object_get(q, "cols"))};
		if (ws.ws_row && ws.ws_col)
			ioctl(m, TIOCSWINSZ, &ws);
		int s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (s < 0)
			return -errno;
		io[0] = s, j->in = j->out = m, j->err = -1;
	} else {
		if (pipe2(io, O_CLOEXEC) < 0 || pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0)
			return -errno;
		j->in = io[1], j->out = o[0], j->err = e[0];
	}
	j->pid = fork();
	if (j->pid < 0)
		return -errno;
	if (j->pid == 0)
		child(q, j, io[0], o[1], e[1], ep[1], filter);
	seccomp_release(filter);
	close(ep[1]);
	close(io[0]);
	if (!j->tty)
		close(o[1]), close(e[1]);
	ssize_t n = read(ep[0], se, sizeof(*se));
	close(ep[0]);
	if (n == sizeof(*se)) {
		waitpid(j->pid, NULL, 0);
		se->what[sizeof(se->what) - 1] = '\0';
		return -se->e;
	}
	se->what[0] = '\0';
	fcntl(j->in, F_SETFL, O_NONBLOCK);
	return 0;
}

/* A frame from the host during a command. false: the host is gone. */
static bool host_frame(job *j)
{
	char type, *buf = NULL;
	uint32_t len;
	if (read_frame(&type, &buf, &len) != 1) {
		kill(-j->pid, SIGKILL);
		return false;
	}
	if (type == AJ_AG_STDIN && len == 0)
		j->in_eof = true;
	else if (type == AJ_AG_STDIN)
		j->pending = buf, j->plen = len, j->poff = 0, buf = NULL;
	else if (type == AJ_AG_SIGNAL && len == 1)
		kill(-j->pid, (unsigned char)buf[0]);
	else if (type == AJ_AG_WINSIZE && len == 4 && j->tty) {
		struct winsize ws = {
		    .ws_row = (unsigned short)((unsigned char)buf[0] | (unsigned char)buf[1] << 8),
		    .ws_col = (unsigned short)((unsigned char)buf[2] | (unsigned char)buf[3] << 8)};
		ioctl(j->out, TIOCSWINSZ, &ws);
	}
	free(buf);
	return true;
}

static void write_stdin(job *j)
{
	ssize_t n = write(j->in, j->pending + j->poff, j->plen - j->poff);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n < 0) {
		j->plen = j->poff = 0; /* the command closed its stdin: dropped */
	} else {
		j->poff += (size_t)n;
	}
	if (j->poff >= j->plen) {
		free(j->pending);
		j->pending = NULL;
		j->plen = j->poff = 0;
	}
}

static bool relay_out(int *fd, char type)
{
	static char buf[READ_MAX];
	ssize_t n = read(*fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0) { /* EOF (a pty whose last slave closed: EIO) */
		close(*fd);
		*fd = -1;
		return false;
	}
	frame(type, buf, (size_t)n);
	return true;
}

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int op_exec(json_t *q)
{
	long long oom0 = aj_agent_oom_kills(); /* an OOM kill of the command: "oom" */
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	job j = {.in = -1, .out = -1, .err = -1};
	start_err se = {0};
	int r = sfd < 0 ? -errno : start_job(q, &j, &se);
	if (r < 0 && se.what[0]) { /* fail closed: said as such, not as 126 */
		json_t *x = json_pack("{s:i,s:s,s:s}", "errno", -r, "error", strerror(-r),
				      "confine", se.what);
		frame_json(AJ_AG_EXIT, x);
		return 1;
	}
	if (r < 0)
		return answer(-r);
	if (json_is_true(json_object_get(q, "started")))
		frame(AJ_AG_STARTED, NULL, 0);
	bool host = true;
	long long drain_until = 0;
	for (;;) {
		if (j.exited && ((j.out < 0 && j.err < 0) || mono_ms() > drain_until))
			break;
		if (j.in_eof && !j.pending && j.in >= 0 && !j.tty) {
			close(j.in);
			j.in = -1;
		}
		struct pollfd pf[5] = {
		    {host && !j.pending ? 0 : -1, POLLIN, 0},
		    {j.pending && j.in >= 0 ? j.in : -1, POLLOUT, 0},
		    {j.out, POLLIN, 0},
		    {j.err, POLLIN, 0},
		    {j.exited ? -1 : sfd, POLLIN, 0},
		};
		int k = poll(pf, 5, j.exited ? 50 : -1);
		if (k < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			host = host_frame(&j);
		if (pf[1].revents)
			write_stdin(&j);
		if (pf[2].revents && !relay_out(&j.out, AJ_AG_STDOUT) && j.tty && j.in == j.out)
			j.in = -1;
		if (pf[3].revents)
			relay_out(&j.err, AJ_AG_STDERR);
		if (pf[4].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si))
				;
			if (waitpid(j.pid, &j.status, WNOHANG) == j.pid) {
				j.exited = true;
				/* what it left behind may still write: for at most 2 s */
				drain_until = mono_ms() + 2000;
			}
		}
	}
	json_t *x = WIFEXITED(j.status)
			? json_pack("{s:i,s:i}", "exit", WEXITSTATUS(j.status), "signal", 0)
			: json_pack("{s:i,s:i}", "exit", 128 + WTERMSIG(j.status), "signal",
				    WTERMSIG(j.status));
	/* the CPU of the command's tree: its own cgroup's (agent_cpu.c) */
	unsigned long long cpu[2];
	if (x && aj_agent_cpu_read(cpu) &&
	    (json_object_set_new(x, "cpu_user_us", json_integer((json_int_t)cpu[0])) < 0 ||
	     json_object_set_new(x, "cpu_sys_us", json_integer((json_int_t)cpu[1])) < 0)) {
		json_decref(x); /* an ENOMEM answer (frame_json), never 0 CPU */
		x = NULL;
	}
	if (x && WIFSIGNALED(j.status) && WTERMSIG(j.status) == SIGKILL && oom0 >= 0 &&
	    aj_agent_oom_kills() > oom0)
		json_object_set_new(x, "oom", json_true());
	frame_json(AJ_AG_EXIT, x);
	return 0;
}

/* A microVM started from its image's snapshot (microvm/box.c): the host
 * hot-plugged the workspace's virtiofs (tag "ws"), mounted here as the
 * guest's init mounts it at a boot; its device may still be probing. */
static int op_workspace(void)
{
	if (mkdir("/workspace", 0755) < 0 && errno != EEXIST)
		return answer(errno);
	for (int i = 0; mount("ws", "/workspace", "virtiofs", MS_NOSUID | MS_NODEV, NULL) < 0;
	     i++) {
		/* no such tag yet: EINVAL (ENOENT in some kernels) */
		if ((errno != EINVAL && errno != ENOENT) || i >= 1000)
			return answer(errno);
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	return answer(0);
}

/* ---- the ports proxy (levels 2 and 3) ---- */

/* An 'O' frame for the host, written as its stream takes it (op_connect
 * makes it non-blocking: an agent blocked there could neither take the
 * host's 'I' frames nor keep its own bound on the server). */
typedef struct out_frame {
	unsigned char b[AJ_AGENT_HDR + READ_MAX];
	size_t len, off;
} out_frame;

static void out_flush(out_frame *o)
{
	while (o->off < o->len && !host_gone) {
		ssize_t n = write(1, o->b + o->off, o->len - o->off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			host_gone = true;
			return;
		}
		o->off += (size_t)n;
	}
}

/* The rest of a pending frame: the host reads again once its client took
 * its bytes or was dropped (its own bounds), or its stream ends. */
static void out_finish(out_frame *o)
{
	while (o->off < o->len && !host_gone) {
		struct pollfd pf = {1, POLLOUT, 0};
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			host_gone = true;
		else
			out_flush(o);
	}
}

/* A TCP connection to port on the loopback address (127.0.0.1, else ::1
 * for a server there only: loopback.h, as level 1's proxy connects in the
 * sandbox's network namespace; docs/api.md, "Ports"). Connected: a 'T' frame, then
 * the host's 'I' frames go to the server (empty: its end, passed on as a
 * half-close) and the server's bytes come back as 'O' frames (empty: its
 * end); 'X' once both ended, or why it could not connect. No write blocks:
 * while an 'I' frame waits for the server, no more frames are read, and
 * while an 'O' frame waits for the host, the server is not read
 * (back-pressure both ways). A server that takes none of an 'I' frame for
 * the host's "stall_ms" (counted from when the frame came, whatever the
 * host reads meanwhile) is dropped (answer ETIMEDOUT), so the host's
 * stream is read again before the host's own bound (stall_ms and a
 * margin) gives the stream up (that bound does not run while the host
 * holds back reading this stream for its client). */
static int op_connect(json_t *q)
{
	json_int_t port = json_integer_value(json_object_get(q, "port"));
	json_int_t stall = json_integer_value(json_object_get(q, "stall_ms"));
	if (port < 1 || port > 65535)
		return answer(EINVAL);
	if (stall <= 0 || stall > 3600000)
		stall = 60000;
	int s = aj_loopback_connect((unsigned)port, true);
	if (s < 0)
		return answer(-s);
	frame(AJ_AG_STAT, "{}", 2);
	int ofl = fcntl(1, F_GETFL);
	if (ofl >= 0)
		(void)fcntl(1, F_SETFL, ofl | O_NONBLOCK);
	bool host_end = false, server_end = false;
	int e = 0;
	static out_frame out;
	out.len = out.off = 0;
	char *in = NULL; /* an 'I' frame's bytes the server has not taken yet */
	uint32_t inlen = 0, inoff = 0;
	long long since = 0;
	while (!(host_end && server_end && out.off >= out.len) && !host_gone && !e) {
		bool opend = out.off < out.len;
		/* the host's frames are read after its end too: a SIGNAL may
		 * follow (its client gone for good) */
		short sev = (short)((server_end || opend ? 0 : POLLIN) | (in ? POLLOUT : 0));
		struct pollfd pf[3] = {
		    {in ? -1 : 0, POLLIN, 0}, {sev ? s : -1, sev, 0}, {opend ? 1 : -1, POLLOUT, 0}};
		long long t = mono_ms(), wait = -1;
		if (in && since + stall <= t) {
			e = ETIMEDOUT; /* the server took nothing for stall_ms */
			break;
		}
		if (in)
			wait = since + stall - t;
		if (poll(pf, 3, (int)wait) < 0) {
			if (errno != EINTR)
				e = errno;
			continue;
		}
		if (pf[2].revents)
			out_flush(&out);
		if (pf[0].revents) {
			char type;
			uint32_t len;
			int k = read_frame(&type, &in, &len);
			if (k <= 0) { /* the host's stream ended: nothing to answer */
				host_gone = true;
				break;
			}
			if (type == AJ_AG_STDIN && len && !host_end) {
				inlen = len, inoff = 0, since = mono_ms();
			} else if (type == AJ_AG_STDIN && !len && !host_end) {
				host_end = true;
				(void)shutdown(s, SHUT_WR);
			} else if (type == AJ_AG_SIGNAL) { /* the host gives up */
				host_end = server_end = true;
			}
			if (!inlen) {
				free(in);
				in = NULL;
			}
		}
		if (in && (pf[1].revents || pf[0].revents)) {
			ssize_t n = write(s, in + inoff, inlen - inoff);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				e = errno;
			if (n > 0)
				inoff += (uint32_t)n;
			if (e || inoff == inlen) {
				free(in);
				in = NULL;
				inlen = inoff = 0;
			}
		}
		if ((sev & POLLIN) && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    !server_end) {
			ssize_t n = read(s, out.b + AJ_AGENT_HDR, READ_MAX);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n < 0)
				e = errno;
			aj_agent_hdr(out.b, AJ_AG_STDOUT, n > 0 ? (uint32_t)n : 0);
			out.len = AJ_AGENT_HDR + (n > 0 ? (size_t)n : 0), out.off = 0;
			out_flush(&out);
			server_end = n <= 0;
		}
	}
	free(in);
	close(s);
	out_finish(&out);
	if (ofl >= 0)
		(void)fcntl(1, F_SETFL, ofl);
	if (host_gone)
		return 1;
	return answer(e == ECONNRESET || e == EPIPE ? 0 : e);
}

/* ---- init ---- */

static _Noreturn void init(void)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		int sig = 0;
		if (sigwait(&all, &sig) == 0 && sig == SIGCHLD)
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--protocol")) /* the mark the host checks */
		return puts(AJ_AGENT_MARK) < 0;
	if (argc > 1 && !strcmp(argv[1], "init"))
		init();
	struct statfs cs;
	if (argc > 1 && !strcmp(argv[1], "cg") && fstatfs(3, &cs) == 0 &&
	    cs.f_type == CGROUP2_SUPER_MAGIC && fcntl(3, F_SETFD, FD_CLOEXEC) == 0)
		cg_fd = 3; /* a microVM's init's (never a command's: close-on-exec) */
	int gr = argc > 1 && !strcmp(argv[1], "cg") ? guard_self() : 0;
	signal(SIGPIPE, SIG_IGN);
	char type, *buf = NULL;
	uint32_t len;
	/* a microVM's port is reused: what the host sent a request whose
	 * agent had already answered (its stdin, a signal) is skipped */
	bool hello; /* a revived port's fresh agent: a hello first, only then */
	first_byte = aj_agent_port_args(argc, argv, &hello);
	int k;
	while ((k = read_frame(&type, &buf, &len)) == 1 && type != AJ_AG_REQUEST && !hello) {
		free(buf);
		buf = NULL;
	}
	if (k != 1)
		return answer(EPROTO);
	if (gr < 0) /* fail closed: no command while its commands could kill it */
		return answer(-gr);
	json_t *q = json_loads(buf, 0, NULL);
	free(buf);
	const char *op = json_string_value(json_object_get(q, "op"));
	const char *path = json_string_value(json_object_get(q, "path"));
	if (!op || hello != !strcmp(op, "hello") || type != AJ_AG_REQUEST)
		return answer(EPROTO);
	if (hello) { /* agent_hello.c: its own answer */
		int e = aj_agent_hello(json_string_value(json_object_get(q, "nonce")));
		return e ? answer(e) : 0;
	}
	/* only the snapshot's walk and a hand-out's limits need it */
	if (cg_fd >= 0 && strcmp(op, "tree") && strcmp(op, "limits")) {
		/* an exec's command in a cgroup of its own: its CPU time */
		if (!strcmp(op, "exec"))
			(void)aj_agent_cpu_open(cg_fd);
		close(cg_fd);
		cg_fd = -1;
	}
	if (!strcmp(op, "exec")) {
		int r = op_exec(q);
		aj_agent_cpu_close(); /* on every path: never a cgroup left */
		return r;
	}
	if (!strcmp(op, "identity")) /* a restored microVM's (agent_net.c) */
		return answer(aj_agent_identity(q));
	if (!strcmp(op, "connect"))
		return op_connect(q);
	if (!strcmp(op, "workspace"))
		return op_workspace();
	if (!strcmp(op, "net")) /* its identity, then its NIC (agent_net.c) */
		return answer(aj_agent_net(q));
	if (!strcmp(op, "tree"))
		return op_tree(q);
	if (!strcmp(op, "limits"))
		return answer(-aj_agent_limits(q, cg_fd));
	if (!path)
		return answer(EINVAL);
	int fa = aj_agent_file_as(q); /* the files API as --user (level 3) */
	if (fa < 0)
		return answer(-fa);
	if (!strcmp(op, "stat"))
		return op_stat(path);
	if (!strcmp(op, "read"))
		return op_read(path);
	if (!strcmp(op, "write"))
		return op_write(path, (int)json_integer_value(json_object_get(q, "mode")));
	if (!strcmp(op, "list"))
		return op_list(path);
	if (!strcmp(op, "remove"))
		return op_remove(path, json_is_true(json_object_get(q, "recursive")));
	if (!strcmp(op, "mkdir"))
		return op_mkdir(path, json_is_true(json_object_get(q, "parents")));
	return answer(ENOSYS);
}
