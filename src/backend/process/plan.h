/* SPDX-License-Identifier: MIT */
/* The compiled plan of a sandbox: what the policy becomes (mounts, /etc,
 * masks, seccomp, Landlock, network, limits, user, environment), as a pure
 * function of aj_policy: no namespace is made and nothing on the host is
 * changed. `agentjail run --print-plan` prints it (aj_plan_json); the
 * process backend's mount plan (mount_plan.c) and the gVisor bundle
 * (bundle.c) take their list of host binds from aj_plan_mounts, so what
 * is printed is what they mount. */
#ifndef AJ_PLAN_H
#define AJ_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "policy.h"

/* What a planned bind is for: its role decides how a backend makes it. */
typedef enum aj_plan_role {
	AJ_PLAN_ROOTFS,	   /* --rootfs/--image: the root's lower layer */
	AJ_PLAN_SYSTEM,	   /* a host system directory, read-only, recursive */
	AJ_PLAN_ETC_HOST,  /* a harmless host /etc entry, read-only, if present */
	AJ_PLAN_ETC_GLOB,  /* the /etc entries aj_etc_allowed_name says yes to */
	AJ_PLAN_DEV_NODE,  /* a host device node, read-write, if present */
	AJ_PLAN_WORKSPACE, /* --workspace at /workspace, writable, its owner's ids */
	AJ_PLAN_BIND,	   /* --ro / --rw */
} aj_plan_role;

typedef struct aj_plan_mount {
	aj_plan_role role;
	const char *source; /* host path (borrowed: static or the policy's) */
	const char *target; /* path inside the sandbox */
	bool ro;
} aj_plan_mount;

#define AJ_PLAN_MAX_MOUNTS 128

/* The host binds, in the order they are mounted. The real run checks each
 * source when it plans it (a missing optional one is skipped; a symlink is
 * copied as a link), so aj_plan_json shows /etc entries that exist here. */
typedef struct aj_plan {
	aj_plan_mount m[AJ_PLAN_MAX_MOUNTS];
	size_t n;
} aj_plan;

/* Host directories that make up the default root, read-only. */
extern const char *const aj_plan_system_dirs[];
extern const size_t aj_plan_system_dirs_n;

int aj_plan_mounts(const aj_policy *p, aj_plan *plan, aj_error *err);

/* The whole plan as JSON (docs/cli.md, "The compiled plan"). Secret values
 * are never in it (names and placeholders only). Reads the host only as
 * the run would: which /etc entries exist (lstat, a readdir of /etc).
 * NULL and err filled when p is invalid. */
struct json_t;
struct json_t *aj_plan_json(const aj_policy *p, aj_error *err);

#endif
