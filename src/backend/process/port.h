/* SPDX-License-Identifier: MIT */
/* A connection to a port inside a box (the service's ports proxy,
 * docs/api.md "Ports"). */
#ifndef AJ_PORT_H
#define AJ_PORT_H

#include "box.h"
#include "error.h"

/* A new TCP connection to port on the box's loopback address (127.0.0.1,
 * then ::1), made inside its network namespace: a connected non-blocking
 * socket (close-on-exec; loopback.h), or -ECONNREFUSED when nothing listens there,
 * another negative errno with err filled. */
int aj_box_port_connect(const aj_box *b, unsigned port, aj_error *err);

#endif
