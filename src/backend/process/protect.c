/* SPDX-License-Identifier: MIT */
/* Files in the workspace that host tools run code from (protect.h). */
#include "protect.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "mountapi.h"
#include "image.h"
#include "inroot.h"
#include "util.h"

#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

/* docs/security.md has the table: which host tool runs what from each. A
 * missing one gets an empty directory as its placeholder (for a file name
 * too: git ignores an empty directory, so `git add -A` inside doesn't pick
 * the placeholder up). */
/* clang-format off */
const char *const aj_protect_names[] = {
    ".vscode", ".idea", ".claude", ".cursor", ".gemini", ".zed", ".continue",
    ".devcontainer", ".husky", ".githooks", ".mcp.json", ".envrc",
    ".pre-commit-config.yaml", "lefthook.yml", ".lefthook.yml", ".devcontainer.json",
    "mise.toml", ".mise.toml", ".aider.conf.yml", NULL,
};
/* clang-format on */

#define MAX_DEPTH 4	       /* gitdir -> commondir -> ..., links followed */
#define CONFIG_MAX (256 << 10) /* .git/config and its includes are read up to this */

typedef struct prep {
	const aj_policy *p;
	aj_protect *pr;
	uid_t uid; /* the workspace's owner: placeholders are made theirs (root) */
	gid_t gid;
	aj_error *err;
	char unsafe[AJ_PROTECT_REL_MAX]; /* a path join_rel could not follow */
} prep;

static bool under(const char *rel, const char *top)
{
	size_t n = strlen(top);
	return strncmp(rel, top, n) == 0 && (rel[n] == '\0' || rel[n] == '/');
}

bool aj_protect_known(const char *rel)
{
	if (under(rel, ".git"))
		return true;
	/* a submodule's .git (from .gitmodules) */
	for (const char *g = strstr(rel, "/.git"); g; g = strstr(g + 1, "/.git"))
		if (g[5] == '\0' || g[5] == '/')
			return true;
	for (size_t i = 0; aj_protect_names[i]; i++)
		if (under(rel, aj_protect_names[i]))
			return true;
	return false;
}

static bool lifted(const aj_policy *p, const char *rel)
{
	for (size_t i = 0; i < p->n_writable; i++)
		if (under(rel, p->writable[i]))
			return true;
	return false;
}

static int openat2_fd(int dfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how = {.flags = (unsigned long long)flags | O_CLOEXEC, .resolve = resolve};
	return (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
}

#define BENEATH (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* The directory of rel below ws (O_PATH), and rel's last component in
 * *name. No symlink is followed, nothing outside ws is reached. */
static int open_parent(int ws, const char *rel, const char **name)
{
	const char *slash = strrchr(rel, '/');
	*name = slash ? slash + 1 : rel;
	if (!slash)
		return fcntl(ws, F_DUPFD_CLOEXEC, 3);
	char dir[AJ_PROTECT_REL_MAX];
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
	int fd = openat2_fd(ws, dir, O_PATH | O_DIRECTORY, BENEATH);
	return fd < 0 ? -errno : fd;
}

/* base (a directory relative to the workspace, "" for its top) joined with
 * target (a path from a symlink, a gitdir: line, core.hooksPath ...) into
 * out, relative to the workspace, normalized. Absolute targets are in the
 * workspace when they start with its path. A ".." is resolved by dropping
 * the component before it, which must be a real directory (no symlink, as
 * the kernel would find it), else s->unsafe names the path (the run then
 * fails: where it leads can't be told). Returns false when target is
 * outside (nothing of the sandbox's reaches it) or unusable. */
static bool join_rel(prep *s, const char *base, const char *target, char *out, size_t len)
{
	char tmp[AJ_PROTECT_REL_MAX * 2];
	const char *ws = s->p->workspace;
	size_t wl = strlen(ws);
	if (target[0] == '/') {
		if (strncmp(target, ws, wl) != 0 || (target[wl] != '/' && target[wl] != '\0'))
			return false;
		snprintf(tmp, sizeof(tmp), "%s", target + wl);
	} else if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", base, target) >= sizeof(tmp)) {
		return false;
	}
	size_t o = 0;
	out[0] = '\0';
	for (char *save = NULL, *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			if (o == 0)
				return false; /* above the workspace */
			_cleanup_close_ int fd =
			    openat2_fd(s->pr->ws_fd, out, O_PATH | O_DIRECTORY, BENEATH);
			if (fd < 0) {
				snprintf(s->unsafe, sizeof(s->unsafe), "%s", target);
				return false;
			}
			char *slash = strrchr(out, '/');
			o = slash ? (size_t)(slash - out) : 0;
			out[o] = '\0';
			continue;
		}
		size_t cl = strlen(c);
		if (o + cl + 2 > len)
			return false;
		if (o)
			out[o++] = '/';
		memcpy(out + o, c, cl);
		o += cl;
		out[o] = '\0';
	}
	return o > 0; /* not the workspace itself */
}

