/* SPDX-License-Identifier: MIT */
/* The agent's ops "identity" and "net" (agent_net.c): a restored microVM's
 * own identity, and its hot-plugged NIC addressed as a booted guest's init
 * does it from aj.net=, only once the VM has its own identity. */
#ifndef AJ_AGENT_NET_H
#define AJ_AGENT_NET_H

#include <jansson.h>

/* q: {"seed" (lowercase hex, 16 to 64 bytes), "hostname", "sec", "nsec"}: the
 * entropy mixed in, the clock and hostname set. 0, or the errno of what
 * failed (EINVAL: a field missing or bad). */
int aj_agent_identity(json_t *q);
/* q: {"addr", "prefix", "gw", "resolv"} and the identity's fields, taken
 * first: a request without them is refused (EINVAL) and nothing is done.
 * 0, or the errno of what failed. */
int aj_agent_net(json_t *q);

#endif
