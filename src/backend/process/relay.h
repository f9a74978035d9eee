/* SPDX-License-Identifier: MIT */
/* Relaying the command's stdin/stdout/stderr (pipes or a pty master) to the
 * caller. Nothing here ever blocks: a caller that stops reading our output,
 * or a command that never reads its input, only stalls its own channel, so
 * timeouts and signals are still handled on time. */
#ifndef AJ_RELAY_H
#define AJ_RELAY_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "redact.h"

#define AJ_RELAY_BUF (256 * 1024)
#define AJ_RELAY_MAX 3

typedef struct aj_chan {
	int src, dst;
	int dst_nb;	/* non-blocking descriptor for dst (own open file
			 * description, so the caller's stays as it is) */
	bool dst_small; /* no non-blocking descriptor: write PIPE_BUF at a time */
	bool input;	/* caller -> sandbox */
	bool owns;	/* close the sandbox-side fd when the channel ends */
	bool open;
	bool eof;	  /* src ended; flush what is pending, then close */
	bool splice;	  /* src and dst allow splice(2): no copy through buf */
	bool wait_out;	  /* a splice found dst full: wait for POLLOUT */
	aj_redactor *red; /* output filter, or NULL */
	char *pend;	  /* bytes read (and filtered) but not written yet */
	size_t len, off;
	char buf[AJ_RELAY_BUF];
} aj_chan;

typedef struct aj_relay {
	aj_chan ch[AJ_RELAY_MAX];
	int n;
} aj_relay;

void aj_relay_init(aj_relay *r);
/* Add a channel from src to dst. input: caller -> sandbox. owns: the relay
 * closes the sandbox-side fd when the channel ends (so the command sees EOF
 * on stdin, or EPIPE when the caller stops reading its output). */
int aj_relay_add(aj_relay *r, int src, int dst, bool input, bool owns);
/* Filter the last added (output) channel through red (owned by the caller). */
void aj_relay_set_redactor(aj_relay *r, aj_redactor *red);
/* Fill pollfds for the channels (one slot per channel). */
size_t aj_relay_pollfds(aj_relay *r, struct pollfd *pf, size_t max);
/* Act on the poll results of the slots filled by aj_relay_pollfds. */
void aj_relay_handle(aj_relay *r, const struct pollfd *pf, size_t n);
/* Any output channel still open? */
bool aj_relay_outputs_open(const aj_relay *r);
/* Output read from the sandbox that the caller has not taken yet? */
bool aj_relay_output_pending(const aj_relay *r);
/* Close every channel (and its sandbox-side fd when owned). */
void aj_relay_close(aj_relay *r);

#endif
