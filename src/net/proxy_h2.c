/* SPDX-License-Identifier: MIT */
/* An intercepted HTTPS connection in HTTP/2 (proxy_h2.h): two nghttp2
 * sessions, a server one toward the sandbox and a client one toward the
 * server, one upstream stream per sandbox stream. A request's header block
 * is rendered as an HTTP/1.1 head and goes through the same parser, Host
 * check and injection as the HTTP/1.1 path (proxy_parse.c, inject.c), so
 * both protocols are checked one way; then it is sent on as HTTP/2. Bodies
 * and responses are relayed as they come: nothing is read from a side
 * faster than the other takes it (no automatic WINDOW_UPDATE; a byte is
 * "consumed" once it has been handed to the other session, or dropped),
 * so a stream holds at most about one window. When the server ends, the
 * sandbox gets a graceful GOAWAY and the responses already answered. */
#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "inject.h"
#include "netlog.h"
#include "proxy_common.h"
#include "proxy_h2.h"
#include "proxy_parse.h"
#include "util.h"

#define HDR_MAX 16384 /* one header block, names and values */
#define MAX_STREAMS 100
#define IDLE_MS (15 * 60 * 1000)

typedef struct hbuf { /* header pairs, "name\0value\0" each */
	char *p;
	size_t len, cap, n;
	bool too_big;
} hbuf;

typedef struct bbuf { /* body bytes not yet handed on */
	char *p;
	size_t len, off, cap;
} bbuf;

typedef struct stream {
	int32_t cid, uid;      /* its id toward the sandbox, toward the server (0: none) */
	hbuf rq, rs, tr;       /* request headers, response headers, response trailers */
	bbuf up, down;	       /* body toward the server, toward the sandbox */
	bool up_end, down_end; /* the body of each way is complete */
	bool c_closed, u_closed, refused, final_sent;
	struct stream *next;
} stream;

typedef struct h2 {
	aj_netd_ctx *ctx;
	const aj_proxy_req *connect;
	nghttp2_session *cs, *us;
	stream *streams;
	aj_proxy_req *req;
	aj_proxy_notes notes;
	char text[HDR_MAX + 4096]; /* a request rendered as HTTP/1.1 */
	bool fatal;
	bool up_goaway, up_gone; /* the server sent GOAWAY; its connection ended */
	bool goaway_sent;	 /* the sandbox was told: no new streams */
} h2;

static void wipe(void *p, size_t n)
{
	if (p)
		explicit_bzero(p, n);
}

static int grow(char **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 1024;
	while (c < need)
		c *= 2;
	char *n = malloc(c);
	if (!n)
		return -1;
	if (*p) {
		memcpy(n, *p, *cap);
		explicit_bzero(*p, *cap);
		free(*p);
	}
	*p = n;
	*cap = c;
	return 0;
}

static void hbuf_free(hbuf *b)
{
	wipe(b->p, b->cap);
	free(b->p);
	*b = (hbuf){0};
}

static void hbuf_add(hbuf *b, const uint8_t *name, size_t nl, const uint8_t *value, size_t vl)
{
	if (b->too_big || b->len + nl + vl + 2 > HDR_MAX ||
	    grow(&b->p, &b->cap, b->len + nl + vl + 2)) {
		b->too_big = true;
		return;
	}
	memcpy(b->p + b->len, name, nl);
	b->p[b->len + nl] = '\0';
	memcpy(b->p + b->len + nl + 1, value, vl);
	b->p[b->len + nl + 1 + vl] = '\0';
	b->len += nl + vl + 2;
	b->n++;
}

/* The pairs of b as nghttp2_nv (pointing into b), *n of them; NULL on
 * failure. */
static nghttp2_nv *hbuf_nv(const hbuf *b, size_t *n)
{
	nghttp2_nv *nv = calloc(b->n ? b->n : 1, sizeof(*nv));
	if (!nv)
		return NULL;
	size_t i = 0;
	for (size_t o = 0; o < b->len && i < b->n; i++) {
		nv[i].name = (uint8_t *)b->p + o;
		nv[i].namelen = strlen(b->p + o);
		o += nv[i].namelen + 1;
		nv[i].value = (uint8_t *)b->p + o;
		nv[i].valuelen = strlen(b->p + o);
		o += nv[i].valuelen + 1;
	}
	*n = i;
	return nv;
}