static aj_protect_entry *find(aj_protect *pr, const char *rel)
{
	for (size_t i = 0; i < pr->n; i++)
		if (!strcmp(pr->e[i].rel, rel))
			return &pr->e[i];
	return NULL;
}

static bool have(aj_protect *pr, const char *rel)
{
	return find(pr, rel) != NULL;
}

/* rel is at or below a path bound read-only already: nothing in it can be
 * renamed, and a writable bind there would open it again. */
static bool covered_ro(const aj_protect *pr, const char *rel)
{
	for (size_t i = 0; i < pr->n; i++)
		if (pr->e[i].kind == AJ_PROTECT_RO && under(rel, pr->e[i].rel))
			return true;
	return false;
}

static aj_protect_entry *add_entry(prep *s, const char *rel, aj_protect_kind kind);

/* The directories on the way to rel are pinned (bound writable onto
 * themselves) first: renaming one away, with a mount below it, would move
 * the protection along, and a new directory in its place would be free. */
static bool pin_ancestors(prep *s, const char *rel)
{
	char prefix[AJ_PROTECT_REL_MAX];
	for (const char *c = strchr(rel, '/'); c; c = strchr(c + 1, '/')) {
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(c - rel), rel);
		if (!have(s->pr, prefix) && !covered_ro(s->pr, prefix) &&
		    !add_entry(s, prefix, AJ_PROTECT_PIN))
			return false;
	}
	return true;
}

static aj_protect_entry *add_entry(prep *s, const char *rel, aj_protect_kind kind)
{
	aj_protect *pr = s->pr;
	if (!pin_ancestors(s, rel))
		return NULL;
	if (pr->n >= AJ_PROTECT_MAX) {
		aj_err(s->err, E2BIG, "the workspace has more than %d files the host runs",
		       AJ_PROTECT_MAX);
		return NULL;
	}
	if (kind == AJ_PROTECT_PIN && covered_ro(pr, rel))
		kind = AJ_PROTECT_RO;
	aj_protect_entry *e = &pr->e[pr->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->rel, sizeof(e->rel), "%s", rel);
	e->kind = kind;
	return e;
}

/* The runs' manifests: "dev ino type" TAB workspace TAB rel, a line per
 * placeholder, one file per run, flock()ed while the run lives, in a
 * directory of the caller's (root: the state directory's protect/). Runs
 * on the same workspace share a placeholder: the second adopts it (it is
 * listed by a live run), and the last one removes it. The directory's
 * "lock" serializes making, adopting and removing. */
/* A non-root caller's manifest directory (false: root's, in the state
 * directory, which stays). */
static bool manifest_path(char *path, size_t len)
{
	if (geteuid() == 0)
		return false;
	const char *rt = getenv("XDG_RUNTIME_DIR");
	if (rt && rt[0] == '/' && strlen(rt) < 128)
		snprintf(path, len, "%s/agentjail-protect", rt);
	else
		snprintf(path, len, "/tmp/agentjail-protect-%u", (unsigned)geteuid());
	return true;
}

