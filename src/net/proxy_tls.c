/* SPDX-License-Identifier: MIT */
/* One intercepted HTTPS connection of the proxy (proxy.h): a CONNECT to a
 * host that has scoped secrets. netd completes the sandbox's TLS handshake
 * with a leaf of the sandbox's CA (the SNI must name the CONNECT host),
 * opens its own verified TLS session to the server, and then reads the
 * sandbox's requests one by one (HTTP/1.1 keep-alive): each head is parsed
 * (proxy_parse.c), its Host must name the CONNECT host, the secrets are put
 * in (inject.c), and its body is passed on as framed by http-parser
 * (Content-Length or chunked); toward a host with a :body secret it is
 * held (up to AJ_INJECT_BODY_MAX) and filled, or past that spooled and
 * sent with its filled length, or filled as it streams, re-framed as
 * chunked (aj_body_out, proxy_common.h). Responses go back as they come, parsed in
 * order (http-parser) and matched one to one to the requests sent: only
 * the Upgrade request's own 101 ends the parsing of requests (a
 * WebSocket's bytes are relayed as they are); an answer to an earlier
 * request, or bytes inside its body, never do. */
#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "inject.h"
#include "netlog.h"
#include "proxy_common.h"
#include "proxy_h2.h"
#include "proxy_parse.h"
#include "proxy_tls.h"
#include "tls.h"
#include "util.h"

#define IN_MAX 16384
#define OUT_MAX (sizeof(((aj_proxy_req *)0)->headers) + 4096)
#define HANDSHAKE_MS 10000
#define IDLE_MS (15 * 60 * 1000)
/* requests sent and not answered yet (pipelining); more wait */
#define PENDING_MAX 64
#define P_HEAD 1u    /* a HEAD: its answer has no body */
#define P_UPGRADE 2u /* an Upgrade: only its 101 switches */

/* S_HOLD: a body held whole for a "body" secret (inject.h); S_STREAM:
 * one too large to hold, filled and sent as it comes or spooled;
 * S_UNSPOOL: a spooled body going to the server; S_SWITCH: an
 * Upgrade request sent, the client's next bytes wait for the server's
 * answer (a 101: S_RAW; anything else: S_HEAD) */
enum state { S_HEAD, S_BODY, S_HOLD, S_STREAM, S_UNSPOOL, S_SWITCH, S_RAW };

typedef struct session {
	aj_netd_ctx *ctx;
	const aj_proxy_req *connect; /* the CONNECT: host and port */
	SSL *c, *u;		     /* toward the client (sandbox), the server */
	enum state st;
	http_parser hp;
	bool message_done;
	http_parser rp;			 /* the server's responses, from the first byte */
	unsigned char pend[PENDING_MAX]; /* P_* of the requests awaiting answers */
	size_t pend_first, pend_len;
	char in[IN_MAX]; /* from the client, not yet processed */
	size_t in_len;
	char out[OUT_MAX]; /* to the server */
	char *ob;	   /* what goes to the server: out, or a held request */
	size_t out_len, out_off;
	aj_body_buf body; /* S_HOLD: the body so far, de-framed; S_STREAM: a piece */
	aj_body_out bo;	  /* S_STREAM, S_UNSPOOL: the body out */
	char back[16384]; /* to the client */
	size_t back_len, back_off;
	bool c_eof, u_eof, closing, u_shut;
	short want_c, want_u;
	aj_proxy_req *req;
	char method[16];      /* of the request being taken (the log) */
	char path[256];	      /* its path, without the query (the log) */
	aj_proxy_notes notes; /* its placeholders, logged once sent or refused */
} session;

static int on_body(http_parser *hp, const char *at, size_t n)
{
	session *s = hp->data;
	if (s->st == S_HOLD && s->body.len + n > AJ_INJECT_BODY_MAX)
		s->body.unbounded = true; /* too large to hold: streamed (start_stream) */
	return (s->st == S_HOLD || s->st == S_STREAM) && aj_body_append(&s->body, at, n) < 0;
}

