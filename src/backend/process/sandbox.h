/* SPDX-License-Identifier: MIT */
/* Run one command in one fresh sandbox: the whole pipeline of `agentjail run`. */
#ifndef AJ_SANDBOX_H
#define AJ_SANDBOX_H

#include <stdbool.h>

#include "backend.h"
#include "error.h"
#include "policy.h"

/* Write res as a JSON object to path (0600, replaced atomically). */
int aj_run_result_write(const char *path, const aj_run_result *res, aj_error *err);

/* Run policy->argv in a new sandbox and wait for it. Returns 0 when the
 * command ran (whatever its status, see res), or a negative errno with err
 * filled when agentjail could not run it (err->exit says 125/126/127). */
int aj_sandbox_run(const aj_policy *policy, const aj_run_hooks *hooks, aj_run_result *res,
		   aj_error *err);

/* The keeper's side of a box (box.h): build the sandbox, report on ctl,
 * hold it until ctl is closed, tear down. Returns an exit status. */
int aj_sandbox_hold(const aj_policy *p, int ctl);

#endif
