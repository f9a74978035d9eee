/* SPDX-License-Identifier: MIT */
#include "mask.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "credmask.h"
#include "inroot.h"
#include "mountapi.h"
#include "util.h"

const char *const aj_mask_defaults[] = {
    ".env*",	 "*.pem",   "*.key",	"id_rsa*",	    "id_ed25519*",
    "id_ecdsa*", "id_dsa*", ".npmrc",	".netrc",	    ".pypirc",
    ".aws/",	 ".ssh/",   ".gnupg/",	".git-credentials", ".docker/config.json",
    "*.p12",	 "*.pfx",   "pip.conf", "pip.ini",	    ".yarnrc.yml",
    "_netrc",	 NULL,
};

#define MASK_MAX_ENTRIES 200000
#define MASK_MAX_DEPTH 32

bool aj_mask_match(const char *glob, const char *rel, const char *name, bool is_dir)
{
	size_t gl = strlen(glob);
	if (gl == 0)
		return false;
	if (glob[gl - 1] == '/') {
		if (!is_dir)
			return false;
		char g[PATH_MAX];
		if (gl >= sizeof(g))
			return false;
		memcpy(g, glob, gl - 1);
		g[gl - 1] = '\0';
		return aj_mask_match(g, rel, name, is_dir);
	}
	if (strchr(glob, '/')) {
		char g[PATH_MAX + 2], r[PATH_MAX + 2];
		snprintf(g, sizeof(g), "*/%s", glob);
		snprintf(r, sizeof(r), "/%s", rel);
		return fnmatch(g, r, 0) == 0;
	}
	return fnmatch(glob, name, FNM_PERIOD) == 0;
}

char *aj_mask_env_text(const aj_policy *p, const char *content)
{
	size_t cap = strlen(content) * 2 + 256, len = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	out[0] = '\0';
	const char *line = content;
	while (*line) {
		const char *nl = strchrnul(line, '\n');
		const char *s = line;
		while (s < nl && (*s == ' ' || *s == '\t'))
			s++;
		if (nl - s > 7 && strncmp(s, "export ", 7) == 0)
			s += 7;
		const char *eq = memchr(s, '=', (size_t)(nl - s));
		if (eq && *s != '#' && eq > s) {
			size_t kl = (size_t)(eq - s);
			while (kl && (s[kl - 1] == ' ' || s[kl - 1] == '\t'))
				kl--;
			const char *ph = "agentjail-masked";
			for (size_t i = 0; i < p->n_secrets; i++)
				if (strlen(p->secrets[i].name) == kl &&
				    strncmp(p->secrets[i].name, s, kl) == 0)
					ph = p->secrets[i].placeholder;
			size_t need = kl + strlen(ph) + 3;
			if (len + need >= cap) {
				char *n = realloc(out, cap = cap * 2 + need);
				if (!n) {
					free(out);
					return NULL;
				}
				out = n;
			}
			len += (size_t)snprintf(out + len, cap - len, "%.*s=%s\n", (int)kl, s, ph);
		}
		line = *nl ? nl + 1 : nl;
	}
	return out;
}

bool aj_mask_matches(const aj_policy *p, const char *rel, const char *name, bool is_dir)
{
	for (size_t i = 0; i < p->n_unmask; i++)
		if (!strcmp(p->unmask[i], rel))
			return false;
	if (!p->no_default_masks)
		for (size_t i = 0; aj_mask_defaults[i]; i++)
			if (aj_mask_match(aj_mask_defaults[i], rel, name, is_dir))
				return true;
	for (size_t i = 0; i < p->n_masks; i++)
		if (aj_mask_match(p->masks[i], rel, name, is_dir))
			return true;
	return false;
}

int aj_mask_replacement(const aj_policy *p, const char *repl, const char *rel, const char *name,
			bool is_dir, int content, aj_error *err)
{
	if (is_dir)
		return mkdir(repl, 0755) < 0 ? aj_err(err, errno, "mask: cannot create %s", repl)
					     : 0;
	_cleanup_free_ char *text = NULL, *orig = NULL;
	size_t len = 0;
	bool env = fnmatch(".env*", name, FNM_PERIOD) == 0;
	aj_cred_kind kind = env ? AJ_CRED_WHOLE : aj_cred_kind_of(rel, name);
	/* a file that cannot be read or parsed is masked whole (empty) */
	if (content >= 0 && (env || kind != AJ_CRED_WHOLE) && aj_read_fd(content, &orig, &len) == 0)
		text = env ? aj_mask_env_text(p, orig) : aj_cred_mask(kind, orig, len);
	int r = aj_write_file(repl, text ? text : "", 0444);
	return r < 0 ? aj_err(err, -r, "mask: cannot create %s", repl) : 0;
}

typedef struct mask_walk {
	const aj_policy *p;
	const char *scratch;
	int root_fd;	 /* the sandbox's future root, to resolve links as inside */
	uint64_t ws_mnt; /* mount id of the workspace */
	size_t entries, masked;
	aj_error *err;
} mask_walk;