static int on_message_complete(http_parser *hp)
{
	session *s = hp->data;
	s->message_done = true;
	http_parser_pause(hp, 1);
	return 0;
}

static const http_parser_settings body_settings = {.on_body = on_body,
						   .on_message_complete = on_message_complete};

/* The head of a response: matched to the oldest request not answered
 * yet. Interim answers (100, 103) answer nothing; a 101 switches only
 * when it answers the Upgrade request; a response to no request, or a 101
 * to another one, loses the thread: the connection ends. Returns 1 (no
 * body) for the answer to a HEAD. */
static int on_response_head(http_parser *hp)
{
	session *s = hp->data;
	int st = hp->status_code;
	/* 1xx, 204 and 304 never have a body, whatever their length headers
	 * say (RFC 9112 6.3): http-parser would read one */
	if (st >= 100 && st < 200 && st != 101)
		return 1;
	if (s->pend_len == 0) {
		s->closing = true;
		http_parser_pause(hp, 1);
		return 0;
	}
	unsigned f = s->pend[s->pend_first];
	s->pend_first = (s->pend_first + 1) % PENDING_MAX;
	s->pend_len--;
	if (st == 101) {
		if (!(f & P_UPGRADE) || s->st != S_SWITCH)
			s->closing = true;
		else
			s->st = S_RAW;
		http_parser_pause(hp, 1);
		return 0;
	}
	if (f & P_UPGRADE && s->st == S_SWITCH)
		s->st = S_HEAD; /* declined: the next request is parsed as any */
	return f & P_HEAD || st == 204 || st == 304 ? 1 : 0;
}

static const http_parser_settings response_settings = {.on_headers_complete = on_response_head};

/* n bytes from the server: parsed as responses until the connection
 * switches protocols; bytes that are not HTTP end it. */
static void watch_responses(session *s, const char *p, size_t n)
{
	if (s->st == S_RAW || s->closing || n == 0)
		return;
	(void)http_parser_execute(&s->rp, &response_settings, p, n);
	enum http_errno e = HTTP_PARSER_ERRNO(&s->rp);
	if (s->st != S_RAW && e != HPE_OK)
		s->closing = true;
}

static void log_event(session *s, const char *verdict, const char *method, const char *why)
{
	json_t *ev = json_pack("{s:s,s:s,s:s,s:i,s:s,s:b}", "event", "proxy", "method",
			       method ? method : "CONNECT", "host", s->connect->host, "port",
			       (int)s->connect->port, "verdict", verdict, "intercepted", 1);
	if (ev && method && s->path[0]) /* never the query: it may hold a value */
		json_object_set_new(ev, "path", json_string(s->path));
	if (ev && why)
		json_object_set_new(ev, "reason", json_string(why));
	aj_netlog(s->ctx, ev);
}

/* Answer the client (over TLS) and end once it is sent (a response of the
 * server still being sent is cut there). */
static void refuse(session *s, int status, const char *reason, const char *why)
{
	aj_proxy_log_notes(s->ctx, s->connect->host, s->connect->port, &s->notes, false);
	log_event(s, "refused", s->method[0] ? s->method : NULL, why);
	char body[512];
	snprintf(body, sizeof(body), "agentjail proxy: %s:%u: %s\n", s->connect->host,
		 s->connect->port, why);
	int n = snprintf(s->back, sizeof(s->back),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n%s",
			 status, reason, strlen(body), body);
	s->back_len = n > 0 && (size_t)n < sizeof(s->back) ? (size_t)n : 0;
	s->back_off = 0;
	s->closing = true;
}

/* Does the inner request's Host name the CONNECT host and port (443 when
 * the Host has none)? */
static bool same_target(const session *s, const aj_proxy_req *r)
{
	unsigned want = s->connect->port;
	return r->has_host && r->target[0] == '/' && strcmp(r->host, s->connect->host) == 0 &&
	       (r->port_given ? r->port == want : want == 443);
}

static void send_head(session *s, const char *body, size_t len);

