/* SPDX-License-Identifier: MIT */
#include "policy.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "hostname.h"
#include "util.h"

void aj_policy_init(aj_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->tmp_size = AJ_DEFAULT_DISK;
	p->kill_after_ms = AJ_DEFAULT_KILL_AFTER_MS;
	p->memory = AJ_DEFAULT_MEMORY;
	p->pids = AJ_DEFAULT_PIDS;
	p->audit_fd = -1;
}

void aj_policy_free(aj_policy *p)
{
	free(p->rootfs);
	free(p->workspace);
	free(p->cwd);
	free(p->hostname);
	free(p->result_path);
	free(p->seccomp_profile);
	free(p->seccomp_inline);
	free(p->seccomp_stack);
	free(p->cpuset_cpus);
	free(p->cpuset_mems);
	for (size_t i = 0; i < p->n_binds; i++) {
		free(p->binds[i].src);
		free(p->binds[i].dest);
	}
	for (size_t i = 0; i < p->n_env; i++)
		free(p->env[i]);
	for (size_t i = 0; i < p->n_secrets; i++) {
		free(p->secrets[i].name);
		if (p->secrets[i].value)
			explicit_bzero(p->secrets[i].value, strlen(p->secrets[i].value));
		free(p->secrets[i].value);
		free(p->secrets[i].placeholder);
		for (size_t h = 0; h < p->secrets[i].n_hosts; h++)
			free(p->secrets[i].hosts[h]);
		free(p->secrets[i].header);
	}
	for (size_t i = 0; i < p->n_redact; i++) {
		explicit_bzero(p->redact[i], strlen(p->redact[i]));
		free(p->redact[i]);
	}
	for (size_t i = 0; i < p->n_masks; i++)
		free(p->masks[i]);
	for (size_t i = 0; i < p->n_unmask; i++)
		free(p->unmask[i]);
	for (size_t i = 0; i < p->n_writable; i++)
		free(p->writable[i]);
	for (size_t i = 0; i < p->n_allow; i++)
		free(p->allow[i].host);
	for (size_t i = 0; i < p->n_inspect; i++)
		free(p->inspect[i]);
	free(p->net_log);
	free(p->upstream_ca);
	free(p->secret_mint);
	free(p->audit_sandbox);
	free(p->audit_tenant);
	memset(p, 0, sizeof(*p));
}

/* Normalize an absolute path: collapse "//", drop a trailing "/", reject
 * "." and ".." components. Returns malloc'ed copy or NULL with errno. */
/* The service's HTTP status and code for err (error.h). */
static void err_status(aj_error *err, int status, const char *code)
{
	if (!err)
		return;
	err->status = status;
	snprintf(err->api_code, sizeof(err->api_code), "%s", code);
}

static char *normalize_abs(const char *path)
{
	size_t len = strlen(path);
	if (path[0] != '/' || len >= PATH_MAX) {
		errno = len >= PATH_MAX ? ENAMETOOLONG : EINVAL;
		return NULL;
	}
	char *out = malloc(len + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *e = strchrnul(p, '/');
		size_t n = (size_t)(e - p);
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			free(out);
			errno = EINVAL;
			return NULL;
		}
		out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		p = e;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return out;
}

int aj_path_validate_host(const char *what, const char *path, bool want_dir, char **canon,
			  aj_error *err)
{
	if (!path || !*path)
		return aj_err(err, EINVAL, "%s: empty path", what);
	if (path[0] != '/') {
		aj_err(err, EINVAL, "%s '%s' is a relative path", what, path);
		aj_err_hint(err, "give an absolute path, e.g. \"$PWD/%s\"", path);
		return -EINVAL;
	}
	_cleanup_free_ char *norm = normalize_abs(path);
	if (!norm) {
		aj_err(err, errno == ENOMEM ? ENOMEM : 0,
		       "%s '%s' contains '.' or '..' components or is too long", what, path);
		aj_err_hint(err, "give the path without '.' and '..', e.g. $(realpath PATH)");
		return -EINVAL;
	}
	/* Walk every component with lstat: no symlink anywhere. */
	char buf[PATH_MAX];
	size_t len = strlen(norm);
	memcpy(buf, norm, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char saved = buf[i];
		buf[i] = '\0';
		struct stat st;
		if (lstat(buf, &st) < 0) {
			int e = errno;
			aj_err(err, e, "%s '%s': cannot access '%s'", what, path, buf);
			if (e == ENOENT)
				aj_err_hint(err, "create it first (mkdir -p '%s') or fix the path",
					    norm);
			/* the caller's path: a client error for the service */
			err_status(err, 400, "bad_request");
			return -e;
		}
		if (S_ISLNK(st.st_mode)) {
			aj_err(err, ELOOP, "%s '%s': '%s' is a symbolic link", what, path, buf);
			aj_err_hint(err,
				    "symlinks are refused so a path cannot be redirected; pass the "
				    "real path: %s",
				    "$(realpath PATH)");
			err_status(err, 400, "bad_request");
			return -ELOOP;
		}
		if (saved == '\0' && want_dir && !S_ISDIR(st.st_mode)) {
			aj_err(err, ENOTDIR, "%s '%s'", what, path);
			aj_err_hint(err, "pass a directory");
			err_status(err, 400, "bad_request");
			return -ENOTDIR;
		}
		if (saved == '\0' && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
			aj_err(err, EINVAL, "%s '%s' is neither a regular file nor a directory",
			       what, path);
			return -EINVAL;
		}
		buf[i] = saved;
	}
	if (canon)
		*canon = steal_pointer(&norm);
	return 0;
}

