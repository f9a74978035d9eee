/* SPDX-License-Identifier: MIT */
/* netd's HTTP(S) proxy for --allow and the --publish forwarder (proxy.c). */
#ifndef AJ_PROXY_H
#define AJ_PROXY_H

#include "netd_ctx.h"

/* Serve one client connection of the HTTP(S) proxy / of a
 * --publish port; both close fd. */
void aj_proxy_serve(aj_netd_ctx *ctx, int fd);
void aj_publish_serve(aj_netd_ctx *ctx, int fd, unsigned port);
/* Copy both ways between a and b until both directions are done, or
 * nothing passed for 15 minutes, or (stall_ms, 0: never) an end with bytes
 * pending for it took neither AJ_RELAY_STALL_MIN of them nor all within
 * stall_ms (stall.h). Never blocks in a write. */
void aj_splice_pair(int a, int b, unsigned long long stall_ms);

#endif
