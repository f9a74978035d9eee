/* SPDX-License-Identifier: MIT */
/* The sandbox's filesystem: a plan of mounts computed in the parent, whose
 * bind sources may be opened by the parent (as real root, with idmapping),
 * then carried out in the child, which pivots into the new root. */
#ifndef AJ_MOUNT_H
#define AJ_MOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "etc.h"
#include "mountapi.h"
#include "policy.h"

#define AJ_MAX_MOUNT_OPS 96

typedef enum aj_idmap_kind {
	AJ_IDMAP_NONE = 0,
	AJ_IDMAP_OWNER,	  /* the source's owner appears as the sandbox user */
	AJ_IDMAP_SANDBOX, /* host ids shifted like the sandbox's user namespace */
} aj_idmap_kind;

typedef enum aj_mount_kind {
	AJ_MOUNT_BIND,	  /* bind src (file or dir) at dest */
	AJ_MOUNT_SYMLINK, /* create symlink dest -> src */
	AJ_MOUNT_LOWER,	  /* the --rootfs tree, used as overlay lower layer */
} aj_mount_kind;

typedef struct aj_mount_op {
	aj_mount_kind kind;
	char *src;  /* host path (BIND, LOWER) or link target (SYMLINK) */
	char *dest; /* path inside the sandbox */
	bool writable;
	bool recursive;
	bool optional; /* skip silently when src is missing */
	aj_idmap_kind idmap;
	uid_t owner_uid; /* for AJ_IDMAP_OWNER */
	gid_t owner_gid;
	int fd;	   /* detached mount tree opened by the parent, or -1 */
	bool skip; /* optional source missing: nothing to mount */
} aj_mount_op;

typedef struct aj_mount_plan {
	aj_mount_op ops[AJ_MAX_MOUNT_OPS];
	size_t n;
	char *resolv_conf; /* /etc/resolv.conf of the default root (net.c) */
	aj_etc_files etc;  /* the synthesized /etc of the default root */
	/* The default root's host /etc files from the state directory's copy
	 * (etc_cache.c): etc_tree is a detached read-only bind of it, which
	 * the child mounts on /etc (the generated files then go to
	 * AJ_ETC_GENERATED_DIR, where the copy's links point). */
	bool etc_cached;
	int etc_tree;
	/* dev_cached: /dev is dev_tree, a detached read-only bind of the
	 * state directory's prepared /dev (dev_cache.c), not a tmpfs with a
	 * bind per device node. */
	bool dev_cached;
	int dev_tree;
	/* the workspace's host-run files, bound read-only by the child after
	 * the masks (protect.h); not owned by the plan */
	const struct aj_protect *protect;
	/* netd's CA certificate (HTTPS interception), given to the child with
	 * PARENT_GO; the child adds it to the root's CA bundle */
	char *ca_pem;
} aj_mount_plan;

/* Where the generated /etc files are when /etc is the cached copy. */
#define AJ_ETC_GENERATED_DIR "/.agentjail"

/* Build the plan for a policy (host paths are checked for existence).
 * etc_lock (NULL: never) lets the plan use the state directory's /etc copy
 * and /dev: *etc_lock is then a file to keep open while the sandbox runs. */
int aj_mount_plan_build(const aj_policy *p, aj_mount_plan *plan, int *etc_lock, aj_error *err);

void aj_mount_plan_free(aj_mount_plan *plan);

/* Parent, real root, before the sandbox is cloned: open every bind source as
 * a detached mount with its attributes and idmapping set; the child inherits
 * the fds. sandbox_map is the sandbox's uid_map text ("0 BASE 65536");
 * host_uid/gid the host ids of the sandbox user. */
int aj_mount_plan_open(aj_mount_plan *plan, const char *sandbox_map, uid_t host_uid, gid_t host_gid,
		       aj_error *err);

/* Child, in its own user and mount namespace: build the root and pivot into
 * it. The old root is detached. */
int aj_mount_setup_root(const aj_policy *p, aj_mount_plan *plan, aj_error *err);
/* The inodes of the scratch tmpfs (every writable area of a sandbox) for a
 * --disk of bytes. */
unsigned long long aj_scratch_inodes(unsigned long long bytes);

#endif
