/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the warm-up command parser of warm interpreters. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zygote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	char interp[64];
	if (aj_zygote_interp(s, interp, sizeof(interp)) &&
	    (strlen(interp) >= sizeof(interp) || strncmp(s, interp, strlen(interp)) != 0))
		abort();
	free(s);
	return 0;
}
