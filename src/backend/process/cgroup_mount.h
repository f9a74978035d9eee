/* SPDX-License-Identifier: MIT */
/* The cgroup hierarchies, mounted where agentjail looks (cgroup_mount.c). */
#ifndef AJ_CGROUP_MOUNT_H
#define AJ_CGROUP_MOUNT_H

#include <stddef.h>

#include "error.h"

/* Make sure the hierarchies of the controllers agentjail uses are mounted
 * where it looks. As root when some is missing (a fresh /sys, as under
 * `ip netns exec`): move the calling process into a mount namespace of
 * its own whose mounts propagate nothing to the host (a slave of the
 * host's), and mount a tmpfs at /sys/fs/cgroup with the hierarchies below
 * it, as the host has them (cgroup_mount.c). Must be called while the
 * process has one thread. Unprivileged, or with everything there: does
 * nothing. A failure is kept for aj_cgroup_create's message (and
 * returned). */
int aj_cgroup_ensure_mounted(aj_error *err);

/* The texts of /proc/self/mountinfo and /proc/self/cgroup, as read once. */
typedef struct aj_cgroup_view {
	char *mountinfo;
	char *proc_cgroup;
} aj_cgroup_view;
/* aj_cgroup_ensure_mounted, which also hands over in *keep the texts it
 * read, when they still describe the process (nothing was mounted, the
 * process was not moved): aj_cgroup_create_in then does not read them
 * again. *keep stays empty otherwise; aj_cgroup_view_free frees it. */
int aj_cgroup_ensure_mounted_view(aj_cgroup_view *keep, aj_error *err);
void aj_cgroup_view_free(aj_cgroup_view *v);
/* Why aj_cgroup_ensure_mounted could not mount, or "" */
const char *aj_cgroup_mount_failure(void);
/* How to get a cgroup delegated to the calling user on this host's layout
 * (the exact commands), for the fix line and agentjail doctor. */
void aj_cgroup_delegation_howto(char *buf, size_t len);

#endif
