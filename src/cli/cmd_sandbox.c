/* SPDX-License-Identifier: MIT */
#include "commands.h"
int aj_cmd_sandbox(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 125;
}
