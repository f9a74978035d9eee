/* SPDX-License-Identifier: MIT */
/* The stall bound of the relays of `run --publish` and the service's ports
 * proxy (stall.c; docs/levels.md, "Relays that stall"): an end that takes
 * none of the bytes pending for it for this long is dropped, so a client
 * that stops reading cannot hold a relay, its thread or its agent port. */
#ifndef AJ_STALL_H
#define AJ_STALL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define AJ_RELAY_STALL_MS 60000ULL
/* what a client must take per stall bound (or all it has pending) not to
 * count as stalled: a trickle can't hold a relay */
#define AJ_RELAY_STALL_MIN 65536
#define AJ_RELAY_STALL_ENV "AGENTJAIL_RELAY_STALL_MS"

/* $AGENTJAIL_RELAY_STALL_MS (for tests: 100 to 3600000 ms), read once at
 * the start of `run` and `serve` (a bad value: -EINVAL, the start stops). */
int aj_relay_stall_init(aj_error *err);
/* The bound in force: the variable's once read, else AJ_RELAY_STALL_MS. */
unsigned long long aj_relay_stall_ms(void);

/* One end's stall window (agent_relay.c, netd's splice in proxy.c), in ms
 * of CLOCK_MONOTONIC: open while bytes wait for the end; it must take
 * AJ_RELAY_STALL_MIN bytes per bound (then a new window) or all that waits
 * (the owner closes it: open = false), else it counts as stalled. */
typedef struct aj_stall_win {
	unsigned long long since; /* the window's start */
	size_t taken;		  /* bytes the end took since */
	bool open;
} aj_stall_win;

/* Bytes wait for the end at now: a window opens, unless one is open. */
void aj_stall_open(aj_stall_win *w, unsigned long long now);
/* The end took n bytes at now (enough of them: a new window). */
void aj_stall_took(aj_stall_win *w, size_t n, unsigned long long now);
/* ms left of the open window's bound at now (0: the end stalled);
 * bound_ms when no window is open. */
unsigned long long aj_stall_left(const aj_stall_win *w, unsigned long long now,
				 unsigned long long bound_ms);

#endif