int aj_path_validate_inside(const char *what, const char *path, char **canon, aj_error *err)
{
	if (!path || path[0] != '/') {
		aj_err(err, EINVAL, "%s '%s' must be an absolute path inside the sandbox", what,
		       path ? path : "");
		return -EINVAL;
	}
	_cleanup_free_ char *norm = normalize_abs(path);
	if (!norm)
		return aj_err(err, EINVAL, "%s '%s' contains '.' or '..' components", what, path);
	static const char *const reserved[] = {"/proc", "/dev", "/etc"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(reserved); i++) {
		size_t n = strlen(reserved[i]);
		if (strncmp(norm, reserved[i], n) == 0 && (norm[n] == '\0' || norm[n] == '/'))
			return aj_err(err, EINVAL, "%s '%s': %s is managed by agentjail", what,
				      path, reserved[i]);
	}
	if (strcmp(norm, "/") == 0)
		return aj_err(err, EINVAL, "%s: cannot use '/' here", what);
	if (canon)
		*canon = steal_pointer(&norm);
	return 0;
}

int aj_policy_set_workspace(aj_policy *p, const char *path, aj_error *err)
{
	char *c;
	int r = aj_path_validate_host("workspace", path, true, &c, err);
	if (r < 0)
		return r;
	free(p->workspace);
	p->workspace = c;
	return 0;
}

int aj_policy_set_rootfs(aj_policy *p, const char *path, aj_error *err)
{
	if (p->rootfs)
		return aj_err(err, EINVAL,
			      "the root is given twice (--rootfs / --image): choose one");
	char *c;
	int r = aj_path_validate_host("rootfs", path, true, &c, err);
	if (r < 0)
		return r;
	if (strcmp(c, "/") == 0) {
		free(c);
		return aj_err(err, EINVAL, "rootfs '/' would expose the whole host");
	}
	free(p->rootfs);
	p->rootfs = c;
	return 0;
}

int aj_policy_add_bind(aj_policy *p, const char *spec, bool writable, aj_error *err)
{
	const char *flag = writable ? "--rw" : "--ro";
	if (p->n_binds >= AJ_MAX_BINDS)
		return aj_err(err, E2BIG, "%s: at most %d binds", flag, AJ_MAX_BINDS);
	_cleanup_free_ char *src = strdup(spec);
	if (!src)
		return aj_err(err, ENOMEM, "%s", flag);
	char *colon = strchr(src, ':');
	const char *dest = NULL;
	if (colon) {
		*colon = '\0';
		dest = colon + 1;
	}
	_cleanup_free_ char *csrc = NULL, *cdest = NULL;
	int r = aj_path_validate_host(flag, src, false, &csrc, err);
	if (r < 0)
		return r;
	r = aj_path_validate_inside(flag, dest ? dest : csrc, &cdest, err);
	if (r < 0)
		return r;
	p->binds[p->n_binds].src = steal_pointer(&csrc);
	p->binds[p->n_binds].dest = steal_pointer(&cdest);
	p->binds[p->n_binds].writable = writable;
	p->n_binds++;
	return 0;
}

