/* SPDX-License-Identifier: MIT */
/* exec in a sandbox (sup_exec.c): a command streamed to the front. */
#ifndef AJ_SUP_EXEC_H
#define AJ_SUP_EXEC_H

#include <jansson.h>

#include "reply.h"

void aj_op_exec(json_t *args, aj_reply *rep);

#endif
