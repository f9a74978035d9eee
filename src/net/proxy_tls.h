/* SPDX-License-Identifier: MIT */
/* One intercepted HTTPS connection of the proxy (proxy_tls.c). */
#ifndef AJ_PROXY_TLS_H
#define AJ_PROXY_TLS_H

#include "netd_ctx.h"
#include "proxy_parse.h"

/* An allowed CONNECT to a host with scoped secrets, connected to up:
 * verify the server's TLS, answer 200, terminate the sandbox's TLS and
 * relay its requests with the secrets in. Closes neither fd. */
void aj_proxy_tls(aj_netd_ctx *ctx, int fd, int up, const aj_proxy_req *connect);

/* The request side of a session without TLS, for tests and fuzzing: the
 * client's bytes in (len), what would go to the server out (at most cap
 * bytes; returns how many), until the input ends or a request is refused.
 * answer (answer_len bytes) is all the server says, in order, once the
 * requests the client sent first are out (as far as they go without an
 * answer: an Upgrade waits for its own). */
size_t aj_proxy_tls_frame(aj_netd_ctx *ctx, const aj_proxy_req *connect, const char *in, size_t len,
			  const char *answer, size_t answer_len, char *out, size_t cap);

#endif