static bool env_name_valid(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

int aj_policy_add_env(aj_policy *p, const char *spec, aj_error *err)
{
	if (p->n_env >= AJ_MAX_ENV)
		return aj_err(err, E2BIG, "--env: at most %d variables", AJ_MAX_ENV);
	const char *eq = strchr(spec, '=');
	size_t n = eq ? (size_t)(eq - spec) : strlen(spec);
	if (!env_name_valid(spec, n)) {
		aj_err(err, EINVAL, "--env '%s': invalid variable name", spec);
		aj_err_hint(err, "use NAME=VALUE with NAME made of letters, digits and '_'");
		return -EINVAL;
	}
	char *entry;
	if (eq) {
		entry = strdup(spec);
	} else {
		const char *v = getenv(spec);
		if (!v)
			return aj_err(err, ENOENT, "--env %s: not set in the caller's environment",
				      spec);
		entry = aj_asprintf("%s=%s", spec, v);
	}
	if (!entry)
		return aj_err(err, ENOMEM, "--env");
	p->env[p->n_env++] = entry;
	return 0;
}

/* One host a secret is scoped to, canonical: "HOST", "*.DOMAIN" (at least
 * two labels after the star) or an IPv4 address; NULL if not one. */
static char *secret_host(const char *spec, size_t len)
{
	bool wild = len > 2 && spec[0] == '*' && spec[1] == '.';
	aj_host h;
	if (wild)
		spec += 2, len -= 2;
	if (aj_host_norm(spec, len, &h, NULL) < 0 || h.kind == AJ_HOST_IPV6 ||
	    (wild && (h.kind != AJ_HOST_NAME || !strchr(h.text, '.'))))
		return NULL;
	return aj_asprintf("%s%s", wild ? "*." : "", h.text);
}

/* An HTTP field name (RFC 9110 token). */
static bool header_name_valid(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			 "!#$%&'*+-.^_`|~") == strlen(s);
}

int aj_policy_add_secret_scoped(aj_policy *p, const char *name, const char *value,
				const char *const *hosts, size_t n_hosts, const char *header,
				aj_error *err)
{
	if (p->n_secrets >= AJ_MAX_SECRETS)
		return aj_err(err, E2BIG, "--secret: at most %d secrets", AJ_MAX_SECRETS);
	size_t n = strlen(name);
	if (!env_name_valid(name, n)) {
		aj_err(err, EINVAL, "--secret: invalid variable name '%s'", name);
		aj_err_hint(err, "use --secret NAME=VALUE, --secret NAME@HOST[,HOST...]=VALUE or "
				 "--secret NAME (taken from your environment)");
		return -EINVAL;
	}
	if (strlen(value) < 4) {
		aj_err(err, EINVAL, "--secret %s: the value is shorter than 4 characters", name);
		aj_err_hint(err,
			    "such a value cannot be told apart from ordinary output for redaction");
		return -EINVAL;
	}
	if (n_hosts > AJ_MAX_SECRET_HOSTS)
		return aj_err(err, E2BIG, "--secret %s: at most %d hosts", name,
			      AJ_MAX_SECRET_HOSTS);
	if (header && !header_name_valid(header))
		return aj_err(err, EINVAL, "--secret %s: '%s' is not an HTTP header name", name,
			      header);
	if (header && !n_hosts)
		return aj_err(err, EINVAL, "--secret %s: a header needs the hosts it goes to",
			      name);
	char *canon[AJ_MAX_SECRET_HOSTS] = {0};
	for (size_t i = 0; i < n_hosts; i++) {
		if (!(canon[i] = secret_host(hosts[i], strlen(hosts[i])))) {
			for (size_t j = 0; j < i; j++)
				free(canon[j]);
			aj_err(err, EINVAL,
			       "--secret %s: '%s' is not a host name, *.DOMAIN or IPv4 "
			       "address",
			       name, hosts[i]);
			aj_err_hint(
			    err,
			    "for example --secret API_KEY@api.example.com,*.example.org=VALUE");
			return -EINVAL;
		}
	}
	unsigned char rnd[8];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		for (size_t j = 0; j < n_hosts; j++)
			free(canon[j]);
		return aj_err(err, EIO, "--secret: no randomness for a placeholder");
	}
	aj_secret *s = &p->secrets[p->n_secrets];
	memset(s, 0, sizeof(*s));
	s->name = strdup(name);
	s->value = strdup(value);
	s->placeholder =
	    aj_asprintf("agentjail-placeholder-%s-%02x%02x%02x%02x%02x%02x%02x%02x", name, rnd[0],
			rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	memcpy(s->hosts, canon, sizeof(canon[0]) * n_hosts);
	s->n_hosts = n_hosts;
	s->header = header ? strdup(header) : NULL;
	p->n_secrets++;
	if (!s->name || !s->value || !s->placeholder || (header && !s->header))
		return aj_err(err, ENOMEM, "--secret");
	return 0;
}