static int manifest_dir(bool create)
{
	char path[256];
	if (!manifest_path(path, sizeof(path)))
		return aj_cache_dir("protect", create);
	if (create && mkdir(path, 0700) < 0 && errno != EEXIST)
		return -1;
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The manifest directory's lock, taken (-1: none). A non-root caller's
 * directory is removed by the last run (drop_if_empty): a lock or a
 * directory found removed is made again. */
static int lock_dir(int *dir, bool create)
{
	for (int tries = 0; tries < 8; tries++) {
		if (*dir < 0 && (tries == 0 || (*dir = manifest_dir(create)) < 0))
			return -1;
		int fd = openat(*dir, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		struct stat st;
		if (fd >= 0 && flock(fd, LOCK_EX) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0)
			return fd;
		if (fd >= 0)
			close(fd);
		else if (errno != ENOENT)
			return -1;
		close(*dir); /* removed under us: open (make) it again */
		*dir = -1;
	}
	return -1;
}

/* Under the lock: the last run out removes a non-root caller's directory
 * (nothing of agentjail's stays in /tmp), lock first so waiters retry. */
static void drop_if_empty(int dir)
{
	char path[256];
	struct stat st, pst;
	if (dir < 0 || !manifest_path(path, sizeof(path)) || fstat(dir, &st) < 0 ||
	    stat(path, &pst) < 0 || st.st_dev != pst.st_dev || st.st_ino != pst.st_ino)
		return;
	_cleanup_close_ int rd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = rd < 0 ? NULL : fdopendir(dup(rd));
	if (!d)
		return;
	bool empty = true;
	struct dirent *de;
	while (empty && (de = readdir(d)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
			!strcmp(de->d_name, "lock");
	closedir(d);
	if (empty && unlinkat(dir, "lock", 0) == 0)
		(void)rmdir(path);
}

/* Does a live run other than self (a manifest's name) list dev/ino? */
static bool listed_alive(int dir, const char *self, dev_t dev, ino_t ino)
{
	if (dir < 0)
		return false;
	_cleanup_close_ int rd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = rd < 0 ? NULL : fdopendir(dup(rd));
	if (!d)
		return false;
	char key[64];
	int kl = snprintf(key, sizeof(key), "%llu %llu ", (unsigned long long)dev,
			  (unsigned long long)ino);
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		if (!aj_startswith(de->d_name, "run-") || (self && !strcmp(de->d_name, self)))
			continue;
		_cleanup_close_ int fd = openat(rd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || flock(fd, LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK)
			continue; /* gone, or its run is dead */
		_cleanup_free_ char *text = NULL;
		if (aj_read_fd(fd, &text, NULL) < 0)
			continue;
		for (const char *l = text; l && *l && !found;
		     l = strchr(l, '\n'), l = l ? l + 1 : l)
			found = strncmp(l, key, (size_t)kl) == 0;
	}
	closedir(d);
	return found;
}

/* This run's manifest, made and locked (at prepare, under the lock). */
static void manifest_open(aj_protect *pr)
{
	unsigned rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (unsigned)time(NULL);
	snprintf(pr->manifest_name, sizeof(pr->manifest_name), "run-%d-%08x", (int)getpid(), rnd);
	int fd = pr->mdir < 0 ? -1
			      : openat(pr->mdir, pr->manifest_name,
				       O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		(void)unlinkat(pr->mdir, pr->manifest_name, 0);
		close(fd);
		fd = -1;
	}
	pr->manifest = fd;
}

static void record(prep *s, const aj_protect_entry *e)
{
	aj_protect *pr = s->pr;
	if (pr->manifest < 0 || strpbrk(s->p->workspace, "\t\n") || strpbrk(e->rel, "\t\n"))
		return;
	dprintf(pr->manifest, "%llu %llu %c\t%s\t%s\n", (unsigned long long)e->dev,
		(unsigned long long)e->ino, e->made, s->p->workspace, e->rel);
}

/* The name is a placeholder agentjail made (its type and content). */
static bool is_placeholder(int dir, const char *name, const struct stat *st, char made)
{
	if (made == 'd')
		return S_ISDIR(st->st_mode);
	char t[sizeof(AJ_PROTECT_LINK) + 1];
	if (made == 'l') {
		ssize_t n = S_ISLNK(st->st_mode) ? readlinkat(dir, name, t, sizeof(t)) : -1;
		return n == (ssize_t)strlen(AJ_PROTECT_LINK) &&
		       memcmp(t, AJ_PROTECT_LINK, (size_t)n) == 0;
	}
	if (made != 'f' || !S_ISREG(st->st_mode) || st->st_size != 1)
		return false;
	_cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	return fd >= 0 && pread(fd, t, 1, 0) == 1 && t[0] == AJ_PROTECT_DOT[0];
}

/* A placeholder of kind ph at rel (made by this run, or shared with a live
 * one): protected read-only, and recorded in this run's manifest. */
static int add_made(prep *s, const char *rel, char ph, const struct stat *st)
{
	aj_protect_entry *e = add_entry(s, rel, AJ_PROTECT_RO);
	if (!e)
		return -E2BIG;
	e->made = ph;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	record(s, e);
	return 0;
}

/* The name appeared since it was looked up: another run's placeholder (a
 * live run lists it) is shared, anything else fails the run. */
static int adopt(prep *s, int dir, const char *name, const char *rel, char ph)
{
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    is_placeholder(dir, name, &st, ph) &&
	    listed_alive(s->pr->mdir, s->pr->manifest_name, st.st_dev, st.st_ino)) {
		return add_made(s, rel, ph, &st);
	}
	return aj_err(s->err, EEXIST, "'%s' in the workspace changed while agentjail made it", rel);
}

/* Make the placeholder name in dir, of type ph: 'd' an empty directory,
 * 'l' a symlink to a path that can't exist (a file git reads with access(),
 * which finds it missing), 'f' a file "." (.git/commondir, which git finds
 * with lstat(): "." names the git directory itself). EROFS, EACCES, EPERM:
 * the sandbox can't make it either (it writes as the workspace's owner, or as the
 * caller), nothing to protect: 1. */
static int make_placeholder(prep *s, int dir, const char *name, const char *rel, char ph)
{
	int r = ph == 'l' ? symlinkat(AJ_PROTECT_LINK, dir, name)
		: ph == 'd'
		    ? mkdirat(dir, name, 0755)
		    : openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (r < 0 && errno == EEXIST)
		return adopt(s, dir, name, rel, ph);
	if (r < 0) {
		if (errno == EROFS || errno == EACCES || errno == EPERM)
			return 1;
		return aj_err(s->err, errno, "cannot make a placeholder for '%s' in the workspace",
			      rel);
	}
	/* what was made, by fd: the name may be swapped meanwhile (root must
	 * not chown whatever the workspace's owner puts there) */
	_cleanup_close_ int fd = ph == 'f' ? r : openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return aj_err(s->err, errno, "cannot make a placeholder for '%s'", rel);
	if (ph == 'f' && aj_write_all(fd, AJ_PROTECT_DOT, 1) < 0) {
		(void)unlinkat(dir, name, 0);
		return aj_err(s->err, errno, "cannot make a placeholder for '%s'", rel);
	}
	bool ours = st.st_uid == geteuid() && (ph == 'd'   ? S_ISDIR(st.st_mode)
					       : ph == 'l' ? S_ISLNK(st.st_mode)
							   : S_ISREG(st.st_mode));
	if (!ours)
		return aj_err(s->err, EEXIST,
			      "'%s' in the workspace changed while agentjail made it", rel);
	if (geteuid() == 0 && fchownat(fd, "", s->uid, s->gid, AT_EMPTY_PATH) < 0) {
		/* left as root's: removed at teardown all the same */
	}
	return add_made(s, rel, ph, &st);
}

static int protect_path(prep *s, const char *rel, aj_protect_kind kind, char ph, int depth);

/* rel is missing: pin its first missing component (a placeholder there;
 * the component's own kind when it is rel itself, else a directory). */
static int protect_missing(prep *s, const char *rel, char ph)
{
	char prefix[AJ_PROTECT_REL_MAX];
	for (const char *c = rel;; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(c - rel), rel);
		_cleanup_close_ int fd = openat2_fd(s->pr->ws_fd, prefix, O_PATH, BENEATH);
		if (fd < 0 && errno == ENOENT)
			break;
		if (fd < 0 && errno == EACCES)
			return 0;
		if (fd < 0)
			return aj_err(s->err, errno, "cannot look up '%s' in the workspace",
				      prefix);
		if (*c == '\0')
			return 0; /* there after all */
	}
	if (have(s->pr, prefix))
		return 0;
	const char *name;
	_cleanup_close_ int dir = open_parent(s->pr->ws_fd, prefix, &name);
	if (dir < 0)
		return aj_err(s->err, -dir, "cannot look up '%s' in the workspace", prefix);
	int r = make_placeholder(s, dir, name, prefix, strcmp(prefix, rel) ? 'd' : ph);
	return r > 0 ? 0 : r;
}

/* rel is a symlink: pinned like the rest (a symlink can't be changed, only
 * replaced, which a mount on it prevents), and where it leads, when that is
 * in the workspace, protected too: host tools follow it. */
static int protect_link(prep *s, int dir, const char *name, const char *rel, aj_protect_kind kind,
			char ph, int depth)
{
	if (!add_entry(s, rel, AJ_PROTECT_RO))
		return -E2BIG;
	char target[AJ_PROTECT_REL_MAX], base[AJ_PROTECT_REL_MAX], to[AJ_PROTECT_REL_MAX];
	ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);
	if (n < 0)
		return aj_err(s->err, errno, "cannot read the symlink '%s'", rel);
	target[n] = '\0';
	snprintf(base, sizeof(base), "%s", rel);
	char *slash = strrchr(base, '/');
	*(slash ? slash : base) = '\0';
	if (!join_rel(s, base, target, to, sizeof(to)))
		return 0;
	if (depth >= MAX_DEPTH) {
		aj_err(s->err, ELOOP, "'%s' in the workspace is a chain of symlinks", rel);
		aj_err_hint(s->err, "replace it by what it points to, or give --writable %s", rel);
		return -ELOOP;
	}
	return protect_path(s, to, kind, ph, depth + 1);
}

/* Protect rel (relative to the workspace, normalized): bind it read-only
 * (or pin it), make a placeholder of type ph when it is missing, follow a
 * symlink at its name, share another live run's placeholder. */
static int protect_path(prep *s, const char *rel, aj_protect_kind kind, char ph, int depth)
{
	aj_protect_entry *known = find(s->pr, rel);
	if (known && kind == AJ_PROTECT_RO)
		known->kind = AJ_PROTECT_RO; /* pinned on the way to another, read-only now */
	if (lifted(s->p, rel) || known)
		return 0;
	const char *name;
	_cleanup_close_ int dir = open_parent(s->pr->ws_fd, rel, &name);
	if (dir == -ENOENT)
		return protect_missing(s, rel, ph);
	if (dir == -EXDEV)
		return 0; /* outside the workspace */
	if (dir == -EACCES)
		return 0; /* a directory the caller can't search: the sandbox can't either */
	if (dir < 0 && dir != -ELOOP)
		return aj_err(s->err, -dir, "cannot look up '%s' in the workspace", rel);
	if (dir < 0) {
		aj_err(s->err, -dir, "cannot protect '%s' in the workspace: a symlink in the way",
		       rel);
		aj_err_hint(s->err,
			    "replace the symlink by what it points to, or give --writable %s", rel);
		return dir;
	}
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return aj_err(s->err, errno, "cannot look up '%s' in the workspace", rel);
		int r = make_placeholder(s, dir, name, rel, ph);
		return r > 0 ? 0 : r;
	}
	/* another live run's placeholder: shared, and removed by the last */
	char type = S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : 'f';
	if (is_placeholder(dir, name, &st, type) &&
	    listed_alive(s->pr->mdir, s->pr->manifest_name, st.st_dev, st.st_ino))
		return adopt(s, dir, name, rel, type);
	if (S_ISLNK(st.st_mode))
		return protect_link(s, dir, name, rel, kind, ph, depth);
	if (kind == AJ_PROTECT_PIN && !S_ISDIR(st.st_mode))
		kind = AJ_PROTECT_RO;
	return add_entry(s, rel, kind) ? 0 : -E2BIG;
}

