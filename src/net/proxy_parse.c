/* SPDX-License-Identifier: MIT */
/* The head of a request to agentjail's proxy, parsed with http-parser
 * (nodejs/http-parser, Debian's libhttp-parser): CONNECT host:port, an
 * absolute-form "GET http://host[:port]/path", or an origin-form request
 * with a Host header. The caller checks the host against the allow-list. */
#include <errno.h>
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

#include "proxy_parse.h"
#include "util.h"

#define MAX_HEADERS 100

typedef struct span {
	const char *p;
	size_t len;
} span;

typedef struct parse_state {
	span url;
	span field[MAX_HEADERS], value[MAX_HEADERS];
	size_t n;
	bool in_value, too_many, done, folded;
} parse_state;

static int on_url(http_parser *hp, const char *at, size_t len)
{
	parse_state *st = hp->data;
	if (!st->url.p)
		st->url.p = at;
	st->url.len += len;
	return 0;
}

static int on_field(http_parser *hp, const char *at, size_t len)
{
	parse_state *st = hp->data;
	if (st->in_value || st->n == 0) {
		if (st->n >= MAX_HEADERS) {
			st->too_many = true;
			return 1;
		}
		st->field[st->n++] = (span){at, 0};
		st->in_value = false;
	}
	st->field[st->n - 1].len += len;
	return 0;
}

static int on_value(http_parser *hp, const char *at, size_t len)
{
	parse_state *st = hp->data;
	if (st->n == 0)
		return 1;
	if (!st->in_value) {
		st->value[st->n - 1] = (span){at, 0};
		st->in_value = true;
	} else if (at != st->value[st->n - 1].p + st->value[st->n - 1].len) {
		/* obsolete line folding: the pieces aren't one span; refused
		 * rather than rebuilt (RFC 9112 5.2 lets a proxy reject it) */
		st->folded = true;
		return 1;
	}
	if (memchr(at, '\r', len) || memchr(at, '\n', len)) {
		st->folded = true;
		return 1;
	}
	st->value[st->n - 1].len += len;
	return 0;
}

static int on_headers_complete(http_parser *hp)
{
	parse_state *st = hp->data;
	st->done = true;
	http_parser_pause(hp, 1);
	return 0;
}

static bool span_is(span s, const char *name)
{
	return s.len == strlen(name) && strncasecmp(s.p, name, s.len) == 0;
}

static int refuse(aj_proxy_req *req, const char *why)
{
	req->error = why;
	return -EINVAL;
}

static int copy_span(char *dst, size_t max, const char *p, size_t len)
{
	if (len >= max)
		return -E2BIG;
	memcpy(dst, p, len);
	dst[len] = '\0';
	return 0;
}

/* req->host and req->host_kind: the canonical form of len bytes at p */
static int set_host(aj_proxy_req *req, const char *p, size_t len)
{
	aj_host h;
	if (aj_host_norm(p, len, &h, &req->error) < 0)
		return -EINVAL;
	snprintf(req->host, sizeof(req->host), "%s", h.text);
	req->host_kind = h.kind;
	return 0;
}

/* "host[:port]" or "[v6]:port" of an authority (CONNECT target, Host
 * header): no userinfo, a port of digits 1..65535, else dflt (0: needed). */
static int split_authority(aj_proxy_req *req, span a, unsigned dflt)
{
	while (a.len && (a.p[a.len - 1] == ' ' || a.p[a.len - 1] == '\t'))
		a.len--;
	if (a.len == 0)
		return refuse(req, "empty host");
	for (size_t i = 0; i < a.len; i++)
		if ((unsigned char)a.p[i] <= 0x20 || (unsigned char)a.p[i] >= 0x7f)
			return refuse(req, "control or non-ASCII bytes in the host");
	if (memchr(a.p, '@', a.len))
		return refuse(req, "user information in the host");
	const char *end = a.p + a.len, *host = a.p, *hend, *port = NULL;
	if (a.p[0] == '[') {
		const char *rb = memchr(a.p, ']', a.len);
		if (!rb)
			return refuse(req, "malformed host");
		host = a.p + 1;
		hend = rb;
		if (rb + 1 < end) {
			if (rb[1] != ':')
				return refuse(req, "malformed host");
			port = rb + 2;
		}
	} else {
		const char *colon = memchr(a.p, ':', a.len);
		hend = colon ? colon : end;
		port = colon ? colon + 1 : NULL;
	}
	if (hend == host)
		return refuse(req, "malformed host");
	if (set_host(req, host, (size_t)(hend - host)) < 0)
		return -EINVAL;
	req->port = dflt;
	if (port) {
		size_t plen = (size_t)(end - port);
		unsigned v = 0;
		if (plen == 0 || plen > 5)
			return refuse(req, "malformed port");
		for (size_t i = 0; i < plen; i++) {
			if (port[i] < '0' || port[i] > '9')
				return refuse(req, "malformed port");
			v = v * 10 + (unsigned)(port[i] - '0');
		}
		if (v == 0 || v > 65535)
			return refuse(req, "malformed port");
		req->port = v;
		req->port_given = true;
	}
	return req->port ? 0 : refuse(req, "CONNECT needs host:port");
}

