/* SPDX-License-Identifier: MIT */
/* The compiled plan: aj_policy -> what the sandbox will be (plan.h). It
 * lives in the process backend, not in core, because the lists it prints
 * are owned here and in src/linux: the host /etc entries and synthesized
 * files (etc.c), the default masks (mask.c), the workspace guard's names
 * (protect.c), the default seccomp profile's denials (seccomp.c) and the
 * Landlock rules (landlock.c). */
#include "plan.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etc.h"
#include "landlock.h"
#include "mask.h"
#include "mount.h"
#include "net_addr.h"
#include "protect.h"
#include "sysfilter.h"
#include "util.h"

const char *const aj_plan_system_dirs[] = {"/usr",   "/bin",   "/sbin",	 "/lib",
					   "/lib32", "/lib64", "/libx32"};
const size_t aj_plan_system_dirs_n = AJ_ARRAY_SIZE(aj_plan_system_dirs);

static const char *const dev_nodes[] = {"/dev/null",   "/dev/zero",    "/dev/full",
					"/dev/random", "/dev/urandom", "/dev/tty"};

static int add(aj_plan *pl, aj_plan_role role, const char *src, const char *dest, bool ro,
	       aj_error *err)
{
	if (pl->n >= AJ_PLAN_MAX_MOUNTS)
		return aj_err(err, E2BIG, "too many mounts (at most %d)", AJ_PLAN_MAX_MOUNTS);
	pl->m[pl->n++] = (aj_plan_mount){.role = role, .source = src, .target = dest, .ro = ro};
	return 0;
}

int aj_plan_mounts(const aj_policy *p, aj_plan *pl, aj_error *err)
{
	int r = 0;
	pl->n = 0;
	if (p->rootfs) {
		r = add(pl, AJ_PLAN_ROOTFS, p->rootfs, "/", true, err);
	} else {
		for (size_t i = 0; r == 0 && i < aj_plan_system_dirs_n; i++)
			r = add(pl, AJ_PLAN_SYSTEM, aj_plan_system_dirs[i], aj_plan_system_dirs[i],
				true, err);
		for (size_t i = 0; r == 0 && i < aj_etc_allowed_n; i++)
			r = add(pl, AJ_PLAN_ETC_HOST, aj_etc_allowed[i], aj_etc_allowed[i], true,
				err);
		if (r == 0)
			r = add(pl, AJ_PLAN_ETC_GLOB, "/etc", "/etc", true, err);
	}
	for (size_t i = 0; r == 0 && i < AJ_ARRAY_SIZE(dev_nodes); i++)
		r = add(pl, AJ_PLAN_DEV_NODE, dev_nodes[i], dev_nodes[i], false, err);
	if (r == 0 && p->workspace)
		r = add(pl, AJ_PLAN_WORKSPACE, p->workspace, AJ_WORKSPACE_DIR, false, err);
	for (size_t i = 0; r == 0 && i < p->n_binds; i++)
		r = add(pl, AJ_PLAN_BIND, p->binds[i].src, p->binds[i].dest, !p->binds[i].writable,
			err);
	return r;
}

/* --- JSON --------------------------------------------------------------- */

static void push_mount(json_t *a, const char *src, const char *dest, const char *type,
		       const char *opts, bool ro, const char *what)
{
	json_t *o = json_array();
	_cleanup_free_ char *copy = strdup(opts ? opts : "");
	char *save = NULL;
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
		json_array_append_new(o, json_string(t));
	json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:o,s:b,s:s}", "source", src, "target",
					   dest, "type", type, "flags", o, "ro", ro, "what", what));
}

/* A host entry as the run plans it: a symlink is copied as a link, a
 * missing optional one is skipped (mount_plan.c, plan_host_path). */
static void push_host(json_t *a, const char *path, bool recursive, const char *what)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			return;
		target[n] = '\0';
		json_array_append_new(a,
				      json_pack("{s:s,s:s,s:s,s:b,s:s}", "source", target, "target",
						path, "type", "symlink", "ro", 1, "what", what));
		return;
	}
	if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
		push_mount(a, path, path, "bind",
			   recursive ? "rbind,ro,nosuid,nodev" : "bind,ro,nosuid,nodev", true,
			   what);
}

