/* SPDX-License-Identifier: MIT */
/* The events of a command's stream that exec (sup_exec.c) and background
 * processes (procs.c) share (exec_event.c). */
#ifndef AJ_EXEC_EVENT_H
#define AJ_EXEC_EVENT_H

#include <jansson.h>
#include <stddef.h>

#include "backend.h"
#include "error.h"
#include "registry.h"

/* Account for an ended command (metrics, audit) and build its exit event. */
json_t *aj_exec_ended(aj_sandbox *sb, const char *peer, json_t *cmd, int r,
		      const aj_run_result *res, const aj_error *err);
/* An output event {"type": stdout|stderr, "data"|"data_b64": ...}. */
json_t *aj_exec_data_event(int stream, const char *buf, size_t len);

#endif
