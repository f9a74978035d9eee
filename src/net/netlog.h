/* SPDX-License-Identifier: MIT */
/* --net-log inside netd (netlog.c). */
#ifndef AJ_NETLOG_H
#define AJ_NETLOG_H

#include <jansson.h>

#include "netd_ctx.h"

/* Write ev (a JSON object; the reference is stolen) as one line
 * of --net-log, with "time" added. No-op without --net-log. */
void aj_netlog(aj_netd_ctx *ctx, json_t *ev);
/* Read the kernel's nflog messages of the sandbox's nft rules (direct
 * connections) and log them; returns the socket to poll, or -errno. */
int aj_nflog_open(unsigned group);
/* Log what is queued; -1 when nothing was. */
int aj_nflog_read(aj_netd_ctx *ctx, int fd);

#endif
