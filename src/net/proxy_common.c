/* SPDX-License-Identifier: MIT */
/* What the proxy's plain-HTTP (proxy.c) and intercepted HTTPS
 * (proxy_tls.c) paths share: the answer to a refused request, and the
 * scoped secrets put into a request with their net-log lines. */
#include "proxy_common.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "inject.h"
#include "netlog.h"
#include "util.h"

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

/* "256 MiB", "1000 bytes": the spool's cap, for a 413's text */
static const char *cap_text(unsigned long long cap)
{
	static _Thread_local char t[48];
	if (cap && cap % (1024 * 1024) == 0)
		snprintf(t, sizeof(t), "%llu MiB", cap / (1024 * 1024));
	else
		snprintf(t, sizeof(t), "%llu bytes", cap);
	return t;
}

int aj_body_out_start(aj_netd_ctx *ctx, aj_body_out *o, aj_proxy_req *req, long long length,
		      const char **why)
{
	*o = (aj_body_out){.spool = -1, .cap = ctx->spool_max};
	static _Thread_local char msg[200];
	if (length >= 0 && ctx->spool_dir > 0) {
		if ((unsigned long long)length > o->cap) {
			snprintf(msg, sizeof(msg),
				 "the body is larger than the %s a body with a :body secret is "
				 "spooled up to (AGENTJAIL_BODY_SPOOL_MAX)",
				 cap_text(o->cap));
			*why = msg;
			return 413;
		}
		/* unlinked from the start: nothing of it is left if netd dies */
		o->spool =
		    openat(ctx->spool_dir, ".", O_TMPFILE | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
		o->spooling = o->spool >= 0;
		o->used = &ctx->spool_used;
	}
	if (!o->spooling && req->http_major == 1 && req->http_minor == 0) {
		*why = "a body over 1 MiB toward a host with a :body secret is streamed as "
		       "chunked, which HTTP/1.0 has not: use HTTP/1.1";
		return 413;
	}
	snprintf(o->host, sizeof(o->host), "%s", req->host);
	int r = aj_inject_stream_init(&o->fill, ctx->p, o->host);
	if (r == 0 && o->spooling)
		r = aj_inject_stream_init(&o->count, ctx->p, o->host);
	if (r == 0 && !o->spooling)
		r = aj_inject_set_chunked(req);
	if (r < 0) {
		aj_body_out_free(o);
		*why = r == -ENOMEM ? "out of memory" : "the request head is too large";
		return r == -ENOMEM ? 500 : 431;
	}
	return 0;
}

/* the spool is read back and filled in pieces of this size */
#define SPOOL_PIECE 16384

/* The spool's share of aj_body_out_take: the bytes as sent, counted. */
static int spool_take(aj_body_out *o, const char *in, size_t n, bool last, const char **why)
{
	static _Thread_local char msg[200];
	/* counted in the pieces aj_body_out_next will fill (the same offsets):
	 * a piece too large filled is refused now, before anything is sent */
	size_t grew = 0, k = 0;
	do { /* once for an empty piece (the end) */
		size_t at = (size_t)((o->raw + k) % SPOOL_PIECE);
		size_t m = n - k < SPOOL_PIECE - at ? n - k : SPOOL_PIECE - at;
		size_t g = 0;
		int r = aj_inject_stream(&o->count, in + k, m, last && k + m == n, NULL, &g);
		if (r == -EFBIG) {
			*why = "a piece of the body is too large with the secrets' values in it";
			return 413;
		}
		if (r < 0) {
			*why = "out of memory";
			return 500;
		}
		grew += g;
		k += m;
	} while (k < n);
	o->raw += n;
	o->filled += grew;
	if (o->raw > o->cap || o->filled > o->cap) {
		snprintf(msg, sizeof(msg),
			 "the body with the secrets' values in it is larger than the %s a body "
			 "with a :body secret is spooled up to (AGENTJAIL_BODY_SPOOL_MAX)",
			 cap_text(o->cap));
		*why = msg;
		return 413;
	}
	/* the sandbox's spools together stay under the cap too */
	if (n && atomic_fetch_add(o->used, n) + n > o->cap) {
		atomic_fetch_sub(o->used, n);
		snprintf(msg, sizeof(msg),
			 "the bodies with :body secrets this sandbox is sending at once are larger "
			 "than the %s they are spooled up to together (AGENTJAIL_BODY_SPOOL_MAX)",
			 cap_text(o->cap));
		*why = msg;
		return 413;
	}
	o->charged += n;
	int w = n ? aj_write_all(o->spool, in, n) : 0;
	if (w < 0) {
		*why = w == -ENOSPC || w == -EDQUOT ? "the proxy's spool directory is full"
						    : "cannot write the proxy's spool";
		return 507;
	}
	return 0;
}

int aj_body_out_take(aj_body_out *o, const char *in, size_t n, bool last, char **out, size_t *len,
		     const char **why)
{
	*out = NULL;
	*len = 0;
	if (o->spooling)
		return spool_take(o, in, n, last, why);
	char *filled = NULL;
	size_t fl = 0;
	int r = aj_inject_stream(&o->fill, in, n, last, &filled, &fl);
	*out = r < 0 ? NULL : malloc(fl + 32);
	if (!*out) {
		if (filled)
			explicit_bzero(filled, fl);
		free(filled);
		*why = r == -EFBIG
			   ? "a piece of the body is too large with the secrets' values in it"
			   : "out of memory";
		return r == -EFBIG ? 413 : 500;
	}
	size_t k = 0;
	if (fl) { /* a chunk of the filled bytes */
		k = (size_t)sprintf(*out, "%zx\r\n", fl);
		memcpy(*out + k, filled, fl);
		memcpy(*out + k + fl, "\r\n", 2);
		k += fl + 2;
		explicit_bzero(filled, fl);
	}
	free(filled);
	if (last) {
		memcpy(*out + k, "0\r\n\r\n", 5);
		k += 5;
	}
	*len = k;
	return 0;
}

int aj_body_out_ready(aj_body_out *o, aj_proxy_req *req)
{
	int r = aj_inject_set_length(req, (size_t)o->filled);
	return r < 0 ? r : lseek(o->spool, 0, SEEK_SET) < 0 ? -errno : 0;
}

int aj_body_out_next(aj_body_out *o, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	char piece[SPOOL_PIECE];
	while (!o->eof && *len == 0) {
		ssize_t n = read(o->spool, piece, sizeof(piece));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		o->off += (unsigned long long)n;
		o->eof = n == 0 || o->off >= o->raw;
		if (*out)
			free(*out);
		int r = aj_inject_stream(&o->fill, piece, (size_t)n, o->eof, out, len);
		if (r < 0)
			return r;
	}
	return 0;
}

void aj_body_out_free(aj_body_out *o)
{
	if (o->spooling)
		close(o->spool);
	if (o->used && o->charged)
		atomic_fetch_sub(o->used, o->charged);
	aj_inject_stream_free(&o->fill);
	aj_inject_stream_free(&o->count);
	*o = (aj_body_out){0};
}
