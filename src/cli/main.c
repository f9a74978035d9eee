/* SPDX-License-Identifier: MIT */
/* agentjail: run untrusted commands in isolated, limited, throw-away sandboxes. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "commands.h"
#include "error.h"
#include "util.h"

static const char usage[] =
    "Usage: agentjail COMMAND [OPTIONS]\n"
    "\n"
    "Run untrusted commands (an AI agent's shell lines, generated code, a stranger's\n"
    "`npm install`) in an isolated, limited, ephemeral sandbox.\n"
    "\n"
    "Commands:\n"
    "  run [OPTIONS] -- CMD [ARG...]   run one command in a fresh sandbox\n"
    "  image build|ls|inspect|rm       root filesystem images (agentjail image --help)\n"
    "  doctor                          check what this host supports, with fixes\n"
    "  help                            show this help\n"
    "  version                         print the version\n"
    "\n"
    "Run 'agentjail run --help' for the sandbox options. Docs: docs/cli.md.\n";

int aj_cli_fail(const aj_error *err)
{
	char buf[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
	aj_err_format(err, buf, sizeof(buf));
	fprintf(stderr, "agentjail: %s\n", buf);
	return err->exit ? err->exit : AJ_EXIT_INTERNAL;
}

/* A closed stdin/stdout/stderr would be taken by the next open() or pipe()
 * and mistaken for the caller's stream: put /dev/null there. */
static void ensure_std_fds(void)
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

int main(int argc, char **argv)
{
	ensure_std_fds();
	aj_proctitle_init(argc, argv);
	if (argc < 2) {
		fputs(usage, stderr);
		return AJ_EXIT_INTERNAL;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "run") == 0)
		return aj_cmd_run(argc - 1, argv + 1);
	if (strcmp(cmd, "doctor") == 0)
		return aj_cmd_doctor(argc - 1, argv + 1);
	if (strcmp(cmd, "image") == 0)
		return aj_cmd_image(argc - 1, argv + 1);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("agentjail %s\n", AJ_VERSION);
		return 0;
	}
	fprintf(stderr, "agentjail: unknown command '%s' (fix: see agentjail --help)\n", cmd);
	return AJ_EXIT_INTERNAL;
}