static const char *hbuf_get(const hbuf *b, const char *name)
{
	for (size_t o = 0; o < b->len;) {
		const char *v = b->p + o + strlen(b->p + o) + 1;
		if (!strcmp(b->p + o, name))
			return v;
		o = (size_t)(v - b->p) + strlen(v) + 1;
	}
	return NULL;
}

static int bbuf_add(bbuf *b, const uint8_t *p, size_t n)
{
	if (b->off && b->len + n > b->cap) { /* the unsent tail to the front, not a bigger buffer */
		size_t left = b->len - b->off;
		memmove(b->p, b->p + b->off, left);
		explicit_bzero(b->p + left, b->len - left);
		b->off = 0;
		b->len = left;
	}
	if (grow(&b->p, &b->cap, b->len + n))
		return -1;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/* The unsent bytes of a body dropped: consumed on the session they came
 * from, so its peer may send as much again (the connection's window is
 * shared by every stream). */
static void drop_up(h2 *h, stream *st)
{
	if (h->cs && st->up.len > st->up.off)
		(void)nghttp2_session_consume(h->cs, st->cid, st->up.len - st->up.off);
	wipe(st->up.p, st->up.len);
	st->up.len = st->up.off = 0;
}

static void drop_down(h2 *h, stream *st)
{
	if (h->us && !st->refused && st->uid > 0 && st->down.len > st->down.off)
		(void)nghttp2_session_consume(h->us, st->uid, st->down.len - st->down.off);
	st->down.len = st->down.off = 0;
}

static void stream_free(h2 *h, stream *st)
{
	/* the streams are closed: only the connections' windows are owed */
	if (h->cs && st->up.len > st->up.off)
		(void)nghttp2_session_consume_connection(h->cs, st->up.len - st->up.off);
	if (h->us && !st->refused && st->uid > 0 && st->down.len > st->down.off)
		(void)nghttp2_session_consume_connection(h->us, st->down.len - st->down.off);
	for (stream **pp = &h->streams; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	hbuf_free(&st->rq);
	hbuf_free(&st->rs);
	hbuf_free(&st->tr);
	wipe(st->up.p, st->up.cap);
	free(st->up.p);
	free(st->down.p);
	free(st);
}

static void log_request(h2 *h, const char *verdict, const char *method, const char *path,
			const char *why)
{
	json_t *ev = json_pack("{s:s,s:s,s:s,s:i,s:s,s:b,s:s}", "event", "proxy", "method",
			       method ? method : "?", "host", h->connect->host, "port",
			       (int)h->connect->port, "verdict", verdict, "intercepted", 1,
			       "protocol", "h2");
	if (ev && path && path[0]) { /* never the query: it may hold a value */
		char p[256];
		snprintf(p, sizeof(p), "%.*s", (int)strcspn(path, "?"), path);
		json_object_set_new(ev, "path", json_string(p));
	}
	if (ev && why)
		json_object_set_new(ev, "reason", json_string(why));
	aj_netlog(h->ctx, ev);
}

static ssize_t read_body(nghttp2_session *session, int32_t id, uint8_t *dst, size_t len,
			 uint32_t *flags, nghttp2_data_source *src, void *user);

/* Answer a sandbox's stream ourselves (a refused request): status and a
 * text body; nothing of it went to the server. */
static void refuse(h2 *h, stream *st, int status, const char *why)
{
	const char *method = hbuf_get(&st->rq, ":method");
	log_request(h, "refused", method, hbuf_get(&st->rq, ":path"), why);
	aj_proxy_log_notes(h->ctx, h->connect->host, h->connect->port, &h->notes, false);
	char body[512], code[8];
	int n = snprintf(body, sizeof(body), "agentjail proxy: %s:%u: %s\n", h->connect->host,
			 h->connect->port, why);
	snprintf(code, sizeof(code), "%d", status);
	st->refused = st->final_sent = true;
	st->down.len = st->down.off = 0;
	if (n > 0)
		(void)bbuf_add(&st->down, (const uint8_t *)body, (size_t)n);
	st->down_end = true;
	nghttp2_nv nv[] = {
	    {(uint8_t *)":status", (uint8_t *)code, 7, strlen(code), NGHTTP2_NV_FLAG_NONE},
	    {(uint8_t *)"content-type", (uint8_t *)"text/plain", 12, 10, NGHTTP2_NV_FLAG_NONE}};
	nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_body};
	if (nghttp2_submit_response(h->cs, st->cid, nv, 2, &prd) != 0)
		(void)nghttp2_submit_rst_stream(h->cs, NGHTTP2_FLAG_NONE, st->cid,
						NGHTTP2_INTERNAL_ERROR);
}

/* The request's header block rendered as an HTTP/1.1 head in h->text:
 * its length, or 0 with *why. */
static size_t render(h2 *h, const stream *st, const char **why)
{
	const char *method = hbuf_get(&st->rq, ":method"), *path = hbuf_get(&st->rq, ":path");
	const char *scheme = hbuf_get(&st->rq, ":scheme");
	const char *auth = hbuf_get(&st->rq, ":authority"), *host = hbuf_get(&st->rq, "host");
	if (!method || !path || !scheme) {
		*why = "malformed request";
		return 0;
	}
	if (strcmp(scheme, "https") != 0) {
		*why = "only https requests on an intercepted connection";
		return 0;
	}
	if (auth && host && strcmp(auth, host) != 0) {
		*why = "the host header does not match :authority";
		return 0;
	}
	if (!auth)
		auth = host;
	if (!auth) {
		*why = "no :authority";
		return 0;
	}
	int n = snprintf(h->text, sizeof(h->text), "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path,
			 auth);
	size_t o = n > 0 ? (size_t)n : sizeof(h->text);
	for (size_t i = 0; i < st->rq.len && o < sizeof(h->text);) {
		const char *name = st->rq.p + i, *value = name + strlen(name) + 1;
		i = (size_t)(value - st->rq.p) + strlen(value) + 1;
		if (name[0] == ':' || !strcmp(name, "host"))
			continue;
		n = snprintf(h->text + o, sizeof(h->text) - o, "%s: %s\r\n", name, value);
		o = n > 0 ? o + (size_t)n : sizeof(h->text);
	}
	if (o + 3 > sizeof(h->text)) {
		*why = "the request head is too large";
		return 0;
	}
	memcpy(h->text + o, "\r\n", 3);
	return o + 2;
}

/* A whole request header block from the sandbox: checked, the secrets
 * in, sent on as a request of its own to the server. */
static void take_request(h2 *h, stream *st, bool end)
{
	aj_proxy_req *r = h->req;
	const char *why = NULL;
	h->notes.len = 0;
	if (st->rq.too_big) {
		refuse(h, st, 431, "the request head is too large");
		return;
	}
	const char *method = hbuf_get(&st->rq, ":method");
	if (method && !strcmp(method, "CONNECT")) {
		refuse(h, st, 501, "CONNECT inside HTTP/2 (WebSocket over HTTP/2) is not relayed");
		return;
	}
	if (h->up_goaway || h->up_gone) { /* the sandbox may retry it on a new connection */
		log_request(h, "refused", method, hbuf_get(&st->rq, ":path"),
			    "the server's connection is closing");
		st->refused = true;
		(void)nghttp2_submit_rst_stream(h->cs, NGHTTP2_FLAG_NONE, st->cid,
						NGHTTP2_REFUSED_STREAM);
		return;
	}
	size_t len = render(h, st, &why);
	if (!len) {
		refuse(h, st, 400, why);
		return;
	}
	int pr = aj_proxy_parse(h->text, len, r);
	explicit_bzero(h->text, len);
	if (pr < 0) {
		refuse(h, st, 400, r->error);
		return;
	}
	unsigned want = h->connect->port;
	if (r->connect || !r->has_host || r->target[0] != '/' ||
	    strcmp(r->host, h->connect->host) != 0 ||
	    !(r->port_given ? r->port == want : want == 443)) {
		explicit_bzero(r, sizeof(*r));
		refuse(h, st, 421,
		       "the :authority does not name the CONNECT target and TLS server name");
		return;
	}
	r->port = want;
	if (aj_proxy_fill_secrets(h->ctx, r, &h->notes) < 0) {
		explicit_bzero(r, sizeof(*r));
		refuse(h, st, 431, "the request head is too large with the secret's value in it");
		return;
	}
	bool filled = false;
	for (size_t i = 0; i < h->notes.len; i++)
		filled = filled || h->notes.n[i].injected;
	/* the headers as they go: the pseudo ones as the sandbox sent them,
	 * :path and the rest from the filled request (one line each) */
	size_t cap = st->rq.n + 4, n = 0;
	nghttp2_nv *nv = calloc(cap, sizeof(*nv));
	if (!nv) {
		explicit_bzero(r, sizeof(*r));
		refuse(h, st, 500, "out of memory");
		return;
	}
	static const char *const pseudo[] = {":method", ":scheme", ":authority"};
	for (size_t i = 0; i < 3; i++) {
		const char *v = hbuf_get(&st->rq, pseudo[i]);
		if (!v && i == 2)
			v = hbuf_get(&st->rq, "host");
		nv[n++] = (nghttp2_nv){(uint8_t *)pseudo[i], (uint8_t *)v, strlen(pseudo[i]),
				       strlen(v), NGHTTP2_NV_FLAG_NONE};
	}
	nv[n++] = (nghttp2_nv){(uint8_t *)":path", (uint8_t *)r->target, 5, strlen(r->target),
			       filled ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE};
	for (char *line = r->headers; *line && n < cap;) {
		char *eol = strstr(line, "\r\n"), *colon = strchr(line, ':');
		if (!eol || !colon || colon > eol)
			break;
		*eol = *colon = '\0';
		char *v = colon + 1;
		while (*v == ' ')
			v++;
		if (strcasecmp(line, "host") != 0)
			nv[n++] =
			    (nghttp2_nv){(uint8_t *)line, (uint8_t *)v, strlen(line), strlen(v),
					 /* a value never enters the server's table */
					 filled ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE};
		line = eol + 2;
	}
	nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_body};
	st->up_end = end;
	int32_t id = nghttp2_submit_request(h->us, NULL, nv, n, end ? NULL : &prd, st);
	free(nv); /* nghttp2 copied the headers */
	char m[16], path[256];
	snprintf(m, sizeof(m), "%s", r->method);
	snprintf(path, sizeof(path), "%s", r->target);
	explicit_bzero(r, sizeof(*r));
	if (id < 0) {
		refuse(h, st, 502, "the server's connection takes no more requests");
		return;
	}
	st->uid = id;
	aj_proxy_log_notes(h->ctx, h->connect->host, h->connect->port, &h->notes, true);
	log_request(h, "allowed", m, path, NULL);
	explicit_bzero(path, sizeof(path));
}

