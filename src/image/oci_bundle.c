/* SPDX-License-Identifier: MIT */
/* config.json (runtime-spec 1.x) -> aj_policy. What agentjail always does
 * itself (every namespace, its user namespace and id map, /proc, /dev,
 * /etc/hosts and resolv.conf, its seccomp filter, Landlock, capabilities)
 * is accepted as asked or stronger; what it cannot honour is refused with
 * the field's name, never dropped (docs/oci.md). */
#include "oci_bundle.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "util.h"

#define OCI_FIX "see docs/oci.md for what agentjail oci supports"

static int refuse(aj_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(aj_error *err, const char *fmt, ...)
{
	char msg[AJ_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	aj_err(err, EINVAL, "config.json: %s", msg);
	aj_err_hint(err, OCI_FIX);
	return -EINVAL;
}

/* A field that must be absent, null or empty to be honoured. */
static bool empty(const json_t *v)
{
	return !v || json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0) ||
	       (json_is_object(v) && json_object_size(v) == 0);
}

static int want_type(const json_t *v, json_type t, const char *field, aj_error *err)
{
	static const char *const names[] = {"an object", "an array",  "a string",  "an integer",
					    "a number",	 "a boolean", "a boolean", "null"};
	if (v && json_typeof(v) != t && !(t == JSON_TRUE && json_is_boolean(v)))
		return refuse(err, "%s must be %s", field, names[t]);
	return 0;
}

static int parse_args(aj_oci_config *c, const json_t *args, aj_error *err)
{
	if (!json_is_array(args) || json_array_size(args) == 0)
		return refuse(err, "process.args must be a non-empty array");
	size_t n = json_array_size(args);
	if (!(c->argv = calloc(n + 1, sizeof(char *))))
		return aj_err(err, ENOMEM, "process.args");
	for (size_t i = 0; i < n; i++) {
		const json_t *a = json_array_get(args, i);
		if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
			return refuse(err, "process.args holds a non-string");
		if (!(c->argv[i] = strdup(json_string_value(a))))
			return aj_err(err, ENOMEM, "process.args");
	}
	c->policy.argv = c->argv;
	return 0;
}

static int parse_env(aj_policy *p, const json_t *env, aj_error *err)
{
	size_t i;
	const json_t *e;
	int r = want_type(env, JSON_ARRAY, "process.env", err);
	json_array_foreach(env, i, e)
	{
		if (r < 0)
			return r;
		const char *s = json_string_value(e);
		if (!s || !strchr(s, '=') || strlen(s) != json_string_length(e))
			return refuse(err, "process.env entry '%s' is not NAME=VALUE",
				      s ? s : "(not a string)");
		r = aj_policy_add_env(p, s, err);
	}
	return r;
}

static int parse_rlimits(aj_policy *p, const json_t *rl, aj_error *err)
{
	size_t i;
	const json_t *e;
	int r = want_type(rl, JSON_ARRAY, "process.rlimits", err);
	json_array_foreach(rl, i, e)
	{
		if (r < 0)
			return r;
		const char *type = json_string_value(json_object_get(e, "type"));
		const json_t *hard = json_object_get(e, "hard");
		if (!type || !json_is_integer(hard) || json_integer_value(hard) < 0)
			return refuse(err, "process.rlimits[] needs a type and a hard limit");
		unsigned long long v = (unsigned long long)json_integer_value(hard);
		struct rlimit cur;
		if (!strcmp(type, "RLIMIT_NOFILE")) /* a ceiling: at most the one we have */
			p->nofile = getrlimit(RLIMIT_NOFILE, &cur) == 0 && cur.rlim_max < v
					? (unsigned long long)cur.rlim_max
					: v;
		else if (!strcmp(type, "RLIMIT_FSIZE"))
			p->fsize = v;
		else if (!strcmp(type, "RLIMIT_NPROC")) {
			/* the pids cgroup bounds the whole sandbox instead */
			if (v && v < p->pids)
				p->pids = v;
		} else
			return refuse(err, "process.rlimits: %s is not supported%s", type,
				      " (RLIMIT_NOFILE, RLIMIT_FSIZE and RLIMIT_NPROC are)");
	}
	return 0;
}

static int parse_process(aj_oci_config *c, const json_t *proc, aj_error *err)
{
	aj_policy *p = &c->policy;
	int r;
	if (!json_is_object(proc))
		return refuse(err, "process must be an object");
	if ((r = parse_args(c, json_object_get(proc, "args"), err)) < 0 ||
	    (r = parse_env(p, json_object_get(proc, "env"), err)) < 0 ||
	    (r = parse_rlimits(p, json_object_get(proc, "rlimits"), err)) < 0)
		return r;
	const json_t *term = json_object_get(proc, "terminal");
	if ((r = want_type(term, JSON_TRUE, "process.terminal", err)) < 0)
		return r;
	c->terminal = json_is_true(term);
	p->tty = AJ_TTY_NEVER;
	const char *cwd = json_string_value(json_object_get(proc, "cwd"));
	if (!cwd)
		return refuse(err, "process.cwd must be an absolute path");
	if ((r = aj_policy_set_cwd(p, cwd, err)) < 0)
		return r;
	const json_t *user = json_object_get(proc, "user");
	if ((r = want_type(user, JSON_OBJECT, "process.user", err)) < 0)
		return r;
	const json_t *uid = json_object_get(user, "uid"), *gid = json_object_get(user, "gid");
	if (user && json_object_get(user, "username"))
		return refuse(err, "process.user.username is Windows-only");
	if (uid || gid) {
		char spec[64];
		if (!json_is_integer(uid) || !json_is_integer(gid))
			return refuse(err, "process.user needs integer uid and gid");
		snprintf(spec, sizeof(spec), "%lld:%lld", (long long)json_integer_value(uid),
			 (long long)json_integer_value(gid));
		if ((r = aj_policy_set_user(p, spec, err)) < 0)
			return r;
		c->user = true;
	}
	const json_t *cs = json_object_get(proc, "consoleSize");
	if ((r = want_type(cs, JSON_OBJECT, "process.consoleSize", err)) < 0)
		return r;
	json_int_t rows = json_integer_value(json_object_get(cs, "height")),
		   cols = json_integer_value(json_object_get(cs, "width"));
	if (cs && (rows < 0 || rows > 65535 || cols < 0 || cols > 65535))
		return refuse(err, "process.consoleSize must be from 0 to 65535");
	c->rows = (unsigned)rows;
	c->cols = (unsigned)cols;
	/* agentjail always sets no_new_privs, drops to its own capability set
	 * and applies its own seccomp filter and Landlock ruleset */
	const json_t *nnp = json_object_get(proc, "noNewPrivileges");
	if ((r = want_type(nnp, JSON_TRUE, "process.noNewPrivileges", err)) < 0)
		return r;
	const char *label = json_string_value(json_object_get(proc, "selinuxLabel"));
	const char *aa = json_string_value(json_object_get(proc, "apparmorProfile"));
	if ((label && *label) || (aa && *aa))
		return refuse(err, "process.%s is not supported%s",
			      label && *label ? "selinuxLabel" : "apparmorProfile",
			      " (this host's LSM profiles are not applied by agentjail)");
	return 0;
}

static int parse_root(aj_policy *p, const json_t *root, const char *bundle, aj_error *err)
{
	const char *path = json_string_value(json_object_get(root, "path"));
	if (!path || !*path)
		return refuse(err, "root.path is required");
	if ((json_object_get(root, "readonly") &&
	     !json_is_boolean(json_object_get(root, "readonly"))))
		return refuse(err, "root.readonly must be a boolean");
	p->root_readonly = json_is_true(json_object_get(root, "readonly"));
	char full[PATH_MAX];
	int n = path[0] == '/' ? snprintf(full, sizeof(full), "%s", path)
			       : snprintf(full, sizeof(full), "%s", bundle);
	if (n < 0 || (size_t)n >= sizeof(full))
		return refuse(err, "root.path %s is too long", path);
	/* relative to the bundle; "." and "./rootfs" (runtime-tools' bundles)
	   name the bundle's own directories: drop their "." components */
	for (const char *s = path; path[0] != '/' && *s;) {
		size_t len = strcspn(s, "/");
		size_t cur = strlen(full);
		if (len && !(len == 1 && s[0] == '.')) {
			n = snprintf(full + cur, sizeof(full) - cur, "/%.*s", (int)len, s);
			if (n < 0 || (size_t)n >= sizeof(full) - cur)
				return refuse(err, "root.path %s is too long", path);
		}
		s += len + (s[len] == '/');
	}
	/* read-only either way: writes go to agentjail's tmpfs overlay */
	return aj_policy_set_rootfs(p, full, err);
}

/* Mounts agentjail makes itself, whatever the bundle's options. */
static bool own_mount(const char *type, const char *dest)
{
	static const char *const own[][2] = {
	    {"proc", "/proc"},
	    {"tmpfs", "/dev"},
	    {"devpts", "/dev/pts"},
	    {"tmpfs", "/dev/shm"},
	    {"shm", "/dev/shm"},
	    {"mqueue", "/dev/mqueue"},
	    {"sysfs", "/sys"},
	    {"cgroup", "/sys/fs/cgroup"},
	    {"cgroup2", "/sys/fs/cgroup"},
	    {"tmpfs", "/tmp"},
	    {"tmpfs", "/run"},
	    {"bind", "/etc/hosts"},
	    {"bind", "/etc/resolv.conf"},
	    {"bind", "/etc/hostname"},
	    {"bind", "/dev/shm"},
	};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(own); i++)
		if (!strcmp(type, own[i][0]) && !strcmp(dest, own[i][1]))
			return true;
	return false;
}