/* A small file below the workspace (rel), no symlink followed: malloc'ed
 * text, or NULL (missing, not a regular file, unreadable). */
static char *read_rel(prep *s, const char *rel, size_t max)
{
	_cleanup_close_ int fd = openat2_fd(s->pr->ws_fd, rel, O_RDONLY | O_NONBLOCK, BENEATH);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	size_t len = (size_t)st.st_size < max ? (size_t)st.st_size : max;
	char *buf = malloc(len + 1);
	if (!buf)
		return NULL;
	ssize_t n = pread(fd, buf, len, 0);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* git-config value: trimmed, quotes removed, \" \\ \n \t unescaped, an
 * unquoted # or ; ends it. In place. */
static char *config_value(char *v)
{
	while (*v == ' ' || *v == '\t')
		v++;
	char *o = v, *start = v;
	bool q = false;
	char *end_unq = v; /* end of the value without trailing unquoted blanks */
	for (; *v; v++) {
		if (*v == '"') {
			q = !q;
			continue;
		}
		if (!q && (*v == '#' || *v == ';'))
			break;
		if (*v == '\\' && v[1]) {
			v++;
			*o++ = *v == 'n' ? '\n' : *v == 't' ? '\t' : *v;
			end_unq = o;
			continue;
		}
		*o++ = *v;
		if (q || (*v != ' ' && *v != '\t'))
			end_unq = o;
	}
	*end_unq = '\0';
	return start;
}

typedef int (*config_cb)(prep *s, const char *dir, const char *section, const char *key,
			 const char *value, int depth);

/* Call cb for each "key = value" of the config file rel (sections and keys
 * lowercased, the subsection dropped): a bounded, forgiving reader of the
 * git-config syntax, enough for core.hooksPath and include paths. */
static int parse_config(prep *s, const char *rel, config_cb cb, int depth)
{
	_cleanup_free_ char *text = read_rel(s, rel, CONFIG_MAX);
	if (!text)
		return 0;
	char dir[AJ_PROTECT_REL_MAX];
	snprintf(dir, sizeof(dir), "%s", rel);
	char *slash = strrchr(dir, '/');
	*(slash ? slash : dir) = '\0';
	char section[64] = "";
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '[') {
			size_t i = 0;
			for (line++; *line && *line != ']' && *line != ' ' && *line != '"' &&
				     *line != '.' && i + 1 < sizeof(section);
			     line++)
				section[i++] = (char)tolower((unsigned char)*line);
			section[i] = '\0';
			char *close = strchr(line, ']');
			if (!close)
				continue;
			line = close + 1; /* "[core] hooksPath = x" on one line */
			while (*line == ' ' || *line == '\t')
				line++;
		}
		char key[64];
		size_t k = 0;
		while ((isalnum((unsigned char)*line) || *line == '-') && k + 1 < sizeof(key))
			key[k++] = (char)tolower((unsigned char)*line++);
		key[k] = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		if (!k || *line != '=')
			continue;
		int r = cb(s, dir, section, key, config_value(line + 1), depth);
		if (r < 0)
			return r;
	}
	return 0;
}

