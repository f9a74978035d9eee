/* SPDX-License-Identifier: MIT */
/* The new mount API's syscalls (glibc 2.36 lacks some wrappers). */
#include "mountapi.h"

#include <sys/syscall.h>
#include <unistd.h>

struct aj_mount_attr {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

int aj_open_tree(int dfd, const char *path, unsigned flags)
{
	return (int)syscall(SYS_open_tree, dfd, path, flags);
}

int aj_move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags)
{
	return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

int aj_mount_setattr(int dfd, const char *path, unsigned flags, unsigned long long set,
		     unsigned long long clr, int userns_fd)
{
	struct aj_mount_attr a = {.attr_set = set,
				  .attr_clr = clr,
				  .userns_fd = userns_fd >= 0 ? (unsigned long long)userns_fd : 0};
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, &a, sizeof(a));
}