/* A response header block from the server for st: on to the sandbox. */
static void take_response(h2 *h, stream *st, bool end)
{
	if (st->c_closed)
		return;
	if (st->final_sent) { /* trailers: sent once the body is */
		hbuf_free(&st->tr);
		st->tr = st->rs;
		st->rs = (hbuf){0};
		st->down_end = true;
		(void)nghttp2_session_resume_data(h->cs, st->cid);
		return;
	}
	size_t n = 0;
	nghttp2_nv *nv = hbuf_nv(&st->rs, &n);
	const char *status = hbuf_get(&st->rs, ":status");
	int r = -1;
	if (nv && status && status[0] == '1') {
		r = nghttp2_submit_headers(h->cs, NGHTTP2_FLAG_NONE, st->cid, NULL, nv, n, NULL);
	} else if (nv && status) {
		nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_body};
		st->final_sent = true;
		st->down_end = end;
		r = nghttp2_submit_response(h->cs, st->cid, nv, n, end ? NULL : &prd);
	}
	free(nv);
	hbuf_free(&st->rs);
	if (r != 0)
		(void)nghttp2_submit_rst_stream(h->cs, NGHTTP2_FLAG_NONE, st->cid,
						NGHTTP2_INTERNAL_ERROR);
}

static ssize_t read_body(nghttp2_session *session, int32_t id, uint8_t *dst, size_t len,
			 uint32_t *flags, nghttp2_data_source *src, void *user)
{
	(void)id;
	h2 *h = user;
	stream *st = src->ptr;
	bool to_server = session == h->us;
	bbuf *b = to_server ? &st->up : &st->down;
	size_t n = b->len - b->off < len ? b->len - b->off : len;
	if (n) { /* p is NULL until a first byte */
		memcpy(dst, b->p + b->off, n);
		if (to_server)
			explicit_bzero(b->p + b->off, n);
	}
	b->off += n;
	if (n && !st->refused) /* handed on: the sender may send as much again */
		(void)nghttp2_session_consume(to_server ? h->cs : h->us,
					      to_server ? st->cid : st->uid, n);
	if (b->off == b->len && (to_server ? st->up_end : st->down_end)) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		size_t tn = 0;
		nghttp2_nv *tv = !to_server && st->tr.n ? hbuf_nv(&st->tr, &tn) : NULL;
		if (tv && nghttp2_submit_trailer(h->cs, st->cid, tv, tn) == 0)
			*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		free(tv);
		return (ssize_t)n;
	}
	return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
	h2 *h = user;
	if (frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (session == h->cs && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
		stream *st = calloc(1, sizeof(*st));
		if (!st)
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		st->cid = frame->hd.stream_id;
		st->next = h->streams;
		h->streams = st;
		nghttp2_session_set_stream_user_data(session, st->cid, st);
	} else if (session == h->us) {
		stream *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
		if (st)
			hbuf_free(&st->rs);
	}
	return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
		     size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *user)
{
	(void)flags;
	h2 *h = user;
	stream *st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
	if (!st || frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (session == h->cs && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
		hbuf_add(&st->rq, name, nl, value, vl);
	else if (session == h->us)
		hbuf_add(&st->rs, name, nl, value, vl);
	/* the sandbox's trailers are not passed on */
	return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
	h2 *h = user;
	if (session == h->us && frame->hd.type == NGHTTP2_GOAWAY)
		h->up_goaway = true;
	stream *st = frame->hd.stream_id
			 ? nghttp2_session_get_stream_user_data(session, frame->hd.stream_id)
			 : NULL;
	if (!st)
		return 0;
	bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
	if (session == h->cs) {
		if (frame->hd.type == NGHTTP2_HEADERS &&
		    frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
			take_request(h, st, end);
			hbuf_free(&st->rq);
		} else if (end &&
			   (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS)) {
			st->up_end = true;
			if (st->uid > 0)
				(void)nghttp2_session_resume_data(h->us, st->uid);
		}
	} else if (frame->hd.type == NGHTTP2_HEADERS) {
		if (st->rs.too_big) {
			hbuf_free(&st->rs);
			(void)nghttp2_submit_rst_stream(h->us, NGHTTP2_FLAG_NONE, st->uid,
							NGHTTP2_REFUSED_STREAM);
			(void)nghttp2_submit_rst_stream(h->cs, NGHTTP2_FLAG_NONE, st->cid,
							NGHTTP2_INTERNAL_ERROR);
			return 0;
		}
		take_response(h, st, end);
	} else if (frame->hd.type == NGHTTP2_DATA && end) {
		st->down_end = true;
		(void)nghttp2_session_resume_data(h->cs, st->cid);
	}
	return 0;
}

static int on_data(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data,
		   size_t len, void *user)
{
	(void)flags;
	h2 *h = user;
	stream *st = nghttp2_session_get_stream_user_data(session, id);
	bool from_client = session == h->cs;
	/* nowhere to go: dropped, and consumed so the sender is not stalled */
	if (!st || st->refused || (from_client ? st->uid <= 0 || st->u_closed : st->c_closed)) {
		(void)nghttp2_session_consume(session, id, len);
		return 0;
	}
	bbuf *b = from_client ? &st->up : &st->down;
	/* flow control bounds what is not handed on yet to one window */
	uint32_t win =
	    nghttp2_session_get_local_settings(session, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE);
	if (b->len - b->off + len > 2 * (size_t)win) {
		(void)nghttp2_session_consume(session, id, len);
		(void)nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id,
						NGHTTP2_FLOW_CONTROL_ERROR);
		return 0;
	}
	if (bbuf_add(b, data, len) < 0)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	(void)nghttp2_session_resume_data(from_client ? h->us : h->cs,
					  from_client ? st->uid : st->cid);
	return 0;
}

/* st is freed once both of its sides are closed. */
static void stream_done(h2 *h, stream *st)
{
	if (st->c_closed && (st->u_closed || st->uid <= 0)) {
		nghttp2_session_set_stream_user_data(h->cs, st->cid, NULL);
		if (st->uid > 0)
			nghttp2_session_set_stream_user_data(h->us, st->uid, NULL);
		stream_free(h, st);
	}
}

static int on_close(nghttp2_session *session, int32_t id, uint32_t code, void *user)
{
	h2 *h = user;
	stream *st = nghttp2_session_get_stream_user_data(session, id);
	if (!st)
		return 0;
	if (session == h->cs) {
		st->c_closed = true;
		drop_down(h, st);
		if (st->uid > 0 && !st->u_closed) /* the sandbox gave up: so does the server */
			(void)nghttp2_submit_rst_stream(h->us, NGHTTP2_FLAG_NONE, st->uid,
							code ? code : NGHTTP2_CANCEL);
	} else {
		st->u_closed = true;
		drop_up(h, st);
		if (!st->c_closed && (code || !st->down_end))
			(void)nghttp2_submit_rst_stream(h->cs, NGHTTP2_FLAG_NONE, st->cid,
							code ? code : NGHTTP2_INTERNAL_ERROR);
	}
	stream_done(h, st);
	return 0;
}

/* The server's connection ended: a response it completed is still
 * delivered, one it did not is reset. */
static void upstream_gone(h2 *h)
{
	h->up_gone = true;
	for (stream *st = h->streams, *next; st; st = next) {
		next = st->next;
		if (st->uid <= 0 || st->u_closed)
			continue;
		st->u_closed = true;
		drop_up(h, st);
		if (!st->c_closed && !st->down_end)
			(void)nghttp2_submit_rst_stream(h->cs, NGHTTP2_FLAG_NONE, st->cid,
							NGHTTP2_INTERNAL_ERROR);
		else if (!st->c_closed)
			(void)nghttp2_session_resume_data(h->cs, st->cid);
		stream_done(h, st);
	}
}

static int h2_init(h2 *h, aj_netd_ctx *ctx, const aj_proxy_req *connect)
{
	memset(h, 0, sizeof(*h));
	h->ctx = ctx;
	h->connect = connect;
	if (!(h->req = calloc(1, sizeof(*h->req))))
		return -1;
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	if (nghttp2_session_callbacks_new(&cb) != 0)
		return -1;
	if (nghttp2_option_new(&opt) != 0) {
		nghttp2_session_callbacks_del(cb);
		return -1;
	}
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	nghttp2_option_set_no_auto_window_update(opt, 1);
	int r = nghttp2_session_server_new2(&h->cs, cb, h, opt);
	if (r == 0)
		r = nghttp2_session_client_new2(&h->us, cb, h, opt);
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(opt);
	nghttp2_settings_entry cset[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS}};
	nghttp2_settings_entry uset[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
	if (r == 0)
		r = nghttp2_submit_settings(h->cs, NGHTTP2_FLAG_NONE, cset, 1);
	if (r == 0)
		r = nghttp2_submit_settings(h->us, NGHTTP2_FLAG_NONE, uset, 1);
	return r == 0 ? 0 : -1;
}

static void h2_free(h2 *h)
{
	if (h->cs)
		nghttp2_session_del(h->cs);
	if (h->us)
		nghttp2_session_del(h->us);
	h->cs = h->us = NULL;
	while (h->streams)
		stream_free(h, h->streams);
	if (h->req)
		explicit_bzero(h->req, sizeof(*h->req));
	free(h->req);
	explicit_bzero(h->text, sizeof(h->text));
}

typedef struct side {
	SSL *ssl; /* NULL: plain bytes on fd (tests) */
	int fd;
	nghttp2_session *s;
	uint8_t *out; /* what nghttp2 made, not yet written */
	size_t len, off, cap;
	bool eof;
	short want;
} side;

/* One SSL_read/SSL_write outcome: >0 bytes, 0 would block, -1 end. */
static int io(side *sd, int r)
{
	if (r > 0)
		return r;
	switch (SSL_get_error(sd->ssl, r)) {
	case SSL_ERROR_WANT_READ: sd->want |= POLLIN; return 0;
	case SSL_ERROR_WANT_WRITE: sd->want |= POLLOUT; return 0;
	default: ERR_clear_error(); return -1;
	}
}

/* The same for a read/send on a plain socket. */
static int io_plain(side *sd, ssize_t r, short want)
{
	if (r > 0)
		return (int)r;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		sd->want |= want;
		return 0;
	}
	return -1;
}

