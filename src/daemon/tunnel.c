/* SPDX-License-Identifier: MIT */
/* The front's half of the ports proxy (docs/api.md, "Ports"). A request
 * to /v1/sandboxes/{id}/ports/{port}/PATH, of any method, or a WebSocket
 * upgrade there, once complete (headers, and a body of at most
 * AJ_HTTP_MAX_BODY), leaves libwebsockets: lws 4.1 cannot hand a
 * connection over, so the tunnel keeps a copy of the client's socket and
 * points lws's fd number at an empty pipe whose writer is gone; lws sees a
 * hang-up and closes only that. The supervisor checks the sandbox (the
 * client's tenant's, running) and connects inside its network namespace
 * (ports.c); the tunnel sends the request there (the path after the port,
 * the headers of an allow-list, "Connection: close" unless it is an
 * upgrade, never the client's bearer token) and from then on relays bytes
 * both ways, half-closes passed on, until both directions are done: the
 * server's answer, a WebSocket's 101 and its frames reach the client as
 * the server wrote them. An error before that (400, 404, 409, 502) is the
 * API's JSON error, written here, then the connection closes. */
#include "tunnel.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "front_call.h"
#include "util.h"

#define PREFIX "/v1/sandboxes/"
#define TUN_QUEUE (256u * 1024) /* bytes one direction holds before it stops reading */
#define TUN_IO (64u * 1024)
#define TUN_LINGER_S 30 /* the client's close, once the server's answer is all sent */
#define TUN_HEAD_MAX (16u * 1024)

enum { CLIENT, SERVER };

struct aj_tunnel;

/* One end: its socket (ours; lws polls a copy) and the bytes read from it
 * for the other end, [off, len). */
typedef struct side {
	struct aj_tunnel *t;
	int fd;		 /* -1: none (yet, or any more) */
	struct lws *raw; /* its copy in the event loop; NULL once closed */
	char *buf;
	size_t off, len, cap;
	bool eof;    /* nothing more comes from it */
	bool shut;   /* its writing side is shut: the other end's EOF passed on */
	bool paused; /* its reading is stopped */
	bool hung;   /* closed for good by its peer (a hang-up, not a half-close) */
} side;

typedef struct aj_tunnel {
	aj_req req; /* the request to the supervisor; its wsi: the client's raw */
	side s[2];
	bool open; /* connected to the server */
} aj_tunnel;

typedef struct troute {
	char id[AJ_SANDBOX_ID_SIZE];
	unsigned port; /* 0: not a port */
	const char *rest;
} troute;

static bool parse(const char *path, troute *rt)
{
	memset(rt, 0, sizeof(*rt));
	if (strncmp(path, PREFIX, strlen(PREFIX)) != 0)
		return false;
	const char *p = path + strlen(PREFIX);
	size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789-");
	if (n == 0 || n >= sizeof(rt->id) || strncmp(p + n, "/ports", 6) != 0 ||
	    (p[n + 6] != '/' && p[n + 6] != '\0'))
		return false;
	memcpy(rt->id, p, n);
	p += n + 6;
	if (*p == '/')
		p++;
	size_t d = strspn(p, "0123456789");
	unsigned long long port = 0;
	if (d >= 1 && d <= 5 && p[0] != '0' && (p[d] == '/' || p[d] == '\0')) {
		char num[8];
		memcpy(num, p, d);
		num[d] = '\0';
		if (aj_parse_uint(num, 65535, &port) == 0)
			rt->port = (unsigned)port;
	}
	rt->rest = p + strcspn(p, "/");
	return true;
}

bool aj_tunnel_route(const char *path)
{
	troute rt;
	return parse(path, &rt);
}

/* ---- the request for the server ---- */

typedef struct out {
	char *b;
	size_t len, cap;
	bool bad; /* out of memory, or too long */
} out;

static void put(out *o, const char *s, size_t n)
{
	if (o->bad || o->len + n + 1 > TUN_HEAD_MAX + AJ_HTTP_MAX_BODY) {
		o->bad = true;
		return;
	}
	if (o->len + n + 1 > o->cap) {
		size_t cap = (o->len + n + 1) * 2;
		char *b = realloc(o->b, cap);
		if (!b) {
			o->bad = true;
			return;
		}
		o->b = b;
		o->cap = cap;
	}
	memcpy(o->b + o->len, s, n);
	o->len += n;
	o->b[o->len] = '\0';
}

