/* SPDX-License-Identifier: MIT */
/* A pooled microVM's hand-out with other limits (microvm/update.c): its
 * guest's "cmd" cgroup (guest/init.c: every agent and command) gets the
 * new pids.max and memory.max, their controllers enabled first. Each
 * value is read back: a limit asked for and not in place fails the op,
 * and the host then never hands the VM out. */
#include "agent_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* file holds the number v (the kernel's rounding of memory.max: pages) */
static int cg_check(int cg, const char *file, unsigned long long v)
{
	char buf[32];
	int fd = openat(cg, file, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	unsigned long long got = strtoull(buf, NULL, 10);
	return got <= v && got + 4096 > v ? 0 : -EIO;
}

static int set_one(int cg, const char *ctl, const char *file, unsigned long long v)
{
	char val[32];
	snprintf(val, sizeof(val), "%llu", v);
	int r = aj_agent_cg_put(cg, "cgroup.subtree_control", ctl);
	if (r == 0)
		r = aj_agent_cg_put(cg, file, val);
	return r < 0 ? r : cg_check(cg, file, v);
}

int aj_agent_limits(json_t *q, int cg)
{
	if (cg < 0)
		return -ENOTSUP;
	json_int_t pids = json_integer_value(json_object_get(q, "pids"));
	json_int_t mem = json_integer_value(json_object_get(q, "memory"));
	if (pids < 0 || mem < 0)
		return -EINVAL;
	int r = pids ? set_one(cg, "+pids", "cmd/pids.max", (unsigned long long)pids) : 0;
	if (r == 0 && mem)
		r = set_one(cg, "+memory", "cmd/memory.max", (unsigned long long)mem);
	return r;
}
