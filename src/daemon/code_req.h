/* SPDX-License-Identifier: MIT */
/* Parsing the bodies of the code interpreter's requests (docs/api.md,
 * "Code interpreter"); no I/O: fuzzed on its own (tests/fuzz). The front
 * checks each body with these, and the supervisor again. */
#ifndef AJ_CODE_REQ_H
#define AJ_CODE_REQ_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"

#define AJ_CODE_CTX_NAME_MAX 32
#define AJ_CODE_DEFAULT_TIMEOUT_S 300
#define AJ_CODE_MAX_TIMEOUT_S (24 * 3600)

typedef struct aj_code_req {
	char *code;				/* the cell's source */
	char context[AJ_CODE_CTX_NAME_MAX + 1]; /* "default" when not given */
	double timeout_s;			/* > 0 */
} aj_code_req;

typedef struct aj_code_ctx_req {
	char id[AJ_CODE_CTX_NAME_MAX + 1]; /* "" when not given: the service names it */
	char *cwd;			   /* absolute, or NULL */
} aj_code_ctx_req;

/* A context's name: [a-z0-9][a-z0-9_-]*, at most 32 bytes. */
bool aj_code_ctx_name_ok(const char *s);
/* {"code", "context", "language", "timeout"}: 0, or -EINVAL with err
 * naming the field. */
int aj_code_req_parse(const char *body, size_t len, aj_code_req *q, aj_error *err);
void aj_code_req_free(aj_code_req *q);
/* {"id", "language", "cwd"} (all optional). */
int aj_code_ctx_req_parse(const char *body, size_t len, aj_code_ctx_req *q, aj_error *err);
void aj_code_ctx_req_free(aj_code_ctx_req *q);

/* A run's event as the bridge in the sandbox wrote it (m: untrusted),
 * rebuilt for the client from known fields of the right types only
 * (stdout, stderr, display, result, error, end); NULL for anything else.
 * ctx and oom go into an end event. */
json_t *aj_code_event(json_t *m, const char *ctx, bool oom);

#endif
