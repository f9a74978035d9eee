/* SPDX-License-Identifier: MIT */
/* The exec stream's JSON strings (src/core/jsonstr.c) against jansson, the
 * reference they replace on the fast path: on random inputs (ASCII,
 * control bytes, quotes, UTF-8 of every length, and what is not UTF-8:
 * stray continuation bytes, overlong forms, surrogates, > U+10FFFF, cut
 * sequences, the pieces of valid text split at every byte), the escaper
 * writes byte for byte what json_dumps writes or refuses what json_stringn
 * refuses; the whole event line is the service's aj_exec_data_event as
 * jansson prints it; the unescaper loads what jansson loads, the same way,
 * and refuses the rest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jsonstr.h"
#include "exec_event.h"

static uint64_t seed = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return (unsigned)(seed % n);
}

/* Random bytes, mostly text; half of the inputs with every kind of
 * trouble mixed in (one bad byte makes the whole input not UTF-8). */
static size_t gen(unsigned char *b, size_t cap)
{
	static const char *const good[] = {
	    "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\"", "\\",
	    "/",	"\x7f",		"\t\n\r\b\f",	    "\x01\x1f",
	};
	static const char *const bad[] = {
	    "\xc0\xaf",
	    "\xc1\xbf",
	    "\xe0\x80\xaf",
	    "\xf0\x80\x80\xaf", /* overlong */
	    "\xed\xa0\x80",
	    "\xed\xbf\xbf", /* surrogates */
	    "\xf4\x90\x80\x80",
	    "\xf5\x80\x80\x80",
	    "\xff",
	    "\xfe",
	    "\x80",
	    "\xbf", /* out of range */
	    "\xc3",
	    "\xe2\x82",
	    "\xf0\x9f\x98", /* cut short */
	};
	bool trouble = rnd(2);
	size_t n = 0, want = rnd((unsigned)cap);
	while (n < want) {
		unsigned k = rnd(100);
		const char *p;
		if (k < 60) { /* plain ASCII */
			b[n++] = (unsigned char)(0x20 + rnd(0x5f));
			continue;
		}
		if (trouble && k < 62) { /* any byte */
			b[n++] = (unsigned char)rnd(256);
			continue;
		}
		if (trouble && k < 66)
			p = bad[rnd(sizeof(bad) / sizeof(*bad))];
		else
			p = good[rnd(sizeof(good) / sizeof(*good))];
		size_t l = strlen(p);
		if (n + l > cap)
			break;
		memcpy(b + n, p, l);
		n += l;
	}
	return n;
}