static void push_etc_glob(json_t *a)
{
	DIR *d = opendir("/etc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char path[PATH_MAX];
		if (!aj_etc_allowed_name(de->d_name) ||
		    (size_t)snprintf(path, sizeof(path), "/etc/%s", de->d_name) >= sizeof(path))
			continue;
		push_host(a, path, false, "etc");
	}
	if (d)
		closedir(d);
}

static const char *bind_what(aj_plan_role r)
{
	switch (r) {
	case AJ_PLAN_ROOTFS: return "rootfs";
	case AJ_PLAN_SYSTEM: return "system";
	case AJ_PLAN_ETC_HOST:
	case AJ_PLAN_ETC_GLOB: return "etc";
	case AJ_PLAN_DEV_NODE: return "dev";
	case AJ_PLAN_WORKSPACE: return "workspace";
	case AJ_PLAN_BIND: return "bind";
	}
	return "bind";
}

/* The mounts in the order they are made: the kernel filesystems of the
 * backend (fixed: mount.c, or bundle.c for gVisor), then the binds of
 * aj_plan_mounts, which both backends take from here. */
static json_t *mounts_json(const aj_policy *p, const aj_plan *pl)
{
	json_t *a = json_array();
	char opt[160];
	bool gv = p->isolation == AJ_ISO_GVISOR;
	if (p->rootfs)
		snprintf(opt, sizeof(opt), "lowerdir=%s,upper on the --disk scratch tmpfs",
			 p->rootfs);
	if (gv)
		push_mount(a, p->rootfs ? p->rootfs : "bundle rootfs (mount points only)", "/",
			   "bind", "ro", true, "root");
	else if (p->rootfs)
		push_mount(a, "overlay", "/", "overlay", opt, p->root_readonly, "root");
	else
		push_mount(a, "tmpfs", "/", "tmpfs", "nosuid,nodev,mode=0755,size=8m", true,
			   "root");
	push_mount(a, "proc", "/proc", "proc", "nosuid,nodev,noexec", false, "proc");
	if (!gv) {
		push_mount(a, "tmpfs", "/dev", "tmpfs", "nosuid,noexec,mode=0755,size=64k", false,
			   "dev");
		push_mount(a, "devpts", "/dev/pts", "devpts", "nosuid,noexec,newinstance", false,
			   "dev");
		push_mount(a, "scratch tmpfs (--disk, shared)", "/dev/shm", "bind", "nosuid,nodev",
			   false, "scratch");
	}
	/* level 1: /tmp, home and /dev/shm are directories of one scratch
	 * tmpfs of --disk bytes (mount.c, setup_scratch); gVisor: tmpfs each */
	const char *scratch = gv ? "tmpfs" : "scratch tmpfs (--disk, shared)";
	snprintf(opt, sizeof(opt), "nosuid,nodev,mode=1777%s%llu",
		 gv ? ",size=" : ",disk=", p->tmp_size);
	push_mount(a, scratch, "/tmp", gv ? "tmpfs" : "bind", opt, false, "scratch");
	snprintf(opt, sizeof(opt), "nosuid,nodev,uid=%u,gid=%u%s%llu", (unsigned)p->uid,
		 (unsigned)p->gid, gv ? ",size=" : ",disk=", p->tmp_size);
	push_mount(a, scratch, AJ_SANDBOX_HOME, gv ? "tmpfs" : "bind", opt, false, "scratch");
	for (size_t i = 0; i < pl->n; i++) {
		const aj_plan_mount *m = &pl->m[i];
		switch (m->role) {
		case AJ_PLAN_ROOTFS: break; /* the root above */
		case AJ_PLAN_SYSTEM: push_host(a, m->source, true, "system"); break;
		case AJ_PLAN_ETC_HOST: push_host(a, m->source, false, "etc"); break;
		case AJ_PLAN_ETC_GLOB: push_etc_glob(a); break;
		case AJ_PLAN_DEV_NODE:
			if (!gv && access(m->source, F_OK) == 0)
				push_mount(a, m->source, m->target, "bind", "bind,nosuid,noexec",
					   false, "dev");
			break;
		case AJ_PLAN_WORKSPACE:
		case AJ_PLAN_BIND:
			push_mount(a, m->source, m->target, "bind",
				   m->ro ? "rbind,ro,nosuid,nodev" : "bind,rw,nosuid,nodev", m->ro,
				   bind_what(m->role));
			break;
		}
	}
	return a;
}

