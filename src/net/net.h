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
} aj_net;

/* Does p need the network stack (a veth, nftables, netd)? --net open,
 * --allow, --publish. The light `agentjail` program has none of it linked
 * (net_none.c) and hands such runs to agentjail-net (docs/performance.md). */
bool aj_net_wanted(const aj_policy *p);

/* Parent, before clone: remove what dead agentjails left, reserve an
 * address slot. Nothing to do for --net none. */
int aj_net_prepare(aj_net *n, const aj_policy *p, aj_error *err);
/* The /etc/resolv.conf text for the sandbox (malloc'ed); for --net open
 * the host's nameservers that are not refused, for --allow agentjail's
 * resolver on the gateway. */
char *aj_net_resolv_conf(const aj_net *n, const aj_policy *p, const char *host_resolv);
/* Extra environment for the command (NULL-terminated, malloc'ed): the
 * proxy variables in allow-list mode; NULL on ENOMEM. */
char **aj_net_env(const aj_net *n, const aj_policy *p);
/* Parent, after clone and before PARENT_GO: veth into the child's netns,
 * addresses, route, nft table, forwarding. */
int aj_net_setup(aj_net *n, const aj_policy *p, pid_t child, aj_error *err);
/* Remove the veth and the nft table; frees the slot. Idempotent.
 * (prepare, setup and teardown are net.c, or net_none.c in a program
 * without network support, which refuses what aj_net_wanted() says.) */
void aj_net_teardown(aj_net *n);

/* netd.c: the helper process that serves --allow (resolver, proxy),
 * --publish and --net-log. Started after the veth exists, before the
 * sandbox goes on; killed at teardown and with agentjail. */
bool aj_netd_needed(const aj_policy *p);
int aj_netd_start(aj_net *n, const aj_policy *p, pid_t child, aj_error *err);
void aj_netd_stop(aj_net *n);

/* nft.c: the per-sandbox nftables table. */
int aj_nft_build(const aj_net *n, const aj_policy *p, char **out);
int aj_nft_apply(const char *cmds, aj_error *err);
struct nft_ctx;
struct nft_ctx *aj_nft_ctx_new(void);
/* Let the sandbox connect to ip_be (network order) on ports for timeout_s
 * seconds (the allow4 set); the timeout restarts if present. */
int aj_nft_allow(struct nft_ctx *ctx, const char *table, uint32_t ip_be, const unsigned *ports,
		 size_t nports, unsigned timeout_s);
void aj_nft_delete_table(const char *table);
/* Delete tables agentjail-<PID>-* whose agentjail is dead. */
void aj_nft_sweep_stale(void);

#endif