/* A whole head is in s->in (head bytes): check it, fill in the secrets,
 * queue it for the server and start framing its body. */
static void take_head(session *s, size_t head)
{
	aj_proxy_req *r = s->req;
	s->method[0] = s->path[0] = '\0';
	if (aj_proxy_parse(s->in, head, r) < 0) {
		refuse(s, 400, "Bad Request", r->error);
		return;
	}
	snprintf(s->method, sizeof(s->method), "%s", r->method);
	snprintf(s->path, sizeof(s->path), "%.*s", (int)strcspn(r->target, "?"), r->target);
	if (r->connect || !same_target(s, r)) {
		refuse(s, 421, "Misdirected Request",
		       "the Host header does not name the CONNECT target and TLS server name");
		return;
	}
	/* the body: framed by a parser that sees the original head; a head
	 * it does not take is refused before anything is sent */
	http_parser_init(&s->hp, HTTP_REQUEST);
	s->hp.data = s;
	s->message_done = false;
	size_t k = http_parser_execute(&s->hp, &body_settings, s->in, head);
	enum http_errno e = HTTP_PARSER_ERRNO(&s->hp);
	if (!s->message_done && !s->hp.upgrade && ((e != HPE_OK && e != HPE_PAUSED) || k != head)) {
		refuse(s, 400, "Bad Request", "malformed request body framing");
		return;
	}
	if (s->hp.upgrade && r->has_body) {
		refuse(s, 400, "Bad Request", "an Upgrade request with a body is not relayed");
		return;
	}
	r->port = s->connect->port; /* for the log: "Host: h" means 443 here */
	if (aj_proxy_fill_secrets(s->ctx, r, &s->notes) < 0) {
		refuse(s, 431, "Request Header Fields Too Large",
		       "the request head is too large with the secret's value in it");
		return;
	}
	memmove(s->in, s->in + head, s->in_len - head);
	s->in_len -= head;
	/* a "body" secret for this host: the body is held whole, filled
	 * and sent with its new length (send_head once it is complete) */
	if (!s->message_done && !s->hp.upgrade && aj_inject_body_wanted(s->ctx->p, r->host)) {
		s->st = S_HOLD;
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		if (r->expect_continue && s->back_len == 0) {
			memcpy(s->back, cont, sizeof(cont) - 1);
			s->back_len = sizeof(cont) - 1, s->back_off = 0;
		}
		return;
	}
	send_head(s, NULL, 0);
	if (s->closing)
		return;
	if (s->hp.upgrade) { /* WebSocket and friends: bytes once the server agrees */
		s->st = S_SWITCH;
	} else if (s->message_done)
		s->st = S_HEAD;
	else
		s->st = S_BODY;
	if (s->message_done)
		http_parser_pause(&s->hp, 0);
}

/* S_HOLD, the body complete: the secrets into it, then the request out. */
static void send_held(session *s)
{
	char *body = NULL;
	size_t len = 0;
	int r = aj_proxy_fill_body(s->ctx, s->req, s->body.p, s->body.len, &body, &len, &s->notes);
	if (r < 0) {
		aj_body_free(&s->body);
		if (r == -EFBIG)
			refuse(s, 413, "Content Too Large",
			       "the body is too large with the secrets' values in it");
		else
			refuse(s, 431, "Request Header Fields Too Large",
			       "the request head is too large");
		return;
	}
	aj_body_free(&s->body);
	send_head(s, body, len);
	explicit_bzero(body, len);
	free(body);
	s->st = S_HEAD;
	http_parser_pause(&s->hp, 0);
}

/* The head of s->req (secrets in), and body (len bytes) if any, queued
 * for the server; s->req is zeroed. */