/* Does the Host header name req's host and port, both normalised? */
static bool same_authority(const aj_proxy_req *req, span host_hdr, unsigned dflt)
{
	aj_proxy_req *h = calloc(1, sizeof(*h));
	bool same = h && split_authority(h, host_hdr, dflt) == 0 &&
		    strcmp(h->host, req->host) == 0 && h->port == req->port;
	free(h);
	return same;
}

/* The connection options of every Connection header (RFC 9110 7.6.1):
 * comma-separated tokens, spaces around them dropped. */
typedef struct options {
	span opt[32];
	size_t n;
} options;

static int connection_options(const parse_state *st, options *o, aj_proxy_req *req)
{
	o->n = 0;
	for (size_t i = 0; i < st->n; i++) {
		if (!span_is(st->field[i], "Connection"))
			continue;
		const char *p = st->value[i].p, *e = p + st->value[i].len;
		while (p < e) {
			const char *c = memchr(p, ',', (size_t)(e - p)), *end = c ? c : e;
			span t = {p, (size_t)(end - p)};
			while (t.len && (t.p[0] == ' ' || t.p[0] == '\t'))
				t.p++, t.len--;
			while (t.len && (t.p[t.len - 1] == ' ' || t.p[t.len - 1] == '\t'))
				t.len--;
			p = c ? c + 1 : e;
			if (!t.len)
				continue;
			/* a framing header dropped on the way would make the
			 * server read the body as another request, unchecked */
			if (span_is(t, "Content-Length") || span_is(t, "Transfer-Encoding") ||
			    span_is(t, "Host"))
				return refuse(req, "the Connection header names Content-Length, "
						   "Transfer-Encoding or Host");
			if (o->n == AJ_ARRAY_SIZE(o->opt))
				return refuse(req, "too many Connection options");
			o->opt[o->n++] = t;
		}
	}
	return 0;
}

static bool has_option(const options *o, const char *name)
{
	for (size_t i = 0; i < o->n; i++)
		if (span_is(o->opt[i], name))
			return true;
	return false;
}

/* Is field hop-by-hop: the standard set (RFC 9110 7.6.1; the proxy's own
 * Proxy-Authorization), or named by a connection option? Upgrade stays
 * on a protocol switch (its Connection is rebuilt with "upgrade"); TE
 * only when named ("te: trailers" is h2's and gRPC's; proxy_h2.c parses
 * here too), Transfer-Encoding never: it frames the body relayed. */
static bool hop_by_hop(span field, const options *o, bool upgrade)
{
	static const char *const std[] = {"Connection", "Proxy-Connection", "Keep-Alive",
					  "Proxy-Authorization"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(std); i++)
		if (span_is(field, std[i]))
			return true;
	if (span_is(field, "Upgrade"))
		return !upgrade;
	for (size_t i = 0; i < o->n; i++)
		if (field.len == o->opt[i].len && !strncasecmp(field.p, o->opt[i].p, field.len))
			return true;
	return false;
}

