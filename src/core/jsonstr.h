/* SPDX-License-Identifier: MIT */
/* JSON strings without building a json_t: the escaper of the service's
 * output events (an exec's stdout/stderr as NDJSON, issue 7) and the
 * unescaper of the client's fast path. Both follow jansson exactly: what
 * jansson would refuse (bytes that are not UTF-8 as jansson validates it,
 * a string JSON does not allow) is refused here too, and the caller takes
 * its slow path (base64, or jansson itself). */
#ifndef AJ_JSONSTR_H
#define AJ_JSONSTR_H

#include <stdbool.h>
#include <stddef.h>

/* The longest escape of one input byte ("\u001F"): out needs
 * AJ_JSON_ESCAPE_MAX * len bytes. */
#define AJ_JSON_ESCAPE_MAX 6

/* s[0..len) as the inside of a JSON string (no quotes), byte for byte what
 * json_dumps(json_stringn(s, len), JSON_COMPACT) puts between its quotes.
 * Returns the length written, or -1 when s is not valid UTF-8 (jansson's
 * json_stringn refuses it: overlong forms, surrogates, > U+10FFFF, stray
 * continuation bytes, a sequence cut short). */
long aj_json_escape(const char *s, size_t len, char *out);

/* The NDJSON event {"type":"stdout"|"stderr","data":"..."} and its newline,
 * as json_dumps of the service's event builds it, into out (which needs
 * AJ_JSON_EVENT_MAX(len) bytes). -1 when buf is not UTF-8 (the caller sends
 * data_b64 instead). */
#define AJ_JSON_EVENT_MAX(len) (AJ_JSON_ESCAPE_MAX * (len) + 32)
long aj_json_output_event(int stream, const char *buf, size_t len, char *out);

/* The inside of a JSON string (between its quotes) unescaped into out
 * (len bytes are enough: no escape grows). Returns the length, or -1 for
 * anything jansson would not load the same way (a raw control byte or
 * quote, a bad escape, a lone surrogate, bytes that are not UTF-8). NUL
 * (\u0000) is accepted, as jansson's JSON_ALLOW_NUL. */
long aj_json_unescape(const char *s, size_t len, char *out);

#endif
