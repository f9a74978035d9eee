/* SPDX-License-Identifier: MIT */
/* The network setup of a program linked without the network stack (the
 * light `agentjail`: no libmnl, libnftables, ldns, http-parser at start).
 * --net none needs nothing here; a policy that wants more is refused with
 * an error, which the CLI never reaches: it hands such a run to
 * agentjail-net first (src/cli/helper.c). */
#include "net.h"

#include <errno.h>
#include <string.h>

int aj_net_prepare(aj_net *n, const aj_policy *p, aj_error *err)
{
	memset(n, 0, sizeof(*n));
	n->slot_fd = -1;
	if (!aj_net_wanted(p))
		return 0;
	aj_err(err, ENOTSUP,
	       "this program has no network support (--net open, --allow, --publish)");
	aj_err_hint(err, "use agentjail-net, installed next to agentjail");
	return -ENOTSUP;
}

int aj_net_setup(aj_net *n, const aj_policy *p, pid_t child, aj_error *err)
{
	(void)n;
	(void)child;
	if (!aj_net_wanted(p))
		return 0;
	return aj_err(err, ENOTSUP, "this program has no network support");
}

int aj_net_setup_tap(aj_net *n, const aj_policy *p, int *nsfd, int *tap, aj_error *err)
{
	(void)n;
	*nsfd = *tap = -1;
	if (!aj_net_wanted(p))
		return 0;
	return aj_err(err, ENOTSUP, "this program has no network support");
}

int aj_net_readdress(const aj_net *n, int nsfd, aj_error *err)
{
	(void)nsfd;
	return n->active ? aj_err(err, ENOTSUP, "this program has no network support") : 0;
}

void aj_net_sweep(void)
{
	/* no sandbox of this program has a veth or an nft table */
}

void aj_net_teardown(aj_net *n)
{
	n->active = false;
}

int aj_net_join_netns(const char *path, bool unwalled, aj_error *err)
{
	(void)unwalled;
	aj_err(err, ENOTSUP, "this program cannot wall the network namespace %s", path);
	aj_err_hint(err, "use agentjail-net, installed next to agentjail");
	return -ENOTSUP;
}
