/* SPDX-License-Identifier: MIT */
#include "credmask.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>

#define PH AJ_CRED_PLACEHOLDER
/* base64("agentjail-masked:agentjail-masked"): a docker "auth" that decodes */
#define PH_AUTH_B64 "YWdlbnRqYWlsLW1hc2tlZDphZ2VudGphaWwtbWFza2Vk"

typedef struct {
	char *p;
	size_t n, cap;
	bool oom;
} buf;

static void put(buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = (b->n + n + 1) * 2 + 64;
		char *q = realloc(b->p, cap);
		if (!q) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void puts_(buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static char *done(buf *b, bool ok)
{
	if (ok && !b->oom && !b->p)
		put(b, "", 0);
	if (!ok || b->oom) {
		free(b->p);
		return NULL;
	}
	return b->p;
}

static bool url_delim(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '"' || c == '\'' ||
	       c == '<' || c == '>' || c == '\0';
}

/* s[0..n) with the user info of every URL ("//user:pass@", "//token@")
 * replaced: the password part by the placeholder, a user info without a
 * password (a token used as the user name) whole. The user info runs to
 * the last '@' before the URL ends, so a raw '/' or '@' in a password
 * cannot cut it short. */
static void put_urls(buf *b, const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		const char *sl = i + 1 < n ? memmem(s + i, n - i, "//", 2) : NULL;
		if (!sl) {
			put(b, s + i, n - i);
			return;
		}
		size_t start = (size_t)(sl - s) + 2, end = start, at = 0;
		while (end < n && !url_delim(s[end])) {
			if (s[end] == '@')
				at = end;
			end++;
		}
		put(b, s + i, start - i);
		if (!at) {
			i = start;
			continue;
		}
		const char *colon = memchr(s + start, ':', at - start);
		if (colon) {
			put(b, s + start, (size_t)(colon - (s + start)) + 1);
		}
		puts_(b, PH);
		i = at;
	}
}

/* A key naming a secret (case-insensitive, after the last ':' of a scoped
 * npm key such as //registry.example/:_authToken). */
static bool secret_key(const char *k, size_t n)
{
	static const char *const keys[] = {"_authtoken",   "_auth",  "_password", "password",
					   "passwd",	   "token",  "authtoken", "npmauthtoken",
					   "npmauthident", "secret", "api_key",	  "apikey"};
	while (n && (*k == '"' || *k == '\'')) /* quoted keys */
		k++, n--;
	while (n && (k[n - 1] == '"' || k[n - 1] == '\''))
		n--;
	const char *c = memrchr(k, ':', n);
	if (c) {
		n -= (size_t)(c + 1 - k);
		k = c + 1;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i]) == n && strncasecmp(keys[i], k, n) == 0)
			return true;
	return false;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* .npmrc (npm's ini: key=value, no continuation lines) and configparser
 * files (.pypirc, pip.conf: '=' or ':', indented continuation lines).
 * Comments are dropped (a commented-out token is still a token); a line
 * that is no section, comment or key=value makes the file masked whole. */
static char *mask_ini(const char *text, bool configparser)
{
	buf b = {0};
	bool drop = false; /* continuation lines of a secret's value */
	bool have_key = false;
	for (const char *line = text; *line;) {
		const char *nl = strchrnul(line, '\n');
		size_t len = (size_t)(nl - line);
		const char *s = line, *e = nl;
		while (s < e && blank(*s))
			s++;
		while (e > s && blank(e[-1]))
			e--;
		bool indented = s > line;
		if (s == e) {
			put(&b, "\n", 1);
		} else if (*s == '#' || *s == ';') {
			/* dropped */
		} else if (configparser && indented && have_key) {
			if (!drop) {
				put_urls(&b, line, len);
				put(&b, "\n", 1);
			}
		} else if (*s == '[') {
			if (e[-1] != ']')
				return done(&b, false);
			drop = false;
			have_key = false;
			put_urls(&b, s, (size_t)(e - s));
			put(&b, "\n", 1);
		} else {
			const char *d = s;
			while (d < e && *d != '=' && !(configparser && *d == ':'))
				d++;
			if (d == e || d == s)
				return done(&b, false);
			const char *ke = d;
			while (ke > s && blank(ke[-1]))
				ke--;
			have_key = true;
			drop = secret_key(s, (size_t)(ke - s));
			if (drop) {
				put_urls(&b, s, (size_t)(d - s) + 1);
				puts_(&b, PH);
			} else {
				put_urls(&b, s, (size_t)(e - s));
			}
			put(&b, "\n", 1);
		}
		line = *nl ? nl + 1 : nl;
	}
	return done(&b, true);
}

/* One .netrc token: plain, or "quoted" with backslash escapes; '#' at the
 * start of a token comments out the rest of the line. Returns its length
 * (0: none left), the token's bytes at *tok (escapes not undone). */
static size_t netrc_token(const char **pos, const char **tok, bool *quoted)
{
	const char *s = *pos;
	for (;;) {
		while (*s && isspace((unsigned char)*s))
			s++;
		if (*s != '#')
			break;
		s = strchrnul(s, '\n');
	}
	*quoted = *s == '"';
	if (*quoted) {
		const char *q = ++s;
		while (*q && *q != '"')
			q += q[0] == '\\' && q[1] ? 2 : 1;
		*tok = s;
		/* unterminated: *pos stays on the quote, the caller sees it */
		*pos = *q ? q + 1 : s - 1;
		return *q ? (size_t)(q - s) + (q == s) : 0;
	}
	const char *q = s;
	while (*q && !isspace((unsigned char)*q))
		q++;
	*tok = s;
	*pos = q;
	return (size_t)(q - s);
}

/* .netrc, rewritten one entry a line: machine names kept; login, password
 * and account values replaced (a login can be the token itself, as in
 * GitHub's "login TOKEN password x-oauth-basic"); macdef bodies dropped. */
static char *mask_netrc(const char *text)
{
	buf b = {0};
	const char *pos = text, *t;
	bool q, entry = false;
	size_t n;
	while ((n = netrc_token(&pos, &t, &q))) {
		if (!q && n == 7 && !strncmp(t, "machine", 7)) {
			const char *h;
			size_t hn = netrc_token(&pos, &h, &q);
			if (!hn || q)
				return done(&b, false);
			for (size_t i = 0; i < hn; i++)
				if (h[i] == '"' || h[i] == '\\' || h[i] == '#')
					return done(&b, false);
			puts_(&b, entry ? "\nmachine " : "machine ");
			put_urls(&b, h, hn);
			entry = true;
		} else if (!q && n == 7 && !strncmp(t, "default", 7)) {
			puts_(&b, entry ? "\ndefault" : "default");
			entry = true;
		} else if (!q && ((n == 5 && !strncmp(t, "login", 5)) ||
				  (n == 8 && !strncmp(t, "password", 8)) ||
				  (n == 7 && !strncmp(t, "account", 7)))) {
			const char *v;
			if (!entry || !netrc_token(&pos, &v, &q))
				return done(&b, false);
			put(&b, " ", 1);
			put(&b, t, n);
			puts_(&b, " " PH);
		} else if (!q && n == 6 && !strncmp(t, "macdef", 6)) {
			const char *v;
			if (!netrc_token(&pos, &v, &q))
				return done(&b, false);
			/* the body runs from the next line to an empty line */
			const char *end = strstr(pos, "\n\n");
			pos = end ? end + 2 : pos + strlen(pos);
		} else {
			return done(&b, false);
		}
	}
	if (*pos) /* an unterminated quote */
		return done(&b, false);
	if (entry)
		put(&b, "\n", 1);
	return done(&b, true);
}

/* .git-credentials: one URL a line, no spaces. */
static char *mask_gitcred(const char *text)
{
	buf b = {0};
	for (const char *line = text; *line;) {
		const char *nl = strchrnul(line, '\n');
		const char *s = line, *e = nl;
		while (s < e && blank(*s))
			s++;
		while (e > s && blank(e[-1]))
			e--;
		if (s < e) {
			const char *sep = memmem(s, (size_t)(e - s), "://", 3);
			if (!sep || sep == s)
				return done(&b, false);
			for (const char *c = s; c < e; c++)
				if (url_delim(*c))
					return done(&b, false);
			put_urls(&b, s, (size_t)(e - s));
		}
		put(&b, "\n", 1);
		line = *nl ? nl + 1 : nl;
	}
	return done(&b, true);
}

static json_t *json_mask(json_t *v);

static json_t *json_str_mask(const char *s, size_t n)
{
	buf b = {0};
	put_urls(&b, s, n);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	json_t *r = json_stringn(b.p ? b.p : "", b.n);
	free(b.p);
	return r;
}

static json_t *json_obj_mask(json_t *v)
{
	json_t *o = json_object();
	const char *k;
	size_t kl;
	json_t *e;
	void *tmp;
	json_object_keylen_foreach_safe(v, tmp, k, kl, e)
	{
		buf kb = {0};
		put_urls(&kb, k, kl);
		json_t *m = NULL;
		if (!kb.oom && secret_key(k, kl))
			m = json_string(kl == 4 && !strncasecmp(k, "auth", 4) ? PH_AUTH_B64 : PH);
		else if (!kb.oom && kl == 4 && !strncasecmp(k, "auth", 4))
			m = json_string(PH_AUTH_B64);
		else if (!kb.oom && kl == 13 && !strncasecmp(k, "identitytoken", 13))
			m = json_string(PH);
		else if (!kb.oom && kl == 13 && !strncasecmp(k, "registrytoken", 13))
			m = json_string(PH);
		else if (!kb.oom)
			m = json_mask(e);
		if (!o || !m || kb.oom || json_object_setn_new(o, kb.p ? kb.p : "", kb.n, m) < 0) {
			json_decref(m);
			json_decref(o);
			free(kb.p);
			return NULL;
		}
		free(kb.p);
	}
	return o;
}

/* Every object member named like a secret replaced, the user info of every
 * URL in a key or string masked. */
static json_t *json_mask(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return json_obj_mask(v);
	case JSON_ARRAY: {
		json_t *a = json_array();
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
		{
			json_t *m = json_mask(e);
			if (!a || !m || json_array_append_new(a, m) < 0) {
				json_decref(m);
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	case JSON_STRING: return json_str_mask(json_string_value(v), json_string_length(v));
	default: return json_incref(v);
	}
}

static char *mask_docker(const char *text, size_t len)
{
	json_t *in = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *out = json_is_object(in) ? json_mask(in) : NULL;
	char *s = out ? json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(in);
	json_decref(out);
	if (!s)
		return NULL;
	buf b = {.p = s, .n = strlen(s), .cap = strlen(s) + 1};
	put(&b, "\n", 1);
	return done(&b, true);
}

/* A quoted YAML scalar starting at s closes before e. */
static bool yaml_quote_closes(const char *s, const char *e)
{
	char q = *s++;
	while (s < e) {
		if (q == '"' && *s == '\\' && s + 1 < e) {
			s += 2;
			continue;
		}
		if (*s == q) {
			if (q == '\'' && s + 1 < e && s[1] == '\'') {
				s += 2;
				continue;
			}
			return true;
		}
		s++;
	}
	return false;
}

/* The end of a block mapping key at s (before e): the ':' followed by a
 * blank or the line's end, or NULL. */
static const char *yaml_key_end(const char *s, const char *e)
{
	if (*s == '"' || *s == '\'') {
		if (!yaml_quote_closes(s, e))
			return NULL;
		const char *c = s + 1;
		while (c < e && *c != *s)
			c += *s == '"' && *c == '\\' ? 2 : 1;
		c++;
		return c < e && *c == ':' && (c + 1 == e || blank(c[1])) ? c : NULL;
	}
	for (const char *c = s; c < e; c++)
		if (*c == ':' && (c + 1 == e || blank(c[1])))
			return c;
	return NULL;
}

/* .yarnrc.yml, line by line: npmAuthToken and npmAuthIdent values (and
 * what continues them on more indented lines) replaced. A mention of
 * npmAuth* in any other form (flow mappings, block scalars, anchors,
 * aliases, tags, multi-line quotes) makes the file masked whole. */
static char *mask_yarnrc(const char *text)
{
	buf b = {0};
	long drop = -1; /* the column of the secret key being continued */
	for (const char *line = text; *line;) {
		const char *nl = strchrnul(line, '\n');
		const char *s = line, *e = nl;
		while (s < e && *s == ' ')
			s++;
		while (e > s && blank(e[-1]))
			e--;
		long col = (long)(s - line);
		const char *next = *nl ? nl + 1 : nl;
		if (drop >= 0 && (s == e || col > drop)) {
			line = next;
			continue;
		}
		drop = -1;
		if (s < e && *s == '#') {
			line = next;
			continue;
		}
		const char *k = s;
		while (e - k >= 2 && k[0] == '-' && blank(k[1])) { /* "- key: value" */
			k += 2;
			while (k < e && blank(*k))
				k++;
		}
		const char *ke = k < e ? yaml_key_end(k, e) : NULL;
		if (ke && secret_key(k, (size_t)(ke - k)) &&
		    strncasecmp(k + (*k == '"' || *k == '\''), "npmauth", 7) == 0) {
			const char *v = ke + 1;
			while (v < e && blank(*v))
				v++;
			if (v < e && (strchr("&*|>{[!%@`", *v) ||
				      ((*v == '"' || *v == '\'') && !yaml_quote_closes(v, e))))
				return done(&b, false);
			put(&b, line, (size_t)(ke + 1 - line));
			puts_(&b, " \"" PH "\"\n");
			drop = (long)(k - line);
		} else {
			for (const char *c = s; c + 7 <= e; c++)
				if (!strncasecmp(c, "npmauth", 7))
					return done(&b, false);
			put_urls(&b, line, (size_t)(nl - line));
			put(&b, "\n", 1);
		}
		line = next;
	}
	return done(&b, true);
}

aj_cred_kind aj_cred_kind_of(const char *rel, const char *name)
{
	if (!strcmp(name, ".npmrc"))
		return AJ_CRED_NPMRC;
	if (!strcmp(name, ".pypirc") || !strcmp(name, "pip.conf") || !strcmp(name, "pip.ini"))
		return AJ_CRED_INI;
	if (!strcmp(name, ".netrc") || !strcmp(name, "_netrc"))
		return AJ_CRED_NETRC;
	if (!strcmp(name, ".git-credentials"))
		return AJ_CRED_GITCRED;
	if (!strcmp(name, ".yarnrc.yml"))
		return AJ_CRED_YARNRC;
	size_t rl = strlen(rel);
	static const char dk[] = ".docker/config.json";
	if (!strcmp(name, "config.json") && rl >= sizeof(dk) - 1 &&
	    !strcmp(rel + rl - (sizeof(dk) - 1), dk) &&
	    (rl == sizeof(dk) - 1 || rel[rl - sizeof(dk)] == '/'))
		return AJ_CRED_DOCKER;
	return AJ_CRED_WHOLE;
}

char *aj_cred_mask(aj_cred_kind kind, const char *text, size_t len)
{
	if (len > AJ_CRED_MAX_BYTES || memchr(text, '\0', len))
		return NULL;
	/* the text parsers want a terminated copy */
	char *t = strndup(text, len);
	if (!t)
		return NULL;
	char *r = NULL;
	switch (kind) {
	case AJ_CRED_NPMRC: r = mask_ini(t, false); break;
	case AJ_CRED_INI: r = mask_ini(t, true); break;
	case AJ_CRED_NETRC: r = mask_netrc(t); break;
	case AJ_CRED_GITCRED: r = mask_gitcred(t); break;
	case AJ_CRED_DOCKER: r = mask_docker(t, len); break;
	case AJ_CRED_YARNRC: r = mask_yarnrc(t); break;
	case AJ_CRED_WHOLE: break;
	}
	free(t);
	return r;
}
