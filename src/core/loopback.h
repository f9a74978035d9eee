/* SPDX-License-Identifier: MIT */
/* A TCP connection to a port on the loopback address of the calling
 * thread's network namespace (loopback.c): the ports proxy's last step at
 * every level, made by level 1 in the sandbox's namespace (port.c) and by
 * the sandbox's agent at levels 2 and 3 (agent.c, op "connect").
 * Standalone (libc only): the agent is linked statically with it. */
#ifndef AJ_LOOPBACK_H
#define AJ_LOOPBACK_H

#include <stdbool.h>

/* How long a connect may wait (a listener whose backlog is full). */
#define AJ_LOOPBACK_CONNECT_TIMEOUT_S 5

/* 127.0.0.1:port, else [::1]:port when nothing listens on the first (a
 * server on ::1 only): the connected socket (close-on-exec; non-blocking
 * when nonblock), or -ECONNREFUSED when nothing listens on either, or
 * another negative errno (-ETIMEDOUT after AJ_LOOPBACK_CONNECT_TIMEOUT_S). */
int aj_loopback_connect(unsigned port, bool nonblock);

#endif
