/* SPDX-License-Identifier: MIT */
/* A client's TCP connection relayed to a server inside a sandbox by the
 * sandbox's agent, op "connect" (agent.c: 'T' once connected, the client's
 * bytes as 'I' frames, the server's as 'O', 'S' ends it, 'X' the answer),
 * and the listeners of `run --publish` that start such relays: what
 * levels 2 and 3 share (agent_relay.c; docs/levels.md). */
#ifndef AJ_AGENT_RELAY_H
#define AJ_AGENT_RELAY_H

#include <stdbool.h>

#include "agent_frame.h"
#include "error.h"
#include "policy.h"

/* The service's ports proxy at levels 2 and 3: at most this many
 * connections of one sandbox at once (more: 503 at once, never a wait),
 * each ended after AJ_PROXY_IDLE_MS without a byte either way (as is each
 * connection of `run --publish` at these levels). */
#define AJ_PROXY_MAX 2
#define AJ_PROXY_IDLE_MS (10ULL * 60 * 1000)
/* how long the agent has to answer a connect, and to answer once told to end */
#define AJ_AGENT_CONNECT_MS 10000
#define AJ_AGENT_DRAIN_MS 5000ULL

typedef struct aj_agent_relay {
	int client;		    /* the client's socket (blocking) */
	int from, to;		    /* the agent's frames: read, written (one fd at level 3) */
	unsigned long long idle_ms; /* ended after so long without a byte either way (0: never) */
	/* a client that takes none of the server's bytes for so long is
	 * dropped, as one that hung up; an agent that takes none of the
	 * client's for so long and a margin (at most AJ_AGENT_DRAIN_MS) is given up (broken); the
	 * agent drops a server that takes none for so long (0:
	 * aj_relay_stall_ms(), stall.h) */
	unsigned long long stall_ms;
	bool (*stop)(void *ctx); /* asked every 500 ms at most: true ends the relay */
	void *ctx;
	/* bytes from the agent not yet handled (malloc'ed; may be given in,
	 * e.g. read with level 3's 'T' frame; the caller's to free after) */
	char *ibuf;
	size_t ilen, icap;
	/* out */
	bool answered;	 /* the agent's answer ('X') was read: it said its last */
	bool broken;	 /* the agent's stream ended, broke or stalled before its answer,
			  * or was left in the middle of a frame: not to be reused */
	aj_agent_exit x; /* that answer (a connect refused) */
} aj_agent_relay;

/* Ask the agent for port on the sandbox's loopback: 0 once it connected,
 * -ECONNREFUSED when nothing listens there, -ETIMEDOUT, -EPIPE (the
 * agent's stream ended; r->answered false), or the agent's errno (r->x). */
int aj_agent_relay_connect(aj_agent_relay *r, unsigned port);
/* The bytes both ways until the agent answers, the client hangs up or
 * stalls (the agent told to end the server's connection), idle_ms pass,
 * the agent stalls, or stop. Never blocks in a write nor raises SIGPIPE;
 * back-pressure both ways: while bytes wait for one side, nothing more is
 * read from the other. */
void aj_agent_relay_run(aj_agent_relay *r);

/* --publish HP:PORT of a one-shot run: listeners on the host's 127.0.0.1,
 * each connection relayed by an agent stream of the level's (ops), ended
 * after AJ_PROXY_IDLE_MS without a byte either way. */
typedef struct aj_publish_ops {
	/* an agent stream for one connection in slot (r->from, r->to), or
	 * negative: the connection is closed */
	int (*open)(void *ctx, unsigned slot, aj_agent_relay *r);
	/* the connection is over (r->answered: its agent said its last) */
	void (*close)(void *ctx, unsigned slot, const aj_agent_relay *r);
	/* the run ends: a relay blocked on slot's agent stream wakes */
	void (*wake)(void *ctx, unsigned slot);
	unsigned slots; /* connections at once (at most AJ_PUBLISH_SLOTS) */
	void *ctx;
} aj_publish_ops;
#define AJ_PUBLISH_SLOTS 8

typedef struct aj_publisher aj_publisher;
/* The listeners, before the sandbox starts (a port in use: 125); *out
 * stays NULL without --publish. */
int aj_publish_listen(aj_publisher **out, const aj_policy *p, aj_error *err);
/* Connections served once the sandbox's agent can be reached. */
int aj_publish_start(aj_publisher *pb, const aj_publish_ops *ops, aj_error *err);
/* Listeners closed, connections ended (before the sandbox's teardown). */
void aj_publish_stop(aj_publisher **pb);

#endif