static void send_head(session *s, const char *body, size_t len)
{
	aj_proxy_req *r = s->req;
	unsigned f = (strcmp(r->method, "HEAD") == 0 ? P_HEAD : 0) |
		     (s->st == S_HEAD && s->hp.upgrade ? P_UPGRADE : 0);
	int n = snprintf(s->out, sizeof(s->out), "%s %s HTTP/%d.%d\r\n%s%s%s%s\r\n", r->method,
			 r->target, r->http_major, r->http_minor, r->headers,
			 r->connection[0] ? "Connection: " : "", r->connection,
			 r->connection[0] ? "\r\n" : "");
	explicit_bzero(r, sizeof(*r)); /* it held the values */
	if (n < 0 || (size_t)n >= sizeof(s->out)) {
		explicit_bzero(s->out, sizeof(s->out));
		refuse(s, 431, "Request Header Fields Too Large", "the request head is too large");
		return;
	}
	s->ob = s->out;
	s->out_len = (size_t)n;
	s->out_off = 0;
	s->pend[(s->pend_first + s->pend_len++) % PENDING_MAX] = (unsigned char)f;
	if (body) {
		char *big = malloc((size_t)n + len);
		if (!big) {
			explicit_bzero(s->out, sizeof(s->out));
			s->out_len = 0;
			refuse(s, 500, "Internal Server Error", "out of memory");
			return;
		}
		memcpy(big, s->out, (size_t)n);
		memcpy(big + n, body, len);
		explicit_bzero(s->out, (size_t)n);
		s->ob = big;
		s->out_len = (size_t)n + len;
	}
	/* on its way to the server: its secret_* lines */
	aj_proxy_log_notes(s->ctx, s->connect->host, s->connect->port, &s->notes, true);
	log_event(s, "allowed", s->method, NULL);
}

static const char *reason_of(int status)
{
	return status == 413   ? "Content Too Large"
	       : status == 431 ? "Request Header Fields Too Large"
	       : status == 507 ? "Insufficient Storage"
			       : "Internal Server Error";
}

/* S_STREAM: the body's bytes so far (s->body) into s->bo: a chunk to
 * send in a new buffer *out (*len), or spooled (*out NULL). 0, or <0 with
 * the request refused (head_sent: after values went out). */
static int stream_piece(session *s, bool head_sent, char **out, size_t *len)
{
	const char *why = NULL;
	int st = aj_body_out_take(&s->bo, s->body.p, s->body.len, s->message_done, out, len, &why);
	if (s->body.p)
		explicit_bzero(s->body.p, s->body.len);
	s->body.len = 0;
	if (st == 0)
		return 0;
	if (head_sent) /* values may have gone: logged so */
		aj_proxy_stream_notes(s->ctx, s->connect->host, s->connect->port, &s->bo.fill,
				      &s->notes);
	aj_body_out_free(&s->bo);
	aj_body_free(&s->body);
	explicit_bzero(s->req, sizeof(*s->req));
	refuse(s, st, reason_of(st), why);
	return -1;
}

/* S_STREAM or S_UNSPOOL, the body complete: its notes logged, the next
 * request. */
static void stream_done(session *s)
{
	aj_proxy_stream_notes(s->ctx, s->connect->host, s->connect->port, &s->bo.fill, &s->notes);
	aj_body_out_free(&s->bo);
	aj_body_free(&s->body);
	s->st = S_HEAD;
	http_parser_pause(&s->hp, 0);
}

/* S_STREAM, a spooled body whole: the head with its filled length, then
 * the spool, filled as it goes (S_UNSPOOL, unspool). */
static void spool_done(session *s)
{
	if (aj_body_out_ready(&s->bo, s->req) < 0) {
		aj_body_out_free(&s->bo);
		refuse(s, 431, "Request Header Fields Too Large", "the request head is too large");
		return;
	}
	send_head(s, NULL, 0);
	s->st = S_UNSPOOL;
}

/* S_HOLD, the body past AJ_INJECT_BODY_MAX: spooled (a Content-Length),
 * or the head goes with "Transfer-Encoding: chunked" and the body from
 * here on filled as it comes (S_STREAM). */
