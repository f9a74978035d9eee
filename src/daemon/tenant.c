/* SPDX-License-Identifier: MIT */
/* Tenants and the operator policy, in the supervisor (tenant.h): the files
 * loaded at start, the tenant of each request, and the checks of what a
 * request asks for against what the operator allows. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <malloc.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon.h"
#include "policy.h"
#include "tenant.h"
#include "util.h"

#define OP_FILE "operator policy"
#define TOKENS_FILE "tokens file"

static aj_operator_policy op;
static aj_tenant tenants[AJ_TENANT_MAX + 1]; /* [0]: the operator's */
static size_t n_tenants = 1;
static __thread aj_tenant *current;

/* A file of the operator's, bounded; tokens: only its owner may read it. */
static int read_conf(const char *what, const char *path, bool secret, char **out, size_t *len,
		     aj_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return aj_err(err, errno, "cannot open %s %s", what, path);
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0)
		r = aj_err(err, errno, "cannot stat %s %s", what, path);
	else if (!S_ISREG(st.st_mode) || st.st_size > AJ_OP_FILE_MAX)
		r = aj_err(err, EINVAL, "%s %s: expected a regular file of at most %u bytes", what,
			   path, AJ_OP_FILE_MAX);
	else if (secret && (st.st_mode & 077)) {
		r = aj_err(err, EPERM, "%s %s can be read by others (mode %04o): it holds tokens",
			   what, path, (unsigned)(st.st_mode & 07777));
		aj_err_hint(err, "chmod 600 %s", path);
	} else if (secret && st.st_uid != geteuid()) {
		r = aj_err(err, EPERM, "%s %s belongs to uid %u, not to the service's uid %u", what,
			   path, (unsigned)st.st_uid, (unsigned)geteuid());
		aj_err_hint(err, "chown %u %s", (unsigned)geteuid(), path);
	}
	char *buf = r == 0 ? calloc(1, (size_t)st.st_size + 1) : NULL;
	if (r == 0 && !buf)
		r = aj_err(err, ENOMEM, "out of memory");
	ssize_t n = 0, got = 0;
	while (r == 0 && got < st.st_size &&
	       (n = read(fd, buf + got, (size_t)(st.st_size - got))) > 0)
		got += n;
	if (r == 0 && n < 0)
		r = aj_err(err, errno, "cannot read %s %s", what, path);
	close(fd);
	if (r < 0) {
		free(buf);
		return r;
	}
	*out = buf;
	*len = (size_t)got;
	return 0;
}

/* Each root exists, is a directory and has no symlink in it: a client's
 * path is compared with it as written. */
static int check_roots(const aj_root *roots, size_t n, const char *key, const char *path,
		       aj_error *err)
{
	for (size_t i = 0; i < n; i++) {
		struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		int fd = (int)syscall(SYS_openat2, AT_FDCWD, roots[i].path, &how, sizeof(how));
		if (fd >= 0) {
			close(fd);
			continue;
		}
		int e = errno;
		aj_err(err, e, "--operator-policy %s: '%s': %s %s", path, key, roots[i].path,
		       e == ELOOP     ? "has a symlink in it"
		       : e == ENOTDIR ? "is not a directory"
				      : "cannot be opened");
		aj_err_hint(err, "name the directory itself (realpath %s)", roots[i].path);
		return -EINVAL;
	}
	return 0;
}

static int load_policy(const char *path, aj_error *err)
{
	aj_operator_default(&op);
	if (!path)
		return 0;
	_cleanup_free_ char *txt = NULL;
	size_t len;
	int r = read_conf("--operator-policy", path, false, &txt, &len, err);
	if (r < 0)
		return -EINVAL;
	aj_error perr;
	aj_err_clear(&perr);
	if (aj_operator_parse(txt, len, &op, &perr) < 0) {
		aj_err(err, EINVAL, "--operator-policy %s: %s", path, perr.msg);
		aj_err_hint(err, "docs/api.md, \"Operator policy and tenants\", lists the keys");
		return -EINVAL;
	}
	if (check_roots(op.binds, op.n_binds, "bind_roots", path, err) < 0 ||
	    check_roots(op.rootfs, op.n_rootfs, "rootfs_roots", path, err) < 0)
		return -EINVAL;
	return 0;
}