static int parse_mount(aj_policy *p, const json_t *m, aj_error *err)
{
	const char *dest = json_string_value(json_object_get(m, "destination"));
	const char *type = json_string_value(json_object_get(m, "type"));
	const char *src = json_string_value(json_object_get(m, "source"));
	const json_t *opts = json_object_get(m, "options");
	if (!dest || (opts && !json_is_array(opts)))
		return refuse(err, "mounts[] needs a destination and options as an array");
	bool bind = type && !strcmp(type, "bind"), ro = false;
	size_t i;
	const json_t *o;
	json_array_foreach(opts, i, o)
	{
		const char *s = json_string_value(o);
		if (s && (!strcmp(s, "bind") || !strcmp(s, "rbind")))
			bind = true;
		if (s && !strcmp(s, "ro"))
			ro = true;
	}
	if (own_mount(bind ? "bind" : type ? type : "", dest))
		return 0;
	if (!bind)
		return refuse(err, "mounts: the mount of type %s at %s is not supported",
			      type ? type : "(none)", dest);
	if (!src || strchr(src, ':') || strchr(dest, ':'))
		return refuse(err, "mounts: the bind mount at %s needs a source without ':'", dest);
	_cleanup_free_ char *spec = NULL;
	if (asprintf(&spec, "%s:%s", src, dest) < 0)
		return aj_err(err, ENOMEM, "mounts");
	return aj_policy_add_bind(p, spec, !ro, err);
}

