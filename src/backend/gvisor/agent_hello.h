/* SPDX-License-Identifier: MIT */
/* A level-3 agent's start on its port (agent_hello.c; agent_resync.h). */
#ifndef AJ_AGENT_HELLO_H
#define AJ_AGENT_HELLO_H

#include <stdbool.h>

/* The guest init's word on the agent's start (AJ_AGENT_START_ENV, with
 * argv[1] "cg"): "hello" (*hello set: a revived port's fresh agent, whose
 * one request must be a hello), or the first byte of the host's stream,
 * which init read, in decimal: returned (else -1). */
int aj_agent_port_args(int argc, char **argv, bool *hello);
/* The answer to a hello with nonce on stdout: 0, or an errno (a nonce
 * that is not AJ_AGENT_NONCE_LEN lowercase hex digits: EINVAL). */
int aj_agent_hello(const char *nonce);

#endif
