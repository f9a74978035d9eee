/* SPDX-License-Identifier: MIT */
/* The agent's op "hello" (agent_hello.c; agent_proto.h). */
#ifndef AJ_AGENT_HELLO_H
#define AJ_AGENT_HELLO_H

/* The answer to a hello with nonce on stdout: 0, or an errno (a nonce
 * that is not AJ_AGENT_NONCE_LEN lowercase hex digits: EINVAL). */
int aj_agent_hello(const char *nonce);

#endif
