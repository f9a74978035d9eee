/* SPDX-License-Identifier: MIT */
/* Per-sandbox cgroups below agentjail's own cgroup, on cgroup v2 or the
 * v1/hybrid layout (controllers on v1, maybe an empty v2 beside them). */
#ifndef AJ_CGROUP_H
#define AJ_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cgroup_find.h"
#include "cgroup_mount.h"
#include "error.h"
#include "policy.h"

#define AJ_CG_MAX_DIRS 8

typedef struct aj_cgroup_dir {
	char ctrl[16]; /* "memory", "pids", "cpu", or "unified" (v2) */
	int version;   /* 1 or 2 */
	char path[PATH_MAX];
} aj_cgroup_dir;

/* The limits of a policy (bits of aj_cgroup.missing). */
#define AJ_LIMIT_MEMORY 1u
#define AJ_LIMIT_PIDS 2u
#define AJ_LIMIT_CPU 4u
#define AJ_LIMIT_CPUSET 8u

typedef struct aj_cgroup {
	aj_cgroup_dir dirs[AJ_CG_MAX_DIRS];
	int n;
	char name[64];
	/* with p->limits_best_effort: the limits asked for that could not be
	 * applied (AJ_LIMIT_*), and why (the first failure) */
	unsigned missing;
	char why[512];
} aj_cgroup;

/* Create the sandbox's cgroups (named name) with the policy's limits.
 * Limits fail closed: a limit p asks for (memory, pids, cpus) that cannot
 * be applied fails the call (nothing is left, err says why with a fix
 * line and err->status 409), unless p->limits_best_effort: then what can be
 * applied is, the rest is in cg->missing and cg->why, and 0 is returned
 * (cg->n may be 0: no cgroup at all). */
int aj_cgroup_create(aj_cgroup *cg, const char *name, const aj_policy *p, aj_error *err);
/* The same, with /proc/self/mountinfo's and /proc/self/cgroup's texts as
 * already read (view: NULL or empty, read now). */
int aj_cgroup_create_in(aj_cgroup *cg, const char *name, const aj_policy *p,
			const aj_cgroup_view *view, aj_error *err);
/* The names of the bits of missing, e.g. "memory, pids" */
void aj_cgroup_limit_names(unsigned missing, char *buf, size_t len);
/* Move pid (a process we started) into every cgroup of cg; with v1_too
 * false only into the v2 one (the v1 ones are joined through their tasks
 * files, below). Moving another process waits for an RCU grace period
 * (the kernel's global threadgroup lock): 1-7 ms on this VM. */
int aj_cgroup_join(const aj_cgroup *cg, pid_t pid, bool v1_too, aj_error *err);
/* A thread that writes "0" to a v1 hierarchy's "tasks" file moves itself
 * without that lock; a single-threaded process moves whole that way. The
 * kernel checks the credentials of the file's opener, so a process that
 * cannot open them (in its own user namespace) can be handed them.
 * Fills fds (room for AJ_CG_MAX_DIRS) with the v1 tasks files of cg, open
 * for writing; returns how many, or -errno (none left open). */
int aj_cgroup_open_tasks(const aj_cgroup *cg, int *fds, aj_error *err);
/* Move the calling thread through those files; closes them. */
int aj_cgroup_join_self(int *fds, size_t n, aj_error *err);
/* True when the memory controller recorded an OOM kill. */
bool aj_cgroup_oom_killed(const aj_cgroup *cg);
/* How many processes the OOM killer took in the sandbox so far. */
unsigned long long aj_cgroup_oom_kills(const aj_cgroup *cg);
/* The file that count is read from, kept open (an fd, or -errno), and
 * the count read from it: three system calls fewer per read. */
int aj_cgroup_oom_fd(const aj_cgroup *cg);
unsigned long long aj_cgroup_oom_kills_fd(int fd);
/* Peak memory use of the sandbox in bytes, 0 when unknown. */
unsigned long long aj_cgroup_peak_memory(const aj_cgroup *cg);
/* Change the memory and pids limits of existing cgroups to p's (a pooled
 * sandbox at hand-out). -ENOENT when cg has no directory for a limit p
 * sets (or p sets none of them to a value: 0 cannot lift a limit). */
/* Memory now and at its peak (bytes), CPU used (µs) and pids now; 0 or
 * -ENOENT when there is no memory cgroup. */
int aj_cgroup_stats(const aj_cgroup *cg, unsigned long long *mem, unsigned long long *peak,
		    unsigned long long *cpu_usec, unsigned long long *pids);
int aj_cgroup_update_limits(const aj_cgroup *cg, const aj_policy *p, aj_error *err);
/* Does this host give us a cpu controller (v1 hierarchy, or "cpu" among
 * the v2 controllers of our cgroup)? */
bool aj_cgroup_cpu_available(void);
/* Has cg a cpu controller's directory? */
bool aj_cgroup_has_cpu(const aj_cgroup *cg);
/* Change the cpu quota of existing cgroups (a pooled sandbox at hand-out)
 * to cpu_millis (1000 = one CPU). -ENOENT when cg has no cpu controller. */
int aj_cgroup_update_cpu(const aj_cgroup *cg, unsigned long long cpu_millis, aj_error *err);
/* `oci update`: change every limit p sets (memory, memory_low, pids,
 * cpu_millis, cpu_shares, cpuset_cpus, cpuset_mems; 0 / NULL: stays) on
 * existing cgroups, all or nothing: every knob's file is checked and its
 * value read, and the cpuset checked against the parent's, before the
 * first write; a write the kernel refuses puts back those done. 0, or
 * -errno with err naming the field. */
int aj_cgroup_update_all(const aj_cgroup *cg, const aj_policy *p, aj_error *err);
/* Also a freezer cgroup (the v1 freezer hierarchy, when there is one; a v2
 * cgroup has cgroup.freeze of its own), for aj_cgroup_freeze. Call before
 * aj_cgroup_join. Without a freezer, nothing is added and 0 is returned
 * (aj_cgroup_freeze then says why it cannot). */
int aj_cgroup_add_freezer(aj_cgroup *cg, aj_error *err);
/* Freeze (every process stopped, memory kept) or thaw the cgroup; waits
 * until the kernel reports it frozen. */
int aj_cgroup_freeze(const aj_cgroup *cg, bool frozen, aj_error *err);
/* Remove the cgroups of agentjails that are gone, in every hierarchy (what
 * aj_cgroup_create sweeps in those it uses; `oci delete`): beside this
 * process's cgroups, or those of proc_cgroup (a /proc/PID/cgroup text: a
 * sandbox's own, swept in the cgroups above them). */
void aj_cgroup_sweep(const char *proc_cgroup);
/* Kill whatever is left and remove the directories. */
/* Let frozen processes run (best effort, no wait): they can die then. */
void aj_cgroup_thaw(const aj_cgroup *cg);
void aj_cgroup_destroy(aj_cgroup *cg);

#endif
