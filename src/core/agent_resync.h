/* SPDX-License-Identifier: MIT */
/* The host's reading of a given-up level-3 agent port being made anew
 * (docs/levels.md, "A given-up port made anew"; the service's side:
 * microvm/mvport.c). What an old agent left on the port, a frame cut
 * mid-way included, is flushed by a run of zero bytes longer than any a
 * stream of frames can hold; after it the port is parsed as frames only
 * (never searched for the nonce): the guest init's acknowledgement that
 * the old agent is reaped (AJ_AG_RESET with the nonce), then the fresh
 * agent's answer to a hello carrying the same nonce. A whole AJ_AG_RESET
 * with another nonce (an earlier try's, late) waits for the next filler;
 * anything else is out of step: the revival fails and is tried again
 * after a backoff. */
#ifndef AJ_AGENT_RESYNC_H
#define AJ_AGENT_RESYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "agent_proto.h"

/* the filler's length: a stream of frames never holds this many zero
 * bytes in a row (every frame begins with a non-zero type byte, and at
 * most 3 of its length bytes plus AJ_AGENT_MAX_FRAME payload bytes are
 * zero), so a run of it can only be the filler */
#define AJ_AGENT_FILL (AJ_AGENT_HDR + AJ_AGENT_MAX_FRAME)
/* the nonce: lowercase hex digits of getrandom's bytes */
#define AJ_AGENT_NONCE_LEN 32
/* init -> host only, payload the nonce: the port's old agent is reaped */
#define AJ_AG_RESET 'R'
/* the guest init's word on an agent's start (agent_hello.h) */
#define AJ_AGENT_START_ENV "AJ_AGENT_START"
/* the fresh agent's answer ('X') to {"op":"hello","nonce":N} */
#define AJ_AGENT_HELLO_FMT "{\"errno\":0,\"hello\":\"%s\"}"

typedef enum {
	AJ_RESYNC_FILLER, /* dropping bytes until the filler's run ends */
	AJ_RESYNC_ACK,	  /* init's AJ_AG_RESET expected */
	AJ_RESYNC_HELLO,  /* the fresh agent's 'X' expected */
	AJ_RESYNC_DONE,
	AJ_RESYNC_FAILED,
} aj_resync_state;

typedef struct aj_agent_resync {
	char nonce[AJ_AGENT_NONCE_LEN + 1];
	aj_resync_state state;
	size_t zeros; /* zero bytes in a row so far (AJ_RESYNC_FILLER) */
	/* bytes after the filler not yet a whole frame */
	char hdr[AJ_AGENT_HDR + 64 + AJ_AGENT_NONCE_LEN];
	size_t have;
} aj_agent_resync;

/* A fresh random nonce (AJ_AGENT_NONCE_LEN hex digits). 0 or -errno. */
int aj_agent_nonce(char out[AJ_AGENT_NONCE_LEN + 1]);
/* r ready for a revival whose nonce is nonce. */
void aj_agent_resync_init(aj_agent_resync *r, const char *nonce);
/* Bytes read from the port. 1: in step (the hello's answer read; *used
 * bytes taken, the rest is the port's), 0: more needed (all taken),
 * -EPROTO: a frame that is not the one expected (the revival failed). */
int aj_agent_resync_feed(aj_agent_resync *r, const char *buf, size_t len, size_t *used);
/* When a port that failed fails times in a row is tried again: now plus
 * 300 ms doubled per failure, at most 30 s (never 0, tv_nsec < 1e9). */
struct timespec aj_agent_revive_at(struct timespec now, unsigned fails);

#endif
