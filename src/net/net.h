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
#include "net_addr.h"
#include "policy.h"

/* Parent, before clone: remove what dead agentjails left, reserve an
 * address slot. Nothing to do for --net none. */
int aj_net_prepare(aj_net *n, const aj_policy *p, aj_error *err);
/* Parent, after clone and before PARENT_GO: veth into the child's netns,
 * addresses, route, nft table, forwarding. */
int aj_net_setup(aj_net *n, const aj_policy *p, pid_t child, aj_error *err);
/* The sandbox side's address, link state and default route again, in the
 * network namespace nsfd whose eth0 lost them (gVisor's runsc takes them
 * off eth0 into its own netstack, and a `runsc restore` reads them anew). */
int aj_net_readdress(const aj_net *n, int nsfd, aj_error *err);
/* Level 3 (a microVM): the nft table and the veth as aj_net_setup, its
 * eth0 in a new network namespace (*nsfd) bridged there with a tap device
 * (*tap, for the VMM: `-netdev tap,fd=`), and netd. The guest takes the
 * sandbox's address itself. Nothing to do (fds -1) for --net none. */
int aj_net_setup_tap(aj_net *n, const aj_policy *p, int *nsfd, int *tap, aj_error *err);
/* Remove the veth and the nft table; frees the slot. Idempotent.
 * (prepare, setup and teardown are net.c, or net_none.c in a program
 * without network support, which refuses what aj_net_wanted() says.) */
void aj_net_teardown(aj_net *n);

/* Remove the host-side links and nft tables of agentjails that are gone
 * (what aj_net_prepare sweeps; `oci delete` of a container whose monitor
 * was killed). */
void aj_net_sweep(void);

/* Join the network namespace at path (`oci create`: an engine's, e.g.
 * Podman's) and wall it: an nftables table "agentjail-oci"
 * dropping everything but the loopback, in and out, unless unwalled (the
 * sandbox, in a user namespace of its own, has no CAP_NET_ADMIN over it).
 * The loopback is
 * brought up. The caller must be one thread. 0, or a negative errno. */
int aj_net_join_netns(const char *path, bool unwalled, aj_error *err);

#endif
