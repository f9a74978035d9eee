/* SPDX-License-Identifier: MIT */
/* Scoped secrets at the proxy (inject.h). The sandbox only ever holds a
 * secret's placeholder; here, in netd, a request head toward one of the
 * secret's hosts gets the real value in its place: in any header (or the
 * one header the secret names), inside an "Authorization: Basic"
 * credential (base64 of user:placeholder, decoded and encoded again with
 * OpenSSL) and in the query string (percent-encoded). Toward any other
 * host the placeholder goes out as it is and a note says so. The host is
 * req->host, canonical (aj_host_norm) and already checked against the
 * allow-list and against the Host header by the parser. */
#include "inject.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hostname.h"
#include "util.h"

typedef struct buf {
	char *p;
	size_t len, cap;
} buf;

static int put(buf *b, const char *s, size_t n)
{
	if (b->len + n >= b->cap)
		return -E2BIG;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* b += s (n bytes) with every from replaced by to (tl bytes). */
static int put_replaced(buf *b, const char *s, size_t n, const char *from, const char *to,
			size_t tl)
{
	size_t fl = strlen(from);
	for (;;) {
		const char *hit = memmem(s, n, from, fl);
		size_t k = hit ? (size_t)(hit - s) : n;
		if (put(b, s, k) < 0)
			return -E2BIG;
		if (!hit)
			return 0;
		if (put(b, to, tl) < 0)
			return -E2BIG;
		s = hit + fl;
		n -= k + fl;
	}
}

static bool scoped_to(const aj_secret *s, const char *host)
{
	for (size_t i = 0; i < s->n_hosts; i++)
		if (aj_host_match(s->hosts[i], host))
			return true;
	return false;
}

/* A value that can stand in a header field: no control bytes. */
static bool header_safe(const char *v)
{
	for (const unsigned char *c = (const unsigned char *)v; *c; c++)
		if ((*c < 0x20 && *c != '\t') || *c == 0x7f)
			return false;
	return true;
}

static void note(aj_inject_note *notes, size_t *n, const aj_secret *s, bool injected,
		 const char *where, const char *reason)
{
	if (*n >= AJ_INJECT_NOTES)
		return;
	aj_inject_note *x = &notes[(*n)++];
	x->secret = s->name;
	x->injected = injected;
	snprintf(x->where, sizeof(x->where), "%s", where);
	x->reason = reason;
}

/* Why s's placeholder must not become its value in header name (of a
 * request to host), or NULL: it may. */
static const char *refusal(const aj_secret *s, const char *host, const char *name, bool header)
{
	if (!s->n_hosts)
		return "the secret is not scoped to any host";
	if (!scoped_to(s, host))
		return "the host is not one of the secret's hosts";
	if (s->header && (!header || strcasecmp(s->header, name) != 0))
		return "the secret goes only in its own header";
	if (header && !header_safe(s->value))
		return "the value has control characters: not in a header";
	return NULL;
}

/* value (of header name) with the placeholders of p's secrets replaced
 * where they may be, into out (cap bytes). */
static int fill_value_in(const aj_policy *p, const char *host, const char *name, const char *value,
			 size_t vlen, char *out, size_t cap, char *tmp, aj_inject_note *notes,
			 size_t *nn);

static int fill_value(const aj_policy *p, const char *host, const char *name, const char *value,
		      size_t vlen, char *out, size_t cap, aj_inject_note *notes, size_t *nn)
{
	char *tmp = malloc(cap);
	if (!tmp)
		return -ENOMEM;
	int r = fill_value_in(p, host, name, value, vlen, out, cap, tmp, notes, nn);
	explicit_bzero(tmp, cap); /* it held values */
	free(tmp);
	return r;
}

static int fill_value_in(const aj_policy *p, const char *host, const char *name, const char *value,
			 size_t vlen, char *out, size_t cap, char *tmp, aj_inject_note *notes,
			 size_t *nn)
{
	char where[80];
	snprintf(where, sizeof(where), "header %s", name);
	buf b = {out, 0, cap};
	if (put(&b, value, vlen) < 0)
		return -E2BIG;
	for (size_t i = 0; i < p->n_secrets; i++) {
		const aj_secret *s = &p->secrets[i];
		if (!strstr(out, s->placeholder))
			continue;
		const char *why = refusal(s, host, name, true);
		note(notes, nn, s, !why, where, why);
		if (why)
			continue;
		buf t = {tmp, 0, cap};
		if (put_replaced(&t, out, strlen(out), s->placeholder, s->value, strlen(s->value)) <
		    0)
			return -E2BIG;
		memcpy(out, tmp, t.len + 1);
	}
	/* "Authorization: Basic base64(user:placeholder)" */
	if (strcasecmp(name, "Authorization") != 0 || strncasecmp(out, "Basic ", 6) != 0)
		return 0;
	const char *tok = out + 6;
	size_t tl = strlen(tok);
	if (tl == 0 || tl % 4 || tl > 4096)
		return 0;
	unsigned char dec[3073];
	int dl = EVP_DecodeBlock(dec, (const unsigned char *)tok, (int)tl);
	if (dl < 0)
		return 0;
	dl -= (tok[tl - 1] == '=') + (tl > 1 && tok[tl - 2] == '=');
	dec[dl] = '\0';
	if (memchr(dec, '\0', (size_t)dl))
		return 0;
	bool changed = false;
	snprintf(where, sizeof(where), "header %s (Basic credentials)", name);
	for (size_t i = 0; i < p->n_secrets; i++) {
		const aj_secret *s = &p->secrets[i];
		if (!strstr((char *)dec, s->placeholder))
			continue;
		const char *why = refusal(s, host, name, true);
		note(notes, nn, s, !why, where, why);
		if (why)
			continue;
		buf t = {tmp, 0, sizeof(dec)};
		if (put_replaced(&t, (char *)dec, strlen((char *)dec), s->placeholder, s->value,
				 strlen(s->value)) < 0) {
			explicit_bzero(dec, sizeof(dec));
			return -E2BIG;
		}
		memcpy(dec, tmp, t.len + 1);
		changed = true;
	}
	if (!changed)
		return 0;
	/* fill_value zeroes tmp; dec is on this stack: zeroed below */
	size_t plain = strlen((char *)dec), enc = 4 * ((plain + 2) / 3);
	if (6 + enc + 1 > cap) {
		explicit_bzero(dec, sizeof(dec));
		return -E2BIG;
	}
	EVP_EncodeBlock((unsigned char *)out + 6, dec, (int)plain);
	explicit_bzero(dec, sizeof(dec));
	return 0;
}

/* s's value percent-encoded for a query (RFC 3986 unreserved kept). */
static char *query_encode(const char *v)
{
	char *out = malloc(3 * strlen(v) + 1), *o = out;
	if (!out)
		return NULL;
	for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
		if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || strchr("-._~", *c))
			*o++ = (char)*c;
		else
			o += sprintf(o, "%%%02X", *c);
	}
	*o = '\0';
	return out;
}