static int side_read(side *sd, uint8_t *buf, size_t n)
{
	if (sd->ssl)
		return io(sd, SSL_read(sd->ssl, buf, (int)n));
	return io_plain(sd, read(sd->fd, buf, n), POLLIN);
}

static int side_write(side *sd, const uint8_t *buf, size_t n)
{
	if (sd->ssl)
		return io(sd, SSL_write(sd->ssl, buf, (int)n));
	return io_plain(sd, send(sd->fd, buf, n, MSG_NOSIGNAL), POLLOUT);
}

/* Move bytes for one side: in (to its session), out (from it); true if
 * anything moved. */
static bool pump(side *sd)
{
	bool moved = false;
	uint8_t buf[16384];
	if (!sd->eof) {
		int r = side_read(sd, buf, sizeof(buf));
		if (r < 0 || (r > 0 && nghttp2_session_mem_recv(sd->s, buf, (size_t)r) < 0))
			sd->eof = true;
		moved = r != 0;
	}
	for (;;) {
		if (sd->off == sd->len) {
			const uint8_t *d;
			ssize_t n = nghttp2_session_mem_send(sd->s, &d);
			if (n <= 0) {
				sd->eof = sd->eof || n < 0;
				break;
			}
			if (grow((char **)&sd->out, &sd->cap, (size_t)n)) {
				sd->eof = true;
				break;
			}
			memcpy(sd->out, d, (size_t)n);
			sd->len = (size_t)n, sd->off = 0;
		}
		int w = side_write(sd, sd->out + sd->off, sd->len - sd->off);
		if (w < 0) {
			sd->eof = true;
			break;
		}
		if (w == 0)
			break;
		sd->off += (size_t)w;
		moved = true;
		if (sd->off == sd->len)
			sd->off = sd->len = 0;
	}
	return moved;
}