static int parse_namespaces(aj_oci_config *c, const json_t *ns, aj_error *err)
{
	static const char *const known[] = {"pid",   "network", "ipc",	 "uts",
					    "mount", "user",	"cgroup"};
	size_t i;
	const json_t *e;
	int r = want_type(ns, JSON_ARRAY, "linux.namespaces", err);
	json_array_foreach(ns, i, e)
	{
		if (r < 0)
			return r;
		const char *type = json_string_value(json_object_get(e, "type"));
		bool ok = false;
		for (size_t k = 0; type && k < AJ_ARRAY_SIZE(known); k++)
			ok |= !strcmp(type, known[k]);
		if (!ok)
			return refuse(err, "linux.namespaces: %s is not supported%s",
				      type ? type : "(no type)",
				      " (pid, network, ipc, uts, mount, user and cgroup are)");
		const json_t *pv = json_object_get(e, "path");
		const char *path = json_string_value(pv);
		if (pv && !json_is_null(pv) && !path)
			return refuse(err, "linux.namespaces: a path must be a string");
		if (!path || !*path)
			continue;
		/* an engine's network (Podman's default): joined, walled (net.h);
		 * a pod's ipc and uts (the CRI's pause container): joined as
		 * they are (cmd_oci.c, nsjoin.h checks their type) */
		char **slot = !strcmp(type, "network") ? &c->netns
			      : !strcmp(type, "ipc")   ? &c->ipcns
			      : !strcmp(type, "uts")   ? &c->utsns
						       : NULL;
		if (slot && path[0] == '/' && !*slot) {
			if (!(*slot = strdup(path)))
				return aj_err(err, ENOMEM, "linux.namespaces");
			continue;
		}
		refuse(err, "linux.namespaces: joining the %s namespace at %s is not supported",
		       type, path);
		if (!strcmp(type, "pid"))
			aj_err_hint(err,
				    "agentjail's own init is pid 1 of every container's pid "
				    "namespace (it reaps, forwards signals, starts exec's "
				    "commands and takes every process with it); a pod sharing "
				    "one (shareProcessNamespace) is not supported (" OCI_FIX ")");
		else
			aj_err_hint(err,
				    "agentjail makes its own %s namespace for every container; "
				    "only network, ipc and uts namespaces are joined, once each, "
				    "by an absolute path (" OCI_FIX ")",
				    type);
		return -EINVAL;
	}
	return 0;
}

/* linux.resources' memory, pids and cpu fields: applied (A), taken with
 * nothing to do (T: a sandbox never swaps), or refused when set (R). An
 * update applies the A fields and takes memory.swap; a field not known
 * here is refused, never passed over. */
static const struct res_field {
	const char *obj, *name;
	char kind;
} res_fields[] = {
    {"memory", "limit", 'A'},
    {"memory", "reservation", 'A'},
    {"memory", "swap", 'T'},
    {"memory", "swappiness", 'T'},
    {"memory", "useHierarchy", 'T'},
    {"memory", "checkBeforeUpdate", 'T'},
    {"memory", "kernel", 'R'},
    {"memory", "kernelTCP", 'R'},
    {"memory", "disableOOMKiller", 'R'},
    {"pids", "limit", 'A'},
    {"cpu", "shares", 'A'},
    {"cpu", "quota", 'A'},
    {"cpu", "period", 'A'},
    {"cpu", "cpus", 'A'},
    {"cpu", "mems", 'A'},
    {"cpu", "realtimeRuntime", 'R'},
    {"cpu", "realtimePeriod", 'R'},
    {"cpu", "idle", 'R'},
    {"cpu", "burst", 'R'},
};

/* Set: not null, 0, false or "" (runc's "not given"). */
static bool res_set(const json_t *v)
{
	return !(json_is_null(v) || (json_is_integer(v) && json_integer_value(v) == 0) ||
		 json_is_false(v) || (json_is_string(v) && !*json_string_value(v)));
}

/* cpu.cpus / mems: a strict list (the host's own cpus are checked where
 * the cgroup is, cgroup.c), kept as given. */
static int res_cpulist(const json_t *v, const char *name, char **out, aj_error *err)
{
	aj_cpulist l;
	const char *s = json_string_value(v);
	if (!s)
		return refuse(err, "linux.resources.cpu.%s must be a string", name);
	if (!*s)
		return 0;
	int r = aj_cpulist_parse(s, false, &l);
	if (r == -ERANGE)
		return refuse(err, "linux.resources.cpu.%s \"%s\" names a %s above %d", name, s,
			      strcmp(name, "cpus") ? "memory node" : "cpu", AJ_CPULIST_MAX - 1);
	if (r < 0)
		return refuse(err,
			      "linux.resources.cpu.%s \"%s\" is not a list of %s (ids and "
			      "ranges joined by commas, e.g. 0-3,6)",
			      name, s, strcmp(name, "cpus") ? "memory nodes" : "cpus");
	free(*out);
	return (*out = strdup(s)) ? 0 : aj_err(err, ENOMEM, "linux.resources.cpu.%s", name);
}

/* The cpu quota with its period as agentjail's thousandths of a CPU. */
static int res_quota(aj_policy *p, const json_t *cpu, aj_error *err)
{
	const json_t *q = json_object_get(cpu, "quota"), *per = json_object_get(cpu, "period");
	long long qv = json_integer_value(q), pv = json_integer_value(per);
	if (qv > 0 && pv <= 0)
		return refuse(err, "linux.resources.cpu: a quota needs a period");
	/* agentjail's cpu limit is in thousandths of a CPU, up to 4096: a
	 * quota it cannot express is refused, never dropped */
	bool big = qv > 0 && (qv / pv > 4096 || (qv / pv == 4096 && qv % pv));
	bool small = qv > 0 && qv <= LLONG_MAX / 1000 && qv * 1000 < pv;
	if (big)
		return refuse(err,
			      "linux.resources.cpu.quota %lld is more than 4096 CPUs of its "
			      "period %lld",
			      qv, pv);
	if (small)
		return refuse(err,
			      "linux.resources.cpu.quota %lld is less than 0.001 CPU of its "
			      "period %lld (agentjail's smallest cpu limit)",
			      qv, pv);
	if (qv > 0)
		p->cpu_millis = qv <= LLONG_MAX / 1000
				    ? (unsigned long long)(qv * 1000 / pv)
				    : (unsigned long long)((long double)qv * 1000 / pv);
	return 0;
}