/* One input: the escaper against jansson; the escape unescaped back. */
static void check_escape(const unsigned char *in, size_t len, size_t *valid)
{
	char *out = malloc(AJ_JSON_ESCAPE_MAX * len + 1);
	assert_non_null(out);
	long n = aj_json_escape((const char *)in, len, out);
	json_t *s = json_stringn((const char *)in, len);
	if (!s) {
		assert_int_equal(n, -1);
		free(out);
		return;
	}
	(*valid)++;
	char *ref = json_dumps(s, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(s);
	assert_non_null(ref);
	assert_int_equal((size_t)n, strlen(ref) - 2);
	assert_memory_equal(out, ref + 1, (size_t)n);
	free(ref);
	/* and back, in place */
	long m = aj_json_unescape(out, (size_t)n, out);
	assert_int_equal((size_t)m, len);
	assert_memory_equal(out, in, len);
	free(out);
}

static void test_escape_random(void **state)
{
	(void)state;
	unsigned char b[300];
	size_t valid = 0;
	for (int i = 0; i < 200000; i++)
		check_escape(b, gen(b, sizeof(b)), &valid);
	/* both sides of the fence were visited */
	assert_true(valid > 20000);
	assert_true(valid < 190000);
}

/* Valid text cut at every byte: the pieces are refused exactly when a
 * multi-byte character is split (what the service's carry is for). */
static void test_escape_split(void **state)
{
	(void)state;
	static const char text[] = "a\xc3\xa9z\xe2\x82\xac\xf0\x9f\x98\x80q\"\\\n\x01";
	size_t len = sizeof(text) - 1, valid = 0;
	for (size_t cut = 0; cut <= len; cut++) {
		check_escape((const unsigned char *)text, cut, &valid);
		check_escape((const unsigned char *)text + cut, len - cut, &valid);
	}
	long n;
	char out[16];
	n = aj_json_escape("\xc3", 1, out);
	assert_int_equal(n, -1);
	n = aj_json_escape("\xf0\x9f\x98", 3, out);
	assert_int_equal(n, -1);
	n = aj_json_escape("\0", 1, out);
	assert_int_equal(n, 6);
	assert_memory_equal(out, "\\u0000", 6);
}

/* The whole line is the service's event as jansson prints it (and for
 * bytes that are not UTF-8 the service falls back to data_b64). */
static void test_event_line(void **state)
{
	(void)state;
	unsigned char b[200];
	for (int i = 0; i < 50000; i++) {
		size_t len = gen(b, sizeof(b));
		int stream = 1 + rnd(2);
		char *line = malloc(AJ_JSON_EVENT_MAX(len));
		assert_non_null(line);
		long n = aj_json_output_event(stream, (const char *)b, len, line);
		json_t *ev = aj_exec_data_event(stream, (const char *)b, len);
		assert_non_null(ev);
		if (n < 0) {
			assert_non_null(json_object_get(ev, "data_b64"));
		} else {
			char *ref = json_dumps(ev, JSON_COMPACT);
			assert_non_null(ref);
			assert_int_equal((size_t)n, strlen(ref) + 1);
			assert_memory_equal(line, ref, (size_t)n - 1);
			assert_int_equal(line[n - 1], '\n');
			free(ref);
		}
		json_decref(ev);
		free(line);
	}
}

/* Random string bodies (escapes of every kind, good and bad, raw control
 * bytes and quotes): unescaped as jansson loads them, or refused where
 * jansson refuses them. */
static void test_unescape_random(void **state)
{
	(void)state;
	static const char *const esc[] = {"\\n",
					  "\\\"",
					  "\\\\",
					  "\\/",
					  "\\b",
					  "\\f",
					  "\\r",
					  "\\t",
					  "\\u0000",
					  "\\u001B",
					  "\\u00e9",
					  "\\u20AC",
					  "\\uFFFF",
					  "\\ud83d\\ude00",
					  "\\uD800",
					  "\\uDC00",
					  "\\ud83d\\u0041",
					  "\\u12",
					  "\\x",
					  "\\",
					  "\"",
					  "\x01",
					  "\xc3\xa9",
					  "\xed\xa0\x80",
					  "\xff",
					  "\\uZZZZ",
					  "\\U0041",
					  "a"};
	char s[400], out[400];
	size_t loaded = 0;
	for (int i = 0; i < 200000; i++) {
		size_t n = 0, want = rnd(40);
		for (size_t k = 0; k < want; k++) {
			if (rnd(3) == 0) {
				s[n++] = (char)(0x20 + rnd(0x5f));
				if (s[n - 1] == '"' || s[n - 1] == '\\')
					s[n - 1] = 'x';
				continue;
			}
			const char *p = esc[rnd(sizeof(esc) / sizeof(*esc))];
			memcpy(s + n, p, strlen(p));
			n += strlen(p);
		}
		long m = aj_json_unescape(s, n, out);
		char quoted[410];
		quoted[0] = '"';
		memcpy(quoted + 1, s, n);
		quoted[n + 1] = '"';
		json_t *j = json_loadb(quoted, n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (!j) {
			assert_int_equal(m, -1);
			continue;
		}
		loaded++;
		assert_true(m >= 0);
		assert_int_equal((size_t)m, json_string_length(j));
		assert_memory_equal(out, json_string_value(j), (size_t)m);
		json_decref(j);
	}
	assert_true(loaded > 10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escape_random),
	    cmocka_unit_test(test_escape_split),
	    cmocka_unit_test(test_event_line),
	    cmocka_unit_test(test_unescape_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