static int gitdir_config(prep *s, const char *dir, const char *section, const char *key,
			 const char *value, int depth)
{
	char rel[AJ_PROTECT_REL_MAX];
	/* include.path, includeIf.<cond>.path: relative to the file's directory */
	if ((!strcmp(section, "include") || !strcmp(section, "includeif")) &&
	    !strcmp(key, "path")) {
		if (value[0] == '~' || value[0] == ':' ||
		    !join_rel(s, dir, value, rel, sizeof(rel)))
			return 0;
		if (depth >= MAX_DEPTH)
			return 0;
		int r = protect_path(s, rel, AJ_PROTECT_RO, 'l', depth + 1);
		return r < 0 ? r : parse_config(s, rel, gitdir_config, depth + 1);
	}
	/* core.hooksPath: relative to the top of the work tree (the workspace) */
	if (!strcmp(section, "core") && !strcmp(key, "hookspath") && value[0] != '~' &&
	    join_rel(s, "", value, rel, sizeof(rel)))
		return protect_path(s, rel, AJ_PROTECT_RO, 'd', depth + 1);
	return 0;
}

/* A git directory in the workspace: itself pinned (objects, refs, index,
 * logs stay writable), and what git runs or reads configuration from
 * read-only. */
static int protect_gitdir(prep *s, const char *g, int depth)
{
	static const struct {
		const char *name;
		char ph;
	} parts[] = {{"config", 'l'}, {"config.worktree", 'l'}, {"commondir", 'f'}, {"hooks", 'd'},
		     {"info", 'd'},   {"modules", 'd'},		{"worktrees", 'd'}};
	int r = protect_path(s, g, AJ_PROTECT_PIN, 'd', depth);
	if (r < 0 || s->pr->n == 0 || strcmp(s->pr->e[s->pr->n - 1].rel, g) != 0 ||
	    s->pr->e[s->pr->n - 1].kind != AJ_PROTECT_PIN)
		return r; /* lifted, a placeholder (read-only), or a file */
	char rel[AJ_PROTECT_REL_MAX];
	for (size_t i = 0; i < AJ_ARRAY_SIZE(parts); i++) {
		snprintf(rel, sizeof(rel), "%s/%s", g, parts[i].name);
		bool ours = false; /* the placeholder, not a commondir to follow */
		size_t before = s->pr->n;
		if ((r = protect_path(s, rel, AJ_PROTECT_RO, parts[i].ph, depth)) < 0)
			return r;
		ours = s->pr->n > before && s->pr->e[before].made;
		if (!strcmp(parts[i].name, "config") &&
		    (r = parse_config(s, rel, gitdir_config, depth)) < 0)
			return r;
		if (!strcmp(parts[i].name, "commondir") && !ours && depth < MAX_DEPTH) {
			_cleanup_free_ char *t = read_rel(s, rel, AJ_PROTECT_REL_MAX - 1);
			char to[AJ_PROTECT_REL_MAX];
			if (t &&
			    (t[strcspn(t, "\r\n")] = '\0', join_rel(s, g, t, to, sizeof(to))) &&
			    (r = protect_gitdir(s, to, depth + 1)) < 0)
				return r;
		}
	}
	return 0;
}

