/* SPDX-License-Identifier: MIT */
/* The isolation levels built in: the CLI and the service find a level's
 * ops table (backend.h) here. */
#ifndef AJ_BACKENDS_H
#define AJ_BACKENDS_H

#include <stdbool.h>

#include "backend.h"

/* The backend of a level; NULL: not built in. */
const aj_backend *aj_backend_of(aj_isolation level);
/* Is the capability there? If not, err says which level lacks what (the
 * API's 501, the CLI's 125) and false. */
bool aj_backend_can(const aj_backend *b, unsigned cap, aj_error *err);

/* Once, before a service starts threads: what every level's sandboxes
 * need of the service's process (level 1: cgroups mounted in its mount
 * namespace, which keepers inherit; creates fail closed without). */
void aj_backends_prepare(void);
/* After a crash, once every state record was swept (ops.sweep): what no
 * record names (level 1: workspace placeholders, protect.h). */
void aj_backends_sweep(void);

#endif
