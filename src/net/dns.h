/* SPDX-License-Identifier: MIT */
/* netd's resolver for --allow (dns.c). */
#ifndef AJ_DNS_H
#define AJ_DNS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "netd_ctx.h"

/* Answer one DNS query from the sandbox (wire format). Returns the
 * reply's length in out, or -1 to drop the query. max: 512 for UDP. */
ssize_t aj_dns_handle(aj_netd_ctx *ctx, const uint8_t *q, size_t qlen, uint8_t *out, size_t max);
/* Resolve name's IPv4 addresses through the upstream; refused addresses
 * (rebinding) are dropped. Returns how many are in addrs (network order),
 * or a negative errno; *ttl: the smallest TTL seen. */
int aj_dns_lookup4(aj_netd_ctx *ctx, const char *name, uint32_t *addrs, size_t max, unsigned *ttl);
/* Pick the upstream: --dns, else the host's first IPv4 nameserver. */
int aj_dns_upstream(aj_netd_ctx *ctx, const char *host_resolv);

#endif
