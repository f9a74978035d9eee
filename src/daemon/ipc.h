/* SPDX-License-Identifier: MIT */
/* The message protocol between the service's two processes (docs/api.md,
 * "Two processes"): the unprivileged front (HTTP, WebSocket, JSON) asks the
 * privileged supervisor for operations on a SOCK_SEQPACKET socketpair.
 *
 * One message is one datagram: a fixed header, then `len` payload bytes
 * (a JSON object) inline, or, when larger than AJ_IPC_INLINE_MAX, in a
 * sealed memfd passed with the message. A reply may also carry one object
 * fd (an exec stream, a file). The receiver checks everything: magic,
 * version, type, op name, flags, lengths, fd count and kind; the supervisor
 * takes the front for compromised. No I/O in the decoder: it is fuzzed. */
#ifndef AJ_IPC_H
#define AJ_IPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define AJ_IPC_MAGIC 0x504a4a41u /* "AJJP" */
#define AJ_IPC_VERSION 1
#define AJ_IPC_OP_MAX 24	       /* op name, with its NUL */
#define AJ_IPC_INLINE_MAX (48u * 1024) /* payload bytes in the datagram itself */
#define AJ_IPC_PAYLOAD_MAX (4u << 20)  /* payload bytes in a memfd */
#define AJ_IPC_JSON_DEPTH 32	       /* nesting of a payload's JSON */
#define AJ_IPC_MAX_FDS 2	       /* a payload memfd and an object fd */
#define AJ_IPC_MAX_INFLIGHT 256	       /* requests the supervisor works on at once */

enum aj_ipc_type { AJ_IPC_REQUEST = 1, AJ_IPC_REPLY = 2 };

enum aj_ipc_flags {
	AJ_IPC_F_PAYLOAD_FD = 1u, /* the payload is in a memfd (the first fd) */
	AJ_IPC_F_OBJECT_FD = 2u,  /* replies only: an fd for the request (the last fd) */
};

typedef struct aj_ipc_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;		/* enum aj_ipc_type */
	uint32_t id;		/* chosen by the front, echoed by the reply */
	uint32_t flags;		/* enum aj_ipc_flags */
	int32_t status;		/* reply: an HTTP status; request: 0 */
	uint32_t len;		/* payload bytes */
	char op[AJ_IPC_OP_MAX]; /* request: [a-z0-9._], NUL-terminated; reply: "" */
} aj_ipc_hdr;

/* A decoded message: the header and its payload (owned) and fds (owned). */
typedef struct aj_ipc_msg {
	aj_ipc_hdr h;
	char *payload; /* NUL-terminated; NULL when len is 0 */
	size_t len;
	int object_fd; /* -1 when none */
} aj_ipc_msg;

/* Check one received datagram (buf, n bytes) and the fds that came with it
 * (taken: kept in out or closed, whatever the result). expect: the type the
 * receiver accepts. The payload memfd, if any, is read here (bounded). The
 * id is in out->h.id as soon as the header's size is right, so that a reply
 * can name the refused request. Returns 0, or -EBADMSG/-EMSGSIZE/... with
 * err saying what was wrong. */
int aj_ipc_decode(const void *buf, size_t n, int *fds, size_t nfds, int expect, aj_ipc_msg *out,
		  aj_error *err);
void aj_ipc_msg_free(aj_ipc_msg *m);

/* The payload as a JSON object (bounded depth; NULL for an empty payload is
 * {}). Returns NULL with err filled when it is not one. */
json_t *aj_ipc_json(const aj_ipc_msg *m, aj_error *err);

/* Send one message: header fields, a JSON payload (may be NULL: none) and an
 * object fd (-1: none; replies only). Large payloads go in a memfd. Returns 0
 * or a negative errno. Thread-safe on a SOCK_SEQPACKET socket. */
int aj_ipc_send(int sock, int type, uint32_t id, const char *op, int status, const json_t *payload,
		int object_fd);
/* Receive and decode one message (blocking). Returns 0, -EPIPE at the end of
 * the peer, or another negative errno (a refused message: out->h.id may
 * still name it when out->h.magic is set). */
int aj_ipc_recv(int sock, int expect, aj_ipc_msg *out, aj_error *err);

/* Frames of an exec stream (the object fd of an exec reply): [u32 length,
 * host order][channel][length - 1 data bytes]. Channels are the WebSocket's:
 * 0 stdin (front to supervisor; an empty one is EOF), 1 stdout, 2 stderr,
 * 3 status, 4 resize (a JSON {"Width", "Height"}). */
#define AJ_IPC_FRAME_MAX (64u * 1024 + 1)

#endif
