/* SPDX-License-Identifier: MIT */
/* Whether the guest's OOM killer killed during an exec (agent_oom.c). */
#ifndef AJ_AGENT_OOM_H
#define AJ_AGENT_OOM_H

/* The guest kernel's OOM kills so far (/proc/vmstat "oom_kill"), or -1. */
long long aj_agent_oom_kills(void);

#endif
