/* SPDX-License-Identifier: MIT */
/* The head of a proxy request, parsed (proxy_parse.c): no I/O. */
#ifndef AJ_PROXY_PARSE_H
#define AJ_PROXY_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "hostname.h"

typedef struct aj_proxy_req {
	bool connect;	/* CONNECT host:port */
	bool has_host;	/* a Host header came with it */
	char host[256]; /* canonical (aj_host_norm): a name or an address */
	aj_host_kind host_kind;
	unsigned port;	      /* explicit or 80 */
	bool port_given;      /* the authority named a port */
	char connection[32];  /* Connection options passed on: close or keep-alive, Upgrade */
	bool upgrade;	      /* Upgrade header, "upgrade" in Connection (WebSocket) */
	bool has_body;	      /* chunked, or a Content-Length above 0 */
	bool expect_continue; /* "Expect: 100-continue" */
	char method[16];
	char target[2048]; /* origin-form path?query for plain HTTP */
	int http_major, http_minor;
	size_t head_len;    /* bytes of the head (request line + headers + CRLF) */
	char headers[8192]; /* kept headers, "Name: value\r\n" each */
	const char *error;  /* why the request is refused (400) */
} aj_proxy_req;

/* Parse the request head in buf (len bytes, the whole head present).
 * Returns 0, or -EINVAL with req->error set. */
int aj_proxy_parse(const char *buf, size_t len, aj_proxy_req *req);

#endif