static void puts_(out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* s percent-encoded but for the characters keep allows (besides letters,
 * digits and -._~): lws hands paths and arguments decoded. */
static void put_enc(out *o, const char *s, const char *keep)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~", c) || strchr(keep, c))
			put(o, (const char *)&c, 1);
		else {
			char e[4];
			snprintf(e, sizeof(e), "%%%02X", c);
			put(o, e, 3);
		}
	}
}

/* The client's headers passed on: what a server in the sandbox may need,
 * never the bearer token (Authorization), the hop-by-hop ones, or Host
 * (the server's own address instead). Headers lws does not know are not
 * passed on (lws 4.1 cannot list them). */
static const enum lws_token_indexes passed[] = {
    WSI_TOKEN_HTTP_ACCEPT,
    WSI_TOKEN_HTTP_ACCEPT_CHARSET,
    WSI_TOKEN_HTTP_ACCEPT_ENCODING,
    WSI_TOKEN_HTTP_ACCEPT_LANGUAGE,
    WSI_TOKEN_HTTP_AC_REQUEST_HEADERS,
    WSI_TOKEN_HTTP_CACHE_CONTROL,
    WSI_TOKEN_HTTP_CONTENT_DISPOSITION,
    WSI_TOKEN_HTTP_CONTENT_ENCODING,
    WSI_TOKEN_HTTP_CONTENT_LANGUAGE,
    WSI_TOKEN_HTTP_CONTENT_TYPE,
    WSI_TOKEN_HTTP_COOKIE,
    WSI_TOKEN_HTTP_DATE,
    WSI_TOKEN_HTTP_IF_MATCH,
    WSI_TOKEN_HTTP_IF_MODIFIED_SINCE,
    WSI_TOKEN_HTTP_IF_NONE_MATCH,
    WSI_TOKEN_HTTP_IF_RANGE,
    WSI_TOKEN_HTTP_IF_UNMODIFIED_SINCE,
    WSI_TOKEN_HTTP_PRAGMA,
    WSI_TOKEN_HTTP_RANGE,
    WSI_TOKEN_HTTP_REFERER,
    WSI_TOKEN_HTTP_USER_AGENT,
    WSI_TOKEN_ORIGIN,
};
/* and for a WebSocket upgrade, its handshake's */
static const enum lws_token_indexes passed_ws[] = {
    WSI_TOKEN_KEY,
    WSI_TOKEN_VERSION,
    WSI_TOKEN_PROTOCOL,
    WSI_TOKEN_EXTENSIONS,
};

static void put_header(out *o, struct lws *wsi, enum lws_token_indexes t)
{
	char v[4096 + 1];
	const char *name = (const char *)lws_token_to_string(t);
	int n = lws_hdr_total_length(wsi, t);
	if (!name || n <= 0 || n >= (int)sizeof(v) || lws_hdr_copy(wsi, v, sizeof(v), t) < 0)
		return;
	if (strpbrk(v, "\r\n"))
		return; /* (lws does not let them through; never pass one on) */
	puts_(o, name);
	puts_(o, " ");
	puts_(o, v);
	puts_(o, "\r\n");
}

static const char *method_of(struct lws *wsi)
{
	static const char *const names[] = {
	    [LWSHUMETH_GET] = "GET",  [LWSHUMETH_POST] = "POST",   [LWSHUMETH_OPTIONS] = "OPTIONS",
	    [LWSHUMETH_PUT] = "PUT",  [LWSHUMETH_PATCH] = "PATCH", [LWSHUMETH_DELETE] = "DELETE",
	    [LWSHUMETH_HEAD] = "HEAD"};
	char *u;
	int ul;
	int m = lws_http_get_uri_and_method(wsi, &u, &ul);
	return m >= 0 && m < (int)AJ_ARRAY_SIZE(names) ? names[m] : NULL;
}

/* The request for the server: METHOD /REST?ARGS HTTP/1.1, its headers,
 * the body. NULL: out of memory, or too long. */
