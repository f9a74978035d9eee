/* SPDX-License-Identifier: MIT */
/* aj_policy: the single description of a sandbox, filled by the CLI (and
 * later the JSON policy file and the API), validated, then applied. */
#ifndef AJ_POLICY_H
#define AJ_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cidr.h"
#include "error.h"

#define AJ_SANDBOX_HOME "/home/agent"
#define AJ_WORKSPACE_DIR "/workspace"
#define AJ_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define AJ_DEFAULT_HOSTNAME "agentjail"
#define AJ_DEFAULT_DISK (512ULL << 20)
#define AJ_DEFAULT_KILL_AFTER_MS 2000
#define AJ_DEFAULT_MEMORY (1ULL << 30)
#define AJ_DEFAULT_PIDS 256
#define AJ_MAX_ENV 256
#define AJ_MAX_BINDS 64

typedef struct aj_bind {
	char *src;  /* absolute, validated host path */
	char *dest; /* absolute path inside the sandbox */
	bool writable;
} aj_bind;

#define AJ_MAX_SECRETS 64
#define AJ_MAX_MASKS 64
#define AJ_MAX_WRITABLE 32

#define AJ_MAX_SECRET_HOSTS 16

typedef struct aj_secret {
	char *name;	   /* environment variable name */
	char *value;	   /* the real value: never reaches the sandbox */
	char *placeholder; /* what the sandbox sees instead */
	/* --secret NAME@HOST,*.DOMAIN=VALUE: the proxy puts the value where
	 * the placeholder stands in requests to these hosts (canonical names,
	 * "*.suffix" patterns or IPv4 addresses); none: never injected */
	char *hosts[AJ_MAX_SECRET_HOSTS];
	size_t n_hosts;
	char *header; /* only in this request header (NULL: any header, the query) */
	bool minted;  /* value came from the mint hook (mint.h): revoke it at the end */
	/* NAME@HOSTS:body / "body": true: also in request bodies (bounded,
	 * AJ_INJECT_BODY_MAX); otherwise a body is never changed */
	bool body;
} aj_secret;

#define AJ_MAX_DENY 64

typedef enum aj_net_mode {
	AJ_NET_NONE = 0, /* loopback only */
	AJ_NET_OPEN,	 /* veth + NAT, refused ranges and --deny always refused */
	AJ_NET_ALLOW,	 /* --allow: only allowed names/CIDRs, via agentjail's DNS and proxy */
} aj_net_mode;

#define AJ_MAX_ALLOW 64
#define AJ_MAX_PUBLISH 16

/* --allow HOST[:PORT] | *.SUFFIX[:PORT] | CIDR[:PORT] */
typedef struct aj_allow {
	char *host;    /* lowercase name, or "*.suffix" for a wildcard; NULL: cidr */
	aj_cidr cidr;  /* when host is NULL (IPv4) */
	unsigned port; /* 0: the default ports 80 and 443 */
} aj_allow;

/* --publish HOSTPORT:PORT */
typedef struct aj_publish {
	unsigned host_port; /* on the host's 127.0.0.1 */
	unsigned port;	    /* inside the sandbox (its loopback) */
} aj_publish;

typedef enum aj_tty_mode {
	AJ_TTY_AUTO = 0, /* pty when stdin and stdout are terminals */
	AJ_TTY_ALWAYS,
	AJ_TTY_NEVER,
} aj_tty_mode;

/* --isolation / "isolation": which backend runs the sandbox (docs/levels.md) */
typedef enum aj_isolation {
	AJ_ISO_PROCESS = 0, /* level 1: namespaces, cgroups, seccomp, Landlock */
	AJ_ISO_GVISOR,	    /* level 2: runsc (src/backend/gvisor) */
	AJ_ISO_MICROVM,	    /* level 3: a qemu microVM (src/backend/microvm) */
	AJ_ISO_WASM,	    /* level 4: a WebAssembly runtime (src/backend/wasm) */
} aj_isolation;

