/* SPDX-License-Identifier: MIT */
/* The supervisor's half of the ports proxy (docs/api.md, "Ports"): a
 * connection to a port inside a sandbox, for the front to relay. */
#ifndef AJ_PORTS_H
#define AJ_PORTS_H

#include <jansson.h>

#include "reply.h"

/* "port.connect" {"sandbox", "port"}: the sandbox's (its tenant's: else
 * 404; running: else 409), a connection to port on its loopback address
 * passed as the reply's fd; 400 for a port out of 1-65535, 502 when
 * nothing listens there, 501 for a level without it. */
void aj_op_port_connect(json_t *args, aj_reply *rep);

#endif