static char *build(struct lws *wsi, const troute *rt, bool ws, const char *body, size_t blen,
		   size_t *len)
{
	out o = {0};
	const char *m = method_of(wsi);
	puts_(&o, m ? m : "GET");
	puts_(&o, " /");
	put_enc(&o, *rt->rest ? rt->rest + 1 : "", "/!$&'()*+,;=:@");
	char frag[4096];
	for (int i = 0;
	     lws_hdr_copy_fragment(wsi, frag, sizeof(frag), WSI_TOKEN_HTTP_URI_ARGS, i) >= 0; i++) {
		puts_(&o, i ? "&" : "?");
		char *eq = strchr(frag, '=');
		if (eq)
			*eq = '\0';
		put_enc(&o, frag, "!$'()*,;:@/?");
		if (eq) {
			puts_(&o, "=");
			put_enc(&o, eq + 1, "!$'()*,;:@/?=");
		}
	}
	char host[64];
	snprintf(host, sizeof(host), " HTTP/1.1\r\nhost: localhost:%u\r\n", rt->port);
	puts_(&o, host);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(passed); i++)
		put_header(&o, wsi, passed[i]);
	if (ws) {
		puts_(&o, "connection: Upgrade\r\nupgrade: websocket\r\n");
		for (size_t i = 0; i < AJ_ARRAY_SIZE(passed_ws); i++)
			put_header(&o, wsi, passed_ws[i]);
	} else
		puts_(&o, "connection: close\r\n");
	if (!ws &&
	    (blen || (m && (!strcmp(m, "POST") || !strcmp(m, "PUT") || !strcmp(m, "PATCH"))))) {
		char cl[48];
		snprintf(cl, sizeof(cl), "content-length: %zu\r\n", blen);
		puts_(&o, cl);
	}
	puts_(&o, "\r\n");
	if (!ws && blen)
		put(&o, body, blen);
	if (o.bad) {
		free(o.b);
		return NULL;
	}
	*len = o.len;
	return o.b;
}

/* ---- the two ends ---- */

static void finish(aj_tunnel *t);

static size_t queued(const side *s)
{
	return s->len - s->off;
}

static void pause_reading(side *s, bool pause)
{
	if (s->raw && s->paused != pause)
		lws_rx_flow_control(s->raw, pause ? 0 : 1);
	s->paused = pause;
}

static void want_write(side *s)
{
	if (s->raw)
		lws_callback_on_writable(s->raw);
}

/* Both directions are done: each end's bytes all passed on (or nowhere to
 * go) and its EOF too. */
static bool done(const aj_tunnel *t)
{
	for (int i = 0; i < 2; i++) {
		const side *from = &t->s[i], *to = &t->s[!i];
		if (!from->eof || (to->fd >= 0 && !to->shut))
			return false;
	}
	return true;
}

/* An end closed for good (what was queued for it is dropped). */
static void release(side *s)
{
	if (s->raw) {
		lws_set_wsi_user(s->raw, NULL);
		lws_set_timeout(s->raw, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
	}
	s->raw = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->eof = s->shut = true;
	s->off = s->len = 0;
}

/* from's EOF passed on to the other end once its bytes are. */
static void pass_eof(aj_tunnel *t, side *from)
{
	side *to = &t->s[from == &t->s[CLIENT] ? SERVER : CLIENT];
	if (!from->eof || queued(from) || to->shut)
		return;
	if (to->fd >= 0)
		(void)shutdown(to->fd, SHUT_WR);
	to->shut = true;
	if (to != &t->s[CLIENT])
		return;
	/* the server's answer is all sent: its connection goes now (it holds
	 * the sandbox's network namespace: a deleted sandbox's goes with it),
	 * and the client has a while to close */
	release(from);
	if (to->raw && !to->eof)
		lws_set_timeout(to->raw, PENDING_TIMEOUT_USER_OK, TUN_LINGER_S);
}

static void check(aj_tunnel *t)
{
	pass_eof(t, &t->s[CLIENT]);
	pass_eof(t, &t->s[SERVER]);
	/* a client that hung up takes nothing more: once its bytes went, the
	 * server's connection goes too (a server that never ends would hold
	 * it, and the sandbox's port, for ever) */
	if (done(t) || (t->open && t->s[CLIENT].hung && !queued(&t->s[CLIENT])))
		finish(t);
}

/* Room for n more bytes at the end of s's queue. */
static int reserve(side *s, size_t n)
{
	if (s->off && s->len + n > s->cap) {
		memmove(s->buf, s->buf + s->off, queued(s));
		s->len -= s->off;
		s->off = 0;
	}
	if (s->len + n <= s->cap)
		return 0;
	size_t cap = s->len + n < TUN_IO ? TUN_IO : (s->len + n) * 2;
	char *b = realloc(s->buf, cap);
	if (!b)
		return -1;
	s->buf = b;
	s->cap = cap;
	return 0;
}

/* What s has to read, into its queue (once, or all until it has nothing
 * more). 0, or -1 for an error (the tunnel ends). */
static int take(aj_tunnel *t, side *s, bool all)
{
	side *to = &t->s[s == &t->s[CLIENT] ? SERVER : CLIENT];
	do {
		if (s->eof || s->fd < 0 || reserve(s, TUN_IO) < 0)
			return s->eof || s->fd < 0 ? 0 : -1;
		ssize_t n = recv(s->fd, s->buf + s->len, TUN_IO, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0)
			return -1; /* reset: the tunnel ends (closing resets the other end) */
		if (n == 0) {
			s->eof = true;
			pause_reading(s, true); /* (readable at EOF for good) */
			break;
		}
		s->len += (size_t)n;
		if (to->fd < 0 || to->shut) /* nowhere to go (an error answered): dropped */
			s->off = s->len = 0;
	} while (all);
	if (queued(s) >= TUN_QUEUE)
		pause_reading(s, true);
	if (queued(s))
		want_write(to);
	return 0;
}

/* What from queued, to the other end, as far as it takes it. */
static int give(aj_tunnel *t, side *to)
{
	side *from = &t->s[to == &t->s[CLIENT] ? SERVER : CLIENT];
	while (queued(from) && to->fd >= 0 && !to->shut) {
		size_t n = queued(from) < TUN_IO ? queued(from) : TUN_IO;
		ssize_t k = send(to->fd, from->buf + from->off, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			want_write(to);
			return 0;
		}
		if (k < 0)
			return -1; /* the other end is gone */
		from->off += (size_t)k;
	}
	if (!queued(from)) {
		from->off = from->len = 0;
		if (from->paused && !from->eof && t->open)
			pause_reading(from, false);
	}
	return 0;
}

int aj_tunnel_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		       size_t len)
{
	(void)wsi, (void)in, (void)len;
	side *s = user;
	if (!s)
		return 0; /* adopted, not ours yet; or its tunnel ended */
	aj_tunnel *t = s->t;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		if (take(t, s, false) < 0) {
			finish(t);
			return 0;
		}
		break;
	case LWS_CALLBACK_RAW_WRITEABLE_FILE:
		if (give(t, s) < 0) {
			finish(t);
			return 0;
		}
		break;
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		/* lws closes on a hang-up (or our linger's timeout) even with bytes
		 * left to read: they are taken now; what it still had to be sent
		 * goes if it can, at once */
		s->raw = NULL;
		if (take(t, s, true) < 0 || give(t, s) < 0) {
			finish(t);
			return 0;
		}
		s->eof = s->shut = s->hung = true;
		if (s == &t->s[SERVER] || !t->open) /* the server's answer ends with it */
			t->s[SERVER].eof = true;
		break;
	default: return 0;
	}
	check(t);
	return 0;
}

