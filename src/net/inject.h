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

/* req->headers for a body of n bytes: its Content-Length, Transfer-Encoding
 * and Expect lines dropped, "Content-Length: n" added. Returns 1 when an
 * "Expect: 100-continue" was dropped (the proxy answers it), 0, or -E2BIG. */
int aj_inject_set_length(aj_proxy_req *req, size_t n);

#endif