static void relay(aj_netd_ctx *ctx, const aj_proxy_req *connect, side sc, side su)
{
	h2 *h = calloc(1, sizeof(*h));
	if (!h)
		return;
	if (h2_init(h, ctx, connect) < 0) {
		h2_free(h);
		free(h);
		return;
	}
	sc.s = h->cs;
	su.s = h->us;
	for (;;) {
		sc.want = su.want = 0;
		bool moved = pump(&sc);
		if (!su.eof)
			moved = pump(&su) || moved;
		/* the server is gone, or is done after its GOAWAY */
		if (!su.eof && !nghttp2_session_want_read(h->us) &&
		    !nghttp2_session_want_write(h->us) && su.off == su.len)
			su.eof = true;
		if (su.eof && !h->up_gone)
			upstream_gone(h);
		/* the sandbox is told to open a new connection for more, and
		 * gets what was answered before this one ends (want_read is
		 * false once every stream is closed after a GOAWAY) */
		if ((su.eof || h->up_goaway) && !h->goaway_sent) {
			h->goaway_sent = true;
			(void)nghttp2_submit_goaway(h->cs, NGHTTP2_FLAG_NONE,
						    nghttp2_session_get_last_proc_stream_id(h->cs),
						    NGHTTP2_NO_ERROR, NULL, 0);
			moved = true;
		}
		if (sc.eof || (!nghttp2_session_want_read(h->cs) &&
			       !nghttp2_session_want_write(h->cs) && sc.off == sc.len))
			break;
		if (moved)
			continue;
		struct pollfd pfd[2] = {{.fd = sc.fd, .events = sc.want | POLLIN},
					{.fd = su.eof ? -1 : su.fd, .events = su.want | POLLIN}};
		int pr = poll(pfd, 2, IDLE_MS);
		if (pr == 0 || (pr < 0 && errno != EINTR))
			break;
	}
	wipe(sc.out, sc.cap); /* frames of either side may hold a secret's value */
	wipe(su.out, su.cap);
	free(sc.out);
	free(su.out);
	h2_free(h);
	explicit_bzero(h, sizeof(*h));
	free(h);
}

