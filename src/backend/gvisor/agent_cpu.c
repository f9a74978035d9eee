/* SPDX-License-Identifier: MIT */
/* A microVM exec's CPU time, its command's alone: each exec's command
 * runs in a cgroup of its own, "cmd/x<agent pid>-<boot ns>", so that the cpu.stat
 * read at its end counts every process of its tree (reaped or not, as
 * level 1's wait4 of its init counts the sandbox's) and none of the
 * commands of other agents that run beside it, nor the agent's relaying.
 * Limits and the snapshot's freeze stay on "cmd" (hierarchical). */
#include "agent_cpu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int cmd_fd = -1, procs_fd = -1, stat_fd = -1;
static char name[32];

int aj_agent_cpu_open(int cg)
{
	cmd_fd = openat(cg, "cmd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cmd_fd < 0)
		return -errno;
	/* the pid and the boot clock: a pid reused after a wrap never joins a
	 * cgroup left by an earlier command (processes it left behind) */
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	snprintf(name, sizeof(name), "x%d-%llx", (int)getpid(),
		 (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
	if (mkdirat(cmd_fd, name, 0755) < 0)
		goto fail;
	int dir = openat(cmd_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		goto fail;
	procs_fd = openat(dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	stat_fd = openat(dir, "cpu.stat", O_RDONLY | O_CLOEXEC);
	close(dir);
	if (procs_fd >= 0 && stat_fd >= 0)
		return 0;
fail:;
	int e = errno;
	aj_agent_cpu_close();
	return -e;
}

int aj_agent_cpu_join(void)
{
	int r = 0;
	if (procs_fd >= 0 && write(procs_fd, "0", 1) != 1)
		r = -errno;
	if (procs_fd >= 0)
		close(procs_fd);
	if (stat_fd >= 0)
		close(stat_fd);
	if (cmd_fd >= 0)
		close(cmd_fd);
	procs_fd = stat_fd = cmd_fd = -1;
	return r;
}

bool aj_agent_cpu_read(unsigned long long cpu[2])
{
	char buf[512];
	ssize_t n = stat_fd < 0 ? -1 : pread(stat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *u = strstr(buf, "user_usec "), *s = strstr(buf, "system_usec ");
	if (!u || !s)
		return false;
	cpu[0] = strtoull(u + 10, NULL, 10);
	cpu[1] = strtoull(s + 12, NULL, 10);
	return true;
}

void aj_agent_cpu_close(void)
{
	if (procs_fd >= 0)
		close(procs_fd);
	if (stat_fd >= 0)
		close(stat_fd);
	if (cmd_fd >= 0) {
		(void)unlinkat(cmd_fd, name, AT_REMOVEDIR); /* EBUSY: processes left */
		close(cmd_fd);
	}
	procs_fd = stat_fd = cmd_fd = -1;
}
