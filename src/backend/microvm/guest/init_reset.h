/* SPDX-License-Identifier: MIT */
/* A given-up agent port made anew, the guest init's side (init_reset.c;
 * the host's: agent_resync.h). */
#ifndef AJ_INIT_RESET_H
#define AJ_INIT_RESET_H

#include <stdbool.h>
#include <stddef.h>

#include "agent_resync.h"

typedef struct port_reset {
	size_t zeros; /* the host's filler so far: zero bytes in a row */
	unsigned char f[AJ_AGENT_HDR + AJ_AGENT_NONCE_LEN];
	size_t have; /* of the AJ_AG_RESET frame after it */
} port_reset;

/* Bytes init read from a port with no agent. 1: the host's filler and
 * AJ_AG_RESET whole (aj_reset_ack next), 0: more needed, -1: bytes that are
 * neither (dropped: the port is out of step). *used: bytes taken. */
int aj_reset_scan(port_reset *r, const unsigned char *b, size_t n, size_t *used);
/* Reading the host's filler or the frame after it. */
bool aj_reset_busy(const port_reset *r);
/* In init's child on the port (fd; the old agent reaped): the filler and
 * init's AJ_AG_RESET with the host's nonce. 0 or -1. */
int aj_reset_ack(int fd, const port_reset *r);

#endif