static json_t *strv_json(const char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; v && i < n && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *etc_json(const aj_policy *p)
{
	bool gv = p->isolation == AJ_ISO_GVISOR;
	if (p->rootfs && !gv)
		/* level 1: the image's own /etc, ours written over it (mount.c) */
		return json_pack("{s:o,s:[],s:s}", "synthesized",
				 strv_json(aj_etc_generated, AJ_ETC_FILES), "host_entries", "note",
				 "the image's own /etc (in the overlay), the synthesized files "
				 "written over the image's");
	json_t *o = json_pack("{s:o}", "synthesized", strv_json(aj_etc_generated, AJ_ETC_FILES));
	if (p->rootfs) {
		json_object_set_new(o, "host_entries", json_array());
		json_object_set_new(o, "note",
				    json_string("the image's /etc entries read-only, "
						"the synthesized files beside them"));
		return o;
	}
	json_object_set_new(o, "host_entries", strv_json(aj_etc_allowed, aj_etc_allowed_n));
	json_object_set_new(o, "host_entries_also",
			    json_string("/etc/python3* (a readdir of /etc at run time)"));
	json_object_set_new(
	    o, "note",
	    json_string("as root the host entries come from the state directory's copy of them "
			"(etc_cache.c) in one read-only bind on /etc, and the synthesized files "
			"from " AJ_ETC_GENERATED_DIR));
	return o;
}

static json_t *masks_json(const aj_policy *p)
{
	if (!p->workspace)
		return json_null();
	size_t nd = 0;
	while (!p->no_default_masks && aj_mask_defaults[nd])
		nd++;
	return json_pack("{s:s,s:o,s:o,s:o,s:s}", "under", AJ_WORKSPACE_DIR, "defaults",
			 strv_json(aj_mask_defaults, nd), "extra",
			 strv_json((const char *const *)p->masks, p->n_masks), "unmasked",
			 strv_json((const char *const *)p->unmask, p->n_unmask), "how",
			 "each match is covered by an empty file or directory, .env* files by "
			 "the same keys with placeholder values, credential files (.npmrc, "
			 ".pypirc, pip.conf, .netrc, .git-credentials, .docker/config.json, "
			 ".yarnrc.yml) by the same file with each secret replaced, or empty when "
			 "it does not parse (found when the sandbox starts)");
}

static json_t *guard_json(const aj_policy *p)
{
	if (!p->workspace)
		return json_null();
	size_t n = 0;
	while (aj_protect_names[n])
		n++;
	json_t *names = strv_json(aj_protect_names, n);
	json_array_append_new(names, json_string(".git/config"));
	json_array_append_new(names, json_string(".git/hooks"));
	return json_pack("{s:o,s:s,s:o}", "protected", names, "also",
			 "what .git/config names (core.hooksPath, included files), read when "
			 "the sandbox starts",
			 "writable", strv_json((const char *const *)p->writable, p->n_writable));
}

static json_t *seccomp_json(const aj_policy *p)
{
	if (p->isolation == AJ_ISO_GVISOR)
		return json_pack("{s:s,s:s}", "profile", "none inside the sandbox", "note",
				 "gVisor's Sentry implements the syscalls; runsc filters its own");
	if (p->seccomp_profile)
		return json_pack("{s:s,s:s}", "profile", "file", "path", p->seccomp_profile);
	if (p->seccomp_inline)
		return json_pack("{s:s}", "profile", "inline");
	size_t n = 0;
	while (aj_seccomp_denied[n])
		n++;
	return json_pack("{s:s,s:s,s:o,s:s}", "profile", "default", "default_action", "allow",
			 "denied", strv_json(aj_seccomp_denied, n), "denied_with",
			 "EPERM (clone3: ENOSYS; namespace flags of clone, TIOCSTI/TIOCLINUX "
			 "ioctls and set*id to other ids: EPERM)");
}

static json_t *landlock_json(const aj_policy *p)
{
	if (p->isolation == AJ_ISO_GVISOR)
		return json_pack("{s:o,s:s}", "rules", json_array(), "note",
				 "not used inside gVisor");
	aj_landlock_rule rules[AJ_LL_MAX_RULES];
	size_t n = aj_landlock_rules(p, rules, AJ_ARRAY_SIZE(rules));
	json_t *a = json_array();
	for (size_t i = 0; i < n && i < AJ_ARRAY_SIZE(rules); i++) {
		json_t *acc = json_array();
		if (rules[i].access & AJ_LL_READ)
			json_array_append_new(acc, json_string("read"));
		if (rules[i].access & AJ_LL_WRITE)
			json_array_append_new(acc, json_string("write"));
		if (rules[i].access & AJ_LL_DEVICE)
			json_array_append_new(acc, json_string("device"));
		json_array_append_new(a,
				      json_pack("{s:s,s:o}", "path", rules[i].path, "access", acc));
	}
	return json_pack("{s:o,s:s}", "rules", a, "scope",
			 "abstract unix sockets and signals scoped to the sandbox (ABI 6+)");
}

static json_t *cidrs_json(const aj_cidr *c, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		char buf[64];
		aj_cidr_format(&c[i], buf, sizeof(buf));
		json_array_append_new(a, json_string(buf));
	}
	return a;
}

