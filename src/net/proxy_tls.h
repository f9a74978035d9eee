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

#endif
