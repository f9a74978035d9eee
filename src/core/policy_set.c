/* SPDX-License-Identifier: MIT */
/* Setting a policy by option name (the long options of `agentjail run`),
 * shared by the command line and the JSON of the service's API. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include <sys/stat.h>

#include "policy.h"
#include "util.h"

static int parse_size_opt(const char *flag, const char *v, unsigned long long *out, aj_error *err)
{
	if (aj_parse_size(v, out) < 0) {
		aj_err(err, EINVAL, "%s '%s': expected a size such as 512M or 2G", flag, v);
		return -EINVAL;
	}
	return 0;
}

/* The report file is written by agentjail (not the sandbox): refuse a path
 * through a symlink or into a missing directory before anything runs. */
static int set_result_path(aj_policy *p, const char *v, aj_error *err)
{
	_cleanup_free_ char *dir = strdup(v);
	if (!dir)
		return aj_err(err, ENOMEM, "--result");
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	if (!*v || (slash && slash[1] == '\0' && slash != dir) || v[strlen(v) - 1] == '/')
		return aj_err(err, EINVAL, "--result '%s': expected a file name", v);
	struct stat st;
	if (slash && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)))
		return aj_err(err, ENOENT, "--result '%s': directory '%s' does not exist", v, dir);
	if (lstat(v, &st) == 0 && !S_ISREG(st.st_mode))
		return aj_err(err, EINVAL, "--result '%s' exists and is not a regular file", v);
	free(p->result_path);
	p->result_path = strdup(v);
	return p->result_path ? 0 : aj_err(err, ENOMEM, "--result");
}

static int set_uint(const char *flag, const char *v, unsigned long long max,
		    unsigned long long *out, aj_error *err)
{
	if (aj_parse_uint(v, max, out) < 0)
		return aj_err(err, EINVAL, "--%s '%s': expected a number up to %llu", flag, v, max);
	return 0;
}

/* --limits strict|best-effort */
static int set_limits_mode(aj_policy *p, const char *v, aj_error *err)
{
	if (strcmp(v, "strict") == 0 || strcmp(v, "best-effort") == 0) {
		p->limits_best_effort = strcmp(v, "best-effort") == 0;
		return 0;
	}
	return aj_err(err, EINVAL, "--limits '%s': expected strict or best-effort", v);
}

/* Options that name host files or read the caller's environment: the
 * command line only. */
static bool host_only(const char *name, const char *v)
{
	static const char *const names[] = {"result",  "seccomp-profile", "env-file",
					    "tty",     "no-tty",	  "net-log",
					    "publish", "upstream-ca",	  "secret-mint"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(names); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	/* --env NAME / --secret NAME copy from the caller's environment */
	return (!strcmp(name, "env") || !strcmp(name, "secret")) && !strchr(v, '=');
}

int aj_policy_set_isolation(aj_policy *p, const char *v, aj_error *err)
{
	static const struct {
		const char *name;
		aj_isolation level;
	} levels[] = {{"process", AJ_ISO_PROCESS},
		      {"gvisor", AJ_ISO_GVISOR},
		      {"microvm", AJ_ISO_MICROVM},
		      {"wasm", AJ_ISO_WASM}};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(levels); i++)
		if (!strcmp(v, levels[i].name)) {
			p->isolation = levels[i].level;
			return 0;
		}
	aj_err(err, EINVAL, "--isolation '%s': expected process, gvisor, microvm or wasm", v);
	return -EINVAL;
}

