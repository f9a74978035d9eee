/* SPDX-License-Identifier: MIT */
/* A microVM command's OOM kill, told in the exec's answer ("oom": true)
 * from the guest kernel's own count of its OOM kills, which it raises
 * before the victim's SIGKILL: unlike the console's "Out of memory"
 * line, which a command can make the guest kernel print (a mount's
 * rejected option is printed back), no command can forge it. */
#include "agent_oom.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long long aj_agent_oom_kills(void)
{
	char buf[8192];
	int fd = open("/proc/vmstat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *p = strstr(buf, "\noom_kill ");
	return p ? strtoll(p + 10, NULL, 10) : -1;
}
