/* SPDX-License-Identifier: MIT */
/* The stall bound of the relays of `run --publish` and the service's ports
 * proxy (stall.c; docs/levels.md, "Relays that stall"): an end that takes
 * none of the bytes pending for it for this long is dropped, so a client
 * that stops reading cannot hold a relay, its thread or its agent port. */
#ifndef AJ_STALL_H
#define AJ_STALL_H

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

#endif