static int fill_target(const aj_policy *p, aj_proxy_req *req, aj_inject_note *notes, size_t *nn)
{
	char *q = strchr(req->target, '?');
	for (size_t i = 0; i < p->n_secrets; i++) {
		const aj_secret *s = &p->secrets[i];
		char *hit = strstr(req->target, s->placeholder);
		if (!hit)
			continue;
		if (!q || hit < q) {
			note(notes, nn, s, false, "path",
			     "only headers and the query are filled in");
			if (!q || !strstr(q, s->placeholder))
				continue;
		}
		const char *why = refusal(s, req->host, "", false);
		note(notes, nn, s, !why, "query", why);
		if (why)
			continue;
		char *enc = query_encode(s->value);
		char *out = malloc(sizeof(req->target));
		if (!enc || !out) {
			free(enc);
			free(out);
			return -ENOMEM;
		}
		buf b = {out, 0, sizeof(req->target)};
		int r = put(&b, req->target, (size_t)(q - req->target));
		if (r == 0)
			r = put_replaced(&b, q, strlen(q), s->placeholder, enc, strlen(enc));
		if (r == 0)
			memcpy(req->target, out, b.len + 1);
		explicit_bzero(out, sizeof(req->target));
		explicit_bzero(enc, strlen(enc));
		free(out);
		free(enc);
		if (r < 0)
			return r;
		q = strchr(req->target, '?');
	}
	return 0;
}

int aj_inject(const aj_policy *p, aj_proxy_req *req, aj_inject_note *notes, size_t *n_notes)
{
	*n_notes = 0;
	bool any = false;
	for (size_t i = 0; i < p->n_secrets && !any; i++)
		any = strstr(req->headers, p->secrets[i].placeholder) ||
		      strstr(req->target, p->secrets[i].placeholder) ||
		      strcasestr(req->headers, "Authorization: Basic ");
	if (!any || req->connect)
		return 0;
	char *out = malloc(sizeof(req->headers)), *val = malloc(sizeof(req->headers));
	int r = out && val ? 0 : -ENOMEM;
	buf b = {out, 0, sizeof(req->headers)};
	/* "Name: value\r\n" lines, as the parser kept them */
	for (const char *l = req->headers; r == 0 && *l;) {
		const char *eol = strstr(l, "\r\n"), *colon = strchr(l, ':');
		if (!eol || !colon || colon > eol) {
			r = -EINVAL;
			break;
		}
		char name[128];
		snprintf(name, sizeof(name), "%.*s", (int)(colon - l), l);
		const char *v = colon + 2 <= eol ? colon + 2 : eol;
		r = fill_value(p, req->host, name, v, (size_t)(eol - v), val, sizeof(req->headers),
			       notes, n_notes);
		if (r == 0)
			r = put(&b, l, (size_t)(v - l));
		if (r == 0)
			r = put(&b, val, strlen(val));
		if (r == 0)
			r = put(&b, "\r\n", 2);
		l = eol + 2;
	}
	if (r == 0) {
		memcpy(req->headers, out, b.len + 1);
		r = fill_target(p, req, notes, n_notes);
	}
	if (out)
		explicit_bzero(out, sizeof(req->headers));
	if (val)
		explicit_bzero(val, sizeof(req->headers));
	free(out);
	free(val);
	return r;
}

