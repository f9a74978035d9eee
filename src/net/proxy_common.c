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

void aj_proxy_log_notes(aj_netd_ctx *ctx, const char *host, unsigned port, aj_proxy_notes *notes,
			bool sent)
{
	for (size_t i = 0; i < notes->len; i++) {
		const aj_inject_note *note = &notes->n[i];
		if (note->injected && !sent)
			continue; /* refused: the value went nowhere */
		json_t *ev =
		    json_pack("{s:s,s:s,s:s,s:i,s:s}", "event",
			      note->injected ? "secret_injected" : "secret_withheld", "secret",
			      note->secret, "host", host, "port", (int)port, "where", note->where);
		if (ev && note->reason)
			json_object_set_new(ev, "reason", json_string(note->reason));
		aj_netlog(ctx, ev);
	}
	notes->len = 0;
}

/* Room for AJ_INJECT_NOTES more notes: the oldest are dropped (a request
 * with more placeholders than that is logged in part, as before). */
static aj_inject_note *notes_room(aj_proxy_notes *notes)
{
	if (notes->len > AJ_INJECT_NOTES)
		notes->len = AJ_INJECT_NOTES;
	return notes->n + notes->len;
}

/* Scoped secrets (inject.c): the values into req where the sandbox wrote
 * their placeholders, for the secrets' own hosts; a note for each
 * placeholder seen, injected or withheld (never a value). */
int aj_proxy_fill_secrets(aj_netd_ctx *ctx, aj_proxy_req *req, aj_proxy_notes *notes)
{
	size_t n = 0;
	int r = aj_inject(ctx->p, req, notes_room(notes), &n);
	notes->len += n;
	return r;
}

int aj_proxy_fill_body(aj_netd_ctx *ctx, aj_proxy_req *req, const char *body, size_t len,
		       char **out, size_t *out_len, aj_proxy_notes *notes)
{
	size_t n = 0;
	int r = aj_inject_body(ctx->p, req->host, body, len, out, out_len, notes_room(notes), &n);
	if (r < 0)
		return r;
	notes->len += n;
	r = aj_inject_set_length(req, *out_len);
	if (r < 0) {
		explicit_bzero(*out, *out_len);
		free(*out);
		*out = NULL;
	}
	return r;
}

void aj_proxy_stream_notes(aj_netd_ctx *ctx, const char *host, unsigned port, aj_body_stream *st,
			   aj_proxy_notes *notes)
{
	size_t n = 0;
	if (st->p)
		aj_inject_stream_notes(st, notes_room(notes), &n);
	notes->len += n;
	aj_proxy_log_notes(ctx, host, port, notes, true);
}

int aj_body_append(aj_body_buf *b, const char *at, size_t n)
{
	if (!b->unbounded && b->len + n > AJ_INJECT_BODY_MAX) {
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
