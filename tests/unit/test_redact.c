/* SPDX-License-Identifier: MIT */
/* The redactor's fast scan (memchr on the patterns' first bytes, spans
 * copied whole) against the byte-at-a-time scan it replaced, kept here as
 * the reference: same input, same chunks, the same output and the same
 * bytes held back, for values with few (memchr) and many (table) distinct
 * first bytes, matches split across chunks, and output growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "redact.h"

/* ---- the reference: the scan before the fast one, on the same patterns */
static size_t ref_match_at(const aj_redactor *r, const char *s, size_t avail, bool *partial)
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

typedef struct ref_state {
	char *tail;
	size_t tail_len;
} ref_state;

static char *ref_feed(const aj_redactor *r, ref_state *st, const char *in, size_t len, bool final,
		      size_t *out_len)
{
	size_t total = st->tail_len + len;
	char *buf = malloc(total + 1);
	char *o = malloc(total * 3 + 16);
	assert_non_null(buf);
	assert_non_null(o);
	if (st->tail_len)
		memcpy(buf, st->tail, st->tail_len);
	if (len)
		memcpy(buf + st->tail_len, in, len);
	size_t i = 0, olen = 0;
	while (i < total) {
		if (r->first[(unsigned char)buf[i]]) {
			bool partial = false;
			size_t m = ref_match_at(r, buf + i, total - i, &partial);
			if (m) {
				memcpy(o + olen, AJ_REDACTED, sizeof(AJ_REDACTED) - 1);
				olen += sizeof(AJ_REDACTED) - 1;
				i += m;
				continue;
			}
			if (partial && !final)
				break;
		}
		o[olen++] = buf[i++];
	}
	free(st->tail);
	st->tail_len = total - i;
	st->tail = malloc(st->tail_len + 1);
	memcpy(st->tail, buf + i, st->tail_len);
	free(buf);
	*out_len = olen;
	return o;
}

/* ---- the comparison */
static unsigned rnd_state = 12345;
static unsigned rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 16) & 0x7fff;
}

/* Feed data in random chunks to both; compare every chunk's output. */
static void compare(aj_redactor *r, const char *data, size_t len, size_t *matches)
{
	ref_state st = {0};
	size_t off = 0;
	while (off <= len) {
		size_t n = len - off ? 1 + rnd() % (len - off < 300 ? len - off : 300) : 0;
		bool final = off + n >= len;
		char *out = NULL;
		size_t olen = 0, rlen = 0;
		assert_int_equal(aj_redactor_feed(r, data + off, n, final, &out, &olen), 0);
		char *ref = ref_feed(r, &st, data + off, n, final, &rlen);
		assert_int_equal(olen, rlen);
		assert_memory_equal(out, ref, olen);
		assert_int_equal(r->tail_len, st.tail_len);
		for (size_t k = 0; k + 10 <= olen; k++)
			*matches += memcmp(out + k, AJ_REDACTED, 10) == 0;
		free(out);
		free(ref);
		off += n;
		if (final)
			break;
	}
	free(st.tail);
}

/* Random text over a small alphabet with the values (and their base64
 * forms: the patterns themselves) sprinkled in, whole and cut short. */
static char *make_input(const aj_redactor *r, size_t len, const char *alphabet)
{
	char *d = malloc(len);
	assert_non_null(d);
	size_t na = strlen(alphabet);
	for (size_t i = 0; i < len;) {
		if (rnd() % 20 == 0 && r->n) {
			size_t p = rnd() % r->n;
			size_t pl =
			    r->plen[p] - (rnd() % 3 == 0 ? 1 + rnd() % (r->plen[p] - 1) : 0);
			if (i + pl > len)
				pl = len - i;
			memcpy(d + i, r->pat[p], pl);
			i += pl;
		} else {
			d[i++] = alphabet[rnd() % na];
		}
	}
	return d;
}

static void run_case(const char *const *values, size_t nvalues, const char *alphabet, size_t rounds,
		     bool expect_table)
{
	size_t matches = 0;
	for (size_t round = 0; round < rounds; round++) {
		aj_redactor r;
		aj_redactor_init(&r);
		for (size_t i = 0; i < nvalues; i++)
			assert_int_equal(aj_redactor_add(&r, values[i]), 0);
		assert_int_equal(r.nfirst > 8, expect_table);
		size_t len = 1 + rnd() % 5000;
		char *d = make_input(&r, len, alphabet);
		compare(&r, d, len, &matches);
		free(d);
		aj_redactor_free(&r);
	}
	assert_true(matches > rounds); /* the inputs did hold values */
}

static void test_memchr_path(void **state)
{
	(void)state;
	const char *v[] = {"hunter22", "abcd"};
	run_case(v, 2, "abcdhunter2[]RED ", 300, false);
}

static void test_table_path(void **state)
{
	(void)state;
	const char *v[] = {"s3cr3t-one", "0123456789", "pass-word!", "xyzzy-xyzzy", "QWERTYUIOP"};
	run_case(v, 5, "0123abcsxyQW-=", 300, true);
}

/* A stream with no first byte of any pattern at all, and one made only
 * of them (every byte a candidate, none a match). */
static void test_extremes(void **state)
{
	(void)state;
	aj_redactor r;
	aj_redactor_init(&r);
	assert_int_equal(aj_redactor_add(&r, "zzzzq"), 0);
	size_t len = 200000, matches = 0;
	char *d = malloc(len);
	memset(d, 0, len);
	compare(&r, d, len, &matches);
	memset(d, 'z', len);
	compare(&r, d, len, &matches);
	assert_int_equal(matches, 0);
	/* every 5 bytes a match: the output grows to 2x */
	for (size_t i = 0; i + 5 <= len; i += 5)
		memcpy(d + i, "zzzzq", 5);
	char *out = NULL;
	size_t olen = 0;
	assert_int_equal(aj_redactor_feed(&r, d, len, true, &out, &olen), 0);
	assert_int_equal(olen, len / 5 * 10);
	assert_memory_equal(out, AJ_REDACTED AJ_REDACTED, 20);
	free(out);
	free(d);
	aj_redactor_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_memchr_path),
	    cmocka_unit_test(test_table_path),
	    cmocka_unit_test(test_extremes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