bool aj_inject_body_wanted(const aj_policy *p, const char *host)
{
	for (size_t i = 0; i < p->n_secrets; i++)
		if (p->secrets[i].body && scoped_to(&p->secrets[i], host))
			return true;
	return false;
}

/* One pass over the body as the client sent it: each placeholder of a
 * :body secret scoped to host becomes its value (never a placeholder made
 * by an earlier replacement). Only placeholders that start before limit
 * are taken, and plain bytes up to it: *used is where the pass stopped
 * (limit, or past it at the end of a placeholder). out NULL: only the
 * filled size. next[i] caches where secret i's placeholder is next found
 * (NULL: nowhere): the walk stays linear in len. */
static size_t fill_body(const aj_policy *p, const char *host, const char *body, size_t len,
			size_t limit, char *out, const char **next, size_t *used)
{
	*used = 0;
	if (!len) /* body may be NULL then: no pointer arithmetic on it */
		return 0;
	const char *c = body, *e = body + len;
	size_t o = 0;
	for (size_t i = 0; i < p->n_secrets; i++)
		next[i] =
		    memmem(body, len, p->secrets[i].placeholder, strlen(p->secrets[i].placeholder));
	for (;;) {
		const char *hit = NULL;
		size_t w = 0;
		for (size_t i = 0; i < p->n_secrets; i++) {
			const aj_secret *s = &p->secrets[i];
			if (!s->body || !scoped_to(s, host) || !next[i])
				continue;
			if (next[i] < c)
				next[i] = memmem(c, (size_t)(e - c), s->placeholder,
						 strlen(s->placeholder));
			if (next[i] && (!hit || next[i] < hit))
				hit = next[i], w = i;
		}
		size_t pos = (size_t)(c - body);
		if (hit && (size_t)(hit - body) >= limit)
			hit = NULL;
		size_t k = hit ? (size_t)(hit - c) : limit > pos ? limit - pos : 0;
		if (out)
			memcpy(out + o, c, k);
		o += k;
		if (!hit) {
			*used = pos + k;
			return o;
		}
		size_t vl = strlen(p->secrets[w].value);
		if (out)
			memcpy(out + o, p->secrets[w].value, vl);
		o += vl;
		c = hit + strlen(p->secrets[w].placeholder);
	}
}

/* Why the placeholder of s, seen in a body to host, stays (NULL: it
 * became the value). */
static const char *body_refusal(const aj_secret *s, const char *host)
{
	return !s->body		     ? "the secret goes into bodies only with :body"
	       : !scoped_to(s, host) ? "the host is not one of the secret's hosts"
				     : NULL;
}

int aj_inject_body(const aj_policy *p, const char *host, const char *body, size_t len, char **out,
		   size_t *out_len, aj_inject_note *notes, size_t *n_notes)
{
	*n_notes = 0;
	const char **next = calloc(p->n_secrets + 1, sizeof(*next));
	if (!next)
		return -ENOMEM;
	size_t used;
	size_t cap = fill_body(p, host, body, len, len, NULL, next, &used);
	if (cap > AJ_INJECT_FILLED_MAX) {
		free(next);
		return -EFBIG;
	}
	char *cur = malloc(cap + 1);
	if (!cur) {
		free(next);
		return -ENOMEM;
	}
	*out_len = fill_body(p, host, body, len, len, cur, next, &used);
	free(next);
	*out = cur;
	/* a note for every secret whose placeholder the client sent */
	for (size_t i = 0; i < p->n_secrets; i++) {
		const aj_secret *s = &p->secrets[i];
		if (!len || !memmem(body, len, s->placeholder, strlen(s->placeholder)))
			continue;
		const char *why = body_refusal(s, host);
		note(notes, n_notes, s, !why, "body", why);
	}
	return 0;
}

