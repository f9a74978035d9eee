/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the exec stream's JSON strings (jsonstr.h) against
 * jansson. The input as output bytes: escaped exactly as json_dumps writes
 * it, or refused exactly when json_stringn refuses it, and unescaped back
 * to itself. The input as the inside of a JSON string (the client's fast
 * path): unescaped to what jansson loads, or refused where jansson fails. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonstr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char *out = malloc(AJ_JSON_EVENT_MAX(size) + 2);
	if (!out)
		return 0;
	long n = aj_json_escape(in, size, out);
	json_t *s = json_stringn(in, size);
	if (!s != (n < 0))
		abort();
	if (s) {
		char *ref = json_dumps(s, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!ref || strlen(ref) != (size_t)n + 2 || memcmp(ref + 1, out, (size_t)n))
			abort();
		free(ref);
		if (aj_json_unescape(out, (size_t)n, out) != (long)size || memcmp(out, in, size))
			abort();
	}
	json_decref(s);

	out[0] = '"';
	memcpy(out + 1, in, size);
	out[size + 1] = '"';
	json_t *j = json_loadb(out, size + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	long m = aj_json_unescape(in, size, out);
	if (!j != (m < 0) || (j && (!json_is_string(j) || (size_t)m != json_string_length(j) ||
				    memcmp(out, json_string_value(j), (size_t)m))))
		abort();
	json_decref(j);
	free(out);
	return 0;
}
