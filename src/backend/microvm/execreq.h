/* SPDX-License-Identifier: MIT */
/* Pieces of the exec request to a microVM's agent (execreq.c), shared by
 * the one-shot run (run.c) and the service's VMs (box.c). */
#ifndef AJ_MV_EXECREQ_H
#define AJ_MV_EXECREQ_H

#include <jansson.h>

/* A JSON array of the strings v (NULL: empty), or NULL when one could not
 * be added (out of memory): never a list with one left out. */
json_t *aj_mv_json_strv(char *const *v);
/* q with "uid" and "gid" (0 for root: always sent, the agent refuses an
 * exec without them), or NULL with q released when they could not be set:
 * never a request that would run as guest root instead of --user. */
json_t *aj_mv_exec_user(json_t *q, unsigned uid, unsigned gid);
/* key set to v (consumed) in q, or NULL with q released */
json_t *aj_mv_json_set(json_t *q, const char *key, json_t *v);

#endif