/* One applied field's value into p. update: a limit of 0 or below is
 * refused (a sandbox always has its limits); create: left to the default. */
static int res_apply(aj_policy *p, const char *obj, const char *name, const json_t *v, bool update,
		     aj_error *err)
{
	if (!strcmp(name, "cpus"))
		return res_cpulist(v, name, &p->cpuset_cpus, err);
	if (!strcmp(name, "mems"))
		return res_cpulist(v, name, &p->cpuset_mems, err);
	if (!json_is_integer(v))
		return refuse(err, "linux.resources.%s.%s must be an integer", obj, name);
	long long n = json_integer_value(v);
	if (update && n <= 0)
		return refuse(err,
			      "linux.resources.%s.%s must be above 0 (a sandbox always has its "
			      "limits)",
			      obj, name);
	if (!strcmp(name, "shares") && n && (n < 2 || n > 262144))
		return refuse(err, "linux.resources.cpu.shares %lld is out of range (2-262144)", n);
	if (!strcmp(name, "reservation") && n < -1)
		return refuse(err, "linux.resources.memory.reservation %lld is below 0", n);
	if (n <= 0)
		return 0; /* create: 0 or -1, none (runc's "not set", "unlimited") */
	if (!strcmp(obj, "memory"))
		*(!strcmp(name, "limit") ? &p->memory : &p->memory_low) = (unsigned long long)n;
	else if (!strcmp(obj, "pids"))
		p->pids = (unsigned long long)n;
	else if (!strcmp(name, "shares"))
		p->cpu_shares = (unsigned long long)n;
	return 0; /* quota and period: res_quota */
}

/* linux.resources (create) or update --resources' object into p. */
static int parse_resources(aj_policy *p, const json_t *res, bool update, aj_error *err)
{
	if (want_type(res, JSON_OBJECT, "linux.resources", err) < 0)
		return -EINVAL;
	const char *key, *sk;
	const json_t *v, *sv;
	json_object_foreach((json_t *)res, key, v)
	{
		if (!strcmp(key, "devices") || empty(v))
			continue; /* agentjail's /dev holds only its few safe nodes */
		if (strcmp(key, "memory") && strcmp(key, "pids") && strcmp(key, "cpu"))
			return refuse(err, "linux.resources.%s is not supported%s", key,
				      " (memory, pids and cpu are)");
		if (!json_is_object(v))
			return refuse(err, "linux.resources.%s must be an object", key);
		json_object_foreach((json_t *)v, sk, sv)
		{
			char kind = 0;
			for (size_t i = 0; i < AJ_ARRAY_SIZE(res_fields); i++)
				if (!strcmp(key, res_fields[i].obj) &&
				    !strcmp(sk, res_fields[i].name))
					kind = res_fields[i].kind;
			if (json_is_null(sv) || (kind == 'T' && !update))
				continue;
			if (update && kind != 'A' && strcmp(sk, "swap"))
				return refuse(err,
					      "linux.resources.%s.%s is not applied by agentjail "
					      "(memory.limit and reservation, pids.limit, "
					      "cpu.shares, quota with period, cpus and mems are)",
					      key, sk);
			if (kind == 'R' && res_set(sv))
				return refuse(err, "linux.resources.%s.%s is not supported", key,
					      sk);
			if (!kind)
				return refuse(err, "linux.resources.%s.%s is not supported", key,
					      sk);
			if (kind == 'T' && !json_is_integer(sv))
				return refuse(err, "linux.resources.%s.%s must be an integer", key,
					      sk);
			int r = kind == 'A' ? res_apply(p, key, sk, sv, update, err) : 0;
			if (r < 0)
				return r;
		}
		if (!strcmp(key, "cpu") && res_quota(p, v, err) < 0)
			return -EINVAL;
		const json_t *q = json_object_get(v, "quota"), *per = json_object_get(v, "period");
		if (update && !strcmp(key, "cpu") && json_is_integer(per) && !json_is_integer(q))
			return refuse(err, "linux.resources.cpu.period without a quota changes "
					   "nothing");
	}
	return 0;
}

int aj_oci_resources_parse(const char *text, size_t len, aj_policy *p, aj_error *err)
{
	json_error_t je;
	json_t *res = json_loadb(text, len, 0, &je);
	if (!res) {
		int r = aj_err(err, EINVAL, "the resources are not valid JSON: %s (line %d)",
			       je.text, je.line);
		aj_err_hint(err, "a runtime-spec linux.resources object, e.g. "
				 "{\"memory\":{\"limit\":268435456}}");
		err->exit = AJ_EXIT_INTERNAL;
		return r;
	}
	p->memory = p->pids = p->cpu_millis = 0;
	int r = parse_resources(p, res, true, err);
	json_decref(res);
	if (r < 0 && aj_startswith(err->msg, "config.json: linux.")) {
		char msg[AJ_ERR_MSG_MAX];
		snprintf(msg, sizeof(msg), "update --resources: %s", err->msg + 19);
		snprintf(err->msg, sizeof(err->msg), "%s", msg);
	}
	return r;
}

