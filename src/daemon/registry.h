/* SPDX-License-Identifier: MIT */
/* The service's sandboxes (registry.c): each with its level's instance,
 * its TTL, owner and tenant, held by references. */
#ifndef AJ_REGISTRY_H
#define AJ_REGISTRY_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "backend.h"
#include "daemon.h"
#include "error.h"
#include "policy.h"

typedef struct aj_sandbox {
	char id[AJ_SANDBOX_ID_SIZE];
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
	bool saving;		  /* a checkpoint of it under way (no pause meanwhile) */
	bool claimed;		  /* given out already (the backend's claim) */
	long long paused_left_ms; /* paused: the TTL left when paused (0: none) */
	pthread_mutex_t procs_mu; /* background processes (procs.c) */
	struct aj_proc *procs;
	/* frees procs with the sandbox: set with the first (procs.c) */
	void (*procs_free)(struct aj_proc *list);
	unsigned next_proc;
	unsigned streams;     /* exec streams open (sup_exec.c; atomic) */
	struct aj_code *code; /* its code bridge (code.c), or NULL */
} aj_sandbox;

/* The service's state directory; set once at start. */
/* node: the service's node name (daemon.h), the end of every id it makes */
void aj_registry_init(const char *state_dir, unsigned max, const char *node);
/* serve --secret-mint CMD (mint.h): minted at create, revoked at the
 * end; NULL: none. Set once at start. */
void aj_registry_set_mint(const char *cmd);
/* Remove what a previous (killed) service left, before serving. */
void aj_registry_sweep(void);
/* At start, after the sweep, with the audit log open and the front
 * listening: in a thread of its own, revoke what the mint hook made for
 * sandboxes of killed services and runs (their records' secrets, stdin
 * empty: no value was kept), then drop each record (kept when this start
 * has no --secret-mint to revoke them with); a secret_sweep_done audit
 * line at its end. stop: the sweep ends after the revoke in flight (the
 * rest is left for the next start) and is waited for. */
void aj_registry_revoke_lost_start(void);
void aj_registry_revoke_lost_stop(void);
/* Before a create request (a pool's sandbox or a new one, sup_api.c): its
 * "timeout" taken out of req (*ttl), room in the registry and in the
 * current tenant's cap. 0, or a negative errno with err filled. */
int aj_registry_admit(json_t *req, double *ttl, aj_error *err);
/* A new sandbox from a policy (JSON), outside the registry (pool.c), with
 * its state file written; NULL with err filled on failure. */
aj_sandbox *aj_sandbox_build(json_t *req, aj_error *err);
/* The same started from a checkpoint of a sandbox of that policy (fork). */
aj_sandbox *aj_sandbox_build_from(json_t *req, const char *ckpt, aj_error *err);
/* Into the registry (it takes sb's reference; on failure sb is gone). */
int aj_registry_add(aj_sandbox *sb, double ttl, const char *owner, aj_error *err);
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

#endif
