/* SPDX-License-Identifier: MIT */
/* netd (netd.c): the network helper process of one sandbox, which serves
 * --allow (resolver, proxy), --publish and --net-log. */
#ifndef AJ_NETD_H
#define AJ_NETD_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "net_addr.h"
#include "policy.h"

/* Started after the veth exists, before the sandbox goes on; killed at
 * teardown and with agentjail. */
bool aj_netd_needed(const aj_policy *p);
int aj_netd_start(aj_net *n, const aj_policy *p, pid_t child, aj_error *err);
void aj_netd_stop(aj_net *n);

#endif
