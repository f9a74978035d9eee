/* SPDX-License-Identifier: MIT */
/* The new mount API's syscalls: detached trees (open_tree), their
 * attributes (mount_setattr) and attaching them (move_mount). */
#ifndef AJ_MOUNTAPI_H
#define AJ_MOUNTAPI_H

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
