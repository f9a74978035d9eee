/* SPDX-License-Identifier: MIT */
/* agentjail serve: sandboxes that live across many commands, behind an
 * HTTP API (libwebsockets), with files, streamed output, TTLs, metrics and
 * an audit log. */
#ifndef AJ_DAEMON_H
#define AJ_DAEMON_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "error.h"
#include "policy.h"

typedef struct aj_daemon_opts {
	const char *listen; /* "ADDR:PORT" or NULL: no TCP */
	const char *socket; /* unix socket path */
	/* > 2: the unix socket, listening, made by systemd (serve takes it:
	 * LISTEN_FDS); it is at socket, and is left there when serve ends */
	int socket_fd;
	const char *token_file; /* bearer token; required with listen */
	/* what clients may do (tenant.h; NULL: the defaults), named tokens */
	const char *operator_policy;
	const char *tokens_file;
	const char *state_dir;
	unsigned max_sandboxes;
	unsigned header_timeout_s; /* request headers must come within this (408) */
	bool quiet;
	const char *pools[16]; /* --pool IMAGE=N */
	size_t n_pools;
	unsigned long long store_quota; /* --store-quota: snapshots' room (0: free space) */
} aj_daemon_opts;

#define AJ_DAEMON_RUN_DIR "/run/agentjail"
#define AJ_DAEMON_DEFAULT_MAX 64
#define AJ_DAEMON_MAX_TTL_S (7 * 24 * 3600)
#define AJ_DAEMON_DEFAULT_TTL_S 3600

/* serve --log-format: plain (lines of text, as before) or json (one JSON
 * object per line on stderr: the messages, and every audit event with its
 * sandbox and tenant fields). Set before the service forks its front. */
enum aj_log_format { AJ_LOG_PLAIN, AJ_LOG_JSON };
extern enum aj_log_format aj_log_format;
/* A message of the service on stderr: "PREFIXMESSAGE" (plain) or
 * {"ts", "level", "msg"} (json). */
void aj_log(const char *level, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Serve until SIGINT/SIGTERM. Returns 0 or a negative errno (err filled). */
int aj_daemon_run(const aj_daemon_opts *o, aj_error *err);

/* ---- sandboxes (registry.c) ---- */

typedef struct aj_sandbox {
	char id[40];
	aj_policy policy;
	const aj_backend *be; /* its isolation level (backend.h) */
	aj_inst *inst;	      /* the backend's sandbox */
	int root_fd;	      /* O_PATH of the sandbox's root (AJ_CAP_ROOT_FD), or -1 */
	long long created_ms; /* wall clock, ms since the epoch */
	long long expires_ms; /* wall clock; 0: never */
	unsigned long long execs;
	int refs;		  /* the registry's + running execs' (atomic) */
	bool dead;		  /* destroyed: no new work */
	char owner[64];		  /* who created it (audit) */
	char tenant[33];	  /* the tenant it belongs to (tenant.h) */
	json_t *req;		  /* the policy it was made from (forks) */
	pthread_mutex_t state_mu; /* pause/resume and the TTL */
	bool paused;		  /* frozen (cgroup freezer) */
	long long paused_left_ms; /* paused: the TTL left when paused (0: none) */
	pthread_mutex_t procs_mu; /* background processes (procs.c) */
	struct aj_proc *procs;
	unsigned next_proc;
	unsigned streams;     /* exec streams open (sup_exec.c; atomic) */
	struct aj_code *code; /* its code bridge (code.c), or NULL */
} aj_sandbox;

/* The service's state directory; set once at start. */
void aj_registry_init(const char *state_dir, unsigned max);
/* Remove what a previous (killed) service left, before serving. */
void aj_registry_sweep(void);
/* Create from a JSON request body; the result holds a reference. */
int aj_registry_create(json_t *req, const char *owner, aj_sandbox **out, aj_error *err);
/* A new sandbox from a policy (JSON), outside the registry (pool.c), with
 * its state file written; NULL with err filled on failure. */
aj_sandbox *aj_sandbox_build(json_t *req, aj_error *err);
/* The same started from a checkpoint of a sandbox of that policy (fork). */
aj_sandbox *aj_sandbox_build_from(json_t *req, const char *ckpt, aj_error *err);
/* Into the registry (it takes sb's reference; on failure sb is gone). */
int aj_registry_add(aj_sandbox *sb, double ttl, const char *owner, aj_error *err);
/* A new image from an image sandbox's filesystem (snapshot.c). */
int aj_sandbox_snapshot(aj_sandbox *sb, const char *name, json_t **out, aj_error *err);
/* count new sandboxes from a copy of sb's filesystem (snapshot.c); *out:
 * {"sandboxes": [...]}. -EAGAIN: too many sandboxes. */
int aj_sandbox_fork(aj_sandbox *sb, unsigned count, double ttl, const char *owner, json_t **out,
		    aj_error *err);
#define AJ_FORK_MAX 16
/* Find a live sandbox; the result holds a reference (aj_sandbox_unref). */
aj_sandbox *aj_registry_get(const char *id);
/* Destroy: kill everything in it now; freed with its last reference. */
int aj_registry_destroy(const char *id);
/* Destroy the expired ones (ttl) / all (at exit). */
void aj_registry_expire(void);
void aj_registry_destroy_all(void);
/* The host process that holds it (the audit log's "keeper"). */
int aj_sandbox_holder(aj_sandbox *sb);
/* JSON description of one / all. */
json_t *aj_sandbox_json(aj_sandbox *sb);
/* tenant: only its sandboxes (NULL: all) */
json_t *aj_registry_list(const char *tenant);
unsigned aj_registry_count(void);
unsigned aj_registry_count_tenant(const char *tenant);
void aj_sandbox_ref(aj_sandbox *sb);
void aj_sandbox_unref(aj_sandbox *sb);
/* On: the last reference dropped by the calling thread hands the
 * teardown to a worker thread (the supervisor's own thread, which starts
 * the execs, never waits for one). */
void aj_registry_teardown_elsewhere(bool on);
/* Set the TTL to seconds from now (PATCH). */
void aj_sandbox_set_ttl(aj_sandbox *sb, double seconds);
long long aj_now_ms(void);
/* Pause (freeze every process, memory kept, TTL clock stopped) or resume.
 * -EALREADY: it is in that state already. */
int aj_sandbox_pause(aj_sandbox *sb, bool pause, aj_error *err);
bool aj_sandbox_paused(aj_sandbox *sb);

/* ---- metrics.c ---- */
typedef struct aj_metrics {
	unsigned long long sandboxes_created, sandboxes_failed, sandboxes_destroyed,
	    sandboxes_expired;
	unsigned long long execs, exec_failed, timeouts, oom_kills, bytes_out, requests, errors;
	unsigned long long latency_buckets[12]; /* exec duration histogram */
	double latency_sum;
} aj_metrics;
extern aj_metrics aj_stats;
void aj_metrics_add(unsigned long long *counter, unsigned long long n);
void aj_metrics_exec(double seconds);
/* The supervisor's counters as JSON (the "metrics" op). */
json_t *aj_metrics_json(void);
/* The Prometheus text exposition (malloc'ed) of the supervisor's counters
 * (sup: aj_metrics_json's) and the front's own (requests, errors, bytes). */
char *aj_metrics_text(json_t *sup);

/* ---- audit.c: JSON lines ---- */
int aj_audit_open(const char *path, aj_error *err);
/* Log one event: {"ts":..., "event": event, ...fields} (fields consumed). */
void aj_audit(const char *event, json_t *fields);
void aj_audit_close(void);

#endif
