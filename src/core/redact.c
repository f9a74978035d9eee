/* SPDX-License-Identifier: MIT */
#include "redact.h"

#include "policy.h"

#include <errno.h>
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

int aj_redactor_feed(aj_redactor *r, const char *in, size_t len, bool final, char **out,
		     size_t *out_len)
{
	size_t total = r->tail_len + len;
	char *buf = malloc(total ? total : 1);
	/* worst case: every byte a replaced match of a 4-byte value */
	size_t cap = total * (sizeof(AJ_REDACTED) - 1) / 4 + total + 1;
	char *o = malloc(cap);
	if (!buf || !o) {
		free(buf);
		free(o);
		return -ENOMEM;
	}
	if (r->tail_len)
		memcpy(buf, r->tail, r->tail_len);
	if (len)
		memcpy(buf + r->tail_len, in, len);
	size_t i = 0, olen = 0;
	while (i < total) {
		if (r->first[(unsigned char)buf[i]]) {
			bool partial = false;
			size_t m = match_at(r, buf + i, total - i, &partial);
			if (m) {
				memcpy(o + olen, AJ_REDACTED, sizeof(AJ_REDACTED) - 1);
				olen += sizeof(AJ_REDACTED) - 1;
				i += m;
				continue;
			}
			if (partial && !final)
				break; /* hold back: the rest may arrive next time */
		}
		o[olen++] = buf[i++];
	}
	free(r->tail);
	r->tail = NULL;
	r->tail_len = total - i;
	if (r->tail_len) {
		r->tail = malloc(r->tail_len);
		if (!r->tail) {
			free(buf);
			free(o);
			return -ENOMEM;
		}
		memcpy(r->tail, buf + i, r->tail_len);
	}
	free(buf);
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
