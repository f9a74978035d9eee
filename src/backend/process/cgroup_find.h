/* SPDX-License-Identifier: MIT */
/* Where a controller's cgroup hierarchy is (cgroup_find.c). */
#ifndef AJ_CGROUP_FIND_H
#define AJ_CGROUP_FIND_H

#include <limits.h>

/* Where a hierarchy holding a controller is mounted and our place in it. */
typedef struct aj_cgroup_hier {
	char mount[PATH_MAX]; /* e.g. /sys/fs/cgroup/memory */
	char own[PATH_MAX];   /* e.g. /process_api/abc ("/" for the root) */
	int version;
} aj_cgroup_hier;

/* Find the hierarchy for ctrl ("memory", "pids", "cpu"; "" for v2). Parses
 * the given mountinfo and /proc/self/cgroup texts. Returns 0 or -ENOENT. */
int aj_cgroup_find(const char *mountinfo, const char *proc_cgroup, const char *ctrl,
		   aj_cgroup_hier *out);

#endif
