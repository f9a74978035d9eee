/* SPDX-License-Identifier: MIT */
/* The host's side of the agent protocol (agent_proto.h): sending and
 * reading frames, splitting a byte stream into frames, and reading the
 * agent's JSON answers. What the agent sends is untrusted (it runs inside
 * the sandbox, or in a guest kernel): every length is checked, and a
 * malformed answer reads as "no answer" (tests/fuzz/fuzz_agent.c). */
#ifndef AJ_AGENT_FRAME_H
#define AJ_AGENT_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_proto.h"

/* One frame to fd. 0 or -errno. */
int aj_agent_send(int fd, char type, const void *buf, size_t len);
/* One frame from fd, *buf malloc'ed and NUL-terminated (freed by the
 * caller). 1: a frame, 0: the end before a frame, -EPROTO: a frame cut
 * short or longer than AJ_AGENT_MAX_FRAME, else -errno. */
int aj_agent_recv(int fd, char *type, char **buf, uint32_t *len);
/* The same on a non-blocking fd, giving up with -ETIMEDOUT when it has
 * been idle_ms without progress (-1: never): a stopped agent can't hold
 * the caller. */
int aj_agent_send_idle(int fd, char type, const void *buf, size_t len, int idle_ms);
int aj_agent_recv_idle(int fd, char *type, char **buf, uint32_t *len, int idle_ms);

/* The whole frames at the start of buf, each given to fn (which returns
 * false to stop). Returns the bytes used (a partial frame is left for
 * more), or -EPROTO for a length over AJ_AGENT_MAX_FRAME. */
typedef bool (*aj_agent_frame_fn)(void *ctx, char type, const char *buf, size_t len);
ssize_t aj_agent_split(const char *buf, size_t len, aj_agent_frame_fn fn, void *ctx);

/* Frames for an agent's stream, sent without blocking: an agent that
 * stops reading (it holds stdin its command has not read) must never stop
 * the caller's loop, which watches the timeout. Zeroed to start. */
typedef struct aj_agent_queue {
	unsigned char *buf;
	size_t len, off, cap; /* bytes queued, sent, allocated */
} aj_agent_queue;

/* What a caller lets wait before it stops reading more input for the agent. */
#define AJ_AGENT_QUEUE_HIGH (256u << 10)

/* A frame queued; front: before every frame not yet begun, after those of
 * its type already there (signals overtake stdin, in their order). 0, or
 * -EMSGSIZE or -ENOMEM with the queue as it was: the caller must not go
 * on as if the frame were sent. */
int aj_agent_queue_put(aj_agent_queue *q, char type, const void *buf, size_t len, bool front);
/* As much as fd takes now (a socket: MSG_DONTWAIT; else fd must be
 * non-blocking). 0: all sent, -EAGAIN: some left, else -errno: the
 * stream is broken, the queue emptied. */
int aj_agent_queue_flush(aj_agent_queue *q, int fd);
static inline size_t aj_agent_queue_pending(const aj_agent_queue *q)
{
	return q->len - q->off;
}
/* At the high-water mark: the caller reads no more input for the agent. */
static inline bool aj_agent_queue_full(const aj_agent_queue *q)
{
	return aj_agent_queue_pending(q) >= AJ_AGENT_QUEUE_HIGH;
}
/* The whole queue sent within ms: 0; -ETIMEDOUT: some left; else -errno:
 * the stream broke (EPIPE: the agent is gone), the queue emptied, so a
 * port must then be given up, never handed on as healthy. */
int aj_agent_queue_finish(aj_agent_queue *q, int fd, int ms);
/* The frames not yet begun dropped (a frame cut short is kept to its end). */
void aj_agent_queue_drop_unbegun(aj_agent_queue *q);
void aj_agent_queue_free(aj_agent_queue *q);

/* The agent's answer ('X'): how the command or file operation ended. */
typedef struct aj_agent_exit {
	bool valid;	  /* a JSON object */
	int err;	  /* "errno": the agent could not do it (0: it did) */
	int exit_code;	  /* "exit" */
	int term_signal;  /* "signal" */
	char error[256];  /* "error": the agent's words for err */
	char confine[64]; /* "confine": the wall the agent could not set */
	/* "cpu_user_us", "cpu_sys_us": the CPU the command's processes used (a
	 * microVM's agent: its guest cgroup's, the agent's own left out) */
	unsigned long long cpu_user_us, cpu_sys_us;
	bool oom; /* "oom": the guest kernel's OOM killer killed the command */
} aj_agent_exit;
void aj_agent_exit_parse(const char *buf, size_t len, aj_agent_exit *x);

/* A file's stat ('T', and 'L' with "name"). type: 'f', 'd', 'l', or 'o'
 * for anything else or missing. */
typedef struct aj_agent_stat {
	char type;
	unsigned mode;
	unsigned long long size;
	long long mtime;
	char *name; /* 'L': malloc'ed, or NULL; freed by the caller */
} aj_agent_stat;
bool aj_agent_stat_parse(const char *buf, size_t len, aj_agent_stat *st);

#endif