/* maskedPaths and readonlyPaths: agentjail mounts no /sys, and its /proc
 * belongs to a user namespace without host privilege (docs/oci.md). */
static int parse_paths(const json_t *a, const char *field, aj_error *err)
{
	size_t i;
	const json_t *e;
	if (want_type(a, JSON_ARRAY, field, err) < 0)
		return -EINVAL;
	json_array_foreach(a, i, e)
	{
		const char *s = json_string_value(e);
		if (!s || (strncmp(s, "/proc/", 6) && strncmp(s, "/sys/", 5)))
			return refuse(err,
				      "linux.%s: %s is not supported (only /proc "
				      "and /sys entries are)",
				      field, s ? s : "(not a string)");
	}
	return 0;
}

/* An OCI action (SCMP_ACT_*) as the --seccomp-profile format's; NULL: not
 * supported (a tracer or a user-space notifier agentjail does not run). */
static const char *seccomp_action(const char *a)
{
	static const char *const map[][2] = {
	    {"SCMP_ACT_ALLOW", "allow"},      {"SCMP_ACT_ERRNO", "errno"},
	    {"SCMP_ACT_KILL", "kill"},	      {"SCMP_ACT_KILL_PROCESS", "kill"},
	    {"SCMP_ACT_KILL_THREAD", "kill"}, {"SCMP_ACT_TRAP", "trap"},
	    {"SCMP_ACT_LOG", "log"},
	};
	for (size_t i = 0; a && i < AJ_ARRAY_SIZE(map); i++)
		if (!strcmp(a, map[i][0]))
			return map[i][1];
	return NULL;
}

static int seccomp_errno(const json_t *v, json_t *out, const char *key, aj_error *err)
{
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 4095)
		return refuse(err, "linux.seccomp: an errnoRet must be from 1 to 4095");
	return json_object_set_new(out, key, json_integer(json_integer_value(v))) ? -ENOMEM : 0;
}

/* One args[] condition: OCI's masked_eq compares (arg & value) with valueTwo. */
static json_t *seccomp_arg(const json_t *a)
{
	static const char *const ops[][2] = {
	    {"SCMP_CMP_EQ", "eq"},
	    {"SCMP_CMP_NE", "ne"},
	    {"SCMP_CMP_LT", "lt"},
	    {"SCMP_CMP_LE", "le"},
	    {"SCMP_CMP_GT", "gt"},
	    {"SCMP_CMP_GE", "ge"},
	    {"SCMP_CMP_MASKED_EQ", "masked_eq"},
	};
	const char *op = json_string_value(json_object_get(a, "op"));
	json_t *idx = json_object_get(a, "index"), *v = json_object_get(a, "value"),
	       *v2 = json_object_get(a, "valueTwo");
	for (size_t i = 0; op && i < AJ_ARRAY_SIZE(ops); i++) {
		if (strcmp(op, ops[i][0]))
			continue;
		bool masked = !strcmp(ops[i][1], "masked_eq");
		/* valueTwo is omitted when 0 (runtime-spec's Go types: omitempty) */
		if (!json_is_integer(idx) || !json_is_integer(v) ||
		    (masked && v2 && !json_is_integer(v2)))
			return NULL;
		return masked ? json_pack("{s:O, s:s, s:O, s:I}", "index", idx, "op", ops[i][1],
					  "mask", v, "value",
					  (json_int_t)(v2 ? json_integer_value(v2) : 0))
			      : json_pack("{s:O, s:s, s:O}", "index", idx, "op", ops[i][1], "value",
					  v);
	}
	return NULL;
}

/* Appends rule r; when two of its conditions test the same argument
 * (Docker's personality rule), one rule for each condition, as runc does:
 * libseccomp takes one condition per argument and rule. */
static int seccomp_append(json_t *rules, const json_t *r, aj_error *err)
{
	const json_t *args = json_object_get(r, "args"), *c;
	unsigned seen = 0;
	bool split = false;
	size_t i;
	json_array_foreach(args, i, c)
	{
		json_int_t idx = json_integer_value(json_object_get(c, "index"));
		if (idx >= 0 && idx < 32) {
			split |= (seen >> idx) & 1u;
			seen |= 1u << idx;
		}
	}
	if (!split)
		return json_array_append(rules, (json_t *)r) < 0
			   ? aj_err(err, ENOMEM, "linux.seccomp")
			   : 0;
	json_array_foreach(args, i, c)
	{
		json_t *one = json_deep_copy(r);
		if (!one || json_object_set_new(one, "args", json_pack("[O]", c)) < 0) {
			json_decref(one);
			return aj_err(err, ENOMEM, "linux.seccomp");
		}
		if (json_array_append_new(rules, one) < 0) /* takes one, even on failure */
			return aj_err(err, ENOMEM, "linux.seccomp");
	}
	return 0;
}

/* One syscalls[] rule. Names this libseccomp does not know are left out
 * of a rule that allows (nothing is granted by leaving them out) and
 * refused in any other. */
