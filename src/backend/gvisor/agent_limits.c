/* SPDX-License-Identifier: MIT */
/* A pooled microVM's hand-out with other limits (microvm/update.c): its
 * guest's "cmd" cgroup (guest/init.c: every agent and command) gets the
 * new pids.max and memory.max, their controllers enabled first, and its
 * writable tmpfs (the overlay's upper layer) a new size. Each value is
 * read back: a limit asked for and not in place fails the op, and the
 * host then never hands the VM out. */
#include "agent_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <unistd.h>

int aj_agent_cg_put(int cg, const char *file, const char *v)
{
	int fd = openat(cg, file, O_WRONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : write(fd, v, strlen(v));
	int e = errno;
	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(v) ? 0 : -(e ? e : EIO);
}

/* file holds the number v: exactly (pids.max), or (gran: memory.max's
 * page) v rounded down to it, as the kernel stores it */
static int cg_check(int cg, const char *file, unsigned long long v, unsigned long long gran)
{
	char buf[32];
	int fd = openat(cg, file, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	char *end;
	errno = 0;
	unsigned long long got = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EIO;
	return got == v - v % gran ? 0 : -EIO;
}

static int set_one(int cg, const char *ctl, const char *file, unsigned long long v,
		   unsigned long long gran)
{
	char val[32];
	snprintf(val, sizeof(val), "%llu", v);
	int r = aj_agent_cg_put(cg, "cgroup.subtree_control", ctl);
	if (r == 0)
		r = aj_agent_cg_put(cg, file, val);
	return r < 0 ? r : cg_check(cg, file, v, gran);
}

int aj_agent_disk(int fd, unsigned long long bytes, unsigned long long inodes)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return -errno;
	if (sf.f_type != TMPFS_MAGIC || sf.f_bsize <= 0)
		return -ENOTSUP;
	/* tmpfs counts whole pages: size= rounded up to one */
	unsigned long long bs = (unsigned long long)sf.f_bsize, blocks = (bytes + bs - 1) / bs;
	/* smaller than what its files hold: refused (the host builds a fresh
	 * VM); tmpfs would refuse too, as EINVAL */
	if (sf.f_blocks - sf.f_bfree > blocks || sf.f_files - sf.f_ffree > inodes)
		return -ENOSPC;
	char size[32], nr[32];
	snprintf(size, sizeof(size), "%llu", blocks * bs);
	snprintf(nr, sizeof(nr), "%llu", inodes);
	/* the superblock reconfigured (fspick): its mounts' flags untouched */
	int fs = fspick(fd, "", FSPICK_EMPTY_PATH | FSPICK_CLOEXEC);
	int r = fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
			fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", nr, 0) < 0 ||
			fsconfig(fs, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0) < 0
		    ? -errno
		    : 0;
	if (fs >= 0)
		close(fs);
	if (r == 0 && fstatfs(fd, &sf) < 0)
		r = -errno;
	/* read back: the size and inodes in place, or the op fails */
	if (r == 0 && (sf.f_blocks != blocks || sf.f_files != inodes))
		r = -EIO;
	return r;
}

/* the guest's writable tmpfs: guest/init.c binds its directory dev/shm
 * at /dev/shm (no command has run in a pooled VM before its hand-out) */
static int set_disk(unsigned long long bytes, unsigned long long inodes)
{
	int fd = open("/dev/shm", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = aj_agent_disk(fd, bytes, inodes);
	close(fd);
	return r;
}

int aj_agent_limits(json_t *q, int cg)
{
	json_int_t pids = json_integer_value(json_object_get(q, "pids"));
	json_int_t mem = json_integer_value(json_object_get(q, "memory"));
	json_int_t disk = json_integer_value(json_object_get(q, "disk"));
	json_int_t inodes = json_integer_value(json_object_get(q, "inodes"));
	if (pids < 0 || mem < 0 || disk < 0 || inodes < 0 || (disk && !inodes))
		return -EINVAL;
	if (cg < 0 && (pids || mem))
		return -ENOTSUP;
	int r = pids ? set_one(cg, "+pids", "cmd/pids.max", (unsigned long long)pids, 1) : 0;
	if (r == 0 && mem)
		r = set_one(cg, "+memory", "cmd/memory.max", (unsigned long long)mem, 4096);
	if (r == 0 && disk)
		r = set_disk((unsigned long long)disk, (unsigned long long)inodes);
	return r;
}