static json_t *network_json(const aj_policy *p)
{
	static const char *const modes[] = {"none", "open", "allow"};
	json_t *allow = json_array(), *publish = json_array();
	for (size_t i = 0; i < p->n_allow; i++) {
		char dest[300], ports[16] = "80,443";
		if (p->allow[i].host)
			snprintf(dest, sizeof(dest), "%s", p->allow[i].host);
		else
			aj_cidr_format(&p->allow[i].cidr, dest, sizeof(dest));
		if (p->allow[i].port)
			snprintf(ports, sizeof(ports), "%u", p->allow[i].port);
		json_array_append_new(allow, json_pack("{s:s,s:s}", "dest", dest, "ports", ports));
	}
	for (size_t i = 0; i < p->n_publish; i++)
		json_array_append_new(publish,
				      json_pack("{s:s,s:I,s:I}", "host", "127.0.0.1", "host_port",
						(json_int_t)p->publish[i].host_port, "port",
						(json_int_t)p->publish[i].port));
	json_t *o = json_pack("{s:s,s:o,s:o,s:o}", "mode", modes[p->net], "allow", allow, "deny",
			      cidrs_json(p->deny, p->n_deny), "publish", publish);
	const char *resolver = p->net == AJ_NET_NONE ? "none (loopback only)"
			       : p->net == AJ_NET_OPEN
				   ? "the host's (its resolv.conf)"
				   : "agentjail's (netd, the sandbox's gateway address): allowed "
				     "names only";
	json_object_set_new(o, "resolver", json_string(resolver));
	if (p->net == AJ_NET_ALLOW) {
		char up[80] = "the host's resolver";
		if (p->dns.family) {
			aj_cidr_format(&p->dns, up, sizeof(up));
			snprintf(up + strlen(up), sizeof(up) - strlen(up), " port %u", p->dns_port);
		}
		json_object_set_new(o, "upstream", json_string(up));
		json_object_set_new(o, "proxy",
				    json_string("netd's HTTP(S) proxy, named by HTTP_PROXY and "
						"HTTPS_PROXY in the environment"));
		if (aj_net_tls_wanted(p))
			json_object_set_new(
			    o, "https",
			    json_string("intercepted toward the secrets' hosts: a CA made by netd "
					"(its key never inside), trusted through " AJ_NET_CA_BUNDLE
					" and SSL_CERT_FILE...; servers verified against "
					"--upstream-ca or the host's trust store"));
	}
	if (p->net == AJ_NET_OPEN && aj_net_proxied(p)) {
		json_object_set_new(
		    o, "proxy",
		    json_string("netd's HTTP(S) proxy (HTTP_PROXY, HTTPS_PROXY): the "
				"way to the scoped secrets' hosts that carries "
				"their values"));
		if (aj_net_tls_wanted(p))
			json_object_set_new(
			    o, "https",
			    json_string("intercepted toward the secrets' and --inspect hosts: a "
					"CA made by netd (its key never inside)"));
	}
	if (p->net != AJ_NET_NONE)
		json_object_set_new(o, "refused",
				    json_string("the host, private, link-local, metadata, "
						"multicast and reserved addresses, always"));
	json_object_set_new(o, "net_log", p->net_log ? json_string(p->net_log) : json_null());
	return o;
}

