/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the output redactor. The first byte picks a secret
 * length, the next bytes are the secret, the rest is fed in chunks of sizes
 * taken from the data. Checks: the secret never appears in the output, and
 * without any secret in the input the output equals the input. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t slen = 4 + data[0] % 12;
	if (size < 1 + slen)
		return 0;
	char secret[32];
	memcpy(secret, data + 1, slen);
	secret[slen] = '\0';
	if (strlen(secret) != slen || strstr(secret, "[REDACTED]"))
		return 0;
	const char *in = (const char *)data + 1 + slen;
	size_t inlen = size - 1 - slen;
	aj_redactor r;
	aj_redactor_init(&r);
	if (aj_redactor_add(&r, secret) < 0)
		return 0;
	char *all = malloc(inlen * 3 + 16);
	size_t alen = 0, off = 0, step = 1;
	while (off <= inlen) {
		size_t n = inlen - off < step ? inlen - off : step;
		char *out;
		size_t olen;
		bool final = off + n >= inlen;
		if (aj_redactor_feed(&r, in + off, n, final, &out, &olen) < 0)
			abort();
		memcpy(all + alen, out, olen);
		alen += olen;
		free(out);
		off += n;
		step = (step * 7 + 3) % 13 + 1;
		if (final)
			break;
	}
	all[alen] = '\0';
	/* The plain value is gone from every stretch of output between two
	 * replacements (each such stretch is contiguous input). A value that
	 * starts or ends like "[REDACTED]" may reappear where a replacement
	 * meets ordinary text: that is no leak, so each token becomes one
	 * separator byte first (memmem: the data may hold NULs). */
	size_t k = 0;
	for (size_t i = 0; i < alen;) {
		if (alen - i >= sizeof(AJ_REDACTED) - 1 &&
		    memcmp(all + i, AJ_REDACTED, sizeof(AJ_REDACTED) - 1) == 0) {
			all[k++] = '\x01';
			i += sizeof(AJ_REDACTED) - 1;
		} else {
			all[k++] = all[i++];
		}
	}
	if (!memchr(secret, '\x01', slen))
		assert(!memmem(all, k, secret, slen));
	if (!memmem(in, inlen, secret, slen) && !memchr(in, '[', inlen)) {
		bool any_pattern = false;
		for (size_t i = 0; i < r.n; i++)
			any_pattern |= memmem(in, inlen, r.pat[i], r.plen[i]) != NULL;
		if (!any_pattern)
			assert(k == inlen && memcmp(all, in, inlen) == 0);
	}
	free(all);
	aj_redactor_free(&r);
	return 0;
}
