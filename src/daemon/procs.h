/* SPDX-License-Identifier: MIT */
/* Background processes of a sandbox (procs.c). */
#ifndef AJ_PROCS_H
#define AJ_PROCS_H

#include <jansson.h>

#include "registry.h"
#include "reply.h"
#include "request.h"

void aj_op_procs_list(json_t *args, aj_reply *rep);
void aj_op_procs_signal(json_t *args, aj_reply *rep);
void aj_op_procs_output(json_t *args, aj_reply *rep);
/* Start a background process (q taken). */
void aj_procs_start(aj_sandbox *sb, aj_exec_req *q, const char *peer, aj_reply *rep);

#endif
