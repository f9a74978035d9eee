/* SPDX-License-Identifier: MIT */
/* netd's HTTP(S) proxy for --allow and the --publish forwarder (proxy.c). */
#ifndef AJ_PROXY_H
#define AJ_PROXY_H

#include "netd_ctx.h"

/* Serve one client connection of the HTTP(S) proxy / of a
 * --publish port; both close fd. */
void aj_proxy_serve(aj_netd_ctx *ctx, int fd);
void aj_publish_serve(aj_netd_ctx *ctx, int fd, unsigned port);
/* Answer the client: status, reason and a text body, Connection: close. */
void aj_proxy_reply(int fd, int status, const char *reason, const char *body);
/* Put the scoped secrets into req (inject.c) and log each placeholder
 * seen; 0 or -E2BIG. */
struct aj_proxy_req;
int aj_proxy_fill_secrets(aj_netd_ctx *ctx, struct aj_proxy_req *req);
/* An allowed CONNECT to a host with scoped secrets, connected to up:
 * answer 200, terminate the sandbox's TLS and relay its requests with the
 * secrets in (proxy_tls.c). Closes neither fd. */
void aj_proxy_tls(aj_netd_ctx *ctx, int fd, int up, const struct aj_proxy_req *connect);
/* Copy both ways between a and b until both directions are done. */
void aj_splice_pair(int a, int b);

#endif
