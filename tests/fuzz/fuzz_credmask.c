/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the credential file parsers (credmask.c). The first
 * byte picks the format, the rest is the file. Checks: no crash, leak or
 * overrun; the output is a string; and when the input holds the marker
 * FUZZSECRET once, as a URL's password or on a line of its own after a
 * secret key, the masked text (if the parser accepted the file) does not
 * hold it. */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "credmask.h"

#define MARK "FUZZSECRET"

static size_t count(const char *s, size_t n, const char *what)
{
	size_t c = 0, wl = strlen(what);
	for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), what, wl)); p++)
		c++;
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const aj_cred_kind kinds[] = {AJ_CRED_NPMRC,   AJ_CRED_INI,    AJ_CRED_NETRC,
					     AJ_CRED_GITCRED, AJ_CRED_DOCKER, AJ_CRED_YARNRC,
					     AJ_CRED_WHOLE};
	aj_cred_kind k = kinds[data[0] % (sizeof(kinds) / sizeof(kinds[0]))];
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	char *out = aj_cred_mask(k, text, len);
	if (k == AJ_CRED_WHOLE)
		assert(!out);
	if (!out)
		return 0;
	assert(strlen(out) <= len * 4 + 4096);
	bool secret = false;
	if (count(text, len, MARK) == 1) {
		/* JSON escapes could spell the marker a second time */
		if (k != AJ_CRED_DOCKER || !memchr(text, '\\', len))
			secret |=
			    memmem(text, len, "://u:" MARK "@", strlen("://u:" MARK "@")) != NULL;
		const char *line = k == AJ_CRED_NPMRC	 ? "\n_authToken=" MARK "\n"
				   : k == AJ_CRED_INI	 ? "\npassword = " MARK "\n"
				   : k == AJ_CRED_NETRC	 ? "\npassword " MARK "\n"
				   : k == AJ_CRED_YARNRC ? "\nnpmAuthToken: " MARK "\n"
							 : NULL;
		secret |= line && memmem(text, len, line, strlen(line));
	}
	if (secret && strstr(out, MARK))
		abort();
	free(out);
	return 0;
}