void aj_proxy_h2(aj_netd_ctx *ctx, const aj_proxy_req *connect, SSL *c, SSL *u)
{
	relay(ctx, connect, (side){.ssl = c, .fd = SSL_get_fd(c)},
	      (side){.ssl = u, .fd = SSL_get_fd(u)});
}

void aj_proxy_h2_plain(aj_netd_ctx *ctx, const aj_proxy_req *connect, int c, int u)
{
	relay(ctx, connect, (side){.fd = c}, (side){.fd = u});
}

/* aj_proxy_h2_frame: the server's end, decoding what the proxy sends. */
typedef struct origin {
	char *out;
	size_t len, cap;
} origin;

static void put(origin *o, const void *p, size_t n)
{
	size_t k = o->cap - o->len < n ? o->cap - o->len : n;
	memcpy(o->out + o->len, p, k);
	o->len += k;
}

static int origin_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
			 size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *user)
{
	(void)session, (void)frame, (void)flags;
	put(user, name, nl);
	put(user, ": ", 2);
	put(user, value, vl);
	put(user, "\n", 1);
	return 0;
}

static int origin_frame(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
	(void)session;
	if (frame->hd.type == NGHTTP2_HEADERS)
		put(user, "\n", 1);
	return 0;
}

/* Move what a session has to send into another one (NULL: dropped). */
static bool drain(nghttp2_session *from, nghttp2_session *to)
{
	bool moved = false;
	const uint8_t *d;
	ssize_t n;
	while ((n = nghttp2_session_mem_send(from, &d)) > 0) {
		moved = true;
		if (to && nghttp2_session_mem_recv(to, d, (size_t)n) < 0)
			to = NULL;
	}
	return moved;
}

