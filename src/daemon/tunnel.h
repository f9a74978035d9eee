/* SPDX-License-Identifier: MIT */
/* The front's half of the ports proxy (docs/api.md, "Ports"): an HTTP
 * request or a WebSocket upgrade to /v1/sandboxes/{id}/ports/{port}/...
 * becomes a tunnel to that port inside the sandbox. */
#ifndef AJ_TUNNEL_H
#define AJ_TUNNEL_H

#include <libwebsockets.h>
#include <stdbool.h>

#include "http.h"

/* path is on the ports route ("/v1/sandboxes/ID/ports" and below). */
bool aj_tunnel_route(const char *path);

/* An HTTP request on the route, its body (r->body) complete: 0 when an
 * error was answered through lws; -1 when the client's connection is the
 * tunnel's now (lws must close its side, which no longer touches it). */
int aj_tunnel_http(aj_req *r);

/* An upgrade (LWS_CALLBACK_HTTP_CONFIRM_UPGRADE; upgrade: its name), its
 * token checked: 0 when it is not on the route (lws goes on), else -1 as
 * above (a WebSocket's handshake is the sandbox's server's, relayed). */
int aj_tunnel_upgrade(struct lws *wsi, const char *upgrade);

/* The protocol of the tunnels' two sockets in the event loop (front.c's
 * "agentjail-tunnel", on the "supervisor" vhost). */
int aj_tunnel_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		       size_t len);

#endif