typedef struct aj_policy {
	char **argv;  /* command and arguments (borrowed, NULL-terminated) */
	char *rootfs; /* NULL: host minimal view */
	/* the rootfs mounted read-only, no overlay writes (an OCI bundle's
	 * root.readonly); the default root is always read-only */
	bool root_readonly;
	char *workspace; /* NULL: none */
	char *cwd;	 /* NULL: /workspace if any, else home */
	char *hostname;	 /* NULL: AJ_DEFAULT_HOSTNAME */
	uid_t uid;	 /* uid inside the sandbox (default 0) */
	gid_t gid;	 /* gid inside the sandbox (default = uid) */
	aj_bind binds[AJ_MAX_BINDS];
	size_t n_binds;
	char *env[AJ_MAX_ENV]; /* extra "NAME=VALUE" entries, later wins */
	size_t n_env;
	unsigned long long tmp_size;	  /* --disk: bytes for all writable tmpfs areas */
	unsigned long long timeout_ms;	  /* wall clock; 0: none */
	unsigned long long kill_after_ms; /* SIGTERM -> SIGKILL grace */
	unsigned long long nofile;	  /* RLIMIT_NOFILE; 0: inherit */
	unsigned long long fsize;	  /* RLIMIT_FSIZE bytes; 0: none */
	char *result_path;		  /* --result FILE (JSON) */
	char *seccomp_profile;		  /* --seccomp-profile FILE, NULL: default */
	/* the API's "seccomp-profile": {...}: the profile's JSON text (the
	 * file's format); it takes the place of a file (no host file read) */
	char *seccomp_inline;
	/* a second profile (its JSON text, the --seccomp-profile format) on
	 * top of the first: an OCI bundle's linux.seccomp (oci_bundle.c) */
	char *seccomp_stack;
	/* cgroup limits; 0 means "no limit" */
	unsigned long long memory;
	unsigned long long pids;
	unsigned long long cpu_millis; /* --cpus 1.5 -> 1500 */
	/* an OCI bundle's linux.resources beyond the limits (oci_bundle.c),
	 * on the process backend's cgroups (cgroup.c); 0 / NULL: not set */
	unsigned long long cpu_shares; /* runc's cpu.shares, 2-262144 (v2: cpu.weight) */
	unsigned long long memory_low; /* memory.reservation bytes (v1: the soft limit) */
	char *cpuset_cpus;	       /* cpu.cpus, a checked list ("0-3,6") */
	char *cpuset_mems;	       /* cpu.mems, likewise */
	/* a cgroup of every controller, also those with nothing to set yet:
	 * `oci update` may set them later (cpu, cpuset) */
	bool cgroup_all;
	aj_secret secrets[AJ_MAX_SECRETS];
	size_t n_secrets;
	char *redact[AJ_MAX_SECRETS]; /* extra values to redact from output */
	size_t n_redact;
	char *masks[AJ_MAX_MASKS]; /* extra globs of workspace files to mask */
	size_t n_masks;
	bool no_default_masks;
	/* --unmask PATH: workspace entries (relative, normalized) a mask
	 * would cover that the sandbox sees as they are, on purpose */
	char *unmask[AJ_MAX_MASKS];
	size_t n_unmask;
	/* --writable PATH: protected host-run files of the workspace the
	 * sandbox may change after all (protect.h), relative, normalized */
	char *writable[AJ_MAX_WRITABLE];
	size_t n_writable;
	aj_tty_mode tty;
	aj_net_mode net;
	bool net_explicit; /* --net was given */
	/* the caller's network namespace, kept (`oci create` with an engine's
	 * namespace: joined and walled by the caller, net_wall_netns); only
	 * with net none, and never in a policy's JSON */
	bool net_inherit;
	/* the caller's ipc and uts namespaces, kept (`oci create` with a pod's:
	 * joined by the caller, nsjoin.h); never in a policy's JSON */
	bool ipc_inherit, uts_inherit;
	aj_cidr deny[AJ_MAX_DENY]; /* --deny CIDR */
	size_t n_deny;
	aj_allow allow[AJ_MAX_ALLOW]; /* --allow: switches to AJ_NET_ALLOW */
	size_t n_allow;
	aj_publish publish[AJ_MAX_PUBLISH];
	size_t n_publish;
	char *net_log; /* --net-log FILE: JSON lines of DNS queries and connections */
	/* --upstream-ca FILE: the CA the proxy verifies intercepted HTTPS
	 * servers against (PEM), instead of the host's trust store */
	char *upstream_ca;
	/* --secret-mint CMD: the operator's hook that turns each scoped
	 * secret's value into one for this sandbox only (mint.h) */
	char *secret_mint;
	/* the service's audit log (its fd, inherited by the keeper; -1: none)
	 * and the sandbox's id and tenant: netd appends its secret_* events
	 * there (the tenant as the service's own lines have it) */
	int audit_fd;
	char *audit_sandbox;
	char *audit_tenant;
	/* --inspect HOST: HTTPS to these hosts (canonical names, *.suffix or
	 * IPv4) is intercepted and logged per request even without a secret */
	char *inspect[AJ_MAX_SECRET_HOSTS];
	size_t n_inspect;
	aj_cidr dns;	   /* --dns ADDR: upstream resolver for --allow (family 0: host's) */
	unsigned dns_port; /* 53 unless --dns ADDR:PORT */
	bool quiet;	   /* suppress warnings about degraded features */
	/* --limits best-effort: run with the cgroup limits that can be
	 * applied (the others are named on stderr and in --result); by
	 * default (strict) a limit that cannot be enforced fails the run */
	bool limits_best_effort;
	aj_isolation isolation;
} aj_policy;

