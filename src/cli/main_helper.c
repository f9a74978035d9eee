/* SPDX-License-Identifier: MIT */
/* The helper programs `agentjail` execs for the commands whose libraries
 * it does not load itself (src/cli/main.c): one source, built as
 *   agentjail-net      run (any network mode), the
 *                      service's keeper with one    -DAJ_HELPER_RUN
 *   agentjail-image    image                       -DAJ_HELPER_IMAGE
 *   agentjail-service  serve, sandbox, mcp         -DAJ_HELPER_SERVICE
 * They take agentjail's own command line ("agentjail run ..."). */
#include <stdio.h>
#include <string.h>

#include "box.h"
#include "commands.h"
#include "error.h"
#include "util.h"

int main(int argc, char **argv)
{
	aj_cli_std_fds();
	aj_proctitle_init(argc, argv);
	const char *cmd = argc >= 2 ? argv[1] : "";
#ifdef AJ_HELPER_RUN
	if (strcmp(cmd, "run") == 0)
		return aj_cmd_run(argc - 1, argv + 1);
	if (strcmp(cmd, AJ_KEEPER_COMMAND) == 0) /* a sandbox of the service with a network */
		return aj_cmd_keeper(argc - 1, argv + 1);
	if (strcmp(cmd, "oci") == 0) /* a container with a network (cmd_oci.c) */
		return aj_cmd_oci(argc - 1, argv + 1);
#endif
#ifdef AJ_HELPER_IMAGE
	if (strcmp(cmd, "image") == 0)
		return aj_cmd_image(argc - 1, argv + 1);
#endif
#ifdef AJ_HELPER_SERVICE
	if (strcmp(cmd, "serve") == 0)
		return aj_cmd_serve(argc - 1, argv + 1);
	if (strcmp(cmd, "sandbox") == 0)
		return aj_cmd_sandbox(argc - 1, argv + 1);
	if (strcmp(cmd, "mcp") == 0)
		return aj_cmd_mcp(argc - 1, argv + 1);
#endif
	fprintf(stderr,
		"agentjail: '%s' is not a command of this helper program (fix: run it as "
		"'agentjail %s ...'; see agentjail --help)\n",
		cmd, cmd[0] ? cmd : "COMMAND");
	return AJ_EXIT_INTERNAL;
}
