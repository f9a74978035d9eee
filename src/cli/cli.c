/* SPDX-License-Identifier: MIT */
/* What every agentjail program's main shares: error printing, the standard
 * descriptors, and handing a command to a helper program. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "error.h"
#include "util.h"

extern char **environ;

int aj_cli_fail(const aj_error *err)
{
	char buf[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
	aj_err_format(err, buf, sizeof(buf));
	fprintf(stderr, "agentjail: %s\n", buf);
	return err->exit ? err->exit : AJ_EXIT_INTERNAL;
}

void aj_cli_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0) {
			int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
			if (n >= 0 && n != fd) {
				dup2(n, fd);
				close(n);
			}
		}
}

int aj_cli_exec_helper(const char *name, char **argv)
{
	char path[PATH_MAX];
	int r = aj_program_path(name, path, sizeof(path));
	if (r == 0) {
		fflush(NULL);
		execve(path, argv, environ);
		r = -errno;
	}
	aj_error err;
	aj_err_clear(&err);
	aj_err(&err, -r, "cannot start %s, the agentjail program for this command",
	       r == -ENAMETOOLONG ? name : path);
	aj_err_hint(&err, "it is installed next to agentjail or in %s; reinstall agentjail",
		    AJ_LIBEXECDIR);
	return aj_cli_fail(&err);
}
