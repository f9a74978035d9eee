/* SPDX-License-Identifier: MIT */
/* One connection of the front: the libwebsockets protocol callback of the
 * service, request bodies (bounded, or streamed into a file), writing the
 * responses, and WebSocket exec (ws.c). */
#include "conn.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "front_call.h"
#include "guard.h"
#include "http.h"
#include "metrics.h"
#include "stream.h"
#include "tunnel.h"
#include "util.h"
#include "ws.h"

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

static void aj_http_req_free(aj_req *r)
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
	case LWS_CALLBACK_CLOSED: aj_http_req_free(r); return 0; /* a WebSocket's end */
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
	case LWS_CALLBACK_ESTABLISHED:
	case LWS_CALLBACK_RECEIVE:
	case LWS_CALLBACK_SERVER_WRITEABLE: return aj_ws_callback(wsi, reason, r, in, len);
	default: return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}