static json_t *limit(unsigned long long v)
{
	return v ? json_integer((json_int_t)v) : json_null();
}

static json_t *limits_json(const aj_policy *p)
{
	json_t *rl = json_pack("{s:i}", "core", 0);
	json_object_set_new(rl, "nofile", limit(p->nofile));
	json_object_set_new(rl, "fsize", limit(p->fsize));
	if (p->isolation == AJ_ISO_GVISOR)
		json_object_set_new(rl, "nproc", limit(p->pids));
	json_t *o =
	    json_pack("{s:o,s:o,s:o,s:I,s:o,s:I,s:s,s:o}", "memory_bytes", limit(p->memory), "pids",
		      limit(p->pids), "cpus_millis", limit(p->cpu_millis), "disk_bytes",
		      (json_int_t)p->tmp_size, "timeout_ms", limit(p->timeout_ms), "kill_after_ms",
		      (json_int_t)p->kill_after_ms, "enforce",
		      p->limits_best_effort ? "best-effort" : "strict", "rlimits", rl);
	return o;
}

/* The secret values and --redact values: never printed. */
static bool secretish(const aj_policy *p, const char *s)
{
	for (size_t i = 0; i < p->n_secrets; i++)
		if (p->secrets[i].value && *p->secrets[i].value && strstr(s, p->secrets[i].value))
			return true;
	for (size_t i = 0; i < p->n_redact; i++)
		if (p->redact[i] && *p->redact[i] && strstr(s, p->redact[i]))
			return true;
	return false;
}

static json_t *env_json(const aj_policy *p)
{
	char **env = aj_policy_build_env(p, NULL, NULL);
	json_t *names = json_array(), *secrets = json_array();
	for (char **e = env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		json_array_append_new(names,
				      eq ? json_stringn(*e, (size_t)(eq - *e)) : json_string(*e));
	}
	aj_strv_free(env);
	for (size_t i = 0; i < p->n_secrets; i++)
		json_array_append_new(secrets, json_pack("{s:s,s:s}", "name", p->secrets[i].name,
							 "placeholder", p->secrets[i].placeholder));
	return json_pack("{s:o,s:o,s:I,s:s}", "names", names, "secrets", secrets, "redacted_values",
			 (json_int_t)(p->n_secrets + p->n_redact), "values",
			 "not shown (the sandbox sees a secret's placeholder, never its value)");
}

static json_t *user_json(const aj_policy *p)
{
	const char *cwd = p->cwd ? p->cwd : p->workspace ? AJ_WORKSPACE_DIR : AJ_SANDBOX_HOME;
	return json_pack("{s:I,s:I,s:s,s:s,s:s,s:s}", "uid", (json_int_t)p->uid, "gid",
			 (json_int_t)p->gid, "home", AJ_SANDBOX_HOME, "cwd", cwd, "hostname",
			 p->hostname ? p->hostname : AJ_DEFAULT_HOSTNAME, "capabilities",
			 "none (all dropped, no_new_privs)");
}

json_t *aj_plan_json(const aj_policy *p, aj_error *err)
{
	if (aj_policy_validate(p, err) < 0)
		return NULL;
	aj_plan pl;
	if (aj_plan_mounts(p, &pl, err) < 0)
		return NULL;
	json_t *cmd = json_array();
	for (char **a = p->argv; a && *a; a++)
		json_array_append_new(cmd, json_string(secretish(p, *a) ? "[REDACTED]" : *a));
	json_t *o =
	    json_pack("{s:i,s:s,s:o,s:{s:s,s:o,s:b},s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
		      "plan", 1, "isolation", p->isolation == AJ_ISO_GVISOR ? "gvisor" : "process",
		      "command", cmd, "root", "kind", p->rootfs ? "image" : "host", "source",
		      p->rootfs ? json_string(p->rootfs) : json_null(), "writable",
		      p->rootfs != NULL, "mounts", mounts_json(p, &pl), "etc", etc_json(p), "masks",
		      masks_json(p), "workspace_guard", guard_json(p), "seccomp", seccomp_json(p),
		      "landlock", landlock_json(p), "network", network_json(p), "limits",
		      limits_json(p), "user", user_json(p), "env", env_json(p));
	if (!o)
		aj_err(err, ENOMEM, "plan");
	return o;
}
