/* SPDX-License-Identifier: MIT */
/* The network of a level-3 microVM (vmnet.c): level 1's /30, veth, nft
 * table and netd (src/net), with a tap in a network namespace of the VM's
 * own. prepare before the root is staged (its resolv.conf), setup before
 * qemu starts, teardown after it died. NULL (--net none): no NIC, and
 * every function here does nothing. */
#ifndef AJ_MV_VMNET_H
#define AJ_MV_VMNET_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"
#include "policy.h"

typedef struct aj_mv_net aj_mv_net;

int aj_mv_net_prepare(aj_mv_net **out, const aj_policy *p, aj_error *err);
int aj_mv_net_setup(aj_mv_net *v, const aj_policy *p, aj_error *err);
const char *aj_mv_net_resolv(const aj_mv_net *v); /* NULL: the default */
char *const *aj_mv_net_env(const aj_mv_net *v);	  /* the commands' extra variables */
/* netd's CA certificate (HTTPS interception), once setup ran, or NULL */
const char *aj_mv_net_ca(const aj_mv_net *v);
/* the tap's fd for qemu (-1: no NIC) and the namespace it is in */
int aj_mv_net_fds(const aj_mv_net *v, int *nsfd);
/* " aj.net=IP/30,GW" for the kernel command line, or "" */
void aj_mv_net_cmdline(const aj_mv_net *v, char *out, size_t len);
/* The agent's request that addresses a hot-plugged NIC (a snapshot's VM,
 * box.c): {"op":"net", addr, prefix, gw, resolv}; NULL without a NIC. */
json_t *aj_mv_net_req(const aj_mv_net *v);
void aj_mv_net_teardown(aj_mv_net **v);

#endif
