/* SPDX-License-Identifier: MIT */
/* Sandbox networking: --net none (loopback only) and --net open (a veth
 * pair, NAT and an nftables table of agentjail's own that always refuses
 * the host, private, link-local, multicast and reserved ranges). */
#ifndef AJ_NET_H
#define AJ_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "policy.h"

/* Per-sandbox /30 pool: 10.200.0.0/16, slot S gets 10.200.0.0 + 4*S:
 * .1 host side (gateway), .2 the sandbox. */
#define AJ_NET_POOL 0x0ac80000u /* 10.200.0.0 */
#define AJ_NET_SLOTS 16384u

/* Parse "ADDR/PREFIX" (or a bare address: /32, /128) into c; the host bits
 * are cleared. Returns 0 or -EINVAL. */
int aj_cidr_parse(const char *s, aj_cidr *c);
/* Canonical "ADDR/PREFIX" text. */
void aj_cidr_format(const aj_cidr *c, char *buf, size_t len);
bool aj_cidr_contains(const aj_cidr *c, int family, const void *addr);

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
} aj_net;

/* Parent, before clone: remove what dead agentjails left, reserve an
 * address slot. Nothing to do for --net none. */
int aj_net_prepare(aj_net *n, const aj_policy *p, aj_error *err);
/* The /etc/resolv.conf text for the sandbox (malloc'ed); for --net open
 * the host's nameservers that are not refused. */
char *aj_net_resolv_conf(const aj_policy *p, const char *host_resolv);
/* Parent, after clone and before PARENT_GO: veth into the child's netns,
 * addresses, route, nft table, forwarding. */
int aj_net_setup(aj_net *n, const aj_policy *p, pid_t child, aj_error *err);
/* Remove the veth and the nft table; frees the slot. Idempotent. */
void aj_net_teardown(aj_net *n);

/* nft.c: the per-sandbox nftables table. */
int aj_nft_build(const aj_net *n, const aj_policy *p, char **out);
int aj_nft_apply(const char *cmds, aj_error *err);
void aj_nft_delete_table(const char *table);
/* Delete tables agentjail-<PID>-* whose agentjail is dead. */
void aj_nft_sweep_stale(void);

#endif
