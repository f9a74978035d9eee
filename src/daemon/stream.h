/* SPDX-License-Identifier: MIT */
/* Streams from the supervisor (stream.c): exec output and process
 * output, to an HTTP response or WebSocket messages. */
#ifndef AJ_STREAM_H
#define AJ_STREAM_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "http.h"

/* A stream from the supervisor (fd taken): NDJSON (the HTTP
 * response's body) or frames (ws: WebSocket messages). */
int aj_stream_start(aj_req *r, int fd, bool ws);
/* Data from the client on a channel (0 stdin); eof: an empty stdin
 * message (closes the command's stdin). -1: close. */
int aj_exec_ws_receive(aj_req *r, int channel, const unsigned char *data, size_t len, bool eof);
/* Writable: send what the stream brought. Returns -1 to close, 1 when the
 * response is all written (its transaction completes). */
int aj_exec_writable(aj_req *r);
/* The connection closed: the stream is closed (which cancels a command). */
void aj_exec_detach(aj_req *r);
/* The loop's context, and the vhost whose protocols have
 * "agentjail-stream" (aj_stream_callback): where streams are adopted. */
void aj_exec_set_context(struct lws_context *ctx, struct lws_vhost *vh);
int aj_stream_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		       size_t len);

#endif