int aj_policy_set(aj_policy *p, const char *name, const char *v, unsigned flags, aj_error *err)
{
	if ((flags & AJ_POLICY_SET_REMOTE) && host_only(name, v ? v : ""))
		return aj_err(err, EINVAL, "'%s' cannot be set through the API%s", name,
			      strcmp(name, "env") && strcmp(name, "secret") ? ""
									    : ": give NAME=VALUE");
	if (!v)
		v = "";
#define IS(s) (strcmp(name, s) == 0)
	if (IS("workspace"))
		return aj_policy_set_workspace(p, v, err);
	if (IS("rootfs"))
		return aj_policy_set_rootfs(p, v, err);
	if (IS("ro") || IS("rw"))
		return aj_policy_add_bind(p, v, IS("rw"), err);
	if (IS("cwd"))
		return aj_policy_set_cwd(p, v, err);
	if (IS("disk") || IS("tmp-size"))
		return parse_size_opt("--disk", v, &p->tmp_size, err);
	if (IS("timeout"))
		return aj_parse_seconds("--timeout", v, &p->timeout_ms, err);
	if (IS("kill-after"))
		return aj_parse_seconds("--kill-after", v, &p->kill_after_ms, err);
	if (IS("fsize"))
		return parse_size_opt("--fsize", v, &p->fsize, err);
	if (IS("nofile"))
		return set_uint(name, v, 1048576, &p->nofile, err);
	if (IS("result"))
		return set_result_path(p, v, err);
	if (IS("seccomp-profile")) {
		free(p->seccomp_profile);
		return (p->seccomp_profile = strdup(v)) ? 0
							: aj_err(err, ENOMEM, "--seccomp-profile");
	}
	if (IS("secret"))
		return aj_policy_add_secret(p, v, err);
	if (IS("redact"))
		return aj_policy_add_redact(p, v, err);
	if (IS("mask"))
		return aj_policy_add_mask(p, v, err);
	if (IS("unmask"))
		return aj_policy_add_unmask(p, v, err);
	if (IS("writable"))
		return aj_policy_add_writable(p, v, err);
	if (IS("no-default-masks"))
		return p->no_default_masks = true, 0;
	if (IS("user"))
		return aj_policy_set_user(p, v, err);
	if (IS("hostname"))
		return aj_policy_set_hostname(p, v, err);
	if (IS("env"))
		return aj_policy_add_env(p, v, err);
	if (IS("env-file"))
		return aj_policy_add_env_file(p, v, err);
	if (IS("memory"))
		return parse_size_opt("--memory", v, &p->memory, err);
	if (IS("pids"))
		return set_uint(name, v, 4194304, &p->pids, err);
	if (IS("cpus"))
		return aj_policy_set_cpus(p, v, err);
	if (IS("tty"))
		return p->tty = AJ_TTY_ALWAYS, 0;
	if (IS("no-tty"))
		return p->tty = AJ_TTY_NEVER, 0;
	if (IS("quiet"))
		return p->quiet = true, 0;
	if (IS("limits"))
		return set_limits_mode(p, v, err);
	if (IS("net"))
		return aj_policy_set_net(p, v, err);
	if (IS("deny"))
		return aj_policy_add_deny(p, v, err);
	if (IS("allow"))
		return aj_policy_add_allow(p, v, err);
	if (IS("dns"))
		return aj_policy_set_dns(p, v, err);
	if (IS("publish"))
		return aj_policy_add_publish(p, v, err);
	if (IS("net-log"))
		return aj_policy_set_net_log(p, v, err);
	if (IS("upstream-ca"))
		return aj_policy_set_upstream_ca(p, v, err);
	if (IS("secret-mint"))
		return aj_policy_set_secret_mint(p, v, err);
	if (IS("inspect"))
		return aj_policy_add_inspect(p, v, err);
	if (IS("image"))
		return aj_policy_set_image(p, v, err);
	if (IS("isolation")) /* the service checks that the level serves (registry.c) */
		return aj_policy_set_isolation(p, v, err);
#undef IS
	return aj_err(err, EINVAL, "unknown option '%s'", name);
}

#define K_STR AJ_JSON_STR
#define K_INT AJ_JSON_INT
#define K_NUM AJ_JSON_NUM
#define K_FLAG AJ_JSON_FLAG
#define K_LIST AJ_JSON_LIST
#define K_MAP AJ_JSON_MAP
#define K_OBJ AJ_JSON_OBJ
#define json_kind aj_json_kind