/* NAME=VALUE, NAME, NAME@HOSTS=VALUE, NAME@HOSTS: NAME is letters, digits
 * and '_', so the first '@' or '=' ends it; HOSTS is a comma-separated
 * list up to the first '=' (host names never hold one). */
int aj_policy_add_secret(aj_policy *p, const char *spec, aj_error *err)
{
	size_t n = strcspn(spec, "@=");
	const char *at = spec[n] == '@' ? spec + n : NULL;
	const char *eq = strchr(spec, '=');
	char name[256];
	if (!env_name_valid(spec, n) || n >= sizeof(name)) {
		aj_err(err, EINVAL, "--secret: invalid variable name in '%.*s'", (int)n, spec);
		aj_err_hint(err, "use --secret NAME=VALUE, --secret NAME@HOST[,HOST...]=VALUE or "
				 "--secret NAME (taken from your environment)");
		return -EINVAL;
	}
	memcpy(name, spec, n);
	name[n] = '\0';
	const char *value = eq ? eq + 1 : getenv(name);
	if (!value)
		return aj_err(err, ENOENT, "--secret %s: not set in the caller's environment",
			      name);
	char *hosts[AJ_MAX_SECRET_HOSTS + 1];
	size_t nh = 0;
	bool body = false;
	_cleanup_free_ char *list = NULL;
	if (at) {
		list = eq ? strndup(at + 1, (size_t)(eq - at - 1)) : strdup(at + 1);
		if (!list)
			return aj_err(err, ENOMEM, "--secret");
		/* NAME@HOSTS:body: the value may go into request bodies too */
		size_t ll = strlen(list);
		if (ll > 5 && strcmp(list + ll - 5, ":body") == 0) {
			list[ll - 5] = '\0';
			body = true;
		}
		for (char *h = list; h;) {
			char *comma = strchr(h, ',');
			if (comma)
				*comma = '\0';
			if (nh > AJ_MAX_SECRET_HOSTS)
				break;
			hosts[nh++] = h;
			h = comma ? comma + 1 : NULL;
		}
		if (nh > AJ_MAX_SECRET_HOSTS)
			return aj_err(err, E2BIG, "--secret %s: at most %d hosts", name,
				      AJ_MAX_SECRET_HOSTS);
	}
	int r =
	    aj_policy_add_secret_scoped(p, name, value, (const char *const *)hosts, nh, NULL, err);
	if (r == 0 && body)
		p->secrets[p->n_secrets - 1].body = true;
	return r;
}

int aj_policy_add_inspect(aj_policy *p, const char *host, aj_error *err)
{
	if (p->n_inspect >= AJ_MAX_SECRET_HOSTS)
		return aj_err(err, E2BIG, "--inspect: at most %d hosts", AJ_MAX_SECRET_HOSTS);
	char *canon = secret_host(host, strlen(host));
	if (!canon) {
		aj_err(err, EINVAL, "--inspect '%s': not a host name, *.DOMAIN or IPv4 address",
		       host);
		aj_err_hint(err, "for example --inspect api.example.com (also in --allow)");
		return -EINVAL;
	}
	p->inspect[p->n_inspect++] = canon;
	return 0;
}

int aj_policy_add_redact(aj_policy *p, const char *value, aj_error *err)
{
	if (p->n_redact >= AJ_MAX_SECRETS)
		return aj_err(err, E2BIG, "--redact: at most %d values", AJ_MAX_SECRETS);
	if (strlen(value) < 4)
		return aj_err(err, EINVAL,
			      "--redact: values shorter than 4 characters are refused");
	if (!(p->redact[p->n_redact] = strdup(value)))
		return aj_err(err, ENOMEM, "--redact");
	p->n_redact++;
	return 0;
}

int aj_policy_add_mask(aj_policy *p, const char *glob, aj_error *err)
{
	if (p->n_masks >= AJ_MAX_MASKS)
		return aj_err(err, E2BIG, "--mask: at most %d globs", AJ_MAX_MASKS);
	if (!*glob || glob[0] == '/' || strstr(glob, ".."))
		return aj_err(err, EINVAL,
			      "--mask '%s': give a glob relative to the workspace, e.g. '*.secret' "
			      "or 'config/prod.yml'",
			      glob);
	if (!(p->masks[p->n_masks] = strdup(glob)))
		return aj_err(err, ENOMEM, "--mask");
	p->n_masks++;
	return 0;
}

