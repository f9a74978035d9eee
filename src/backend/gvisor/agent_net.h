/* SPDX-License-Identifier: MIT */
/* The agent's op "net" (agent_net.c): a restored microVM's hot-plugged NIC
 * addressed as a booted guest's init does it from aj.net=. */
#ifndef AJ_AGENT_NET_H
#define AJ_AGENT_NET_H

#include <jansson.h>

/* q: {"addr", "prefix", "gw", "resolv"}. 0, or the errno of what failed. */
int aj_agent_net(json_t *q);

#endif
