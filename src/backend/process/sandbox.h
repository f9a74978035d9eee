/* SPDX-License-Identifier: MIT */
/* Run one command in one fresh sandbox: the whole pipeline of `agentjail run`. */
#ifndef AJ_SANDBOX_H
#define AJ_SANDBOX_H

#include <stdbool.h>

#include "error.h"
#include "policy.h"

typedef struct aj_run_result {
	int exit_code;	 /* what `agentjail run` exits with */
	int term_signal; /* signal that killed the command, 0 if it exited */
	int status;	 /* raw exit status when it exited normally */
	bool timed_out;	 /* --timeout expired (exit_code 124) */
	bool oom_killed; /* the kernel's OOM killer acted in the sandbox */
	unsigned long long wall_ms;
	unsigned long long cpu_user_ms, cpu_sys_ms;
	unsigned long long peak_memory_bytes; /* 0 when unknown */
	unsigned limits_missing; /* --limits best-effort: the limits not applied (AJ_LIMIT_*) */
} aj_run_result;

#define AJ_EXIT_TIMEOUT 124

/* Write res as a JSON object to path (0600, replaced atomically). */
int aj_run_result_write(const char *path, const aj_run_result *res, aj_error *err);

typedef struct aj_run_hooks {
	/* Called once per degraded feature (e.g. no cgroup limits). */
	void (*warn)(void *ctx, const char *msg);
	void *ctx;
} aj_run_hooks;

/* Run policy->argv in a new sandbox and wait for it. Returns 0 when the
 * command ran (whatever its status, see res), or a negative errno with err
 * filled when agentjail could not run it (err->exit says 125/126/127). */
int aj_sandbox_run(const aj_policy *policy, const aj_run_hooks *hooks, aj_run_result *res,
		   aj_error *err);

#endif