int aj_policy_add_unmask(aj_policy *p, const char *rel, aj_error *err)
{
	char norm[PATH_MAX];
	size_t o = 0, len = strlen(rel);
	while (len > 1 && rel[len - 1] == '/')
		len--;
	if (len == 0 || rel[0] == '/' || len >= sizeof(norm)) {
		aj_err(err, EINVAL, "--unmask '%s': expected a path relative to the workspace",
		       rel);
		aj_err_hint(err, "e.g. --unmask .npmrc or --unmask config/.env.test");
		return -EINVAL;
	}
	for (size_t i = 0; i < len;) {
		size_t n = strcspn(rel + i, "/");
		if (n > len - i)
			n = len - i;
		if (n == 0 || (n == 1 && rel[i] == '.') || (n == 2 && !strncmp(rel + i, "..", 2)) ||
		    memchr(rel + i, '\n', n))
			return aj_err(err, EINVAL,
				      "--unmask '%s': no empty, '.' or '..' components allowed",
				      rel);
		if (o)
			norm[o++] = '/';
		memcpy(norm + o, rel + i, n);
		o += n;
		i += n + 1;
	}
	norm[o] = '\0';
	if (strpbrk(norm, "*?["))
		return aj_err(err, EINVAL, "--unmask '%s': give one path, not a glob", rel);
	for (size_t i = 0; i < p->n_unmask; i++)
		if (!strcmp(p->unmask[i], norm))
			return 0;
	if (p->n_unmask >= AJ_MAX_MASKS)
		return aj_err(err, E2BIG, "--unmask: at most %d paths", AJ_MAX_MASKS);
	if (!(p->unmask[p->n_unmask] = strdup(norm)))
		return aj_err(err, ENOMEM, "--unmask");
	p->n_unmask++;
	return 0;
}

int aj_policy_add_env_file(aj_policy *p, const char *path, aj_error *err)
{
	_cleanup_free_ char *data = NULL;
	int r = aj_read_file(path, &data, NULL);
	if (r < 0)
		return aj_err(err, -r, "--env-file '%s'", path);
	unsigned line = 0;
	for (char *s = data, *next; s && *s; s = next) {
		line++;
		next = strchr(s, '\n');
		if (next)
			*next++ = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		size_t len = strlen(s);
		if (len && s[len - 1] == '\r')
			s[--len] = '\0';
		if (*s == '\0' || *s == '#')
			continue;
		if (aj_startswith(s, "export "))
			s += 7;
		if (!strchr(s, '=')) {
			aj_err(err, EINVAL, "--env-file '%s' line %u: expected NAME=VALUE", path,
			       line);
			return -EINVAL;
		}
		r = aj_policy_add_env(p, s, err);
		if (r < 0) {
			aj_err_prefix(err, "--env-file '%s' line %u", path, line);
			return r;
		}
	}
	return 0;
}

int aj_policy_set_cwd(aj_policy *p, const char *path, aj_error *err)
{
	if (!path || path[0] != '/')
		return aj_err(err, EINVAL, "--cwd '%s' must be an absolute path inside the sandbox",
			      path ? path : "");
	char *c = normalize_abs(path);
	if (!c)
		return aj_err(err, EINVAL, "--cwd '%s' contains '.' or '..' components", path);
	free(p->cwd);
	p->cwd = c;
	return 0;
}

int aj_policy_set_hostname(aj_policy *p, const char *name, aj_error *err)
{
	size_t n = strlen(name);
	bool ok = n > 0 && n <= 63 && name[0] != '-' && name[n - 1] != '-';
	for (size_t i = 0; ok && i < n; i++)
		ok = isalnum((unsigned char)name[i]) || name[i] == '-' || name[i] == '.';
	if (!ok) {
		aj_err(err, EINVAL, "--hostname '%s' is not a valid host name", name);
		aj_err_hint(err, "use 1-63 letters, digits, '-' and '.'");
		return -EINVAL;
	}
	char *c = strdup(name);
	if (!c)
		return aj_err(err, ENOMEM, "--hostname");
	free(p->hostname);
	p->hostname = c;
	return 0;
}

