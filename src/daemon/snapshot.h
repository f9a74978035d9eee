/* SPDX-License-Identifier: MIT */
/* Snapshots and forks of a sandbox's filesystem (snapshot.c). */
#ifndef AJ_SNAPSHOT_H
#define AJ_SNAPSHOT_H

#include <jansson.h>

#include "error.h"
#include "registry.h"

/* A new image from an image sandbox's filesystem (snapshot.c; at a level
 * that saves whole sandboxes, gVisor, with its saved memory). */
int aj_sandbox_snapshot(aj_sandbox *sb, const char *name, json_t **out, aj_error *err);
/* count new sandboxes from a copy of sb's filesystem (snapshot.c); *out:
 * {"sandboxes": [...]}. -EAGAIN: too many sandboxes. */
int aj_sandbox_fork(aj_sandbox *sb, unsigned count, double ttl, const char *owner, json_t **out,
		    aj_error *err);
#define AJ_FORK_MAX 16

#endif
