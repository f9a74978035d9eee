/* SPDX-License-Identifier: MIT */
/* Warm pools (serve --pool IMAGE=N): sandboxes built ahead of time by a
 * thread of their own and handed out, each at most once, to a create
 * request whose policy is the pool's. */
#ifndef AJ_POOL_H
#define AJ_POOL_H

#include <jansson.h>

#include "error.h"
#include "registry.h"

#define AJ_POOL_MAX 16
#define AJ_POOL_MAX_SIZE 64

/* "IMAGE=N": IMAGE an image name or "default" (the host-root sandbox), N
 * 1..AJ_POOL_MAX_SIZE. Checks that the image exists (its policy builds). */
int aj_pool_add(const char *spec, aj_error *err);
/* Start the refill thread (after the crash sweep). */
int aj_pool_start(aj_error *err);
/* Stop the thread and destroy every ready sandbox. Call after the
 * registry's sandboxes are gone: the thread that built them must outlive
 * them (their keepers die with it). */
void aj_pool_stop(void);
/* For a create request (without "timeout"): a ready sandbox when a pool's
 * policy is the request's, apart from "env" and "secret", which are applied
 * to it here. *out NULL: no pool for this request, or its pool is empty
 * (build a fresh one). Negative: bad env/secret (err filled). */
int aj_pool_take(json_t *req, aj_sandbox **out, aj_error *err);
/* A pool has a sandbox ready for this create request (a hint: another
 * create may take it first). */
bool aj_pool_ready(json_t *req);
/* GET /v1/pools */
json_t *aj_pool_json(void);
/* Prometheus lines for /metrics (malloc'ed). */
char *aj_pool_metrics(void);

#endif