static int seccomp_rule(const json_t *e, json_t *rules, aj_error *err)
{
	const char *a = json_string_value(json_object_get(e, "action"));
	const char *act = seccomp_action(a);
	const json_t *names = json_object_get(e, "names"), *args = json_object_get(e, "args");
	if (!act)
		return refuse(err, "linux.seccomp: action %s is not supported", a ? a : "(none)");
	if (!json_is_array(names) || (args && !json_is_array(args)))
		return refuse(err, "linux.seccomp: syscalls[] needs names (and args) as arrays");
	json_t *r = json_pack("{s:s, s:[], s:[]}", "action", act, "names", "args");
	if (!r)
		return aj_err(err, ENOMEM, "linux.seccomp");
	int rc = seccomp_errno(json_object_get(e, "errnoRet"), r, "errno", err);
	size_t i;
	const json_t *n;
	json_array_foreach(names, i, n)
	{
		const char *name = json_string_value(n);
		bool known = name && seccomp_syscall_resolve_name(name) != __NR_SCMP_ERROR;
		if (rc == 0 && !known && strcmp(act, "allow"))
			rc = refuse(err, "linux.seccomp: syscall %s is not known here",
				    name ? name : "(not a string)");
		if (rc == 0 && known)
			json_array_append_new(json_object_get(r, "names"), json_string(name));
	}
	json_array_foreach(args, i, n)
	{
		json_t *c = rc == 0 ? seccomp_arg(n) : NULL;
		if (rc == 0 && !c)
			rc = refuse(
			    err, "linux.seccomp: syscalls[].args[%zu] is not a valid condition", i);
		if (c)
			json_array_append_new(json_object_get(r, "args"), c);
	}
	if (rc == 0 && json_array_size(json_object_get(r, "names")) > 0)
		rc = seccomp_append(rules, r, err);
	json_decref(r);
	return rc;
}

/* linux.seccomp, as a second filter on top of agentjail's own (policy's
 * seccomp_stack, in the --seccomp-profile format). */
static int parse_seccomp(aj_policy *p, const json_t *sc, aj_error *err)
{
	if (!json_is_object(sc))
		return refuse(err, "linux.seccomp must be an object");
	const char *lp = json_string_value(json_object_get(sc, "listenerPath"));
	if (lp && *lp)
		return refuse(err, "linux.seccomp.listenerPath (a notifier) is not supported");
	const char *def = seccomp_action(json_string_value(json_object_get(sc, "defaultAction")));
	const json_t *calls = json_object_get(sc, "syscalls");
	if (!def || (calls && !json_is_array(calls)))
		return refuse(err, "linux.seccomp needs a supported defaultAction (and syscalls "
				   "as an array)");
	json_t *out = json_pack("{s:s, s:[]}", "default_action", def, "syscalls");
	int r =
	    out ? seccomp_errno(json_object_get(sc, "defaultErrnoRet"), out, "default_errno", err)
		: aj_err(err, ENOMEM, "linux.seccomp");
	size_t i;
	const json_t *e;
	json_array_foreach(calls, i, e)
	{
		if (r < 0)
			break;
		r = seccomp_rule(e, json_object_get(out, "syscalls"), err);
	}
	if (r == 0) {
		free(p->seccomp_stack);
		if (!(p->seccomp_stack = json_dumps(out, JSON_COMPACT)))
			r = aj_err(err, ENOMEM, "linux.seccomp");
	}
	json_decref(out);
	return r;
}

/* Sysctls: only namespaced ones that change nothing outside the
 * container (Kubernetes' safe set and the ipc namespace's limits), set by
 * `oci create` in its network and ipc namespaces; Podman's
 * ping_group_range (ping sockets) is left unset, so stricter; any other is
 * refused by name. */
static int parse_sysctl(aj_oci_config *c, const json_t *sc, aj_error *err)
{
	static const char *const safe[] = {"net.ipv4.ip_local_port_range",
					   "net.ipv4.ip_local_reserved_ports",
					   "net.ipv4.ip_unprivileged_port_start",
					   "net.ipv4.tcp_syncookies",
					   "net.ipv4.tcp_keepalive_time",
					   "net.ipv4.tcp_keepalive_intvl",
					   "net.ipv4.tcp_keepalive_probes",
					   "net.ipv4.tcp_fin_timeout",
					   "kernel.shm_rmid_forced",
					   "kernel.shmmax",
					   "kernel.shmall",
					   "kernel.shmmni",
					   "kernel.msgmax",
					   "kernel.msgmnb",
					   "kernel.msgmni",
					   "kernel.sem"};
	const char *key;
	const json_t *v;
	if (!sc || json_is_null(sc))
		return 0;
	if (want_type(sc, JSON_OBJECT, "linux.sysctl", err) < 0)
		return -EINVAL;
	json_t *keep = json_object();
	if (!keep)
		return aj_err(err, ENOMEM, "linux.sysctl");
	json_object_foreach((json_t *)sc, key, v)
	{
		if (!strcmp(key, "net.ipv4.ping_group_range"))
			continue;
		bool ok = false;
		for (size_t i = 0; i < AJ_ARRAY_SIZE(safe); i++)
			ok = ok || !strcmp(key, safe[i]);
		const char *val = json_string_value(v);
		if (!ok) {
			json_decref(keep);
			return refuse(err,
				      "linux.sysctl: %s is not supported (only namespaced ones "
				      "that change nothing outside the container: docs/oci.md)",
				      key);
		}
		if (!val || !*val || strlen(val) > 64 ||
		    strspn(val, "0123456789 \t,-") != strlen(val)) {
			json_decref(keep);
			return refuse(err, "linux.sysctl: %s: the value must be numbers", key);
		}
		json_object_set(keep, key, (json_t *)v);
	}
	if (json_object_size(keep) && !(c->sysctl = json_dumps(keep, JSON_COMPACT))) {
		json_decref(keep);
		return aj_err(err, ENOMEM, "linux.sysctl");
	}
	json_decref(keep);
	return 0;
}

/* linux.devices: agentjail's /dev has its own few nodes; a bundle listing
 * those same ones (runc's default set) is taken, any other is refused. */
