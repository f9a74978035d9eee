/* SPDX-License-Identifier: MIT */
/* One connection of the front: the libwebsockets protocol callback
 * (conn.c) of HTTP requests and WebSocket exec. */
#ifndef AJ_CONN_H
#define AJ_CONN_H

#include <libwebsockets.h>

int aj_http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		     size_t len);

#endif
