/* SPDX-License-Identifier: MIT */
#ifndef AJ_CLI_COMMANDS_H
#define AJ_CLI_COMMANDS_H

int aj_cmd_run(int argc, char **argv);
int aj_cmd_doctor(int argc, char **argv);
int aj_cmd_image(int argc, char **argv);
int aj_cmd_serve(int argc, char **argv);
int aj_cmd_sandbox(int argc, char **argv);
int aj_cmd_mcp(int argc, char **argv);
/* the OCI runtime command line (cmd_oci.c, docs/oci.md) */
int aj_cmd_oci(int argc, char **argv);
/* the service's keeper of one sandbox (box.h: AJ_KEEPER_COMMAND) */
int aj_cmd_keeper(int argc, char **argv);

/* Print "agentjail: MSG" for a structured error; returns its exit code. */
struct aj_error;
int aj_cli_fail(const struct aj_error *err);
/* A closed stdin/stdout/stderr would be taken by the next open() or pipe()
 * and mistaken for the caller's stream: put /dev/null there. */
void aj_cli_std_fds(void);
/* Replace this process by helper program name (agentjail-net, -image,
 * -service: cli.c says where it is found) with argv; returns only on
 * failure, with the exit code after printing why. */
int aj_cli_exec_helper(const char *name, char **argv);

#endif
