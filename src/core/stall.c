/* SPDX-License-Identifier: MIT */
/* The relays' stall bound and window (stall.h). */
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

void aj_stall_open(aj_stall_win *w, unsigned long long now)
{
	if (!w->open)
		*w = (aj_stall_win){.since = now, .taken = 0, .open = true};
}

void aj_stall_took(aj_stall_win *w, size_t n, unsigned long long now)
{
	w->taken += n;
	if (w->taken >= AJ_RELAY_STALL_MIN)
		w->since = now, w->taken = 0; /* enough taken: a new window */
}

unsigned long long aj_stall_left(const aj_stall_win *w, unsigned long long now,
				 unsigned long long bound_ms)
{
	if (!w->open)
		return bound_ms;
	unsigned long long used = now - w->since;
	return used >= bound_ms ? 0 : bound_ms - used;
}
