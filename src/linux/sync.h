/* SPDX-License-Identifier: MIT */
/* Messages between agentjail and its sandbox over a SOCK_SEQPACKET pair,
 * carrying structured errors and file descriptors (SCM_RIGHTS). */
#ifndef AJ_SYNC_H
#define AJ_SYNC_H

#include <stddef.h>

#include "error.h"

#define AJ_SYNC_MAX_FDS 64

enum aj_msg_type {
	AJ_MSG_CHILD_READY = 1, /* child: namespaces created, please map ids */
	AJ_MSG_PARENT_GO,	/* parent: ids mapped (the cgroup comes later) */
	AJ_MSG_SETUP_DONE,	/* child: root built; may carry a pty master fd */
	AJ_MSG_ERROR,		/* child: setup or exec failed (err filled) */
	AJ_MSG_EXIT,		/* init: command ended (status/signal filled) */
	AJ_MSG_STARTED,		/* init: the command was executed */
	AJ_MSG_EXEC,		/* to a persistent init: start a command (fds: see init.h) */
	AJ_MSG_SIGNAL,		/* to a persistent init: signal one command's process group */
	AJ_MSG_CGROUP_DONE,	/* parent: the child is in its cgroups (sent after
				 * PARENT_GO, while the child builds its root) */
};

/* AJ_MSG_EXEC: status holds flags */
#define AJ_EXEC_TTY 1	      /* stdin is a terminal: make it the controlling one */
#define AJ_EXEC_NO_STDIN 2    /* no stdin fd: the command reads EOF */
#define AJ_EXEC_SPEC_INLINE 4 /* the spec follows the message, no memfd */
#define AJ_EXEC_USER 8	      /* run as uid/gid (0-65533 inside), not the policy's */

typedef struct aj_msg {
	int type;
	int status;   /* AJ_MSG_EXIT: exit status or 0 */
	int signal;   /* AJ_MSG_EXIT: terminating signal or 0 */
	aj_error err; /* AJ_MSG_ERROR */
	int argc;     /* AJ_MSG_EXEC: strings of the command line, then */
	int envc;     /* of the environment, in the spec (init.h) */
	int uid, gid; /* AJ_MSG_EXEC with AJ_EXEC_USER: the command's ids */
} aj_msg;

/* The largest spec sent in the message itself: with it, one page (a usual
 * command line and environment take a few hundred bytes). */
#define AJ_EXEC_INLINE_MAX (4096 - sizeof(aj_msg))
/* Send msg with n fds (may be 0). Returns 0 or -errno. */
int aj_sync_send(int sock, const aj_msg *msg, const int *fds, size_t n);
/* Receive one message; received fds (CLOEXEC) go to fds[*n] (max cap).
 * Returns 0, -EPIPE on EOF, or -errno. */
int aj_sync_recv(int sock, aj_msg *msg, int *fds, size_t cap, size_t *n);
/* The same for a message of any fixed size len (both ends agree on it). */
int aj_sync_send_buf(int sock, const void *buf, size_t len, const int *fds, size_t n);
int aj_sync_recv_buf(int sock, void *buf, size_t len, int *fds, size_t cap, size_t *n);
/* msg, then len more bytes, in one message (-EAGAIN when the socket is
 * full: never waits). */
int aj_sync_send_more(int sock, const aj_msg *msg, const void *more, size_t len, const int *fds,
		      size_t n);
/* Two messages in one call (one wake-up of the reader). */
int aj_sync_send_two(int sock, const aj_msg *a, const aj_msg *b);
/* A message of at least min and at most len bytes; its size in *got. */
int aj_sync_recv_upto(int sock, void *buf, size_t min, size_t len, size_t *got, int *fds,
		      size_t cap, size_t *n);
/* Child side helpers: report an error to the parent. */
void aj_sync_send_error(int sock, const aj_error *err);

#endif
