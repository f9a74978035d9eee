/* SPDX-License-Identifier: MIT */
/* One HTTP request of the service: its responses (whole, streamed from a
 * worker, or read from a file chunk by chunk), its arguments, who sent it. */
#include "http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "metrics.h"
#include "tenant.h"
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

bool aj_http_token_ok(aj_req *r)
{
	if (!r->remote)
		return true; /* the unix socket: its mode (0600) says who may connect */
	char h[320];
	int n = lws_hdr_copy(r->wsi, h, sizeof(h), WSI_TOKEN_HTTP_AUTHORIZATION);
	if (n <= 7 || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	/* a tenant's (tenant.c: digests, compared in constant time); the
	 * supervisor checks the token again (aj_front_call passes it on) */
	bool ok = aj_tenant_by_token(h + 7, strlen(h + 7)) != NULL;
	if (ok)
		snprintf(r->token, sizeof(r->token), "%s", h + 7);
	explicit_bzero(h, sizeof(h));
	return ok;
}