size_t aj_proxy_h2_frame(aj_netd_ctx *ctx, const aj_proxy_req *connect, const char *in, size_t len,
			 char *out, size_t cap)
{
	h2 *h = calloc(1, sizeof(*h));
	origin o = {.out = out, .cap = cap};
	nghttp2_session *srv = NULL;
	nghttp2_session_callbacks *cb = NULL;
	if (!h || h2_init(h, ctx, connect) < 0 || nghttp2_session_callbacks_new(&cb) != 0)
		goto out;
	nghttp2_session_callbacks_set_on_header_callback(cb, origin_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, origin_frame);
	if (nghttp2_session_server_new(&srv, cb, &o) != 0 ||
	    nghttp2_submit_settings(srv, NGHTTP2_FLAG_NONE, NULL, 0) != 0)
		goto out;
	if (nghttp2_session_mem_recv(h->cs, (const uint8_t *)in, len) >= 0)
		for (int i = 0; i < 64; i++) {
			bool moved = drain(h->cs, NULL);
			moved = drain(h->us, srv) || moved;
			moved = drain(srv, h->us) || moved;
			if (!moved)
				break;
		}
out:
	if (cb)
		nghttp2_session_callbacks_del(cb);
	if (srv)
		nghttp2_session_del(srv);
	if (h) {
		h2_free(h);
		free(h);
	}
	return o.len;
}
