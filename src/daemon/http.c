/* SPDX-License-Identifier: MIT */
/* The HTTP side of the service: the libwebsockets protocol callback, request
 * bodies (bounded, or streamed into a file), and responses (whole, streamed
 * from a worker, or read from a file chunk by chunk). */
#include "http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tunnel.h"
#include "util.h"

void aj_http_json(aj_req *r, int status, json_t *o)
{
	free(r->resp);
	r->resp = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!r->resp)
		r->resp = strdup("{}");
	r->resp_len = r->resp ? strlen(r->resp) : 0;
	/* a newline ends the body, so that shells show it nicely */
	char *nl = r->resp ? realloc(r->resp, r->resp_len + 2) : NULL;
	if (nl) {
		r->resp = nl;
		r->resp[r->resp_len++] = '\n';
		r->resp[r->resp_len] = '\0';
	}
	r->resp_off = 0;
	r->status = status;
	r->ctype = "application/json";
	if (status >= 400)
		aj_metrics_add(&aj_stats.errors, 1);
	lws_callback_on_writable(r->wsi);
}

void aj_http_error(aj_req *r, int status, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	aj_http_json(r, status, json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
}

void aj_http_fail(aj_req *r, int status, const char *code, const aj_error *err)
{
	char msg[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
	aj_err_format(err, msg, sizeof(msg));
	aj_http_error(r, status, code, "%s", msg);
}

void aj_http_stream(aj_req *r, int status, const char *ctype)
{
	r->status = status;
	r->ctype = ctype;
	r->stream = true;
	r->chunked = aj_http_chunked(r);
	lws_callback_on_writable(r->wsi);
}

const char *aj_http_arg(aj_req *r, const char *name, char *buf, size_t len)
{
	char key[64];
	snprintf(key, sizeof(key), "%s=", name);
	const char *v = lws_get_urlarg_by_name(r->wsi, key, buf, (int)len);
	if (!v)
		return NULL;
	memmove(buf, v, strlen(v) + 1); /* the value, at the start of buf */
	return buf;
}

bool aj_http_chunked(aj_req *r)
{
	char v[16];
	/* HTTP/1.1 (chunks); an HTTP/1.0 client reads to the connection's end */
	return lws_hdr_copy(r->wsi, v, sizeof(v), WSI_TOKEN_HTTP) > 0 && strcmp(v, "HTTP/1.0") != 0;
}

/* A stream in chunks has no length, yet its connection stays: lws's common
 * headers would say "connection: close". */
static int chunked_headers(aj_req *r, unsigned char **p, unsigned char *end)
{
	struct lws *w = r->wsi;
	return lws_add_http_header_status(w, (unsigned)r->status, p, end) ||
	       lws_add_http_header_by_token(w, WSI_TOKEN_HTTP_CONTENT_TYPE,
					    (const unsigned char *)r->ctype, (int)strlen(r->ctype),
					    p, end) ||
	       lws_add_http_header_by_token(w, WSI_TOKEN_HTTP_TRANSFER_ENCODING,
					    (const unsigned char *)"chunked", 7, p, end);
}

int aj_http_head(aj_req *r, unsigned char **p, unsigned char *end)
{
	unsigned char *start = *p;
	lws_filepos_t len = r->resp	    ? (lws_filepos_t)r->resp_len
			    : r->dl_fd >= 0 ? (lws_filepos_t)r->dl_left
					    : LWS_ILLEGAL_HTTP_CONTENT_LEN;
	int e = r->stream && r->chunked ? chunked_headers(r, p, end)
					: lws_add_http_common_headers(r->wsi, (unsigned)r->status,
								      r->ctype, len, p, end);
	if (!e && r->status == 401)
		e = lws_add_http_header_by_name(r->wsi, (const unsigned char *)"www-authenticate:",
						(const unsigned char *)"Bearer", 6, p, end);
	if (!e && r->allow)
		e = lws_add_http_header_by_name(
		    r->wsi, (const unsigned char *)"allow:", (const unsigned char *)r->allow,
		    (int)strlen(r->allow), p, end);
	if (!e)
		e = lws_add_http_header_by_name(r->wsi, (const unsigned char *)"cache-control:",
						(const unsigned char *)"no-store", 8, p, end) ||
		    lws_finalize_http_header(r->wsi, p, end);
	if (e) {
		*p = start;
		return -1;
	}
	r->headers_sent = true;
	return 0;
}

/* The response is all written: the connection takes its next request.
 * At once, in the callback that wrote the end: lws parses what the client
 * sent meanwhile only after this, and a next request that came before it
 * (pipelined, or sent right after the answer) made lws 4.1 loop on
 * HTTP_BODY_COMPLETION at 100% CPU (tests/service/api.bats). */
static int complete(aj_req *r)
{
	if (r->job) /* its command has ended (its exit event was the last) */
		aj_exec_detach(r);
	r->status = 0; /* a stray writable finds nothing to do */
	return lws_http_transaction_completed(r->wsi) ? -1 : 0;
}

/* One writable callback: a piece of the body, after the headers in the
 * same write the first time (one send, one wake-up of the client). A
 * stream sends its headers with its first bytes (stream.c). Returns -1 to
 * close the connection. */
static int on_writable(aj_req *r)
{
	unsigned char buf[LWS_PRE + AJ_HTTP_HEAD_MAX + AJ_HTTP_CHUNK];
	if (!r->status)
		return 0;
	if (r->job) {
		int k = aj_exec_writable(r);
		return k > 0 ? complete(r) : k;
	}
	unsigned char *start = buf + LWS_PRE, *p = start;
	if (!r->headers_sent && aj_http_head(r, &p, start + AJ_HTTP_HEAD_MAX) < 0)
		return -1;
	size_t n = 0;
	bool fin = true; /* the body is all written with this */
	if (r->resp) {
		n = r->resp_len - r->resp_off;
		if (n > AJ_HTTP_CHUNK)
			n = AJ_HTTP_CHUNK;
		memcpy(p, r->resp + r->resp_off, n);
		r->resp_off += n;
		fin = r->resp_off == r->resp_len;
	} else if (r->dl_fd >= 0 && r->dl_left) { /* (an empty file: the headers only) */
		ssize_t k = read(r->dl_fd, p,
				 r->dl_left < AJ_HTTP_CHUNK ? (size_t)r->dl_left : AJ_HTTP_CHUNK);
		if (k <= 0)
			return -1; /* the file shrank: the client sees a short body */
		n = (size_t)k;
		r->dl_left -= n;
		aj_metrics_add(&aj_stats.bytes_out, n);
		fin = r->dl_left == 0;
	}
	size_t len = (size_t)(p - start) + n;
	if (len &&
	    lws_write(r->wsi, start, len, fin ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) < (int)len)
		return -1;
	if (fin)
		return complete(r);
	lws_callback_on_writable(r->wsi);
	return 0;
}

void aj_http_req_free(aj_req *r)
{
	if (!r->wsi)
		return; /* never started */
	if (r->call)
		aj_front_cancel(r);
	if (r->job)
		aj_exec_detach(r);
	if (r->upload_fd >= 0)
		close(r->upload_fd);
	if (r->dl_fd >= 0)
		close(r->dl_fd);
	r->upload_fd = r->dl_fd = -1;
	free(r->body);
	free(r->resp);
	r->body = r->resp = NULL;
}

void aj_http_peer(aj_req *r)
{
	int fd = lws_get_socket_fd(r->wsi);
	struct ucred cr;
	socklen_t l = sizeof(cr);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	r->remote = getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family != AF_UNIX;
	if (!r->remote && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) == 0)
		snprintf(r->peer, sizeof(r->peer), "uid:%u", (unsigned)cr.uid);
	else
		lws_get_peer_simple(r->wsi, r->peer, sizeof(r->peer));
}

static bool has_body(aj_req *r)
{
	char cl[32];
	return lws_hdr_copy(r->wsi, cl, sizeof(cl), WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0 &&
	       strtoull(cl, NULL, 10) > 0;
}

/* A new request: method, path, who; auth; bodies. */
static int on_http(aj_req *r, struct lws *wsi, const char *uri)
{
	aj_http_req_free(r); /* the previous request on this connection */
	memset(r, 0, sizeof(*r));
	r->wsi = wsi;
	r->upload_fd = r->dl_fd = -1;
	char *u;
	int ul;
	static const int map[] = {[LWSHUMETH_GET] = AJ_GET,	  [LWSHUMETH_POST] = AJ_POST,
				  [LWSHUMETH_PUT] = AJ_PUT,	  [LWSHUMETH_PATCH] = AJ_PATCH,
				  [LWSHUMETH_DELETE] = AJ_DELETE, [LWSHUMETH_OPTIONS] = AJ_OTHER};
	int m = lws_http_get_uri_and_method(wsi, &u, &ul);
	r->method =
	    m >= 0 && m < (int)AJ_ARRAY_SIZE(map) && m <= LWSHUMETH_DELETE ? map[m] : AJ_OTHER;
	snprintf(r->path, sizeof(r->path), "%s", uri ? uri : "");
	aj_http_peer(r);
	aj_metrics_add(&aj_stats.requests, 1);
	/* the probes answer without a token (Kubernetes, load balancers): a
	 * state, nothing else (sup_api.c) */
	bool probe =
	    r->method == AJ_GET && (!strcmp(r->path, "/healthz") || !strcmp(r->path, "/readyz"));
	if (!probe && !aj_http_token_ok(r)) {
		r->dispatched = true; /* nothing is done for it, and the connection goes */
		return aj_guard_refuse(wsi);
	}
	char te[32];
	if (lws_hdr_copy(wsi, te, sizeof(te), WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0) {
		r->dispatched = true;
		aj_http_error(r, 411, "length_required",
			      "request bodies need a Content-Length (no chunked encoding)");
		return 0;
	}
	if (!has_body(r)) {
		r->dispatched = true;
		if (aj_tunnel_route(r->path)) /* the ports proxy (tunnel.c) */
			return aj_tunnel_http(r);
		aj_api_dispatch(r);
		return 0;
	}
	if (r->method == AJ_PUT && !aj_tunnel_route(r->path))
		aj_api_begin_upload(r); /* on error a response is set; the body is dropped */
	return 0;
}

static void on_body(aj_req *r, const void *in, size_t len)
{
	if (r->status) /* answered already (error): drop the body */
		return;
	if (r->upload) {
		(void)aj_api_upload_data(r, in, len); /* an error is answered */
		return;
	}
	if (r->body_len + len > AJ_HTTP_MAX_BODY) {
		r->body_too_big = true;
		return;
	}
	char *b = realloc(r->body, r->body_len + len + 1);
	if (!b) {
		r->body_too_big = true;
		return;
	}
	r->body = b;
	memcpy(r->body + r->body_len, in, len);
	r->body_len += len;
	r->body[r->body_len] = '\0';
}

/* The body is all here: the request goes to the API. Returns -1 to close. */
static int on_body_done(aj_req *r)
{
	/* lws 4.1 comes here again and again, at 100% CPU, when a request is
	 * pipelined behind one with a body (it came before the answer): a
	 * second completion of one request closes the connection, unanswered
	 * (pipelining is not supported: docs/api.md; tests/service/api.bats) */
	if (r->completions++)
		return -1;
	if (r->dispatched) /* answered before its body came (401, 411) */
		return 0;
	r->dispatched = true;
	if (r->status) {
		lws_callback_on_writable(r->wsi);
		return 0;
	}
	if (r->body_too_big) {
		aj_http_error(r, 413, "body_too_large", "request bodies are limited to %u bytes",
			      AJ_HTTP_MAX_BODY);
		return 0;
	}
	if (r->upload) {
		aj_api_upload_done(r);
		return 0;
	}
	if (aj_tunnel_route(r->path))
		return aj_tunnel_http(r);
	aj_api_dispatch(r);
	return 0;
}

int aj_http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		     size_t len);
int aj_http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		     size_t len)
{
	aj_req *r = user;
	switch (reason) {
	case LWS_CALLBACK_FILTER_NETWORK_CONNECTION: return aj_guard_filter((int)(intptr_t)in);
	case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED: aj_guard_accepted(wsi); return 0;
	case LWS_CALLBACK_FILTER_HTTP_CONNECTION: aj_guard_headers_done(wsi); return 0;
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		aj_guard_headers_done(wsi);
		return aj_guard_upgrade(wsi) ? -1 : aj_tunnel_upgrade(wsi, in);
	case LWS_CALLBACK_TIMER: return aj_guard_timer(wsi);
	case LWS_CALLBACK_WSI_DESTROY: aj_guard_destroyed(wsi); return 0;
	case LWS_CALLBACK_HTTP: return on_http(r, wsi, in);
	case LWS_CALLBACK_HTTP_BODY: on_body(r, in, len); return 0;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION: return on_body_done(r);
	case LWS_CALLBACK_HTTP_WRITEABLE: return r ? on_writable(r) : 0;
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
	case LWS_CALLBACK_CLOSED_HTTP:
		if (r)
			aj_http_req_free(r);
		return 0;
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
	case LWS_CALLBACK_ESTABLISHED:
	case LWS_CALLBACK_RECEIVE:
	case LWS_CALLBACK_SERVER_WRITEABLE:
	case LWS_CALLBACK_CLOSED: return aj_ws_callback(wsi, reason, r, in, len);
	default: return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}
