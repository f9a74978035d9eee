/* SPDX-License-Identifier: MIT */
/* Network policy that needs no network stack (net_addr.c, linked by every
 * program): the sandbox's network state, the refused ranges, the sandbox's
 * resolv.conf and proxy environment. */
#ifndef AJ_NET_ADDR_H
#define AJ_NET_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

/* Per-sandbox /30 pool: 10.200.0.0/16, slot S gets 10.200.0.0 + 4*S:
 * .1 host side (gateway), .2 the sandbox. */
#define AJ_NET_POOL 0x0ac80000u /* 10.200.0.0 */
#define AJ_NET_SLOTS 16384u
/* agentjail's HTTP(S) proxy for --allow, on the gateway address */
#define AJ_PROXY_PORT 3128
/* nflog groups for --net-log: AJ_NFLOG_BASE + slot */
#define AJ_NFLOG_BASE 16384u

/* The ranges every sandbox is refused, whatever its mode (IPv4 and IPv6). */
extern const char *const aj_net_refused[];
extern const size_t aj_net_n_refused;
/* Is addr (AF_INET/AF_INET6) in the refused ranges or in deny[]? */
bool aj_net_is_refused(const aj_policy *p, int family, const void *addr);

typedef struct aj_net {
	bool active; /* --net open: resources exist or are reserved */
	int slot_fd; /* abstract unix socket holding the /30 */
	unsigned slot;
	uint32_t host_ip, sandbox_ip; /* host byte order */
	char host_if[16];	      /* host side of the veth: aj<PID>n<SLOT> */
	char table[64];		      /* nftables table: inet agentjail-<PID>-<SLOT> */
	bool link_made, table_made;
	unsigned nflog_group; /* --net-log with a veth: nft log group, else 0 */
	pid_t netd;	      /* the network helper (netd.c), 0 if none */
	int netd_stop;	      /* closing it asks netd to finish its log and exit */
	char *ca_pem;	      /* netd's CA certificate (HTTPS interception), or NULL */
} aj_net;

/* Does p need the network stack (a veth, nftables, netd)? --net open,
 * --allow, --publish. The light `agentjail` program has none of it linked
 * (net_none.c) and hands such runs to agentjail-net (docs/performance.md). */
bool aj_net_wanted(const aj_policy *p);

/* The /etc/resolv.conf text for the sandbox (malloc'ed); for --net open
 * the host's nameservers that are not refused, for --allow agentjail's
 * resolver on the gateway. */
char *aj_net_resolv_conf(const aj_net *n, const aj_policy *p, const char *host_resolv);
/* Extra environment for the command (NULL-terminated, malloc'ed): the
 * proxy variables in allow-list mode; NULL on ENOMEM. */
char **aj_net_env(const aj_net *n, const aj_policy *p);

/* Does p make netd intercept HTTPS (a secret scoped to hosts or
 * --inspect, with --allow or --net open, at levels 1 to 3)? The sandbox then trusts netd's CA
 * (AJ_NET_CA_BUNDLE). */
bool aj_net_tls_wanted(const aj_policy *p);
/* Does netd run the HTTP(S) proxy: --allow, or --net open with scoped
 * secrets or --inspect (proxy variables set inside)? */
bool aj_net_proxied(const aj_policy *p);
/* the sandbox's CA bundle: the root's own with netd's CA added */
#define AJ_NET_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

#endif
