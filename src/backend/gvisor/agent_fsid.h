/* SPDX-License-Identifier: MIT */
/* The agent's file operations as the sandbox's --user (agent_fsid.c). */
#ifndef AJ_AGENT_FSID_H
#define AJ_AGENT_FSID_H

#include <jansson.h>

/* Take the request's "uid"/"gid" (a level-3 sandbox's --user), if it has
 * them, as this process's fsuid/fsgid for the file operation it serves.
 * 0, or -errno: the operation must not run. */
int aj_agent_file_as(json_t *q);

#endif
