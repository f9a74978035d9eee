/* SPDX-License-Identifier: MIT */
/* A client of `agentjail serve` (libcurl on its unix socket, or on --url
 * with a bearer token): what `agentjail sandbox` and `agentjail mcp`
 * share. */
#ifndef AJ_CLI_SVC_CLIENT_H
#define AJ_CLI_SVC_CLIENT_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct aj_svc {
	const char *socket, *url;
	char auth[320];
} aj_svc;

/* A growing NUL-terminated buffer. */
typedef struct aj_buf {
	char *data;
	size_t len, cap;
} aj_buf;

/* One request; the fields left 0 are not used. */
typedef struct aj_svc_req {
	const char *method, *path;
	const char *body;  /* sent as is; NULL: none */
	size_t body_len;   /* 0: strlen(body) */
	const char *ctype; /* of the body; NULL: application/json */
	FILE *upload;	   /* streamed as the body (a regular file) */
	curl_write_callback sink;
	void *ud;
	aj_buf *out;	 /* without sink: the answer's body */
	char *got_ctype; /* the answer's Content-Type, when given room */
	size_t got_ctype_size;
	/* called while it runs (about once a second at least): non-zero aborts it */
	curl_xferinfo_callback watch;
	void *watch_ud;
	char *why; /* when the service is unreachable: why (else printed) */
	size_t why_size;
} aj_svc_req;

/* The socket from $AGENTJAIL_SOCKET or the default, no URL, no token. */
void aj_svc_init(aj_svc *c);
/* One of --socket PATH, --url URL, --token-file F: 1 when opt is one of
 * them (val taken), 0 when not, -1 on an error (printed). */
int aj_svc_option(aj_svc *c, const char *opt, const char *val);
/* Where the service is, for messages. */
const char *aj_svc_where(const aj_svc *c);

/* The HTTP status, or -1 when the service is unreachable (why filled, or
 * the message printed) or a sink refused the data. */
long aj_svc_request(const aj_svc *c, const aj_svc_req *q);

/* curl write callback appending to an aj_buf (ud); 0 when out of memory. */
size_t aj_buf_write(char *p, size_t sz, size_t n, void *ud);

/* A service's NDJSON stream, fed as it comes: each whole line (without its
 * newline, data never NULL) goes to cb, a partial one waits in line.
 * false: a line over max bytes or out of memory. */
typedef void (*aj_ndjson_cb)(void *ud, const char *line, size_t len);
bool aj_ndjson_feed(aj_buf *line, const char *p, size_t n, size_t max, aj_ndjson_cb cb, void *ud);
/* The stream's end: a last line without its newline goes to cb. */
void aj_ndjson_end(aj_buf *line, aj_ndjson_cb cb, void *ud);

/* The message of the service's JSON error body, or the body itself, into
 * out ("error" when empty). */
void aj_svc_error_message(const aj_buf *b, long status, char *out, size_t size);

#endif
