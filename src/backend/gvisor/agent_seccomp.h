/* SPDX-License-Identifier: MIT */
/* The agent's part of level 3's --seccomp-profile (agent_seccomp.c). */
#ifndef AJ_AGENT_SECCOMP_H
#define AJ_AGENT_SECCOMP_H

#include <jansson.h>

/* Load the exec request's "seccomp_profile", if it has one, on top of the
 * filters already loaded (no_new_privs set). 0, or -errno: the command
 * must not run. */
int aj_agent_profile_load(json_t *q);

#endif
