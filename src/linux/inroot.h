/* SPDX-License-Identifier: MIT */
/* Paths inside a tree that is not ours to trust (an image's root, a
 * workspace, a bind of a host directory the sandbox could write), looked up
 * as if the tree's directory were "/": every symlink, absolute or relative,
 * and every "..", is resolved by the kernel inside the tree (openat2 with
 * RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), and what is missing is created
 * relative to the descriptor of its parent. A path of the tree never reaches
 * above its root, whatever the tree's links say: a root with `home ->
 * /oldroot/tmp` or `tmp -> ../../../tmp` gets /oldroot/tmp or /tmp of its own.
 *
 * All return a descriptor (O_CLOEXEC) or -errno: -ELOOP for a magic link
 * (/proc/self/root...) or more than 40 links, -ENOTDIR/-EISDIR when what is
 * there is not of the kind asked for, -EROFS/-EACCES when it is missing and
 * cannot be made. */
#ifndef AJ_INROOT_H
#define AJ_INROOT_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/* Open path (absolute or relative: both start at rootfd) inside the tree of
 * rootfd with open(2) flags (mode for O_CREAT); missing parents are not
 * made. */
int aj_open_in_root(int rootfd, const char *path, int flags, mode_t mode);

/* The directory path inside the tree of rootfd, made with its missing
 * parents (mode) when needed; a dangling symlink on the way is followed
 * (inside the tree) and what it names is made. Returns an O_PATH fd of the
 * directory. */
int aj_mkdir_in_root(int rootfd, const char *path, mode_t mode);

/* The same for a file: the parents are directories made as above, the file
 * itself, when missing, an empty regular file of mode. What is there may be
 * any kind of file but a directory. Returns an O_PATH fd of it. */
int aj_mkfile_in_root(int rootfd, const char *path, mode_t mode);

/* A check of a directory the walks below would make something in, and of
 * what they return: 0 to go on, or -errno to stop with, nothing made. */
typedef int (*aj_inroot_check)(int fd, void *ctx);

/* aj_mkdir_in_root (dir) or aj_mkfile_in_root, asking check(fd, ctx) of
 * each directory before anything is made in it and of the result: a walk
 * an untrusted tree's links lead to a place the caller refuses (another
 * mount, the root itself) stops there, having made nothing in it. */
int aj_make_in_root_checked(int rootfd, const char *path, mode_t mode, bool dir,
			    aj_inroot_check check, void *ctx);

/* Attach the detached mount mnt (open_tree, fsmount) at dest inside the
 * tree of rootfd: the mount point is made as above (a directory, or a file
 * when !is_dir) and the mount moved onto its descriptor
 * (MOVE_MOUNT_T_EMPTY_PATH), never onto a path string. mnt stays open. */
int aj_mount_in_root(int mnt, int rootfd, const char *dest, bool is_dir, aj_error *err);

#endif