/* ---- the tunnel ---- */

static struct lws_vhost *vhost_of(struct lws *wsi)
{
	return lws_get_vhost_by_name(lws_get_context(wsi), "supervisor");
}

/* An end in the event loop: lws polls (and closes) a copy of fd. */
static int adopt(aj_tunnel *t, side *s, struct lws_vhost *vh, int fd)
{
	s->t = t;
	s->fd = fd;
	int theirs = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	lws_sock_file_fd_type u = {.filefd = theirs};
	s->raw = theirs < 0 || !vh ? NULL
				   : lws_adopt_descriptor_vhost(vh, LWS_ADOPT_RAW_FILE_DESC, u,
								"agentjail-tunnel", NULL);
	if (!s->raw) {
		if (theirs >= 0)
			close(theirs);
		return -ENOMEM;
	}
	lws_set_wsi_user(s->raw, s);
	return 0;
}

static void finish(aj_tunnel *t)
{
	if (t->req.call) /* a supervisor's reply still to come is dropped */
		aj_front_cancel(&t->req);
	free(t->req.body);
	free(t->req.resp);
	for (int i = 0; i < 2; i++) {
		release(&t->s[i]);
		free(t->s[i].buf);
	}
	free(t);
}

static const char *reason_of(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	default: return "Error";
	}
}

/* The API's JSON error as the whole answer (the body: the request's
 * resp, made by aj_http_error); then the connection closes. */
static void answer_error(aj_tunnel *t)
{
	side *srv = &t->s[SERVER], *cl = &t->s[CLIENT];
	const char *body = t->req.resp ? t->req.resp : "{}\n";
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: "
			 "%zu\r\ncache-control: no-store\r\nconnection: close\r\n\r\n",
			 t->req.status, reason_of(t->req.status), strlen(body));
	srv->off = srv->len = 0;
	if (reserve(srv, (size_t)n + strlen(body)) < 0) {
		finish(t);
		return;
	}
	memcpy(srv->buf, head, (size_t)n);
	memcpy(srv->buf + n, body, strlen(body));
	srv->len = (size_t)n + strlen(body);
	srv->eof = true;
	cl->off = cl->len = 0;	  /* the request goes nowhere */
	pause_reading(cl, false); /* to its EOF, dropped */
	want_write(cl);
}