int aj_proxy_parse(const char *buf, size_t len, aj_proxy_req *req)
{
	memset(req, 0, sizeof(*req));
	static const http_parser_settings settings = {
	    .on_url = on_url,
	    .on_header_field = on_field,
	    .on_header_value = on_value,
	    .on_headers_complete = on_headers_complete,
	};
	parse_state st = {0};
	http_parser hp;
	http_parser_init(&hp, HTTP_REQUEST);
	hp.data = &st;
	(void)http_parser_execute(&hp, &settings, buf, len);
	enum http_errno e = HTTP_PARSER_ERRNO(&hp);
	if (st.too_many)
		return refuse(req, "too many headers");
	if (st.folded)
		return refuse(req, "folded header lines");
	if ((e != HPE_OK && e != HPE_PAUSED) || !st.done || !st.url.p)
		return refuse(req, "malformed request");
	req->connect = hp.method == HTTP_CONNECT;
	req->has_body =
	    (hp.flags & F_CHUNKED) || (hp.content_length != 0 && hp.content_length != ULLONG_MAX);
	req->http_major = hp.http_major;
	req->http_minor = hp.http_minor;
	snprintf(req->method, sizeof(req->method), "%s", http_method_str(hp.method));
	span host_hdr = {0};
	size_t o = 0;
	bool upgrade_hdr = false;
	options opts;
	if (connection_options(&st, &opts, req) < 0)
		return -EINVAL;
	for (size_t i = 0; i < st.n; i++)
		upgrade_hdr = upgrade_hdr || span_is(st.field[i], "Upgrade");
	/* a protocol switch (WebSocket): the Connection header names it */
	req->upgrade = upgrade_hdr && has_option(&opts, "upgrade");
	/* what the proxy passes on of Connection: its own options only */
	snprintf(req->connection, sizeof(req->connection), "%s%s%s",
		 has_option(&opts, "close")	   ? "close"
		 : has_option(&opts, "keep-alive") ? "keep-alive"
						   : "",
		 req->upgrade && (has_option(&opts, "close") || has_option(&opts, "keep-alive"))
		     ? ", "
		     : "",
		 req->upgrade ? "Upgrade" : "");
	for (size_t i = 0; i < st.n; i++) {
		if (span_is(st.field[i], "Expect") && st.value[i].len >= 12 &&
		    !strncasecmp(st.value[i].p, "100-continue", 12))
			req->expect_continue = true;
		if (span_is(st.field[i], "Host")) {
			if (host_hdr.p)
				return refuse(req, "two Host headers");
			host_hdr = st.value[i];
			req->has_host = true;
		}
		/* hop-by-hop and proxy headers stay here (RFC 9110 7.6.1),
		 * and those the client's Connection names */
		if (hop_by_hop(st.field[i], &opts, req->upgrade))
			continue;
		int n = snprintf(req->headers + o, sizeof(req->headers) - o, "%.*s: %.*s\r\n",
				 (int)st.field[i].len, st.field[i].p, (int)st.value[i].len,
				 st.value[i].p);
		if (n < 0 || (size_t)n >= sizeof(req->headers) - o)
			return refuse(req, "headers too large");
		o += (size_t)n;
	}
	if (req->connect) {
		if (split_authority(req, st.url, 0) < 0)
			return -EINVAL;
		/* a Host header on CONNECT names the same authority */
		if (host_hdr.p && !same_authority(req, host_hdr, req->port))
			return refuse(req, "the Host header does not match the CONNECT target");
		return 0;
	}
	if (st.url.p[0] == '/') { /* origin-form: the Host header names the server */
		if (!host_hdr.p)
			return refuse(req, "no Host header");
		if (copy_span(req->target, sizeof(req->target), st.url.p, st.url.len) < 0)
			return refuse(req, "the URL is too long");
		return split_authority(req, host_hdr, 80);
	}
	struct http_parser_url u;
	http_parser_url_init(&u);
	if (http_parser_parse_url(st.url.p, st.url.len, 0, &u) != 0 ||
	    !(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST)))
		return refuse(req, "malformed URL");
	span schema = {st.url.p + u.field_data[UF_SCHEMA].off, u.field_data[UF_SCHEMA].len};
	if (!span_is(schema, "http"))
		return refuse(req, "only http:// URLs (use CONNECT for https)");
	if (u.field_set & (1 << UF_USERINFO))
		return refuse(req, "user information in the URL");
	if (set_host(req, st.url.p + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len) < 0)
		return -EINVAL;
	req->port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
	if (!req->port)
		return refuse(req, "port 0");
	/* origin-form target: path and query of the URL */
	const char *path =
	    u.field_set & (1 << UF_PATH) ? st.url.p + u.field_data[UF_PATH].off : "/";
	size_t plen = u.field_set & (1 << UF_PATH) ? u.field_data[UF_PATH].len : 1;
	size_t qlen = u.field_set & (1 << UF_QUERY) ? u.field_data[UF_QUERY].len + 1u : 0;
	if (plen + qlen >= sizeof(req->target))
		return refuse(req, "the URL is too long");
	memcpy(req->target, path, plen);
	if (qlen)
		memcpy(req->target + plen, st.url.p + u.field_data[UF_QUERY].off - 1, qlen);
	req->target[plen + qlen] = '\0';
	/* a Host header naming another server would reach it on this
	 * address (a shared front end): it must be the URL's host */
	if (host_hdr.p && !same_authority(req, host_hdr, req->port))
		return refuse(req, "the Host header does not match the URL");
	return 0;
}
