/* SPDX-License-Identifier: MIT */
/* The relays' stall bound (stall.h). */
#include "stall.h"

#include <errno.h>
#include <stdlib.h>

#include "util.h"

static unsigned long long stall_ms = AJ_RELAY_STALL_MS;

int aj_relay_stall_init(aj_error *err)
{
	const char *v = getenv(AJ_RELAY_STALL_ENV);
	unsigned long long n;
	if (!v || !*v)
		return 0;
	if (aj_parse_uint(v, 3600000, &n) < 0 || n < 100) {
		aj_err(err, EINVAL, "%s=%s: expected 100 to 3600000 (milliseconds)",
		       AJ_RELAY_STALL_ENV, v);
		aj_err_hint(err, "unset it (the bound is then 60 s) or give milliseconds");
		return -EINVAL;
	}
	stall_ms = n;
	return 0;
}

unsigned long long aj_relay_stall_ms(void)
{
	return stall_ms;
}
