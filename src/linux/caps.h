/* SPDX-License-Identifier: MIT */
/* Privilege drop of the command: identity, capabilities, securebits,
 * no_new_privs. */
#ifndef AJ_CAPS_H
#define AJ_CAPS_H

#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Become uid/gid inside the user namespace with no capability in any set,
 * locked securebits (root gains nothing on exec) and no_new_privs.
 * drop_groups: call setgroups(0, NULL) (not allowed when unprivileged). */
int aj_caps_drop_all(uid_t uid, gid_t gid, int drop_groups, aj_error *err);
/* The same, but keep the capabilities keep[] (CAP_*) permitted and
 * effective (and in the bounding set). */
int aj_caps_drop_keep(uid_t uid, gid_t gid, int drop_groups, const int *keep, size_t nkeep,
		      aj_error *err);

/* aj_caps_drop_keep in two steps: the bounding set (a process that never
 * execs keeps its own capabilities while its children start without those
 * it dropped), then the rest. */
int aj_caps_drop_bounding(const int *keep, size_t nkeep, aj_error *err);
int aj_caps_drop_rest(uid_t uid, gid_t gid, int drop_groups, const int *keep, size_t nkeep,
		      aj_error *err);
/* Add caps[] (permitted ones) to the calling thread's effective set. 0 or a
 * negative errno. */
int aj_caps_raise_effective(const int *caps, size_t n);
#endif
