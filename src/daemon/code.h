/* SPDX-License-Identifier: MIT */
/* The code interpreter in the supervisor (code.c; docs/api.md, "Code
 * interpreter"): Jupyter kernels in a sandbox, through a bridge started in
 * it by the backend's exec. */
#ifndef AJ_CODE_H
#define AJ_CODE_H

#include <jansson.h>

#include "error.h"
#include "registry.h"

struct aj_reply;
/* code.run {sandbox, peer, body}: 200 and an NDJSON stream of events. */
void aj_op_code_run(json_t *args, struct aj_reply *rep);
/* code.ctx {sandbox, peer, action, context, body}: the contexts. */
void aj_op_code_ctx(json_t *args, struct aj_reply *rep);
/* A pool's warm-up: the bridge started and the default context's kernel
 * running code (imports) before the sandbox is handed out. */
int aj_code_warm(aj_sandbox *sb, const char *code, aj_error *err);
/* The sandbox has a bridge (a warm kernel, for a pool's JSON). */
bool aj_code_warm_ready(aj_sandbox *sb);
/* End the sandbox's bridge: its stdin closed, so it ends its kernels (a
 * pooled sandbox handed out with another environment: its next run starts
 * them afresh); kill: SIGKILL too (a sandbox being thrown away: the
 * bridge's reference must go for it to be destroyed). */
void aj_code_drop(aj_sandbox *sb, bool kill);

#endif