int aj_inject_stream_init(aj_body_stream *st, const aj_policy *p, const char *host)
{
	*st = (aj_body_stream){.p = p, .host = host};
	size_t longest = 0;
	for (size_t i = 0; i < p->n_secrets; i++)
		if (strlen(p->secrets[i].placeholder) > longest)
			longest = strlen(p->secrets[i].placeholder);
	st->keep = longest ? longest - 1 : 0;
	st->carry = malloc(st->keep + 1);
	st->seen = calloc(p->n_secrets + 1, sizeof(*st->seen));
	st->next = calloc(p->n_secrets + 1, sizeof(*st->next));
	if (!st->carry || !st->seen || !st->next) {
		aj_inject_stream_free(st);
		return -ENOMEM;
	}
	return 0;
}

int aj_inject_stream(aj_body_stream *st, const char *in, size_t n, bool last, char **out,
		     size_t *out_len)
{
	if (out)
		*out = NULL;
	*out_len = 0;
	size_t len = st->carry_len + n;
	char *w = malloc(len + 1);
	if (!w)
		return -ENOMEM;
	memcpy(w, st->carry, st->carry_len);
	if (n)
		memcpy(w + st->carry_len, in, n);
	/* a placeholder starting before limit ends inside w: the last keep
	 * bytes wait for more (they may begin one) */
	size_t limit = last ? len : len > st->keep ? len - st->keep : 0, used = 0;
	for (size_t i = 0; i < st->p->n_secrets; i++) {
		const aj_secret *s = &st->p->secrets[i];
		st->seen[i] = st->seen[i] || memmem(w, len, s->placeholder, strlen(s->placeholder));
	}
	int r = 0;
	size_t cap = fill_body(st->p, st->host, w, len, limit, NULL, st->next, &used);
	char *o = !out || cap > AJ_INJECT_FILLED_MAX ? NULL : malloc(cap + 1);
	if (!out && cap > AJ_INJECT_FILLED_MAX) /* the filled size only, under the same bound */
		r = -EFBIG;
	else if (!out)
		*out_len = cap;
	else if (!o)
		r = cap > AJ_INJECT_FILLED_MAX ? -EFBIG : -ENOMEM;
	else
		*out_len = fill_body(st->p, st->host, w, len, limit, o, st->next, &used);
	if (r == 0) {
		st->carry_len = len - used;
		memcpy(st->carry, w + used, st->carry_len);
		if (out)
			*out = o;
	}
	explicit_bzero(w, len);
	free(w);
	return r;
}

void aj_inject_stream_notes(aj_body_stream *st, aj_inject_note *notes, size_t *n_notes)
{
	*n_notes = 0;
	for (size_t i = 0; i < st->p->n_secrets; i++) {
		const aj_secret *s = &st->p->secrets[i];
		if (!st->seen[i])
			continue;
		const char *why = body_refusal(s, st->host);
		note(notes, n_notes, s, !why, "body", why);
		st->seen[i] = false;
	}
}

void aj_inject_stream_free(aj_body_stream *st)
{
	if (st->carry)
		explicit_bzero(st->carry, st->keep + 1);
	free(st->carry);
	free(st->seen);
	free(st->next);
	*st = (aj_body_stream){0};
}

int aj_inject_set_chunked(aj_proxy_req *req)
{
	int r = aj_inject_set_length(req, 0);
	if (r < 0)
		return r;
	/* the Content-Length line it added, now the last: chunked instead */
	char *cl = strstr(req->headers, "Content-Length: 0\r\n");
	while (cl && strstr(cl + 1, "Content-Length: 0\r\n"))
		cl = strstr(cl + 1, "Content-Length: 0\r\n");
	static const char te[] = "Transfer-Encoding: chunked\r\n";
	size_t at = (size_t)(cl - req->headers);
	if (!cl || at + sizeof(te) > sizeof(req->headers))
		return -E2BIG;
	memcpy(req->headers + at, te, sizeof(te));
	return 0;
}

int aj_inject_set_length(aj_proxy_req *req, size_t n)
{
	char *out = malloc(sizeof(req->headers));
	if (!out)
		return -ENOMEM;
	buf b = {out, 0, sizeof(req->headers)};
	int r = 0, expect = 0;
	for (const char *l = req->headers; r == 0 && *l;) {
		const char *eol = strstr(l, "\r\n");
		if (!eol)
			break;
		size_t ll = (size_t)(eol - l) + 2;
		if (!strncasecmp(l, "Expect:", 7))
			expect = expect || strcasestr(l, "100-continue") != NULL;
		else if (strncasecmp(l, "Content-Length:", 15) &&
			 strncasecmp(l, "Transfer-Encoding:", 18))
			r = put(&b, l, ll);
		l += ll;
	}
	char cl[48];
	snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", n);
	if (r == 0)
		r = put(&b, cl, strlen(cl));
	if (r == 0)
		memcpy(req->headers, out, b.len + 1);
	explicit_bzero(out, sizeof(req->headers));
	free(out);
	return r < 0 ? r : expect;
}
