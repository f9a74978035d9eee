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
/* Why aj_cgroup_ensure_mounted could not mount, or "" */
const char *aj_cgroup_mount_failure(void);
/* How to get a cgroup delegated to the calling user on this host's layout
 * (the exact commands), for the fix line and agentjail doctor. */
void aj_cgroup_delegation_howto(char *buf, size_t len);

#endif