static int parse_devices(const json_t *devs, aj_error *err)
{
	static const struct {
		const char *path;
		long long major, minor;
	} known[] = {{"/dev/null", 1, 3},   {"/dev/zero", 1, 5},    {"/dev/full", 1, 7},
		     {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}};
	size_t i;
	const json_t *d;
	if (!devs || json_is_null(devs))
		return 0;
	if (want_type(devs, JSON_ARRAY, "linux.devices", err) < 0)
		return -EINVAL;
	json_array_foreach(devs, i, d)
	{
		const char *path = json_string_value(json_object_get(d, "path"));
		const char *type = json_string_value(json_object_get(d, "type"));
		long long ma = json_integer_value(json_object_get(d, "major"));
		long long mi = json_integer_value(json_object_get(d, "minor"));
		bool ok = false;
		for (size_t k = 0; path && type && k < AJ_ARRAY_SIZE(known); k++)
			ok = ok || (!strcmp(path, known[k].path) && !strcmp(type, "c") &&
				    ma == known[k].major && mi == known[k].minor);
		if (!ok)
			return refuse(err,
				      "linux.devices: %s is not supported (agentjail's /dev has "
				      "only null, zero, full, random, urandom and tty)",
				      path ? path : "an entry without a path");
	}
	return 0;
}

static int parse_linux(aj_oci_config *c, const json_t *lx, aj_error *err)
{
	int r;
	if (!lx)
		return 0;
	if (!json_is_object(lx))
		return refuse(err, "linux must be an object");
	aj_policy *p = &c->policy;
	if ((r = parse_namespaces(c, json_object_get(lx, "namespaces"), err)) < 0 ||
	    (r = parse_resources(&c->policy, json_object_get(lx, "resources"), false, err)) < 0 ||
	    (r = parse_paths(json_object_get(lx, "maskedPaths"), "maskedPaths", err)) < 0 ||
	    (r = parse_paths(json_object_get(lx, "readonlyPaths"), "readonlyPaths", err)) < 0)
		return r;
	if ((r = parse_sysctl(c, json_object_get(lx, "sysctl"), err)) < 0 ||
	    (r = parse_devices(json_object_get(lx, "devices"), err)) < 0)
		return r;
	const json_t *sc = json_object_get(lx, "seccomp");
	if (sc && !json_is_null(sc) && (r = parse_seccomp(p, sc, err)) < 0)
		return r;
	static const char *const refused[] = {"intelRdt", "personality", "timeOffsets",
					      "mountLabel"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(refused); i++) {
		const json_t *v = json_object_get(lx, refused[i]);
		if (!empty(v) && !(json_is_string(v) && !*json_string_value(v))) {
			return refuse(err, "linux.%s is not supported", refused[i]);
		}
	}
	/* uidMappings, gidMappings, cgroupsPath, rootfsPropagation,
	 * maskedPaths: agentjail's own (its user namespace and id map, its
	 * cgroup below its own, private mounts) */
	return 0;
}

/* run.agentjail.OPTION annotations: the network options of `agentjail run`
 * (lists comma-separated); other run.agentjail.* names are refused. */
static int parse_annotations(aj_policy *p, const json_t *ann, aj_error *err)
{
	static const char *const opts[] = {"net", "allow", "deny", "dns", "disk", "timeout"};
	const char *key;
	const json_t *v;
	if (want_type(ann, JSON_OBJECT, "annotations", err) < 0)
		return -EINVAL;
	json_object_foreach((json_t *)ann, key, v)
	{
		if (strncmp(key, "run.agentjail.", 14))
			continue;
		const char *name = key + 14, *s = json_string_value(v);
		bool ok = false;
		for (size_t i = 0; i < AJ_ARRAY_SIZE(opts); i++)
			ok |= !strcmp(name, opts[i]);
		if (!ok || !s || strlen(s) != json_string_length(v))
			return refuse(err, "annotation %s%s is not supported", key,
				      ok ? " (its value must be a string)" : "");
		_cleanup_free_ char *copy = strdup(s);
		if (!copy)
			return aj_err(err, ENOMEM, "annotations");
		bool list = !strcmp(name, "allow") || !strcmp(name, "deny");
		char *save = NULL;
		for (char *t = list ? strtok_r(copy, ", ", &save) : copy; t;
		     t = list ? strtok_r(NULL, ", ", &save) : NULL) {
			int r = aj_policy_set(p, name, t, AJ_POLICY_SET_REMOTE, err);
			if (r < 0) {
				aj_err_prefix(err, "annotation %s", key);
				return r;
			}
		}
	}
	return 0;
}

/* hooks: the runtime's own kinds are run by `oci create`, `start` and
 * `delete` (cmd_oci.c); the two run inside the container's namespaces
 * are refused. Each hook: an absolute path, args, env, a timeout. */
static int parse_hooks(aj_oci_config *c, const json_t *h, aj_error *err)
{
	static const char *const kinds[] = {"prestart", "createRuntime", "poststart", "poststop"};
	if (empty(h))
		return 0;
	if (!json_is_object(h))
		return refuse(err, "hooks must be an object");
	const char *kind;
	const json_t *list;
	json_object_foreach((json_t *)h, kind, list)
	{
		bool ok = false;
		for (size_t i = 0; i < AJ_ARRAY_SIZE(kinds); i++)
			ok |= !strcmp(kind, kinds[i]);
		if (!ok && empty(list))
			continue;
		if (!ok)
			return refuse(err, "hooks.%s is not supported%s", kind,
				      " (prestart, createRuntime, poststart and poststop are)");
		if (!json_is_array(list))
			return refuse(err, "hooks.%s must be an array", kind);
		size_t i;
		const json_t *e;
		json_array_foreach(list, i, e)
		{
			const char *path = json_string_value(json_object_get(e, "path"));
			const json_t *args = json_object_get(e, "args"),
				     *env = json_object_get(e, "env"),
				     *to = json_object_get(e, "timeout");
			if (!path || path[0] != '/')
				return refuse(err, "hooks.%s[%zu].path must be an absolute path",
					      kind, i);
			if ((args && !json_is_array(args)) || (env && !json_is_array(env)) ||
			    (to && (!json_is_integer(to) || json_integer_value(to) <= 0 ||
				    json_integer_value(to) > 3600)))
				return refuse(err,
					      "hooks.%s[%zu]: args and env must be arrays, timeout "
					      "from 1 to 3600 seconds",
					      kind, i);
			size_t k;
			const json_t *a;
			json_array_foreach(args, k, a)
			{
				if (!json_is_string(a) ||
				    strlen(json_string_value(a)) != json_string_length(a))
					return refuse(err, "hooks.%s[%zu].args holds a non-string",
						      kind, i);
			}
			json_array_foreach(env, k, a)
			{
				const char *s = json_string_value(a);
				if (!s || !strchr(s, '=') || strlen(s) != json_string_length(a))
					return refuse(err,
						      "hooks.%s[%zu].env entry is not NAME=VALUE",
						      kind, i);
			}
		}
	}
	if (!(c->hooks = json_dumps(h, JSON_COMPACT)))
		return aj_err(err, ENOMEM, "hooks");
	return 0;
}

