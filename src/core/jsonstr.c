/* SPDX-License-Identifier: MIT */
/* JSON string escaping and unescaping for the exec stream (jsonstr.h).
 * jansson's rules (dump.c, load.c, utf.c of jansson 2.14): escaped on
 * output are '"', '\\', and every byte below 0x20 (\b \f \n \r \t by name,
 * the rest as \u00XX with upper-case hex); DEL and non-ASCII characters
 * are written as they are; '/' is not escaped. UTF-8 as jansson checks it:
 * leads C2..F4, continuations 80..BF, no overlong forms, no surrogates,
 * nothing above U+10FFFF. */
#include "jsonstr.h"

#include <stdint.h>
#include <string.h>

/* 0: copied as it is; 1: escaped; 2: the lead of a multi-byte sequence
 * (or a byte no UTF-8 sequence starts with) */
static inline int kind(unsigned char c)
{
	if (c >= 0x80)
		return 2;
	return c < 0x20 || c == '"' || c == '\\';
}

/* The first byte at or after i that is not copied as it is (or len): eight
 * bytes at a time while none of them is below 0x20, '"', '\\' or above
 * 0x7F (the usual bit tricks: a byte below k borrows in x - k), then byte
 * by byte. */
static size_t plain_run(const unsigned char *s, size_t i, size_t len)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	while (i + 8 <= len) {
		uint64_t x;
		memcpy(&x, s + i, 8);
		uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
		uint64_t bad = ((x - ones * 0x20) | (q - ones) | (b - ones) | x) & high;
		/* (v - ones) & high also flags bytes >= 0x81 of v; x itself flags
		 * every byte >= 0x80 of x, and q, b differ from x only in the low
		 * seven bits, so any false alarm comes from a byte >= 0x80 anyway */
		if (bad)
			break;
		i += 8;
	}
	while (i < len && kind(s[i]) == 0)
		i++;
	return i;
}

/* The length of the valid UTF-8 sequence at s (its lead is >= 0x80), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t left)
{
	unsigned c = s[0];
	size_t n;
	uint32_t v;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, v = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, v = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, v = c & 0x07;
	else
		return 0; /* a continuation byte, C0, C1, F5..FF */
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3F);
	}
	if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF ||
	    (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	return n;
}

/* Copy from s[*i] to *o what stays as it is: runs of plain bytes and whole
 * valid UTF-8 sequences (memmove: unescaping works in place). Returns 0 at
 * the end, 1 at a byte to escape (or an escape to undo), -1 at invalid
 * UTF-8. */
static int copy_plain(const unsigned char *s, size_t len, size_t *i, char **o)
{
	for (;;) {
		size_t run = plain_run(s, *i, len);
		if (*o !=
		    (const char *)s + *i) /* in place: nothing to move until the first escape */
			memmove(*o, s + *i, run - *i);
		*o += run - *i;
		*i = run;
		if (*i == len)
			return 0;
		if (kind(s[*i]) != 2)
			return 1;
		size_t n = utf8_seq(s + *i, len - *i);
		if (!n)
			return -1;
		memmove(*o, s + *i, n);
		*o += n;
		*i += n;
	}
}

long aj_json_escape(const char *str, size_t len, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *s = (const unsigned char *)str;
	char *o = out;
	size_t i = 0;
	for (;;) {
		int r = copy_plain(s, len, &i, &o);
		if (r <= 0) {
			if (r < 0)
				return -1;
			break;
		}
		unsigned char c = s[i];
		*o++ = '\\';
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '\b': *o++ = 'b'; break;
		case '\f': *o++ = 'f'; break;
		case '\n': *o++ = 'n'; break;
		case '\r': *o++ = 'r'; break;
		case '\t': *o++ = 't'; break;
		default:
			memcpy(o, "u00", 3);
			o[3] = hex[c >> 4];
			o[4] = hex[c & 15];
			o += 5;
		}
		i++;
	}
	return (long)(o - out);
}

long aj_json_output_event(int stream, const char *buf, size_t len, char *out)
{
	static const char head_out[] = "{\"type\":\"stdout\",\"data\":\"";
	static const char head_err[] = "{\"type\":\"stderr\",\"data\":\"";
	size_t hl = sizeof(head_out) - 1;
	memcpy(out, stream == 1 ? head_out : head_err, hl);
	long n = aj_json_escape(buf, len, out + hl);
	if (n < 0)
		return -1;
	memcpy(out + hl + (size_t)n, "\"}\n", 3);
	return (long)hl + n + 3;
}

static int hex4(const unsigned char *s, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = s[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		*v = (*v << 4) | d;
	}
	return 0;
}

static size_t put_utf8(uint32_t v, char *o)
{
	if (v < 0x80) {
		o[0] = (char)v;
		return 1;
	}
	if (v < 0x800) {
		o[0] = (char)(0xC0 | (v >> 6));
		o[1] = (char)(0x80 | (v & 0x3F));
		return 2;
	}
	if (v < 0x10000) {
		o[0] = (char)(0xE0 | (v >> 12));
		o[1] = (char)(0x80 | ((v >> 6) & 0x3F));
		o[2] = (char)(0x80 | (v & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (v >> 18));
	o[1] = (char)(0x80 | ((v >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((v >> 6) & 0x3F));
	o[3] = (char)(0x80 | (v & 0x3F));
	return 4;
}

long aj_json_unescape(const char *str, size_t len, char *out)
{
	const unsigned char *s = (const unsigned char *)str;
	char *o = out;
	size_t i = 0;
	for (;;) {
		int r = copy_plain(s, len, &i, &o);
		if (r <= 0) {
			if (r < 0)
				return -1;
			break;
		}
		unsigned char c = s[i];
		if (c != '\\' || i + 1 >= len)
			return -1; /* a raw control byte or quote: not one JSON string */
		char e = (char)s[i + 1];
		i += 2;
		switch (e) {
		case '"': *o++ = '"'; continue;
		case '\\': *o++ = '\\'; continue;
		case '/': *o++ = '/'; continue;
		case 'b': *o++ = '\b'; continue;
		case 'f': *o++ = '\f'; continue;
		case 'n': *o++ = '\n'; continue;
		case 'r': *o++ = '\r'; continue;
		case 't': *o++ = '\t'; continue;
		case 'u': break;
		default: return -1;
		}
		uint32_t v, lo;
		if (i + 4 > len || hex4(s + i, &v) < 0)
			return -1;
		i += 4;
		if (v >= 0xDC00 && v <= 0xDFFF)
			return -1; /* a low surrogate first */
		if (v >= 0xD800 && v <= 0xDBFF) {
			if (i + 6 > len || s[i] != '\\' || s[i + 1] != 'u' ||
			    hex4(s + i + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
				return -1;
			i += 6;
			v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
		}
		o += put_utf8(v, o);
	}
	return (long)(o - out);
}
