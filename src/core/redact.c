/* SPDX-License-Identifier: MIT */
#include "redact.h"

#include "policy.h"
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void aj_redactor_init(aj_redactor *r)
{
	memset(r, 0, sizeof(*r));
}

bool aj_redactor_active(const aj_redactor *r)
{
	return r->n > 0;
}

static int add_pattern(aj_redactor *r, const char *p, size_t len)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->plen[i] == len && memcmp(r->pat[i], p, len) == 0)
			return 0;
	if (r->n >= AJ_REDACT_MAX_PATTERNS)
		return -E2BIG;
	char *c = malloc(len);
	if (!c)
		return -ENOMEM;
	memcpy(c, p, len);
	r->pat[r->n] = c;
	r->plen[r->n] = len;
	r->n++;
	if (!r->first[(unsigned char)p[0]]) {
		if (r->nfirst < sizeof(r->firstv))
			r->firstv[r->nfirst] = (unsigned char)p[0];
		r->nfirst++;
	}
	r->first[(unsigned char)p[0]] = true;
	if (len > r->maxlen)
		r->maxlen = len;
	return 0;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The base64 characters that depend only on value's bytes when value starts
 * at offset k (0..2) of a 3-byte group. */
static int add_base64(aj_redactor *r, const char *value, size_t len, size_t k)
{
	size_t n = k + len, groups = n / 3;
	if (groups == 0)
		return 0;
	unsigned char *buf = calloc(n, 1);
	char *enc = malloc(groups * 4 + 1);
	int rc = -ENOMEM;
	if (!buf || !enc)
		goto out;
	memcpy(buf + k, value, len);
	for (size_t g = 0; g < groups; g++) {
		unsigned v =
		    (unsigned)buf[3 * g] << 16 | (unsigned)buf[3 * g + 1] << 8 | buf[3 * g + 2];
		enc[4 * g] = b64[(v >> 18) & 63];
		enc[4 * g + 1] = b64[(v >> 12) & 63];
		enc[4 * g + 2] = b64[(v >> 6) & 63];
		enc[4 * g + 3] = b64[v & 63];
	}
	size_t skip = k == 0 ? 0 : k == 1 ? 2 : 3; /* chars touched by the prefix */
	size_t plen = groups * 4 - skip;
	rc = plen >= 8 ? add_pattern(r, enc + skip, plen) : 0;
out:
	free(buf);
	free(enc);
	return rc;
}

int aj_redactor_add(aj_redactor *r, const char *value)
{
	size_t len = strlen(value);
	if (len < 4)
		return -EINVAL;
	int rc = add_pattern(r, value, len);
	for (size_t k = 0; rc == 0 && k < 3; k++)
		rc = add_base64(r, value, len, k);
	return rc;
}

/* Length of the pattern matching fully at s (avail bytes), 0 if none;
 * *partial set when some pattern could still match with more input. */
static size_t match_at(const aj_redactor *r, const char *s, size_t avail, bool *partial)
{
	size_t best = 0;
	for (size_t i = 0; i < r->n; i++) {
		size_t pl = r->plen[i];
		if (pl <= avail) {
			if (pl > best && memcmp(s, r->pat[i], pl) == 0)
				best = pl;
		} else if (memcmp(s, r->pat[i], avail) == 0) {
			*partial = true;
		}
	}
	return best;
}

/* The index of the next byte at or after i that starts some pattern, total
 * if none. With up to 8 distinct first bytes: memchr for each (vectorized
 * by libc), the next occurrence of each cached in next[] (SIZE_MAX: not
 * searched yet); more than that: a table scan. */
static size_t next_first(const aj_redactor *r, const char *buf, size_t total, size_t i,
			 size_t next[8])
{
	if (r->nfirst > sizeof(r->firstv)) {
		while (i < total && !r->first[(unsigned char)buf[i]])
			i++;
		return i;
	}
	size_t best = total;
	for (size_t k = 0; k < r->nfirst; k++) {
		if (next[k] == SIZE_MAX || next[k] < i) {
			const char *hit = memchr(buf + i, r->firstv[k], total - i);
			next[k] = hit ? (size_t)(hit - buf) : total;
		}
		if (next[k] < best)
			best = next[k];
	}
	return best;
}

int aj_redactor_feed(aj_redactor *r, const char *in, size_t len, bool final, char **out,
		     size_t *out_len)
{
	/* the held-back tail and the new bytes, joined only when there is a
	 * tail (rare: the last chunk ended in the first bytes of a pattern) */
	const char *buf = in;
	size_t total = r->tail_len + len;
	char *joined = NULL;
	if (r->tail_len) {
		if (!(joined = malloc(total)))
			return -ENOMEM;
		memcpy(joined, r->tail, r->tail_len);
		if (len)
			memcpy(joined + r->tail_len, in, len);
		buf = joined;
	}
	/* room for every byte; grown when replacements make it longer */
	size_t cap = total + 64, olen = 0, i = 0;
	char *o = malloc(cap);
	if (!o) {
		free(joined);
		return -ENOMEM;
	}
	size_t next[8];
	for (size_t k = 0; k < AJ_ARRAY_SIZE(next); k++)
		next[k] = SIZE_MAX;
	while (i < total) {
		size_t c = next_first(r, buf, total, i, next);
		memcpy(o + olen, buf + i, c - i); /* a span no pattern starts in */
		olen += c - i;
		if ((i = c) == total)
			break;
		bool partial = false;
		size_t m = match_at(r, buf + i, total - i, &partial);
		if (m) {
			size_t need = olen + sizeof(AJ_REDACTED) - 1 + (total - i - m);
			if (need > cap) {
				char *g = realloc(o, cap = need * 2);
				if (!g) {
					free(o);
					free(joined);
					return -ENOMEM;
				}
				o = g;
			}
			memcpy(o + olen, AJ_REDACTED, sizeof(AJ_REDACTED) - 1);
			olen += sizeof(AJ_REDACTED) - 1;
			i += m;
			continue;
		}
		if (partial && !final)
			break; /* hold back: the rest may arrive next time */
		o[olen++] = buf[i++];
	}
	char *tail = NULL;
	if (total > i) {
		if (!(tail = malloc(total - i))) {
			free(o);
			free(joined);
			return -ENOMEM;
		}
		memcpy(tail, buf + i, total - i);
	}
	free(r->tail);
	r->tail = tail;
	r->tail_len = total - i;
	free(joined);
	*out = o;
	*out_len = olen;
	return 0;
}

void aj_redactor_free(aj_redactor *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->pat[i]);
	free(r->tail);
	memset(r, 0, sizeof(*r));
}

int aj_redactor_init_policy(aj_redactor *r, const aj_policy *p)
{
	aj_redactor_init(r);
	for (size_t i = 0; i < p->n_secrets; i++)
		if (aj_redactor_add(r, p->secrets[i].value) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < p->n_redact; i++)
		if (aj_redactor_add(r, p->redact[i]) < 0)
			return -ENOMEM;
	return 0;
}
