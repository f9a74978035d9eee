/* SPDX-License-Identifier: MIT */
/* Shared by the proxy's two paths (proxy_common.c). */
#ifndef AJ_PROXY_COMMON_H
#define AJ_PROXY_COMMON_H

#include "netd_ctx.h"
#include "proxy_parse.h"

/* Answer the client: status, reason and a text body, Connection: close. */
void aj_proxy_reply(int fd, int status, const char *reason, const char *body);
#include "inject.h"

/* The placeholders seen in one request (head and body), logged once its
 * fate is known (aj_proxy_log_notes). */
typedef struct aj_proxy_notes {
	aj_inject_note n[2 * AJ_INJECT_NOTES];
	size_t len;
} aj_proxy_notes;

/* Put the scoped secrets into req (inject.c); a note for each placeholder
 * seen is added to notes. 0 or -E2BIG. */
int aj_proxy_fill_secrets(aj_netd_ctx *ctx, aj_proxy_req *req, aj_proxy_notes *notes);

/* A request body toward a host with "body" secrets (inject.h): the value
 * put in, its notes added, and req->headers given the new Content-Length
 * (no Transfer-Encoding, no Expect). *out (the caller zeroes and frees
 * it) is the body to send. Returns 1 when the client asked for "100
 * Continue" (the proxy answers it), 0, or <0. */
int aj_proxy_fill_body(aj_netd_ctx *ctx, aj_proxy_req *req, const char *body, size_t len,
		       char **out, size_t *out_len, aj_proxy_notes *notes);

/* A streamed body's notes (aj_inject_stream_notes) added to notes and
 * logged as sent: its values went out piece by piece. */
void aj_proxy_stream_notes(aj_netd_ctx *ctx, const char *host, unsigned port, aj_body_stream *st,
			   aj_proxy_notes *notes);

/* The net-log (and audit) lines of notes for a request to host:port, then
 * notes emptied. sent: the request went to the server (secret_injected
 * and secret_withheld lines); refused: only the secret_withheld ones (no
 * value went anywhere). */
void aj_proxy_log_notes(aj_netd_ctx *ctx, const char *host, unsigned port, aj_proxy_notes *notes,
			bool sent);

/* A request body being held (at most AJ_INJECT_BODY_MAX bytes, unless
 * unbounded: a streamed body's piece, drained as it goes). */
typedef struct aj_body_buf {
	char *p;
	size_t len, cap;
	bool too_big, unbounded;
} aj_body_buf;
int aj_body_append(aj_body_buf *b, const char *at, size_t n);
void aj_body_free(aj_body_buf *b); /* zeroed */

#endif