int aj_policy_set_user(aj_policy *p, const char *spec, aj_error *err)
{
	_cleanup_free_ char *s = strdup(spec);
	if (!s)
		return aj_err(err, ENOMEM, "--user");
	char *colon = strchr(s, ':');
	if (colon)
		*colon = '\0';
	unsigned long long uid, gid;
	if (aj_parse_uint(s, 65533, &uid) < 0 ||
	    (colon && aj_parse_uint(colon + 1, 65533, &gid) < 0)) {
		aj_err(err, EINVAL, "--user '%s': expected UID[:GID], numbers from 0 to 65533",
		       spec);
		return -EINVAL;
	}
	p->uid = (uid_t)uid;
	p->gid = colon ? (gid_t)gid : (gid_t)uid;
	return 0;
}

int aj_policy_set_cpus(aj_policy *p, const char *spec, aj_error *err)
{
	char *end;
	errno = 0;
	double v = strtod(spec, &end);
	if (errno || end == spec || *end || !isfinite(v) || v < 0.01 || v > 4096) {
		aj_err(err, EINVAL, "--cpus '%s': expected a number of CPUs such as 0.5 or 2",
		       spec);
		return -EINVAL;
	}
	p->cpu_millis = (unsigned long long)(v * 1000.0 + 0.5); /* v > 0: llround without libm */
	return 0;
}

int aj_parse_seconds(const char *flag, const char *spec, unsigned long long *ms, aj_error *err)
{
	char *end;
	errno = 0;
	double v = strtod(spec, &end);
	if (errno || end == spec || *end || !isfinite(v) || v < 0.001 || v > 31536000.0) {
		aj_err(err, EINVAL, "%s '%s': expected seconds such as 30 or 0.5", flag, spec);
		return -EINVAL;
	}
	*ms = (unsigned long long)(v * 1000.0 + 0.5); /* v > 0 */
	return 0;
}

int aj_policy_set_net(aj_policy *p, const char *mode, aj_error *err)
{
	if (strcmp(mode, "none") == 0)
		p->net = AJ_NET_NONE;
	else if (strcmp(mode, "open") == 0)
		p->net = AJ_NET_OPEN;
	else
		return aj_err(err, EINVAL, "--net '%s': expected none or open", mode);
	p->net_explicit = true;
	return 0;
}

int aj_policy_add_deny(aj_policy *p, const char *cidr, aj_error *err)
{
	if (p->n_deny >= AJ_MAX_DENY)
		return aj_err(err, E2BIG, "too many --deny (at most %d)", AJ_MAX_DENY);
	if (aj_cidr_parse(cidr, &p->deny[p->n_deny]) < 0) {
		aj_err(err, EINVAL, "--deny '%s': expected an address or CIDR", cidr);
		aj_err_hint(err, "for example --deny 203.0.113.0/24 or --deny 2001:db8::/32");
		return -EINVAL;
	}
	p->n_deny++;
	return 0;
}

int aj_policy_validate(const aj_policy *p, aj_error *err)
{
	if (!p->argv || !p->argv[0] || !p->argv[0][0]) {
		aj_err(err, EINVAL, "no command given");
		aj_err_hint(err, "agentjail run [OPTIONS] -- COMMAND [ARG...]");
		return -EINVAL;
	}
	for (size_t i = 0; i < p->n_binds; i++) {
		if (p->workspace && aj_startswith(p->binds[i].dest, AJ_WORKSPACE_DIR) &&
		    (p->binds[i].dest[strlen(AJ_WORKSPACE_DIR)] == '\0'))
			return aj_err(err, EINVAL, "bind destination %s conflicts with --workspace",
				      p->binds[i].dest);
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->binds[i].dest, p->binds[j].dest) == 0)
				return aj_err(err, EINVAL, "two binds have the same destination %s",
					      p->binds[i].dest);
	}
	if (p->n_unmask && !p->workspace)
		return aj_err(err, EINVAL, "--unmask %s: there is no --workspace", p->unmask[0]);
	if (p->n_writable && !p->workspace)
		return aj_err(err, EINVAL, "--writable %s: there is no --workspace",
			      p->writable[0]);
	if (p->tmp_size < (1ULL << 20))
		return aj_err(err, EINVAL, "--disk must be at least 1M");
	if (p->fsize && p->fsize < 4096)
		return aj_err(err, EINVAL, "--fsize must be at least 4K");
	if (p->nofile && p->nofile < 16)
		return aj_err(err, EINVAL, "--nofile must be at least 16");
	if (p->memory && p->memory < (4ULL << 20))
		return aj_err(err, EINVAL, "--memory must be at least 4M");
	return aj_policy_validate_net(p, err);
}
