/* SPDX-License-Identifier: MIT */
/* Shared by the proxy's two paths (proxy_common.c). */
#ifndef AJ_PROXY_COMMON_H
#define AJ_PROXY_COMMON_H

#include "netd_ctx.h"
#include "proxy_parse.h"

/* Answer the client: status, reason and a text body, Connection: close. */
void aj_proxy_reply(int fd, int status, const char *reason, const char *body);
/* Put the scoped secrets into req (inject.c) and log each placeholder
 * seen; 0 or -E2BIG. */
int aj_proxy_fill_secrets(aj_netd_ctx *ctx, aj_proxy_req *req);

#endif