static int parse_top(aj_oci_config *c, const json_t *root, const char *bundle, aj_error *err)
{
	aj_policy *p = &c->policy;
	int r;
	const char *ver = json_string_value(json_object_get(root, "ociVersion"));
	if (!ver || strncmp(ver, "1.", 2))
		return refuse(err, "ociVersion %s is not 1.x", ver ? ver : "(none)");
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)root, key, v)
	{
		if (!strcmp(key, "hooks") && (r = parse_hooks(c, v, err)) < 0)
			return r;
		if ((!strcmp(key, "solaris") || !strcmp(key, "windows") || !strcmp(key, "vm") ||
		     !strcmp(key, "zos")) &&
		    !empty(v))
			return refuse(err, "%s is not supported on Linux", key);
	}
	if ((r = parse_process(c, json_object_get(root, "process"), err)) < 0 ||
	    (r = parse_root(p, json_object_get(root, "root"), bundle, err)) < 0)
		return r;
	const char *host = json_string_value(json_object_get(root, "hostname"));
	if (host && *host && (r = aj_policy_set_hostname(p, host, err)) < 0)
		return r;
	const json_t *mounts = json_object_get(root, "mounts");
	size_t i;
	const json_t *m;
	if ((r = want_type(mounts, JSON_ARRAY, "mounts", err)) < 0)
		return r;
	json_array_foreach(mounts, i, m)
	{
		if ((r = parse_mount(p, m, err)) < 0)
			return r;
	}
	if ((r = parse_linux(c, json_object_get(root, "linux"), err)) < 0 ||
	    (r = parse_annotations(p, json_object_get(root, "annotations"), err)) < 0)
		return r;
	/* a network namespace to join: agentjail's wall in it, or (net open)
	 * the engine's network as it is; agentjail's proxy and its lists need
	 * its own namespace */
	if (c->netns) {
		if (p->n_allow || p->n_deny || p->dns.family || p->n_publish ||
		    (p->net != AJ_NET_NONE && p->net != AJ_NET_OPEN))
			return refuse(err,
				      "run.agentjail.allow, deny and dns need agentjail's own "
				      "network namespace, not the engine's at %s (fix: podman "
				      "--network none)",
				      c->netns);
		c->netns_open = p->net == AJ_NET_OPEN;
		p->net = AJ_NET_NONE;
		p->net_inherit = true;
	}
	p->ipc_inherit = c->ipcns != NULL;
	p->uts_inherit = c->utsns != NULL;
	return aj_policy_validate(p, err);
}

int aj_oci_config_parse(const char *text, size_t len, const char *bundle, aj_oci_config *c,
			aj_error *err)
{
	memset(c, 0, sizeof(*c));
	aj_policy_init(&c->policy);
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	int r;
	if (!root) {
		aj_err(err, EINVAL, "config.json is not valid JSON: %s (line %d)", je.text,
		       je.line);
		aj_err_hint(err, "fix the bundle's config.json (runtime-spec 1.x)");
		r = -EINVAL;
	} else if (!json_is_object(root)) {
		r = refuse(err, "the top level must be a JSON object");
	} else {
		r = parse_top(c, root, bundle, err);
		/* runc's containers have every controller: `oci update` may set
		 * a cpu weight or cpuset the bundle did not */
		c->policy.cgroup_all = true;
	}
	json_decref(root);
	if (r < 0)
		aj_oci_config_free(c);
	return r;
}

int aj_oci_process_parse(const char *text, size_t len, aj_oci_config *c, aj_error *err)
{
	memset(c, 0, sizeof(*c));
	aj_policy_init(&c->policy);
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	int r;
	if (!root) {
		aj_err(err, EINVAL, "the process file is not valid JSON: %s (line %d)", je.text,
		       je.line);
		aj_err_hint(err, "a runtime-spec process object, as config.json's process");
		r = -EINVAL;
	} else {
		r = parse_process(c, root, err);
	}
	json_decref(root);
	if (r < 0)
		aj_oci_config_free(c);
	return r;
}

void aj_oci_config_free(aj_oci_config *c)
{
	c->policy.argv = NULL;
	aj_policy_free(&c->policy);
	aj_policy_init(&c->policy);
	aj_strv_free(c->argv);
	c->argv = NULL;
	free(c->netns);
	c->netns = NULL;
	free(c->ipcns);
	c->ipcns = NULL;
	free(c->utsns);
	c->utsns = NULL;
	free(c->hooks);
	c->hooks = NULL;
	free(c->sysctl);
	c->sysctl = NULL;
}