static uint64_t mnt_id(int fd)
{
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &sx) < 0 ||
	    !(sx.stx_mask & STATX_MNT_ID))
		return 0;
	return sx.stx_mnt_id;
}

/* Cover target (an O_PATH fd) with a read-only replacement: an empty
 * directory, an empty file, or for .env* names the same keys with
 * placeholder values (read from content, an fd or -1). path is for errors. */
static int mask_one(mask_walk *w, const char *rel, const char *name, int content, const char *path,
		    bool is_dir, int target)
{
	char repl[PATH_MAX];
	snprintf(repl, sizeof(repl), "%s/%zu", w->scratch, w->masked);
	int r = aj_mask_replacement(w->p, repl, rel, name, is_dir, content, w->err);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = aj_open_tree(AT_FDCWD, repl, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd < 0 ||
	    aj_mount_setattr(fd, "", AT_EMPTY_PATH,
			     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, -1) < 0 ||
	    aj_move_mount(fd, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) <
		0)
		return aj_err(w->err, errno, "cannot mask %s in the workspace", path);
	w->masked++;
	return 0;
}

/* A matching file or directory in the tree. */
static int mask_entry(mask_walk *w, int dfd, const char *rel, const char *name, const char *path,
		      bool is_dir)
{
	_cleanup_close_ int t = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (t < 0)
		return 0;
	_cleanup_close_ int c =
	    is_dir ? -1 : openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	return mask_one(w, rel, name, c, path, is_dir, t);
}

/* A symlink whose name matches: cover what it leads to, resolved exactly as
 * the sandbox will resolve it, when that lies in the workspace. */
static int mask_link(mask_walk *w, const char *rel, const char *name, const char *path)
{
	char inside[PATH_MAX];
	snprintf(inside, sizeof(inside), AJ_WORKSPACE_DIR "/%s", rel);
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
	_cleanup_close_ int t = (int)syscall(SYS_openat2, w->root_fd, inside, &how, sizeof(how));
	struct stat st;
	if (t < 0 || fstat(t, &st) < 0 || mnt_id(t) != w->ws_mnt ||
	    !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
		return 0; /* dangling, or outside the workspace: no host file */
	_cleanup_close_ int c = -1;
	if (S_ISREG(st.st_mode)) {
		struct open_how rd = {.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC,
				      .resolve = RESOLVE_IN_ROOT};
		c = (int)syscall(SYS_openat2, w->root_fd, inside, &rd, sizeof(rd));
	}
	return mask_one(w, rel, name, c, path, S_ISDIR(st.st_mode), t);
}

static int walk(mask_walk *w, int dfd, const char *path, const char *rel, int depth)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (++w->entries > MASK_MAX_ENTRIES)
			break;
		struct stat st;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		bool is_dir = S_ISDIR(st.st_mode);
		char sub[PATH_MAX], subrel[PATH_MAX];
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, name) >= sizeof(sub) ||
		    (size_t)snprintf(subrel, sizeof(subrel), "%s%s%s", rel, *rel ? "/" : "",
				     name) >= sizeof(subrel))
			continue;
		if (S_ISLNK(st.st_mode)) {
			/* never followed by the walk; a matching name masks its target */
			if (aj_mask_matches(w->p, subrel, name, false) ||
			    aj_mask_matches(w->p, subrel, name, true))
				r = mask_link(w, subrel, name, sub);
			continue;
		}
		if ((is_dir || S_ISREG(st.st_mode)) &&
		    aj_mask_matches(w->p, subrel, name, is_dir)) {
			r = mask_entry(w, dirfd(d), subrel, name, sub, is_dir);
			continue;
		}
		if (!is_dir || depth >= MASK_MAX_DEPTH || !strcmp(name, "node_modules") ||
		    !strcmp(name, ".git"))
			continue;
		int fd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			r = walk(w, fd, sub, subrel, depth + 1);
	}
	closedir(d);
	return r;
}

int aj_mask_workspace(const aj_policy *p, const char *root, const char *scratch, aj_error *err)
{
	if (p->no_default_masks && p->n_masks == 0)
		return 0;
	if (mkdir(scratch, 0755) < 0 && errno != EEXIST)
		return aj_err(err, errno, "mask: cannot create %s", scratch);
	char ws[PATH_MAX];
	snprintf(ws, sizeof(ws), "%s" AJ_WORKSPACE_DIR, root);
	_cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* where the workspace was mounted: looked up inside the root, as the
	 * mount point was (an image's /workspace may be a link) */
	int fd = root_fd < 0
		     ? -errno
		     : aj_open_in_root(root_fd, AJ_WORKSPACE_DIR, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return aj_err(err, -fd, "mask: cannot open the workspace");
	mask_walk w = {
	    .p = p, .scratch = scratch, .root_fd = root_fd, .ws_mnt = mnt_id(fd), .err = err};
	int r = walk(&w, fd, ws, "", 0);
	return r < 0 ? r : (int)w.masked;
}
