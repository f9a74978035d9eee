/* SPDX-License-Identifier: MIT */
/* Files in a sandbox (files.c). */
#ifndef AJ_FILES_H
#define AJ_FILES_H

#include <jansson.h>

#include "reply.h"

void aj_op_files_get(json_t *args, aj_reply *rep);
void aj_op_files_put(json_t *args, aj_reply *rep);
void aj_op_files_put_done(json_t *args, aj_reply *rep);
void aj_op_files_delete(json_t *args, aj_reply *rep);
void aj_op_files_mkdir(json_t *args, aj_reply *rep);

#endif
