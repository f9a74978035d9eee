/* SPDX-License-Identifier: MIT */
/* Scoped secrets at the proxy (inject.c): no I/O. A plain-HTTP request
 * head toward one of a secret's hosts gets the real value where the
 * sandbox wrote the placeholder; toward any other host the placeholder
 * stays and the caller logs that it was withheld. */
#ifndef AJ_INJECT_H
#define AJ_INJECT_H

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"
#include "proxy_parse.h"

#define AJ_INJECT_NOTES 32
/* the largest request body the proxy holds to put a "body" secret in */
#define AJ_INJECT_BODY_MAX (1024 * 1024)
/* ... and at most this once the values are in (-EFBIG, a 413) */
#define AJ_INJECT_FILLED_MAX (4 * AJ_INJECT_BODY_MAX)

typedef struct aj_inject_note {
	const char *secret; /* its name (points into the policy) */
	bool injected;	    /* false: the placeholder went out unchanged */
	char where[80];	    /* "header Authorization", "query" */
	const char *reason; /* why withheld */
} aj_inject_note;

/* Put the values of p's secrets scoped to req->host into req->headers
 * (any header, or only the secret's header; inside an "Authorization:
 * Basic" credential too) and into req->target's query (percent-encoded).
 * notes (AJ_INJECT_NOTES) get one line per placeholder found. Returns 0,
 * or -E2BIG when the head would outgrow req's buffers (*n_notes is set
 * either way). */
int aj_inject(const aj_policy *p, aj_proxy_req *req, aj_inject_note *notes, size_t *n_notes);

/* Does a secret of p that may go into bodies (aj_secret.body) belong to
 * the canonical host? Then the proxy holds request bodies toward it. */
bool aj_inject_body_wanted(const aj_policy *p, const char *host);

/* The body (len bytes) of a request to host with the placeholders of p's
 * "body" secrets scoped to host replaced by their values (as they are),
 * in a new buffer *out (*out_len bytes; the caller zeroes and frees it).
 * A placeholder of any other secret stays, with a note. 0, -ENOMEM, or
 * -EFBIG when the filled body would pass AJ_INJECT_FILLED_MAX. */
int aj_inject_body(const aj_policy *p, const char *host, const char *body, size_t len, char **out,
		   size_t *out_len, aj_inject_note *notes, size_t *n_notes);

/* A body filled as it streams (bodies over AJ_INJECT_BODY_MAX): each
 * piece goes through aj_inject_stream, which keeps back the last
 * (longest placeholder - 1) bytes, where a placeholder cut between two
 * pieces may begin. */
typedef struct aj_body_stream {
	const aj_policy *p;
	const char *host; /* canonical; the caller's, for the stream's life */
	char *carry;	  /* the bytes kept back */
	size_t carry_len, keep;
	bool *seen;	   /* per secret: its placeholder was in the body */
	const char **next; /* fill_body's cache */
} aj_body_stream;
int aj_inject_stream_init(aj_body_stream *st, const aj_policy *p, const char *host);
/* n more bytes of the body (last: the end of it, nothing kept back): the
 * filled bytes that are certain in a new buffer *out (*out_len; the
 * caller zeroes and frees it, NULL when empty is fine). 0, -ENOMEM, or
 * -EFBIG when one piece would fill past AJ_INJECT_FILLED_MAX. out NULL:
 * only *out_len, the size those bytes fill to (no limit). */
int aj_inject_stream(aj_body_stream *st, const char *in, size_t n, bool last, char **out,
		     size_t *out_len);
/* A note for each secret whose placeholder the body held so far (once). */
void aj_inject_stream_notes(aj_body_stream *st, aj_inject_note *notes, size_t *n_notes);
void aj_inject_stream_free(aj_body_stream *st); /* zeroed */

/* req->headers for a streamed body: Content-Length, Transfer-Encoding and
 * Expect lines dropped, "Transfer-Encoding: chunked" added. 0 or <0. */
int aj_inject_set_chunked(aj_proxy_req *req);

/* req->headers for a body of n bytes: its Content-Length, Transfer-Encoding
 * and Expect lines dropped, "Content-Length: n" added. Returns 1 when an
 * "Expect: 100-continue" was dropped (the proxy answers it), 0, or -E2BIG. */
int aj_inject_set_length(aj_proxy_req *req, size_t n);

#endif
