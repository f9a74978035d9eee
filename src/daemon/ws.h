/* SPDX-License-Identifier: MIT */
/* WebSocket exec (ws.c). */
#ifndef AJ_WS_H
#define AJ_WS_H

#include <libwebsockets.h>

#include "http.h"

/* The WebSocket callbacks of the protocol callback (conn.c). */
int aj_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, aj_req *r, void *in,
		   size_t len);

#endif
