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

#endif
