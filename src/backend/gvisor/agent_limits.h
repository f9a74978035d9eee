/* SPDX-License-Identifier: MIT */
/* A microVM's limits changed while it lives (agent_limits.c). */
#ifndef AJ_AGENT_LIMITS_H
#define AJ_AGENT_LIMITS_H

#include <jansson.h>

/* Op "limits": the request's "pids" and "memory" (0: not changed) as the
 * pids.max and memory.max of the guest's "cmd" cgroup (cg: the cgroup2
 * root's fd, -1 outside a microVM), and "disk" and "inodes" as the size
 * and nr_inodes of its writable tmpfs. 0, or -errno: not applied. */
int aj_agent_limits(json_t *q, int cg);
/* The tmpfs of fd resized to bytes (rounded up to its pages) and inodes,
 * read back: 0, -ENOSPC below what it holds, or -errno. */
int aj_agent_disk(int fd, unsigned long long bytes, unsigned long long inodes);
/* v written whole to file of the cgroup directory cg: 0 or -errno */
int aj_agent_cg_put(int cg, const char *file, const char *v);

#endif