static void start_stream(session *s)
{
	const char *why = NULL;
	long long length = (s->hp.flags & F_CHUNKED)
			       ? -1
			       : (long long)(s->body.len + (size_t)s->hp.content_length);
	int st = aj_body_out_start(s->ctx, &s->bo, s->req, length, &why);
	if (st) {
		aj_body_free(&s->body);
		refuse(s, st, reason_of(st), why);
		return;
	}
	s->st = S_STREAM;
	char *piece = NULL;
	size_t len = 0;
	if (stream_piece(s, false, &piece, &len) < 0)
		return;
	if (s->bo.spooling) {
		if (s->message_done)
			spool_done(s);
		return;
	}
	send_head(s, piece, len);
	explicit_bzero(piece, len);
	free(piece);
	if (s->message_done && !s->closing)
		stream_done(s);
}

/* S_STREAM: the next piece queued for the server, or spooled. */
static void stream_more(session *s)
{
	char *piece = NULL;
	size_t len = 0;
	if ((s->body.len == 0 && !s->message_done) ||
	    stream_piece(s, !s->bo.spooling, &piece, &len) < 0)
		return;
	if (s->bo.spooling) {
		if (s->message_done)
			spool_done(s);
		return;
	}
	if (len == 0) { /* all of it carried to the next piece: nothing to send */
		free(piece);
		return;
	}
	s->ob = piece;
	s->out_len = len;
	s->out_off = 0;
	if (s->message_done)
		stream_done(s);
}

/* S_UNSPOOL, the out buffer free: the spool's next filled bytes queued;
 * true if anything was. */
static bool unspool(session *s)
{
	char *piece = NULL;
	size_t len = 0;
	if (aj_body_out_next(&s->bo, &piece, &len) < 0) {
		free(piece);
		aj_proxy_stream_notes(s->ctx, s->connect->host, s->connect->port, &s->bo.fill,
				      &s->notes);
		aj_body_out_free(&s->bo);
		refuse(s, 500, "Internal Server Error", "cannot read the proxy's spool");
		return true;
	}
	if (len) {
		s->ob = piece;
		s->out_len = len;
		s->out_off = 0;
	} else
		free(piece);
	if (s->bo.eof)
		stream_done(s);
	return true;
}

/* What went to the server is gone: zeroed (it may hold a value). */
static void out_done(session *s)
{
	explicit_bzero(s->ob, s->out_len);
	if (s->ob != s->out)
		free(s->ob);
	s->ob = s->out;
	s->out_len = s->out_off = 0;
}

/* Move what s->in holds toward the server, while the out buffer is free;
 * true if anything was taken. */
static bool process(session *s)
{
	size_t before = s->in_len;
	bool was_closing = s->closing, queued = false;
	if (s->st == S_UNSPOOL && !s->closing && s->out_len == 0)
		queued = unspool(s);
	while (!s->closing && s->out_len == 0 && s->in_len > 0 && s->st != S_SWITCH &&
	       s->st != S_UNSPOOL) {
		if (s->st == S_HEAD) {
			if (s->pend_len == PENDING_MAX)
				break; /* the answers first */
			char *end = memmem(s->in, s->in_len, "\r\n\r\n", 4);
			if (!end) {
				if (s->in_len == sizeof(s->in))
					refuse(s, 431, "Request Header Fields Too Large",
					       "the request head is too large");
				break;
			}
			take_head(s, (size_t)(end - s->in) + 4);
			continue;
		}
		if (s->st == S_HOLD || s->st == S_STREAM) {
			size_t k = http_parser_execute(&s->hp, &body_settings, s->in, s->in_len);
			enum http_errno e = HTTP_PARSER_ERRNO(&s->hp);
			if (e != HPE_OK && e != HPE_PAUSED) {
				if (s->st == S_STREAM && !s->bo.spooling) /* values may have gone */
					aj_proxy_stream_notes(s->ctx, s->connect->host,
							      s->connect->port, &s->bo.fill,
							      &s->notes);
				aj_body_out_free(&s->bo);
				aj_body_free(&s->body);
				explicit_bzero(s->req, sizeof(*s->req));
				refuse(s, e == HPE_CB_body ? 500 : 400,
				       e == HPE_CB_body ? "Internal Server Error" : "Bad Request",
				       e == HPE_CB_body ? "out of memory"
							: "malformed request body");
				break;
			}
			memmove(s->in, s->in + k, s->in_len - k);
			s->in_len -= k;
			if (s->st == S_STREAM)
				stream_more(s);
			else if (s->body.unbounded)
				start_stream(s);
			else if (s->message_done)
				send_held(s);
			continue;
		}
		size_t n = s->in_len < sizeof(s->out) ? s->in_len : sizeof(s->out);
		if (s->st == S_BODY) {
			size_t k = http_parser_execute(&s->hp, &body_settings, s->in, n);
			enum http_errno e = HTTP_PARSER_ERRNO(&s->hp);
			if (e != HPE_OK && e != HPE_PAUSED) {
				refuse(s, 400, "Bad Request", "malformed request body");
				break;
			}
			n = k;
			if (n == 0 && !s->message_done)
				break; /* cannot happen: http-parser takes what it is given */
			if (s->message_done) {
				http_parser_pause(&s->hp, 0);
				s->st = S_HEAD;
			}
		}
		memcpy(s->out, s->in, n);
		s->out_len = n;
		s->out_off = 0;
		memmove(s->in, s->in + n, s->in_len - n);
		s->in_len -= n;
	}
	return queued || s->in_len != before || s->closing != was_closing;
}

