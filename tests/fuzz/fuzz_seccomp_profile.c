/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the --seccomp-profile JSON parser. */
#include <stddef.h>
#include <stdint.h>

#include "sysfilter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	void *ctx = NULL;
	aj_error err;
	aj_err_clear(&err);
	if (aj_seccomp_profile_parse((const char *)data, size, "fuzz", &ctx, &err) == 0)
		aj_seccomp_profile_free(ctx);
	return 0;
}
