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

/* A request body toward a host with "body" secrets (inject.h): the value
 * put in, the net-log lines written, and req->headers given the new
 * Content-Length (no Transfer-Encoding, no Expect). *out (the caller
 * zeroes and frees it) is the body to send. Returns 1 when the client
 * asked for "100 Continue" (the proxy answers it), 0, or <0. */
int aj_proxy_fill_body(aj_netd_ctx *ctx, aj_proxy_req *req, const char *body, size_t len,
		       char **out, size_t *out_len);

/* A request body being held (at most AJ_INJECT_BODY_MAX bytes). */
typedef struct aj_body_buf {
	char *p;
	size_t len, cap;
	bool too_big;
} aj_body_buf;
int aj_body_append(aj_body_buf *b, const char *at, size_t n);
void aj_body_free(aj_body_buf *b); /* zeroed */

#endif