void aj_policy_init(aj_policy *p);
void aj_policy_free(aj_policy *p);

/* Validate a host path given by the user: absolute, no "." or ".." parts,
 * no symlink in any component, exists. want_dir: must be a directory.
 * On success *canon is a malloc'ed normalized copy. */
int aj_path_validate_host(const char *what, const char *path, bool want_dir, char **canon,
			  aj_error *err);
/* Validate a path inside the sandbox: absolute, no "."/".." parts, not "/",
 * not under /proc or /dev. On success *canon is a malloc'ed normalized copy. */
int aj_path_validate_inside(const char *what, const char *path, char **canon, aj_error *err);

/* Setters used by every front-end; each validates its input. */
int aj_policy_set_workspace(aj_policy *p, const char *path, aj_error *err);
int aj_policy_set_rootfs(aj_policy *p, const char *path, aj_error *err);
/* --image NAME: the rootfs of a stored image (image.c) */
int aj_policy_set_image(aj_policy *p, const char *name, aj_error *err);
/* spec: "SRC[:DEST]" */
int aj_policy_add_bind(aj_policy *p, const char *spec, bool writable, aj_error *err);
/* "NAME=VALUE", or "NAME" to copy from the caller's environment. */
int aj_policy_add_env(aj_policy *p, const char *spec, aj_error *err);
/* File of NAME=VALUE lines; blank lines and '#' comments ignored. */
int aj_policy_add_env_file(aj_policy *p, const char *path, aj_error *err);
int aj_policy_set_cwd(aj_policy *p, const char *path, aj_error *err);
int aj_policy_set_hostname(aj_policy *p, const char *name, aj_error *err);
int aj_policy_set_user(aj_policy *p, const char *spec, aj_error *err);
int aj_policy_set_cpus(aj_policy *p, const char *spec, aj_error *err);
/* Seconds, fractional ("1.5"), into milliseconds. */
int aj_parse_seconds(const char *flag, const char *spec, unsigned long long *ms, aj_error *err);

/* "NAME=VALUE", or "NAME" to take the value from the caller's environment. */
int aj_policy_add_secret(aj_policy *p, const char *spec, aj_error *err);
/* A secret scoped to hosts (each HOST, *.DOMAIN or IPv4 address), put in
 * by the proxy only toward them, optionally only in one request header
 * (header NULL: any header and the query). n_hosts 0: not scoped. */
int aj_policy_add_secret_scoped(aj_policy *p, const char *name, const char *value,
				const char *const *hosts, size_t n_hosts, const char *header,
				aj_error *err);
/* --inspect HOST (a name, *.DOMAIN or an IPv4 address) */
int aj_policy_add_inspect(aj_policy *p, const char *host, aj_error *err);
int aj_policy_add_redact(aj_policy *p, const char *value, aj_error *err);
int aj_policy_add_mask(aj_policy *p, const char *glob, aj_error *err);
/* --unmask PATH: relative to the workspace, no '.', '..' or empty parts */
int aj_policy_add_unmask(aj_policy *p, const char *rel, aj_error *err);
/* --writable PATH: relative to the workspace, one of the protected
 * host-run files or below one (protect.c) */