/* .git at the top: a directory; a file "gitdir: PATH" (a linked work tree
 * or a submodule), itself read-only and PATH protected when it is in the
 * workspace; a symlink (followed by protect_path); or missing (a read-only
 * placeholder: `git init` inside fails, --writable .git allows it). */
static int protect_git(prep *s)
{
	struct stat st;
	if (lifted(s->p, ".git"))
		return 0;
	if (fstatat(s->pr->ws_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		if (!add_entry(s, ".git", AJ_PROTECT_RO))
			return -E2BIG;
		_cleanup_free_ char *t = read_rel(s, ".git", AJ_PROTECT_REL_MAX - 1);
		char to[AJ_PROTECT_REL_MAX];
		if (!t || strncmp(t, "gitdir:", 7) != 0)
			return 0;
		char *v = t + 7;
		v += strspn(v, " \t");
		v[strcspn(v, "\r\n")] = '\0';
		return join_rel(s, "", v, to, sizeof(to)) ? protect_gitdir(s, to, 1) : 0;
	}
	if (fstatat(s->pr->ws_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
		if (!add_entry(s, ".git", AJ_PROTECT_RO))
			return -E2BIG;
		char target[AJ_PROTECT_REL_MAX], to[AJ_PROTECT_REL_MAX];
		ssize_t n = readlinkat(s->pr->ws_fd, ".git", target, sizeof(target) - 1);
		if (n <= 0)
			return 0;
		target[n] = '\0';
		return join_rel(s, "", target, to, sizeof(to)) ? protect_gitdir(s, to, 1) : 0;
	}
	return protect_gitdir(s, ".git", 0);
}

/* .gitmodules: submodule.<name>.path names a submodule's work tree, whose
 * .git (a "gitdir:" file into .git/modules/, or a directory) git enters
 * from the superproject (`git status` runs `git status` in each): a .git
 * rewritten to point elsewhere would run that directory's config. */
static int gitmodules_config(prep *s, const char *dir, const char *section, const char *key,
			     const char *value, int depth)
{
	char rel[AJ_PROTECT_REL_MAX], git[AJ_PROTECT_REL_MAX];
	if (strcmp(section, "submodule") || strcmp(key, "path") ||
	    !join_rel(s, "", value, rel, sizeof(rel)) ||
	    (size_t)snprintf(git, sizeof(git), "%s/.git", rel) >= sizeof(git))
		return 0;
	struct stat st;
	const char *name;
	_cleanup_close_ int d = open_parent(s->pr->ws_fd, git, &name);
	if (d >= 0 && fstatat(d, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		return protect_gitdir(s, git, depth + 1);
	return protect_path(s, git, AJ_PROTECT_RO, 'd', depth + 1);
}

static void sweep_dir(int dfd);

int aj_protect_prepare(const aj_policy *p, aj_protect **out, aj_error *err)
{
	*out = NULL;
	if (!p->workspace)
		return 0;
	aj_protect *pr = calloc(1, sizeof(*pr));
	if (!pr)
		return aj_err(err, ENOMEM, "workspace protection");
	pr->manifest = -1;
	/* under the manifests' lock until the placeholders are made: the dead
	 * runs' swept, ours recorded, another run's shared */
	pr->mdir = manifest_dir(true);
	int lock = lock_dir(&pr->mdir, true); /* closed before a release: flock is per open file */
	if (lock >= 0) {
		sweep_dir(pr->mdir);
		manifest_open(pr);
	}
	pr->ws_fd = openat2_fd(AT_FDCWD, p->workspace, O_PATH | O_DIRECTORY,
			       RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	struct stat st;
	if (pr->ws_fd < 0 || fstat(pr->ws_fd, &st) < 0) {
		int e = errno;
		if (lock >= 0)
			close(lock);
		aj_protect_release(pr);
		return aj_err(err, e, "cannot open the workspace '%s'", p->workspace);
	}
	prep s = {.p = p, .pr = pr, .uid = st.st_uid, .gid = st.st_gid, .err = err};
	int r = protect_git(&s);
	if (r == 0 && !lifted(p, ".git"))
		r = parse_config(&s, ".gitmodules", gitmodules_config, 0);
	for (size_t i = 0; r == 0 && aj_protect_names[i]; i++)
		r = protect_path(&s, aj_protect_names[i], AJ_PROTECT_RO, 'd', 0);
	if (r == 0 && s.unsafe[0]) {
		r = aj_err(err, ELOOP,
			   "the workspace names '%s' (in .git, a symlink or .gitmodules), "
			   "through a symlink or a missing directory: agentjail can't tell "
			   "where it leads to keep it read-only",
			   s.unsafe);
		aj_err_hint(err, "replace the symlink by what it points to, or give --writable");
	}
	if (r < 0) {
		aj_err_prefix(err, "protecting the workspace's host-run files");
		if (lock >= 0)
			close(lock);
		aj_protect_release(pr);
		return r;
	}
	if (lock >= 0)
		close(lock);
	*out = pr;
	return 0;
}

/* ---- the child ---- */

/* Bind each entry below the workspace ws (an O_PATH fd) onto itself. */
static int apply_fd(const aj_protect *pr, int ws, aj_error *err)
{
	for (size_t i = 0; i < pr->n; i++) {
		const aj_protect_entry *e = &pr->e[i];
		const char *name;
		_cleanup_close_ int dir = open_parent(ws, e->rel, &name);
		_cleanup_close_ int t =
		    dir < 0 ? -1 : openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (t < 0)
			return aj_err(err, dir < 0 ? -dir : errno,
				      "cannot protect '%s' in the workspace (it changed)", e->rel);
		unsigned long long set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		if (e->kind == AJ_PROTECT_RO)
			set |= MOUNT_ATTR_RDONLY;
		_cleanup_close_ int m = aj_open_tree(
		    t, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
		if (m < 0 ||
		    aj_mount_setattr(m, "", AT_EMPTY_PATH | AT_RECURSIVE, set, 0, -1) < 0 ||
		    aj_move_mount(m, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) <
			0)
			return aj_err(err, errno, "cannot make '%s' in the workspace read-only",
				      e->rel);
	}
	return 0;
}

int aj_protect_apply(const aj_protect *pr, const char *root, aj_error *err)
{
	if (!pr)
		return 0;
	/* where the workspace was mounted: looked up inside the root, as its
	 * mount point was (an image's /workspace may be a link, inroot.h) */
	_cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int ws =
	    root_fd < 0 ? -errno
			: aj_open_in_root(root_fd, AJ_WORKSPACE_DIR, O_PATH | O_DIRECTORY, 0);
	if (ws < 0)
		return aj_err(err, -ws, "cannot open the workspace to protect it");
	return apply_fd(pr, ws, err);
}

int aj_protect_apply_dir(const aj_protect *pr, const char *path, aj_error *err)
{
	if (!pr)
		return 0;
	_cleanup_close_ int ws = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ws < 0)
		return aj_err(err, errno, "cannot open the workspace to protect it");
	return apply_fd(pr, ws, err);
}

/* ---- teardown and the crash sweep ---- */

/* Remove rel below ws if it is still the placeholder made (same inode, an
 * empty directory or the symlink or the "."), and no other live run shares
 * it: a file the host's user put there stays. Under the manifests' lock. */
static void remove_placeholder(int mdir, const char *self, int ws, const char *rel, char made,
			       dev_t dev, ino_t ino)
{
	const char *name;
	_cleanup_close_ int dir = open_parent(ws, rel, &name);
	struct stat st;
	if (dir < 0 || fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev ||
	    st.st_ino != ino || !is_placeholder(dir, name, &st, made) ||
	    listed_alive(mdir, self, dev, ino))
		return;
	(void)unlinkat(dir, name, made == 'd' ? AT_REMOVEDIR : 0); /* a directory: if empty */
}

void aj_protect_release(aj_protect *pr)
{
	if (!pr)
		return;
	_cleanup_close_ int lock = lock_dir(&pr->mdir, false); /* held to the end */
	for (size_t i = pr->n; pr->ws_fd >= 0 && i-- > 0;)
		if (pr->e[i].made)
			remove_placeholder(pr->mdir, pr->manifest_name, pr->ws_fd, pr->e[i].rel,
					   pr->e[i].made, pr->e[i].dev, pr->e[i].ino);
	if (pr->manifest >= 0) {
		(void)unlinkat(pr->mdir, pr->manifest_name, 0);
		close(pr->manifest);
	}
	if (lock >= 0)
		drop_if_empty(pr->mdir);
	if (pr->ws_fd >= 0)
		close(pr->ws_fd);
	if (pr->mdir >= 0)
		close(pr->mdir);
	free(pr);
}

static void sweep_manifest(int dir, const char *name)
{
	_cleanup_close_ int fd = openat(dir, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
		return; /* its run is alive */
	_cleanup_free_ char *text = NULL;
	struct stat st;
	/* made but not yet written by a run that is starting: leave it */
	if (fstat(fd, &st) < 0 || (st.st_size == 0 && time(NULL) - st.st_mtime < 60))
		return;
	if (aj_read_fd(fd, &text, NULL) == 0) {
		for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save)) {
			unsigned long long dev, ino;
			char made;
			int off = 0;
			if (sscanf(l, "%llu %llu %c\t%n", &dev, &ino, &made, &off) != 3 || !off)
				continue;
			char *ws = l + off, *tab = strchr(ws, '\t');
			if (!tab || ws[0] != '/')
				continue;
			*tab = '\0';
			_cleanup_close_ int wfd =
			    openat2_fd(AT_FDCWD, ws, O_PATH | O_DIRECTORY,
				       RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
			if (wfd >= 0)
				remove_placeholder(dir, name, wfd, tab + 1, made, (dev_t)dev,
						   (ino_t)ino);
		}
	}
	(void)unlinkat(dir, name, 0);
}

/* Under the manifests' lock. */
static void sweep_dir(int dfd)
{
	_cleanup_close_ int rd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = rd < 0 ? NULL : fdopendir(dup(rd));
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)))
		if (aj_startswith(de->d_name, "run-"))
			sweep_manifest(rd, de->d_name);
	closedir(d);
}

void aj_protect_sweep(void)
{
	_cleanup_close_ int dfd = manifest_dir(false);
	_cleanup_close_ int lock = dfd < 0 ? -1 : lock_dir(&dfd, false); /* held to the end */
	if (lock >= 0) {
		sweep_dir(dfd);
		drop_if_empty(dfd);
	}
}

/* ---- --writable ---- */

int aj_policy_add_writable(aj_policy *p, const char *rel, aj_error *err)
{
	char norm[AJ_PROTECT_REL_MAX];
	size_t o = 0, len = strlen(rel);
	while (len > 1 && rel[len - 1] == '/')
		len--;
	if (len == 0 || rel[0] == '/' || len >= sizeof(norm)) {
		aj_err(err, EINVAL, "--writable '%s': expected a path relative to the workspace",
		       rel);
		aj_err_hint(err, "e.g. --writable .vscode (docs/security.md lists the protected "
				 "paths)");
		return -EINVAL;
	}
	for (size_t i = 0; i < len;) {
		size_t n = strcspn(rel + i, "/");
		if (n > len - i)
			n = len - i;
		if (n == 0 || (n == 1 && rel[i] == '.') || (n == 2 && !strncmp(rel + i, "..", 2)) ||
		    memchr(rel + i, '\n', n))
			return aj_err(err, EINVAL,
				      "--writable '%s': no empty, '.' or '..' components allowed",
				      rel);
		if (o)
			norm[o++] = '/';
		memcpy(norm + o, rel + i, n);
		o += n;
		i += n + 1;
	}
	norm[o] = '\0';
	if (!aj_protect_known(norm)) {
		aj_err(err, EINVAL, "--writable '%s': not a protected path, it is writable already",
		       rel);
		aj_err_hint(err, "protected: .git and below, .vscode, .idea, .claude, .cursor, "
				 ".mcp.json, .envrc, .husky ... (docs/security.md)");
		return -EINVAL;
	}
	for (size_t i = 0; i < p->n_writable; i++)
		if (!strcmp(p->writable[i], norm))
			return 0;
	if (p->n_writable >= AJ_MAX_WRITABLE)
		return aj_err(err, E2BIG, "--writable: at most %d paths", AJ_MAX_WRITABLE);
	if (!(p->writable[p->n_writable] = strdup(norm)))
		return aj_err(err, ENOMEM, "--writable");
	p->n_writable++;
	return 0;
}
