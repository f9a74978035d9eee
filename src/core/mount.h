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
} aj_mount_plan;

/* Build the plan for a policy (host paths are checked for existence). */
int aj_mount_plan_build(const aj_policy *p, aj_mount_plan *plan, aj_error *err);
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

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC 02000000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#define MOUNT_ATTR_IDMAP 0x00100000
#endif

/* Detached-mount syscalls (glibc 2.36 lacks some wrappers). */
int aj_open_tree(int dfd, const char *path, unsigned flags);
int aj_move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags);
int aj_mount_setattr(int dfd, const char *path, unsigned flags, unsigned long long set,
		     unsigned long long clr, int userns_fd);

#endif
