/* SPDX-License-Identifier: MIT */
/* agentjail: run untrusted commands in isolated, limited, throw-away sandboxes.
 *
 * This program links only what `run` without a network needs (libseccomp,
 * jansson, libc): it starts in a fraction of the time the whole of
 * agentjail would take. The rest are helper programs it execs, found next
 * to it (src/cli/cli.c): agentjail-net (run with --net open, --allow,
 * --publish: libmnl, libnftables, ldns, http-parser), agentjail-image
 * (libcrypto) and agentjail-service (serve, sandbox and mcp: libwebsockets,
 * libcurl). docs/performance.md has the figures. */
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "box.h"
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
    "  serve [OPTIONS]                 serve the sandbox API (docs/api.md)\n"
    "  sandbox create|ls|exec|code|ps|logs|kill|cp|rm|pause|resume\n"
    "                                  use the service's sandboxes (agentjail sandbox\n"
    "                                  --help)\n"
    "  mcp                             an MCP server on stdio for agent hosts (docs/mcp.md)\n"
    "  oci create|start|state|kill|delete|features\n"
    "                                  the OCI runtime interface, for Podman (docs/oci.md)\n"
    "  help                            show this help\n"
    "  version                         print the version\n"
    "\n"
    "Run 'agentjail run --help' for the sandbox options. Docs: docs/cli.md.\n";

int main(int argc, char **argv)
{
	aj_cli_std_fds();
	aj_proctitle_init(argc, argv);
	if (argc < 2) {
		fputs(usage, stderr);
		return AJ_EXIT_INTERNAL;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "run") == 0)
		return aj_cmd_run(argc - 1, argv + 1);
	if (strcmp(cmd, AJ_KEEPER_COMMAND) == 0)
		return aj_cmd_keeper(argc - 1, argv + 1);
	if (strcmp(cmd, "oci") == 0)
		return aj_cmd_oci(argc - 1, argv + 1);
	if (strcmp(cmd, "doctor") == 0)
		return aj_cmd_doctor(argc - 1, argv + 1);
	if (strcmp(cmd, "image") == 0)
		return aj_cli_exec_helper("agentjail-image", argv);
	if (!strcmp(cmd, "serve") || !strcmp(cmd, "sandbox") || !strcmp(cmd, "mcp"))
		return aj_cli_exec_helper("agentjail-service", argv);
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
