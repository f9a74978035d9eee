/* SPDX-License-Identifier: MIT */
/* A microVM exec's own CPU time (agent_cpu.c). */
#ifndef AJ_AGENT_CPU_H
#define AJ_AGENT_CPU_H

#include <stdbool.h>

/* A cgroup of this exec's own below the guest's "cmd" (cg: the cgroup2
 * root's fd), made before the fork. 0, or -errno: no CPU time then. */
int aj_agent_cpu_open(int cg);
/* In the command's child before its exec (capabilities still held): the
 * child moves into that cgroup, with every process it will start. 0 (also
 * without one) or -errno. */
int aj_agent_cpu_join(void);
/* That cgroup's user and system CPU so far (usec). false: not known. */
bool aj_agent_cpu_read(unsigned long long cpu[2]);
/* The cgroup removed when its processes are gone (else it stays, its
 * processes still under "cmd"'s limits and freeze). */
void aj_agent_cpu_close(void);

#endif
