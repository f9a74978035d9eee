/* SPDX-License-Identifier: MIT */
/* Landlock for the command: file access limited to the sandbox's own view
 * (write only where the policy allows), abstract unix sockets and signals
 * scoped to the sandbox. Best ABI the kernel offers; older ones degrade. */
#ifndef AJ_LANDLOCK_H
#define AJ_LANDLOCK_H

#include "error.h"
#include "policy.h"

/* The kernel's Landlock ABI version, 0 when unavailable. */
int aj_landlock_abi(void);
/* Build and enforce the ruleset in the calling process (after pivot_root,
 * with no_new_privs set). Returns the ABI used (0: Landlock unavailable,
 * nothing enforced) or a negative errno. */
int aj_landlock_apply(const aj_policy *p, aj_error *err);
/* The two halves of aj_landlock_apply: build the ruleset (*ruleset: its
 * fd, close-on-exec, or -1 when Landlock is unavailable; returns the ABI
 * or a negative errno), and enforce it on the calling process (sets
 * no_new_privs; nothing for -1). One ruleset may be enforced by many
 * processes: a persistent sandbox's init builds it once for all commands. */
int aj_landlock_prepare(const aj_policy *p, int *ruleset, aj_error *err);
int aj_landlock_enforce(int ruleset, aj_error *err);

#endif