/* One SSL_read/SSL_write outcome: >0 bytes, 0 would block (*want set),
 * -1 end or error. */
static int io_result(SSL *ssl, int r, short *want)
{
	if (r > 0)
		return r;
	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_WANT_READ: *want |= POLLIN; return 0;
	case SSL_ERROR_WANT_WRITE: *want |= POLLOUT; return 0;
	default: ERR_clear_error(); return -1;
	}
}

/* Do what can be done without waiting; true if anything moved. */
static bool step(session *s)
{
	bool moved = false;
	int r;
	/* server -> client */
	if (s->back_len == 0 && !s->u_eof && !s->closing) {
		r = io_result(s->u, SSL_read(s->u, s->back, sizeof(s->back)), &s->want_u);
		if (r > 0) {
			s->back_len = (size_t)r, s->back_off = 0, moved = true;
			watch_responses(s, s->back, s->back_len);
		} else if (r < 0)
			s->u_eof = true, moved = true;
	}
	if (s->back_len > s->back_off) {
		r = io_result(
		    s->c, SSL_write(s->c, s->back + s->back_off, (int)(s->back_len - s->back_off)),
		    &s->want_c);
		if (r < 0)
			return s->c_eof = s->u_eof = true, s->back_len = 0, true;
		if (r > 0) {
			s->back_off += (size_t)r, moved = true;
			if (s->back_off == s->back_len)
				s->back_len = s->back_off = 0;
		}
	}
	/* client -> server */
	if (s->out_len > s->out_off) {
		r = io_result(s->u,
			      SSL_write(s->u, s->ob + s->out_off, (int)(s->out_len - s->out_off)),
			      &s->want_u);
		if (r < 0)
			return s->u_eof = true, out_done(s), true;
		if (r > 0) {
			s->out_off += (size_t)r, moved = true;
			if (s->out_off == s->out_len)
				out_done(s);
		}
	}
	if (!s->c_eof && !s->closing && s->out_len == 0 && s->in_len < sizeof(s->in)) {
		r = io_result(s->c,
			      SSL_read(s->c, s->in + s->in_len, (int)(sizeof(s->in) - s->in_len)),
			      &s->want_c);
		if (r > 0)
			s->in_len += (size_t)r, moved = true;
		else if (r < 0)
			s->c_eof = true, moved = true;
	}
	if (process(s))
		moved = true;
	if (s->c_eof && s->out_len == 0 && s->st != S_SWITCH && !s->u_shut && !s->u_eof) {
		(void)SSL_shutdown(s->u); /* the client is done: tell the server */
		s->u_shut = true;
		moved = true;
	}
	return moved;
}