/* jansson's memory while the tokens are parsed: wiped when freed (the
 * front, forked later, must not find a token in its copy of the heap). */
static void *wiped_malloc(size_t n)
{
	return malloc(n);
}

static void wiped_free(void *p)
{
	if (p)
		explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

static int load_tokens(const char *path, aj_error *err)
{
	char *txt = NULL;
	size_t len, n = 0;
	int r = read_conf("--tokens", path, true, &txt, &len, err);
	if (r < 0)
		return -EINVAL;
	aj_error perr;
	aj_err_clear(&perr);
	json_malloc_t jm;
	json_free_t jf;
	json_get_alloc_funcs(&jm, &jf); /* at start: no other thread yet */
	json_set_alloc_funcs(wiped_malloc, wiped_free);
	r = aj_tenants_parse(txt, len, tenants + 1, AJ_TENANT_MAX, &n, &perr);
	json_set_alloc_funcs(jm, jf);
	explicit_bzero(txt, len);
	free(txt);
	if (r < 0) {
		aj_err(err, EINVAL, "--tokens %s: %s", path, perr.msg);
		aj_err_hint(err, "a JSON array: [{\"tenant\": \"alice\", \"token\": \"...\"}]");
		return -EINVAL;
	}
	n_tenants = 1 + n;
	for (size_t i = 1; i < n_tenants; i++)
		if (!strcmp(tenants[i].name, AJ_TENANT_OPERATOR))
			return aj_err(err, EINVAL,
				      "--tokens %s: the tenant 'operator' is the unix socket's "
				      "(its TCP token is --token-file): name this one otherwise",
				      path);
	return 0;
}

int aj_tenancy_load(const char *policy_file, const char *tokens_file, const char *operator_token,
		    aj_error *err)
{
	aj_tenancy_free();
	snprintf(tenants[0].name, sizeof(tenants[0].name), "%s", AJ_TENANT_OPERATOR);
	if (operator_token) {
		aj_token_digest(operator_token, strlen(operator_token), tenants[0].digest);
		tenants[0].has_token = true;
	}
	int r = load_policy(policy_file, err);
	if (r == 0 && tokens_file)
		r = load_tokens(tokens_file, err);
	for (size_t i = 1; r == 0 && i < n_tenants; i++)
		if (tenants[0].has_token && !memcmp(tenants[0].digest, tenants[i].digest, 32) &&
		    strcmp(tenants[i].name, AJ_TENANT_OPERATOR))
			r = aj_err(err, EINVAL,
				   "--tokens %s: tenant %s has the token of --token-file (the "
				   "operator's)",
				   tokens_file, tenants[i].name);
	return r;
}

void aj_tenancy_free(void)
{
	aj_operator_free(&op);
	explicit_bzero(tenants, sizeof(tenants));
	n_tenants = 1;
}

bool aj_tenancy_has_tokens(void)
{
	for (size_t i = 0; i < n_tenants; i++)
		if (tenants[i].has_token)
			return true;
	return false;
}

const aj_tenant *aj_tenant_by_token(const char *token, size_t len)
{
	if (!token || len < AJ_TOKEN_MIN || len > AJ_TOKEN_MAX)
		return NULL;
	unsigned char d[32];
	aj_token_digest(token, len, d);
	size_t found = 0; /* 1 + the index */
	for (size_t i = 0; i < n_tenants; i++) {
		unsigned char diff = (unsigned char)!tenants[i].has_token;
		for (size_t k = 0; k < 32; k++)
			diff |= (unsigned char)(d[k] ^ tenants[i].digest[k]);
		/* no branch on the comparison: mask is all ones when diff is 0 */
		size_t mask = (size_t)0 - (size_t)(((unsigned)diff - 1u) >> 8 & 1u);
		found |= mask & (i + 1);
	}
	explicit_bzero(d, sizeof(d));
	if (!found)
		return NULL;
	return &tenants[found - 1];
}

aj_tenant *aj_tenant_at(size_t i)
{
	return i < n_tenants ? &tenants[i] : NULL;
}

aj_tenant *aj_tenant_find(const char *name)
{
	for (size_t i = 0; name && i < n_tenants; i++)
		if (!strcmp(tenants[i].name, name))
			return &tenants[i];
	return NULL;
}

const aj_tenant *aj_tenant_resolve(json_t *args, aj_error *err)
{
	json_t *auth = json_incref(json_object_get(args, "auth"));
	json_object_del(args, "auth");
	json_object_del(args, "tenant");
	json_t *tv = json_object_get(auth, "token");
	const char *tok = json_string_value(tv);
	const aj_tenant *t = NULL;
	if (tok)
		t = aj_tenant_by_token(tok, json_string_length(tv));
	else if (json_is_true(json_object_get(auth, "local")))
		t = &tenants[0]; /* the unix socket (mode 0600): the operator's */
	json_decref(auth);
	if (!t) {
		aj_err(err, EACCES, "a valid bearer token is required");
		return NULL;
	}
	json_object_set_new(args, "tenant", json_string(t->name));
	return t;
}

aj_tenant *aj_tenant_of(json_t *args)
{
	return aj_tenant_find(json_string_value(json_object_get(args, "tenant")));
}

void aj_tenant_set_current(aj_tenant *t)
{
	current = t;
}

aj_tenant *aj_tenant_current(void)
{
	return current;
}

bool aj_tenant_is_operator(const aj_tenant *t)
{
	return t == &tenants[0];
}

static int deny(aj_denial *d, const char *file, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int deny(aj_denial *d, const char *file, const char *key, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	d->key = key;
	d->file = file;
	return 1;
}

/* ---- host paths: binds, workspace, rootfs ---- */

/* The root of roots that path (normalized) is below, preferring a rw one;
 * NULL: none. */
static const aj_root *root_of(const aj_root *roots, size_t n, const char *path, bool rw)
{
	const aj_root *ro = NULL;
	for (size_t i = 0; i < n; i++)
		if (aj_op_under(path, roots[i].path)) {
			if (roots[i].rw || !rw)
				return &roots[i];
			ro = &roots[i];
		}
	return ro;
}

/* Opened from its root's fd without leaving it (RESOLVE_BENEATH: a symlink
 * or '..' that climbs out fails), then where the fd really is. 1: it
 * escapes; 0: it stays below (or does not exist: the policy says so). */
static int escapes(const aj_root *root, const char *norm)
{
	struct open_how rh = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			      .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int rfd = (int)syscall(SYS_openat2, AT_FDCWD, root->path, &rh, sizeof(rh));
	if (rfd < 0)
		return 1;
	const char *rel = norm + strlen(root->path);
	while (*rel == '/')
		rel++;
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, rfd, *rel ? rel : ".", &how, sizeof(how));
	int e = errno;
	close(rfd);
	if (fd < 0)
		return e == EXDEV || e == ELOOP || e == EACCES || e == EPERM;
	char link[64], real[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, real, sizeof(real) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	real[n] = '\0';
	return !aj_op_under(real, root->path);
}

/* One host path a request names: what (its key), raw (as given). */
static int check_path(const char *what, const char *raw, bool rw, bool rootfs, aj_denial *d)
{
	const aj_root *roots = rootfs ? op.rootfs : op.binds;
	size_t n = rootfs ? op.n_rootfs : op.n_binds;
	const char *key = rootfs ? "rootfs_roots" : "bind_roots";
	char norm[PATH_MAX];
	if (!aj_op_normalize(raw, norm, sizeof(norm)))
		return deny(d, OP_FILE, key, "'%s' %s: expected an absolute host path without '..'",
			    what, raw);
	const aj_root *root = root_of(roots, n, norm, rw);
	if (!root && !n)
		return deny(d, OP_FILE, key,
			    "'%s' %s: the operator policy lets clients use no host path%s (add "
			    "its directory to '%s' to allow it)",
			    what, raw, rootfs ? " as a rootfs" : "", key);
	if (!root)
		return deny(d, OP_FILE, key,
			    "'%s' %s is not below a directory of the operator policy's '%s' "
			    "(add it there to allow it)",
			    what, raw, key);
	if (rw && !root->rw)
		return deny(d, OP_FILE, key,
			    "'%s' %s is writable, but '%s' lists %s read-only (set \"rw\": true "
			    "for it to allow it)",
			    what, raw, key, root->path);
	if (escapes(root, norm))
		return deny(d, OP_FILE, key,
			    "'%s' %s resolves outside %s (a symlink or '..' that leaves it): "
			    "only what is below the directories of '%s' may be used",
			    what, raw, root->path, key);
	return 0;
}

/* The host paths of a request as written ("ro"/"rw": SRC[:DEST]). */
static int check_raw_paths(json_t *req, aj_denial *d)
{
	const char *s = json_string_value(json_object_get(req, "workspace"));
	if (s && check_path("workspace", s, true, false, d))
		return 1;
	s = json_string_value(json_object_get(req, "rootfs"));
	if (s && check_path("rootfs", s, false, true, d))
		return 1;
	static const char *const keys[] = {"ro", "rw"};
	for (size_t k = 0; k < 2; k++) {
		json_t *v = json_object_get(req, keys[k]);
		json_t *one = json_is_string(v) ? v : NULL;
		size_t n = one ? 1 : json_is_array(v) ? json_array_size(v) : 0;
		for (size_t i = 0; i < n; i++) {
			const char *spec = json_string_value(one ? one : json_array_get(v, i));
			if (!spec)
				continue;
			char src[PATH_MAX];
			snprintf(src, sizeof(src), "%.*s", (int)strcspn(spec, ":"), spec);
			if (check_path(keys[k], src, k == 1, false, d))
				return 1;
		}
	}
	return 0;
}

/* The same on the policy they made (whatever key a host path came from). */
static int check_policy_paths(const aj_policy *p, json_t *req, aj_denial *d)
{
	char norm[PATH_MAX];
	if (p->workspace && (!aj_op_normalize(p->workspace, norm, sizeof(norm)) ||
			     !root_of(op.binds, op.n_binds, norm, true) ||
			     !root_of(op.binds, op.n_binds, norm, true)->rw))
		return deny(d, OP_FILE, "bind_roots",
			    "the workspace %s is not below a writable directory of 'bind_roots'",
			    p->workspace);
	for (size_t i = 0; i < p->n_binds; i++) {
		const aj_root *r = aj_op_normalize(p->binds[i].src, norm, sizeof(norm))
				       ? root_of(op.binds, op.n_binds, norm, p->binds[i].writable)
				       : NULL;
		if (!r || (p->binds[i].writable && !r->rw))
			return deny(d, OP_FILE, "bind_roots",
				    "the bind of %s is not below a %sdirectory of 'bind_roots'",
				    p->binds[i].src, p->binds[i].writable ? "writable " : "");
	}
	if (p->rootfs && !json_object_get(req, "image") &&
	    (!aj_op_normalize(p->rootfs, norm, sizeof(norm)) ||
	     !root_of(op.rootfs, op.n_rootfs, norm, false)))
		return deny(d, OP_FILE, "rootfs_roots",
			    "the rootfs %s is not below a directory of 'rootfs_roots'", p->rootfs);
	return 0;
}

/* ---- images ---- */

/* The tenant an image name belongs to ("alice.NAME": alice's snapshots), or
 * NULL. */
static const aj_tenant *image_owner(const char *name)
{
	size_t n = strcspn(name, ".");
	if (!name[n] || n > AJ_TENANT_NAME_MAX)
		return NULL;
	char t[AJ_TENANT_NAME_MAX + 1];
	snprintf(t, sizeof(t), "%.*s", (int)n, name);
	return aj_tenant_find(t);
}

static int check_image(const aj_tenant *t, json_t *req, aj_denial *d)
{
	json_t *v = json_object_get(req, "image");
	const char *name = json_string_value(v);
	if (!v)
		return 0;
	if (!name)
		return 0; /* the policy refuses it (400) */
	const aj_tenant *owner = image_owner(name);
	if (owner == t)
		return 0; /* its own snapshots */
	if (owner)
		return deny(d, NULL, NULL, "image '%s' is not one this tenant may use", name);
	for (size_t i = 0; !op.images_any && i < op.n_images; i++)
		if (fnmatch(op.images[i], name, 0) == 0)
			return 0;
	if (!op.images_any)
		return deny(d, OP_FILE, "images",
			    "image '%s' is not in the operator policy's 'images' (add it there "
			    "to allow it)",
			    name);
	return 0;
}

int aj_tenant_check_snapshot(const aj_tenant *t, const char *name, aj_denial *d)
{
	if (!t)
		t = &tenants[0];
	const aj_tenant *owner = image_owner(name);
	if (owner && owner != t)
		return deny(d, NULL, NULL,
			    "image names '%.*s.*' belong to another tenant: name the snapshot "
			    "otherwise",
			    (int)strcspn(name, "."), name);
	if (!aj_tenant_is_operator(t) && owner != t)
		return deny(d, NULL, NULL,
			    "a snapshot of tenant %s is named %s.NAME (e.g. %s.%s): the image "
			    "store is shared, the names are not",
			    t->name, t->name, t->name, name);
	return 0;
}

/* ---- caps ---- */

/* One limit v (0: none) against the caps; absent from the request, a
 * default above the cap is lowered to it (req changed). */
static int check_cap(const aj_tenant *t, json_t *req, const char *const keys[2], const char *cap,
		     unsigned long long v, size_t off, bool cpus, aj_denial *d)
{
	const aj_caps *c[2] = {&op.caps, &t->caps};
	bool given = json_object_get(req, keys[0]) || (keys[1] && json_object_get(req, keys[1]));
	for (int i = 0; i < 2; i++) {
		unsigned long long m = *(const unsigned long long *)((const char *)c[i] + off);
		if (!m || (v && v <= m))
			continue;
		if (!given) {
			/* of the key's JSON type (policy_set.c): a number of cpus,
			 * an integer of pids, a size as a string */
			char buf[64];
			snprintf(buf, sizeof(buf), "%llu", m);
			json_object_set_new(req, keys[0],
					    cpus ? json_real((double)m / 1000.0)
					    : !strcmp(keys[0], "pids") ? json_integer((json_int_t)m)
								       : json_string(buf));
			v = m;
			continue;
		}
		char have[64], lim[64];
		if (cpus) {
			snprintf(have, sizeof(have), "%.3f", (double)v / 1000.0);
			snprintf(lim, sizeof(lim), "%.3f", (double)m / 1000.0);
		} else {
			snprintf(have, sizeof(have), "%llu", v);
			snprintf(lim, sizeof(lim), "%llu", m);
		}
		return deny(d, i ? TOKENS_FILE : OP_FILE, cap,
			    "'%s' %s is above '%s' %s of the %s%s%s: ask for at most that, or "
			    "raise '%s' there",
			    keys[0], v ? have : "0 (no limit)", cap, lim,
			    i ? "tokens file's tenant " : "operator policy", i ? t->name : "", "",
			    cap);
	}
	return 0;
}

int aj_tenant_check_ttl(const aj_tenant *t, double s, aj_denial *d)
{
	if (!t)
		t = &tenants[0];
	const aj_caps *c[2] = {&op.caps, &t->caps};
	for (int i = 0; i < 2; i++)
		if (c[i]->timeout_s && (s <= 0 || s > (double)c[i]->timeout_s))
			return deny(d, i ? TOKENS_FILE : OP_FILE, "max_timeout",
				    "'timeout' %g%s is above the %s's 'max_timeout' (%llu s)", s,
				    s <= 0 ? " (no TTL)" : " s", i ? "tenant" : "operator policy",
				    c[i]->timeout_s);
	return 0;
}

unsigned long long aj_tenant_max_sandboxes(const aj_tenant *t, const char **key, const char **file)
{
	unsigned long long a = op.caps.sandboxes, b = t ? t->caps.sandboxes : 0;
	*key = "max_sandboxes";
	*file = b && (!a || b < a) ? TOKENS_FILE : OP_FILE;
	return b && (!a || b < a) ? b : a;
}

static int check_ttl_default(const aj_tenant *t, json_t *req, aj_denial *d)
{
	json_t *v = json_object_get(req, "timeout");
	if (v)
		return json_is_number(v) ? aj_tenant_check_ttl(t, json_number_value(v), d) : 0;
	unsigned long long m = op.caps.timeout_s;
	if (t->caps.timeout_s && (!m || t->caps.timeout_s < m))
		m = t->caps.timeout_s;
	if (m && m < AJ_DAEMON_DEFAULT_TTL_S)
		json_object_set_new(req, "timeout", json_integer((json_int_t)m));
	return 0;
}

static int check_limits(const aj_tenant *t, json_t *req, const aj_policy *p, aj_denial *d)
{
	static const char *const mem[2] = {"memory", NULL}, *const pids[2] = {"pids", NULL},
				 *const cpus[2] = {"cpus", NULL},
				 *const disk[2] = {"disk", "tmp-size"};
	if (check_cap(t, req, mem, "max_memory", p->memory, offsetof(aj_caps, memory), false, d) ||
	    check_cap(t, req, pids, "max_pids", p->pids, offsetof(aj_caps, pids), false, d) ||
	    check_cap(t, req, cpus, "max_cpus", p->cpu_millis, offsetof(aj_caps, cpu_millis), true,
		      d) ||
	    check_cap(t, req, disk, "max_disk", p->tmp_size, offsetof(aj_caps, disk), false, d))
		return 1;
	if (!(op.net & (1u << p->net)))
		return deny(d, OP_FILE, "net",
			    "network mode '%s' is not in the operator policy's 'net' (add it "
			    "there to allow it)",
			    p->net == AJ_NET_OPEN    ? "open"
			    : p->net == AJ_NET_ALLOW ? "allow"
						     : "none");
	return 0;
}

int aj_tenant_check_create(const aj_tenant *t, json_t *req, aj_denial *d)
{
	memset(d, 0, sizeof(*d));
	/* names and paths first, as written: nothing of the host is looked at
	 * (stat, image store) for a path or an image the client may not use */
	if (check_image(t, req, d) || check_raw_paths(req, d) || check_ttl_default(t, req, d))
		return 1;
	json_t *copy = json_deep_copy(req);
	json_object_del(copy, "timeout"); /* the registry's TTL, not the policy's */
	aj_policy p;
	aj_policy_init(&p);
	p.quiet = true;
	aj_error err;
	aj_err_clear(&err);
	int r = 0;
	/* a policy that does not parse is refused by the create itself (400) */
	if (copy && aj_policy_from_json(&p, copy, &err) == 0)
		r = check_policy_paths(&p, req, d) || check_limits(t, req, &p, d);
	aj_policy_free(&p);
	json_decref(copy);
	return r;
}