int aj_policy_add_writable(aj_policy *p, const char *rel, aj_error *err);

/* --net none|open */
int aj_policy_set_net(aj_policy *p, const char *mode, aj_error *err);
/* --isolation process|gvisor|microvm|wasm */
int aj_policy_set_isolation(aj_policy *p, const char *level, aj_error *err);
/* --deny CIDR (IPv4 or IPv6; a bare address is a /32 or /128) */
int aj_policy_add_deny(aj_policy *p, const char *cidr, aj_error *err);

/* --allow HOST[:PORT], *.SUFFIX[:PORT] or CIDR[:PORT] (allow.c) */
int aj_policy_add_allow(aj_policy *p, const char *spec, aj_error *err);
/* --publish HOSTPORT:PORT (allow.c) */
int aj_policy_add_publish(aj_policy *p, const char *spec, aj_error *err);
/* --dns ADDR[:PORT] (allow.c) */
int aj_policy_set_dns(aj_policy *p, const char *spec, aj_error *err);
int aj_policy_set_net_log(aj_policy *p, const char *path, aj_error *err);
int aj_policy_set_upstream_ca(aj_policy *p, const char *path, aj_error *err);
/* --secret-mint CMD: an absolute path to an executable (mint.c) */
int aj_policy_set_secret_mint(aj_policy *p, const char *cmd, aj_error *err);

/* Set one option by the long name `agentjail run` gives it ("memory",
 * "env", "ro", ...; flags without a value take NULL). With
 * AJ_POLICY_SET_REMOTE (the service's API), options naming host files
 * (--result, --seccomp-profile, --env-file) or copying the caller's
 * environment (--env NAME, --secret NAME) are refused. */
#define AJ_POLICY_SET_REMOTE 1u
int aj_policy_set(aj_policy *p, const char *name, const char *value, unsigned flags, aj_error *err);
/* Set options from a JSON object {name: value} (the service's API): a
 * value is a string, a number, true (a flag), an array (repeated), or for
 * "env"/"secret" an object {NAME: VALUE}; a secret's VALUE may be an
 * object {"value": V, "hosts": [HOST...], "header": H}. Remote rules
 * apply. */
struct json_t;
int aj_policy_from_json(aj_policy *p, struct json_t *obj, aj_error *err);
/* The JSON type a key takes there (docs/api.md, "Strict types"); -1 for
 * an unknown key. Each value is checked, never coerced. */
enum aj_json_kind {
	AJ_JSON_STR,  /* a string */
	AJ_JSON_INT,  /* an integer */
	AJ_JSON_NUM,  /* a number */
	AJ_JSON_FLAG, /* true or false */
	AJ_JSON_LIST, /* a string or an array of strings (the option repeated) */
	AJ_JSON_MAP,  /* an object of NAME: VALUE, or "NAME=VALUE" strings */
	AJ_JSON_OBJ,  /* a JSON object taken whole (seccomp-profile) */
};
int aj_policy_json_kind(const char *name);
/* The inline profile's bound: its compact JSON text, in bytes. */
#define AJ_SECCOMP_INLINE_MAX (64u << 10)
/* A --seccomp-profile (a file, or the API's inline one) replaces the
 * default profile. */
static inline bool aj_policy_has_profile(const aj_policy *p)
{
	return p->seccomp_profile || p->seccomp_inline;
}

/* Final cross-field checks (e.g. binds don't shadow each other). */
int aj_policy_validate(const aj_policy *p, aj_error *err);
/* The network part of it (allow.c). */
int aj_policy_validate_net(const aj_policy *p, aj_error *err);

/* Build the command's environment (NULL-terminated, malloc'ed array of
 * malloc'ed strings). term and extra (defaults that --env overrides, e.g.
 * the proxy variables of --allow) may be NULL. */
char **aj_policy_build_env(const aj_policy *p, const char *term, char *const *extra);
void aj_strv_free(char **v);

#endif