static const struct {
	const char *name;
	enum json_kind kind;
} json_keys[] = {
    {"workspace", K_STR},
    {"rootfs", K_STR},
    {"cwd", K_STR},
    {"disk", K_STR},
    {"tmp-size", K_STR},
    {"timeout", K_NUM},
    {"kill-after", K_NUM},
    {"fsize", K_STR},
    {"nofile", K_INT},
    {"result", K_STR},
    {"seccomp-profile", K_OBJ},
    {"user", K_STR},
    {"hostname", K_STR},
    {"memory", K_STR},
    {"pids", K_INT},
    {"cpus", K_NUM},
    {"limits", K_STR},
    {"net", K_STR},
    {"dns", K_STR},
    {"net-log", K_STR},
    {"image", K_STR},
    {"isolation", K_STR},
    {"no-default-masks", K_FLAG},
    {"tty", K_FLAG},
    {"no-tty", K_FLAG},
    {"quiet", K_FLAG},
    {"ro", K_LIST},
    {"rw", K_LIST},
    {"redact", K_LIST},
    {"mask", K_LIST},
    {"writable", K_LIST},
    {"unmask", K_LIST},
    {"deny", K_LIST},
    {"allow", K_LIST},
    {"inspect", K_LIST},
    {"publish", K_LIST},
    {"env-file", K_LIST},
    {"env", K_MAP},
    {"secret", K_MAP},
};

static const char *const kind_names[] = {
    [K_STR] = "a string",
    [K_INT] = "an integer",
    [K_NUM] = "a number",
    [K_FLAG] = "true or false",
    [K_LIST] = "a string or an array of strings",
    [K_MAP] = "an object of NAME: VALUE strings",
    [K_OBJ] = ("a JSON object (the profile itself, docs/security.md: the service reads no "
	       "file of its host for a client)"),
};

static bool kind_fits(enum json_kind k, json_t *v, bool in_array)
{
	switch (k) {
	case K_STR: return json_is_string(v);
	case K_INT: return json_is_integer(v);
	case K_NUM: return json_is_number(v);
	case K_FLAG: return json_is_boolean(v);
	case K_OBJ: return json_is_object(v) && !in_array;
	case K_LIST:
	case K_MAP:
		if (json_is_string(v))
			return true;
		if (in_array)
			return false;
		if (json_is_object(v))
			return k == K_MAP;
		if (!json_is_array(v))
			return false;
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
		{
			if (!json_is_string(e))
				return false;
		}
		return true;
	}
	return false;
}

int aj_policy_json_kind(const char *name)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(json_keys); i++)
		if (!strcmp(json_keys[i].name, name))
			return (int)json_keys[i].kind;
	return -1;
}

/* "secret": {NAME: {"value": V, "hosts": [HOST...], "header": H}} */
static int secret_json(aj_policy *p, const char *name, json_t *o, aj_error *err)
{
	json_t *value = json_object_get(o, "value"), *hosts = json_object_get(o, "hosts");
	json_t *header = json_object_get(o, "header"), *body = json_object_get(o, "body");
	const char *k;
	json_t *e;
	json_object_foreach(o, k, e)
	{
		if (strcmp(k, "value") && strcmp(k, "hosts") && strcmp(k, "header") &&
		    strcmp(k, "body"))
			return aj_err(err, EINVAL, "'secret.%s': unknown field '%s'", name, k);
	}
	if (body && !json_is_boolean(body))
		return aj_err(err, EINVAL, "'secret.%s.body': expected true or false", name);
	if (json_is_true(body) && !json_array_size(hosts))
		return aj_err(err, EINVAL, "'secret.%s.body': needs the hosts it goes to", name);
	if (json_is_true(body) && header) /* header: that one header only */
		return aj_err(err, EINVAL, "'secret.%s': body and header exclude each other", name);
	if (!json_is_string(value) || strlen(json_string_value(value)) != json_string_length(value))
		return aj_err(err, EINVAL, "'secret.%s.value': expected a string", name);
	if (header && !json_is_string(header))
		return aj_err(err, EINVAL, "'secret.%s.header': expected a string", name);
	if (hosts && !json_is_array(hosts))
		return aj_err(err, EINVAL, "'secret.%s.hosts': expected an array of host names",
			      name);
	const char *list[AJ_MAX_SECRET_HOSTS];
	size_t n = 0, i;
	json_array_foreach(hosts, i, e)
	{
		if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e))
			return aj_err(err, EINVAL, "'secret.%s.hosts': expected host names", name);
		if (n >= AJ_MAX_SECRET_HOSTS)
			return aj_err(err, E2BIG, "'secret.%s.hosts': at most %d", name,
				      AJ_MAX_SECRET_HOSTS);
		list[n++] = json_string_value(e);
	}
	int r = aj_policy_add_secret_scoped(p, name, json_string_value(value), list, n,
					    header ? json_string_value(header) : NULL, err);
	if (r == 0 && json_is_true(body))
		p->secrets[p->n_secrets - 1].body = true;
	return r;
}

