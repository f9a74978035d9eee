/* SPDX-License-Identifier: MIT */
#ifndef AJ_CLI_COMMANDS_H
#define AJ_CLI_COMMANDS_H

int aj_cmd_run(int argc, char **argv);
int aj_cmd_doctor(int argc, char **argv);
int aj_cmd_image(int argc, char **argv);

/* Print "agentjail: MSG" for a structured error; returns its exit code. */
struct aj_error;
int aj_cli_fail(const struct aj_error *err);

#endif
