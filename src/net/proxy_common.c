/* SPDX-License-Identifier: MIT */
/* What the proxy's plain-HTTP (proxy.c) and intercepted HTTPS
 * (proxy_tls.c) paths share: the answer to a refused request, and the
 * scoped secrets put into a request with their net-log lines. */
#include "proxy_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "inject.h"
#include "netlog.h"

void aj_proxy_reply(int fd, int status, const char *reason, const char *body)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n%s",
			 status, reason, strlen(body), body);
	if (n > 0)
		(void)send(fd, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1,
			   MSG_NOSIGNAL);
}

static void log_notes(aj_netd_ctx *ctx, const aj_proxy_req *req, const aj_inject_note *notes,
		      size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_t *ev = json_pack("{s:s,s:s,s:s,s:i,s:s}", "event",
				       notes[i].injected ? "secret_injected" : "secret_withheld",
				       "secret", notes[i].secret, "host", req->host, "port",
				       (int)req->port, "where", notes[i].where);
		if (ev && notes[i].reason)
			json_object_set_new(ev, "reason", json_string(notes[i].reason));
		aj_netlog(ctx, ev);
	}
}

/* Scoped secrets (inject.c): the values into req where the sandbox wrote
 * their placeholders, for the secrets' own hosts; a net-log line for each
 * placeholder seen, injected or withheld (never a value). */
int aj_proxy_fill_secrets(aj_netd_ctx *ctx, aj_proxy_req *req)
{
	aj_inject_note notes[AJ_INJECT_NOTES];
	size_t n = 0;
	int r = aj_inject(ctx->p, req, notes, &n);
	log_notes(ctx, req, notes, n);
	return r;
}

int aj_proxy_fill_body(aj_netd_ctx *ctx, aj_proxy_req *req, const char *body, size_t len,
		       char **out, size_t *out_len)
{
	aj_inject_note notes[AJ_INJECT_NOTES];
	size_t n = 0;
	int r = aj_inject_body(ctx->p, req->host, body, len, out, out_len, notes, &n);
	if (r < 0)
		return r;
	log_notes(ctx, req, notes, n);
	r = aj_inject_set_length(req, *out_len);
	if (r < 0) {
		explicit_bzero(*out, *out_len);
		free(*out);
		*out = NULL;
	}
	return r;
}

int aj_body_append(aj_body_buf *b, const char *at, size_t n)
{
	if (b->len + n > AJ_INJECT_BODY_MAX) {
		b->too_big = true;
		return -E2BIG;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 16384;
		while (cap < b->len + n)
			cap *= 2;
		char *p = malloc(cap);
		if (!p)
			return -ENOMEM;
		if (b->p) {
			memcpy(p, b->p, b->len);
			explicit_bzero(b->p, b->cap);
			free(b->p);
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, at, n);
	b->len += n;
	return 0;
}

void aj_body_free(aj_body_buf *b)
{
	if (b->p)
		explicit_bzero(b->p, b->cap);
	free(b->p);
	*b = (aj_body_buf){0};
}
