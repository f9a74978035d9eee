/* SPDX-License-Identifier: MIT */
/* Landlock for the command: file access limited to the sandbox's own view
 * (write only where the policy allows), abstract unix sockets and signals
 * scoped to the sandbox. Best ABI the kernel offers; older ones degrade. */
#ifndef AJ_LANDLOCK_H
#define AJ_LANDLOCK_H

#include <stddef.h>

#include "error.h"
#include "policy.h"

/* The rules the command gets, as a pure function of the policy (the plan
 * prints them; aj_landlock_prepare adds them): access beneath path. A
 * path missing in the sandbox is skipped when the ruleset is built. */
#define AJ_LL_READ 1u	/* read, list, execute */
#define AJ_LL_WRITE 2u	/* create, write, remove, rename, truncate */
#define AJ_LL_DEVICE 4u /* read, write, ioctl of a device node */
#define AJ_LL_MAX_RULES (AJ_MAX_BINDS + 16)
typedef struct aj_landlock_rule {
	const char *path; /* borrowed: static or the policy's */
	unsigned access;
} aj_landlock_rule;
/* Fills out[0..max) and returns how many rules there are (> max: more). */
size_t aj_landlock_rules(const aj_policy *p, aj_landlock_rule *out, size_t max);

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
