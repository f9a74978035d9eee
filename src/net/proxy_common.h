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

/* A body too large to hold (over AJ_INJECT_BODY_MAX) toward a host with a
 * :body secret, filled as it comes. A body the client framed with a
 * Content-Length is spooled as sent (placeholders, never a value) to an
 * unlinked file (O_TMPFILE) in netd's spool directory, up to
 * ctx->spool_max for all of the sandbox's spools together, and sent once whole, filled, with its
 * new Content-Length; any other (chunked, or no spool) is re-framed as chunks and sent piece by
 * piece. Both fill with the carry of aj_inject_stream. */
typedef struct aj_body_out {
	aj_body_stream fill;  /* the values in: chunks, or the spool as it is sent */
	aj_body_stream count; /* spool: the filled size as the body arrives */
	int spool;	      /* the spool's fd, when spooling (else: chunked) */
	unsigned long long raw, filled, cap, off, charged;
	_Atomic unsigned long long *used; /* the sandbox's spool_used, raw charged to it */
	bool spooling, eof;
	char host[sizeof(((aj_proxy_req *)0)->host)]; /* the streams' (req is zeroed once sent) */
} aj_body_out;

/* Begin a body of a request whose head is req (its Content-Length, or -1
 * for a chunked one): req->headers then say "Transfer-Encoding: chunked"
 * (chunked), or nothing changes until aj_body_out_ready (spool). 0, or an
 * HTTP status with *why (413: over the spool's cap, or HTTP/1.0 with no
 * spool; 431: the head too large). */
int aj_body_out_start(aj_netd_ctx *ctx, aj_body_out *o, aj_proxy_req *req, long long length,
		      const char **why);
/* n more bytes of the body (last: the end of it). Chunked: the filled
 * chunk (and the last chunk at the end) in a new buffer *out (*len; the
 * caller zeroes and frees it). Spool: the bytes are written to it, *out
 * is NULL. 0, or an HTTP status with *why (413, 507, 500). */
int aj_body_out_take(aj_body_out *o, const char *in, size_t n, bool last, char **out, size_t *len,
		     const char **why);
/* Spool, the body whole: req->headers get its filled Content-Length. */
int aj_body_out_ready(aj_body_out *o, aj_proxy_req *req);
/* Spool: the next filled bytes to send in a new buffer *out (*len; the
 * caller zeroes and frees it); *len 0 at the end. 0 or <0. */
int aj_body_out_next(aj_body_out *o, char **out, size_t *len);
void aj_body_out_free(aj_body_out *o); /* the spool closed (gone: never linked) */

#endif
