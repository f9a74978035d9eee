/* SPDX-License-Identifier: MIT */
/* The front's requests to the supervisor (docs/api.md, "Two processes"): a
 * request is sent with an id; front.c's event loop reads each reply when it
 * comes (aj_front_receive) and hands it to its request. */
#include "front_call.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "ipc.h"
#include "util.h"

/* A request to the supervisor waiting for its reply. The front is one
 * thread: the list needs no lock. */
typedef struct aj_call {
	uint32_t id;
	aj_req *r; /* NULL: the request went away */
	aj_call_done done;
	struct aj_call *next;
} aj_call;

static aj_call *calls;
static uint32_t next_id;
static int ipc = -1;

void aj_front_call_init(int sock)
{
	ipc = sock;
}

/* The call of this id, out of the list (NULL: none). */
static aj_call *take_call(uint32_t id)
{
	for (aj_call **pp = &calls; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			aj_call *c = *pp;
			*pp = c->next;
			return c;
		}
	return NULL;
}

int aj_front_call(aj_req *r, const char *op, json_t *args, aj_call_done done)
{
	if (!args)
		args = json_object();
	json_object_set_new(args, "peer", json_string(r->peer));
	/* who: the supervisor decides from this (tenant.h); a WebSocket's
	 * request was cleared after its upgrade was checked: checked again */
	bool probe = !strcmp(op, "health") || !strcmp(op, "ready"); /* no token */
	if (r->remote && !probe && !r->token[0] && !aj_http_token_ok(r)) {
		json_decref(args);
		aj_http_error(r, 401, "unauthorized", "a valid bearer token is required");
		return -EACCES;
	}
	json_object_set_new(args, "auth",
			    r->remote ? json_pack("{s:s}", "token", r->token)
				      : json_pack("{s:b}", "local", 1));
	aj_call *c = calloc(1, sizeof(*c));
	int e = c ? 0 : -ENOMEM;
	if (c) {
		c->r = r;
		c->done = done;
		c->id = ++next_id;
		c->next = calls;
		calls = c;
		r->call = c;
		e = aj_ipc_send(ipc, AJ_IPC_REQUEST, c->id, op, 0, args, -1);
		if (e < 0) { /* no reply will come: out of the list */
			free(take_call(c->id));
			r->call = NULL;
		}
	}
	json_decref(args);
	if (e == -EMSGSIZE)
		aj_http_error(r, 413, "body_too_large", "the request is too large");
	else if (e < 0)
		aj_http_error(r, 503, "unavailable", "the supervisor does not answer: %s",
			      strerror(-e));
	return e;
}

void aj_front_reply(aj_req *r, int status, json_t *reply, int fd)
{
	if (fd >= 0)
		close(fd);
	aj_http_json(r, status, reply);
}

void aj_front_forward(aj_req *r, const char *op, json_t *args)
{
	aj_front_call(r, op, args, aj_front_reply);
}

void aj_front_cancel(aj_req *r)
{
	if (r->call)
		r->call->r = NULL; /* its reply is dropped */
	r->call = NULL;
}

int aj_front_receive(void)
{
	aj_ipc_msg m;
	aj_error err;
	aj_err_clear(&err);
	int e = aj_ipc_recv(ipc, AJ_IPC_REPLY, &m, &err);
	if (e == -EPIPE || e == -ECONNRESET || e == -EBADF)
		return -1;
	if (e < 0) {
		aj_log("error", "agentjail serve (front): ", "%s", err.msg);
		return 0;
	}
	json_t *o = aj_ipc_json(&m, &err);
	aj_call *c = take_call(m.h.id);
	if (c && c->r) { /* the request is still there: it takes reply and fd */
		c->r->call = NULL;
		c->done(c->r, o ? m.h.status : 502,
			o ? o
			  : json_pack("{s:{s:s, s:s}}", "error", "code", "bad_gateway", "message",
				      err.msg),
			m.object_fd);
		m.object_fd = -1;
		o = NULL;
	}
	free(c);
	json_decref(o);
	aj_ipc_msg_free(&m);
	return 0;
}
