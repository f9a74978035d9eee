/* SPDX-License-Identifier: MIT */
/* The front's requests to the supervisor (front_call.c), over the
 * protocol of ipc.h. */
#ifndef AJ_FRONT_CALL_H
#define AJ_FRONT_CALL_H

#include <jansson.h>

#include "http.h"

/* done runs on the service thread
 * with the reply (status, JSON object taken, fd taken or -1); not at all
 * when the request went away first. */
typedef void (*aj_call_done)(aj_req *r, int status, json_t *reply, int fd);
/* Send op with args (consumed; "peer" added). Returns 0, or answers 503
 * and returns a negative errno. */
int aj_front_call(aj_req *r, const char *op, json_t *args, aj_call_done done);
/* The usual done: answer the reply as JSON. */
void aj_front_reply(aj_req *r, int status, json_t *reply, int fd);
/* Forward: op with args, the reply as the answer. */
void aj_front_forward(aj_req *r, const char *op, json_t *args);
/* The request is gone: its reply, when it comes, is dropped. */
void aj_front_cancel(aj_req *r);
/* The supervisor's socket (before the first call). */
void aj_front_call_init(int sock);
/* Read one reply from the supervisor and hand it to its call; -1 when the
 * supervisor is gone. */
int aj_front_receive(void);

#endif