static bool finished(const session *s)
{
	if (s->closing)
		return s->back_len == 0;
	return s->u_eof && s->back_len == 0;
}

static void relay(session *s)
{
	int cfd = SSL_get_fd(s->c), ufd = SSL_get_fd(s->u);
	for (;;) {
		s->want_c = s->want_u = 0;
		while (step(s))
			if (finished(s))
				return;
		if (finished(s))
			return;
		struct pollfd pfd[2] = {{.fd = cfd, .events = s->want_c},
					{.fd = ufd, .events = s->want_u}};
		if (!s->want_c)
			pfd[0].fd = -1;
		if (!s->want_u)
			pfd[1].fd = -1;
		if (pfd[0].fd < 0 && pfd[1].fd < 0)
			return;
		int pr = poll(pfd, 2, IDLE_MS);
		if (pr == 0 || (pr < 0 && errno != EINTR))
			return;
	}
}

size_t aj_proxy_tls_frame(aj_netd_ctx *ctx, const aj_proxy_req *connect, const char *in, size_t len,
			  const char *answer, size_t answer_len, char *out, size_t cap)
{
	session *s = calloc(1, sizeof(*s));
	aj_proxy_req *req = calloc(1, sizeof(*req));
	size_t o = 0, i = 0;
	if (!s || !req)
		goto out;
	s->ctx = ctx;
	s->connect = connect;
	s->req = req;
	s->ob = s->out;
	http_parser_init(&s->rp, HTTP_RESPONSE);
	s->rp.data = s;
	bool answered = false;
	while (!s->closing) {
		size_t room = sizeof(s->in) - s->in_len, n = len - i < room ? len - i : room;
		memcpy(s->in + s->in_len, in + i, n);
		s->in_len += n;
		i += n;
		bool took = process(s);
		if (s->out_len) {
			size_t k = s->out_len < cap - o ? s->out_len : cap - o;
			memcpy(out + o, s->ob, k);
			o += k;
			out_done(s);
			took = true;
		}
		if (!took && n == 0) {
			if (answered)
				break; /* waiting for answers that do not come */
			/* what the client sent is out as far as it goes: the
			 * server answers it */
			watch_responses(s, answer, answer_len);
			answered = true;
		}
	}
out:
	if (s) {
		out_done(s);
		aj_body_free(&s->body);
		aj_body_out_free(&s->bo);
	}
	free(s);
	free(req);
	return o;
}

static void set_timeouts(int fd, int ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Non-blocking, and no Nagle: the relay writes what it has at once, and
 * an h2 frame held back for an ACK the peer delays costs 40 ms a request
 * (docs/performance.md). */
static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL), one = 1;
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* A new connection to the address up is connected to (checked when up
 * was made); the fd or -1. */
