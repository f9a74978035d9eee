/* SPDX-License-Identifier: MIT */
/* agentjail sandbox exec -t: an interactive session over WebSocket. */
#ifndef AJ_SANDBOX_WS_H
#define AJ_SANDBOX_WS_H

typedef struct aj_ws_target {
	const char *socket; /* the service's unix socket, when url is NULL */
	const char *url;    /* http(s)://HOST:PORT */
	const char *auth;   /* "Authorization: Bearer TOKEN" or "" */
} aj_ws_target;

/* Run argv in sandbox id with a pty, our stdin streamed to it and our
 * terminal (when stdin is one) raw and followed in size. Returns the
 * command's exit status, or 125 with one message on stderr. */
int aj_sandbox_exec_tty(const aj_ws_target *t, const char *id, char **argv, int argc,
			const char *cwd, const char *timeout, char **env, int nenv);

#endif
