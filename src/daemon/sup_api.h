/* SPDX-License-Identifier: MIT */
/* The supervisor's ops on sandboxes (sup_api.c): create, list, get, patch,
 * delete, pause, resume, snapshot, fork; health, readiness, metrics, pools. */
#ifndef AJ_SUP_API_H
#define AJ_SUP_API_H

#include <jansson.h>

#include "reply.h"

void aj_op_health(json_t *args, aj_reply *rep);
/* /readyz: 200 once every pool was full once, else 503 (docs/api.md) */
void aj_op_ready(json_t *args, aj_reply *rep);
void aj_op_metrics(json_t *args, aj_reply *rep);
void aj_op_create(json_t *args, aj_reply *rep);
void aj_op_list(json_t *args, aj_reply *rep);
void aj_op_get(json_t *args, aj_reply *rep);
void aj_op_patch(json_t *args, aj_reply *rep);
void aj_op_delete(json_t *args, aj_reply *rep);
void aj_op_pools(json_t *args, aj_reply *rep);
void aj_op_pause(json_t *args, aj_reply *rep);
void aj_op_resume(json_t *args, aj_reply *rep);
void aj_op_snapshot(json_t *args, aj_reply *rep);
void aj_op_fork(json_t *args, aj_reply *rep);

#endif
