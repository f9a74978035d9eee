/* SPDX-License-Identifier: MIT */
/* The --allow list: which names, addresses and ports a sandbox in
 * allow-list mode may reach. */
#ifndef AJ_ALLOW_H
#define AJ_ALLOW_H

#include <stdbool.h>
#include <stddef.h>

#include "hostname.h"
#include "policy.h"

/* Is the canonical name allowed on port (0: on any port)? */
bool aj_allow_name(const aj_policy *p, const char *name, unsigned port);
/* The ports allowed for name (deduplicated); returns how many. */
size_t aj_allow_ports(const aj_policy *p, const char *name, unsigned *ports, size_t max);
/* Is the address allowed on port by a CIDR entry (and not refused)? */
bool aj_allow_addr(const aj_policy *p, int family, const void *addr, unsigned port);

#endif