/* "seccomp-profile": {...}: kept as its JSON text, parsed and compiled
 * where the sandbox is made (the service checks it first: registry.c) */
static int set_inline_profile(aj_policy *p, json_t *v, aj_error *err)
{
	char *text = json_dumps(v, JSON_COMPACT);
	if (!text)
		return aj_err(err, ENOMEM, "'seccomp-profile'");
	if (strlen(text) > AJ_SECCOMP_INLINE_MAX) {
		int r = aj_err(err, EINVAL, "'seccomp-profile': %zu bytes of JSON, at most %u",
			       strlen(text), AJ_SECCOMP_INLINE_MAX);
		aj_err_hint(err, "merge its rules (one rule may list many syscalls)");
		free(text);
		return r;
	}
	free(p->seccomp_inline);
	p->seccomp_inline = text;
	return 0;
}

/* One JSON value of option name, of its kind (json_keys). */
static int set_json(aj_policy *p, const char *name, json_t *v, int depth, aj_error *err)
{
	int ki = aj_policy_json_kind(name);
	if (ki < 0)
		return aj_err(err, EINVAL, "unknown field '%s'", name);
	enum json_kind kind = (enum json_kind)ki;
	if (!json_is_null(v) && !kind_fits(kind, v, depth > 0))
		return aj_err(err, EINVAL, "'%s': expected %s", name, kind_names[kind]);
	char num[64];
	switch (json_typeof(v)) {
	case JSON_STRING:
		if (strlen(json_string_value(v)) != json_string_length(v))
			return aj_err(err, EINVAL, "'%s': NUL bytes are not allowed", name);
		return aj_policy_set(p, name, json_string_value(v), AJ_POLICY_SET_REMOTE, err);
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		return aj_policy_set(p, name, num, AJ_POLICY_SET_REMOTE, err);
	case JSON_REAL:
		snprintf(num, sizeof(num), "%.6f", json_real_value(v));
		return aj_policy_set(p, name, num, AJ_POLICY_SET_REMOTE, err);
	case JSON_TRUE: return aj_policy_set(p, name, NULL, AJ_POLICY_SET_REMOTE, err);
	case JSON_FALSE: return 0;
	case JSON_ARRAY: {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
		{
			int r = set_json(p, name, e, 1, err);
			if (r < 0)
				return r;
		}
		return 0;
	}
	case JSON_OBJECT: {
		if (kind == K_OBJ)
			return set_inline_profile(p, v, err);
		const char *k;
		json_t *e;
		json_object_foreach(v, k, e)
		{
			if (json_is_object(e) && !strcmp(name, "secret")) {
				int r = secret_json(p, k, e, err);
				if (r < 0)
					return r;
				continue;
			}
			if (!json_is_string(e) ||
			    strlen(json_string_value(e)) != json_string_length(e))
				return aj_err(err, EINVAL, "'%s.%s': expected a string", name, k);
			if (!*k || strchr(k, '='))
				return aj_err(err, EINVAL, "'%s': bad variable name '%s'", name, k);
			_cleanup_free_ char *kv = aj_asprintf("%s=%s", k, json_string_value(e));
			int r = kv ? aj_policy_set(p, name, kv, AJ_POLICY_SET_REMOTE, err)
				   : aj_err(err, ENOMEM, "%s", name);
			if (r < 0)
				return r;
		}
		return 0;
	}
	case JSON_NULL: return 0;
	}
	return aj_err(err, EINVAL, "'%s': unexpected JSON type", name);
}

int aj_policy_from_json(aj_policy *p, json_t *obj, aj_error *err)
{
	if (!json_is_object(obj))
		return aj_err(err, EINVAL, "expected a JSON object");
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v)
	{
		int r = set_json(p, k, v, 0, err);
		if (r < 0)
			return r;
	}
	return 0;
}