/* The supervisor's reply: the connection to the server, or an error. */
static void connected(aj_req *r, int status, json_t *reply, int fd)
{
	aj_tunnel *t = (aj_tunnel *)((char *)r - offsetof(aj_tunnel, req));
	side *srv = &t->s[SERVER];
	if (fd < 0 || status != 200) {
		if (fd >= 0)
			close(fd);
		aj_http_json(r, status == 200 ? 502 : status, reply);
		answer_error(t);
		return;
	}
	json_decref(reply);
	if (!t->s[CLIENT].raw || adopt(t, srv, vhost_of(t->s[CLIENT].raw), fd) < 0) {
		if (srv->fd < 0)
			close(fd);
		finish(t);
		return;
	}
	t->open = true;
	want_write(srv); /* the request */
	if (t->s[CLIENT].raw)
		pause_reading(&t->s[CLIENT], queued(&t->s[CLIENT]) >= TUN_QUEUE);
	check(t);
}

/* The client's socket out of lws (see the top): ours, and lws's fd
 * number on an empty pipe. -1 with nothing changed when it cannot be. */
static int detach(struct lws *wsi)
{
	int fd = lws_get_socket_fd(wsi), p[2];
	if (fd < 0)
		return -1;
	int mine = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (mine < 0)
		return -1;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		close(mine);
		return -1;
	}
	int e = dup3(p[0], fd, O_CLOEXEC);
	close(p[0]);
	close(p[1]);
	if (e < 0) {
		close(mine);
		return -1;
	}
	return mine;
}

/* The tunnel of a complete request (wsi: lws's connection, r: its request
 * or NULL for an upgrade). 0: an error answered through lws (before the
 * client's socket left it); -1: the socket is the tunnel's. */
static int start(struct lws *wsi, aj_req *r, bool ws)
{
	troute rt;
	char path[512];
	if (r)
		snprintf(path, sizeof(path), "%s", r->path);
	else if (lws_hdr_copy(wsi, path, sizeof(path), WSI_TOKEN_GET_URI) <= 0)
		path[0] = '\0';
	if (!parse(path, &rt))
		return 0;
	aj_tunnel *t = calloc(1, sizeof(*t));
	if (!t)
		return -1;
	aj_req *q = &t->req;
	q->upload_fd = q->dl_fd = -1;
	q->wsi = wsi;
	aj_http_peer(q);
	if (q->remote && !aj_http_token_ok(q)) { /* (checked before: the token, copied) */
		free(t);
		return -1;
	}
	snprintf(q->path, sizeof(q->path), "%s", path);
	snprintf(q->sb_id, sizeof(q->sb_id), "%s", rt.id);
	t->s[CLIENT].fd = t->s[SERVER].fd = -1;
	size_t len = 0;
	char *head =
	    rt.port ? build(wsi, &rt, ws, r ? r->body : NULL, r ? r->body_len : 0, &len) : NULL;
	int mine = detach(wsi);
	if (mine < 0 || adopt(t, &t->s[CLIENT], vhost_of(wsi), mine) < 0) {
		if (mine >= 0)
			close(mine);
		free(head);
		free(t);
		if (r)
			aj_http_error(r, 503, "busy", "cannot take the connection over: %s",
				      strerror(errno));
		return r ? 0 : -1;
	}
	side *cl = &t->s[CLIENT];
	q->wsi = cl->raw;
	pause_reading(cl, true); /* until the server is there */
	cl->buf = head;
	cl->len = cl->cap = len;
	if (!rt.port) {
		aj_http_error(q, 400, "bad_request",
			      "%s: expected /v1/sandboxes/{id}/ports/{port}/..., a port from 1 to "
			      "65535",
			      path);
		answer_error(t);
	} else if (!head) {
		aj_http_error(q, 431, "request_too_large", "the request's headers are too large");
		answer_error(t);
	} else if (aj_front_call(q, "port.connect",
				 json_pack("{s:s, s:i}", "sandbox", rt.id, "port", (int)rt.port),
				 connected) < 0)
		answer_error(t); /* (503, 413: made by aj_front_call) */
	return -1;
}

int aj_tunnel_http(aj_req *r)
{
	return start(r->wsi, r, false);
}

int aj_tunnel_upgrade(struct lws *wsi, const char *upgrade)
{
	char uri[512];
	if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 || !aj_tunnel_route(uri))
		return 0;
	/* another upgrade (h2c) is not passed on: a plain request */
	return start(wsi, NULL, upgrade && !strcasecmp(upgrade, "websocket"));
}