static int connect_again(int up)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	int fd = -1;
	if (getpeername(up, (struct sockaddr *)&sa, &sl) < 0 ||
	    (fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	set_timeouts(fd, HANDSHAKE_MS);
	if (connect(fd, (struct sockaddr *)&sa, sl) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The TLS session to the server on fd (verified; ALPN h2 and http/1.1,
 * or http/1.1 only) into s->u; 0, or -1 with why. */
static int upstream(session *s, int fd, bool h2, char *why, size_t wl)
{
	const aj_proxy_req *connect = s->connect;
	bool is_ip = connect->host_kind != AJ_HOST_NAME;
	if (!(s->u = aj_tls_connect_new(s->ctx->tls, connect->host, is_ip, h2)) ||
	    SSL_set_fd(s->u, fd) != 1) {
		snprintf(why, wl, "out of memory");
		return -1;
	}
	if (SSL_connect(s->u) == 1)
		return 0;
	long v = SSL_get_verify_result(s->u);
	if (v != X509_V_OK)
		snprintf(why, wl, "the server's certificate is not trusted: %s",
			 X509_verify_cert_error_string(v));
	else
		snprintf(why, wl, "TLS handshake with the server failed");
	ERR_clear_error();
	return -1;
}

void aj_proxy_tls(aj_netd_ctx *ctx, int fd, int up, const aj_proxy_req *connect)
{
	session *s = calloc(1, sizeof(*s));
	aj_proxy_req *req = calloc(1, sizeof(*req));
	if (!s || !req) {
		free(s);
		free(req);
		return;
	}
	s->ctx = ctx;
	s->connect = connect;
	s->req = req;
	s->ob = s->out;
	http_parser_init(&s->rp, HTTP_RESPONSE);
	s->rp.data = s;
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	int up2 = -1; /* a second connection to the server (HTTP/1.1 after all) */
	char why[256], body[512];
	set_timeouts(fd, HANDSHAKE_MS);
	set_timeouts(up, HANDSHAKE_MS);
	/* the server first: one the CA does not vouch for gets no tunnel. It
	 * is offered h2 unless a :body secret belongs to the host (bodies are
	 * filled on the HTTP/1.1 path only) */
	bool h2 = !aj_inject_body_wanted(ctx->p, connect->host);
	if (upstream(s, up, h2, why, sizeof(why)) < 0) {
		log_event(s, "refused", NULL, why);
		snprintf(body, sizeof(body), "agentjail proxy: %s:%u: %s\n", connect->host,
			 connect->port, why);
		aj_proxy_reply(fd, 502, "Bad Gateway", body);
		goto out;
	}
	h2 = aj_tls_is_h2(s->u);
	if (send(fd, ok, sizeof(ok) - 1, MSG_NOSIGNAL) < 0)
		goto out;
	if (!(s->c = aj_tls_accept_new(ctx->tls, connect->host, h2)) || SSL_set_fd(s->c, fd) != 1)
		goto out;
	if (SSL_accept(s->c) != 1) {
		ERR_clear_error();
		log_event(
		    s, "refused", NULL,
		    aj_tls_sni_mismatch(s->c)
			? "the TLS server name does not name the CONNECT target"
			: "TLS handshake with the sandbox failed (does it trust the sandbox's "
			  "CA?)");
		goto out;
	}
	if (h2 && !aj_tls_is_h2(s->c)) {
		/* the server spoke h2, the sandbox does not: HTTP/1.1 to the
		 * same address on a connection of its own */
		(void)SSL_shutdown(s->u);
		SSL_free(s->u);
		s->u = NULL;
		up2 = connect_again(up);
		shutdown(up, SHUT_RDWR); /* the h2 connection is done with */
		if (up2 < 0) {
			log_event(s, "refused", NULL, "the second connection to the server failed");
			goto out;
		}
		if (upstream(s, up2, false, why, sizeof(why)) < 0) {
			log_event(s, "refused", NULL, why);
			goto out;
		}
		up = up2;
	}
	set_timeouts(fd, 0);
	set_timeouts(up, 0);
	set_nonblock(fd);
	set_nonblock(up);
	if (aj_tls_is_h2(s->c)) {
		aj_proxy_h2(ctx, connect, s->c, s->u);
		goto out;
	}
	relay(s);
	if (s->closing && s->back_len == 0) {
		/* refused: let the client read the answer before the close
		 * (unread bytes would make it a reset) */
		(void)SSL_shutdown(s->c);
		shutdown(fd, SHUT_WR);
		char sink[4096];
		struct pollfd p = {.fd = fd, .events = POLLIN};
		for (int i = 0;
		     i < 64 && poll(&p, 1, 1000) == 1 && read(fd, sink, sizeof(sink)) > 0; i++)
			;
	}
out:
	out_done(s);
	aj_body_free(&s->body);
	aj_body_out_free(&s->bo);
	if (s->c)
		SSL_free(s->c);
	if (s->u)
		SSL_free(s->u);
	if (up2 >= 0)
		close(up2);
	explicit_bzero(s, sizeof(*s));
	explicit_bzero(req, sizeof(*req));
	free(s);
	free(req);
}
