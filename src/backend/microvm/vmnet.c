/* SPDX-License-Identifier: MIT */
/* The network of a level-3 microVM (docs/levels.md, "The network"): no NIC
 * with --net none; with --net open or --allow, level 1's network (net.c:
 * the /30, the veth, the nft table, netd's resolver, proxy and net-log)
 * with the veth's sandbox end in a network namespace of the VM's own,
 * bridged there with a tap device whose fd qemu gets (`-netdev tap,fd=3`:
 * qemu needs no CAP_NET_ADMIN and runs in that namespace). The guest's init
 * takes the sandbox's address, route and resolver from aj.net=; a VM
 * restored from its image's snapshot gets the NIC hot-plugged and its
 * agent takes them from the request aj_mv_net_req makes (op "net"). */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmnet.h"

#include "net.h"
#include "util.h"

struct aj_mv_net {
	aj_net n;
	bool prepared;
	char *resolv; /* the guest's /etc/resolv.conf */
	char **env;   /* the proxy's variables (--allow), for every command */
	int nsfd, tap;
};

int aj_mv_net_prepare(aj_mv_net **out, const aj_policy *p, aj_error *err)
{
	*out = NULL;
	if (p->net == AJ_NET_NONE)
		return 0;
	aj_mv_net *v = calloc(1, sizeof(*v));
	if (!v)
		return aj_err(err, ENOMEM, "microvm: network");
	v->nsfd = v->tap = -1;
	*out = v;
	int r = aj_net_prepare(&v->n, p, err);
	if (r < 0)
		return r;
	v->prepared = true;
	_cleanup_free_ char *host_resolv = NULL;
	if (p->net == AJ_NET_OPEN)
		(void)aj_read_file("/etc/resolv.conf", &host_resolv, NULL);
	if (!(v->resolv = aj_net_resolv_conf(&v->n, p, host_resolv)) ||
	    !(v->env = aj_net_env(&v->n, p)))
		return aj_err(err, ENOMEM, "microvm: network");
	return 0;
}

int aj_mv_net_setup(aj_mv_net *v, const aj_policy *p, aj_error *err)
{
	return v ? aj_net_setup_tap(&v->n, p, &v->nsfd, &v->tap, err) : 0;
}

const char *aj_mv_net_resolv(const aj_mv_net *v)
{
	return v ? v->resolv : NULL;
}

const char *aj_mv_net_ca(const aj_mv_net *v)
{
	return v ? v->n.ca_pem : NULL;
}

char *const *aj_mv_net_env(const aj_mv_net *v)
{
	return v ? v->env : NULL;
}

int aj_mv_net_fds(const aj_mv_net *v, int *nsfd)
{
	*nsfd = v ? v->nsfd : -1;
	return v ? v->tap : -1;
}

void aj_mv_net_cmdline(const aj_mv_net *v, char *out, size_t len)
{
	out[0] = '\0';
	if (!v || v->tap < 0)
		return;
	char ip[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN];
	uint32_t a = htonl(v->n.sandbox_ip), g = htonl(v->n.host_ip);
	inet_ntop(AF_INET, &a, ip, sizeof(ip));
	inet_ntop(AF_INET, &g, gw, sizeof(gw));
	/* the guest's eth0: its address in the /30, the gateway the host's side */
	snprintf(out, len, " aj.net=%s/30,%s", ip, gw);
}

json_t *aj_mv_net_req(const aj_mv_net *v)
{
	if (!v || v->tap < 0)
		return NULL;
	char ip[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN];
	uint32_t a = htonl(v->n.sandbox_ip), g = htonl(v->n.host_ip);
	inet_ntop(AF_INET, &a, ip, sizeof(ip));
	inet_ntop(AF_INET, &g, gw, sizeof(gw));
	/* the same /30 and gateway as aj.net= gives a booted guest's init */
	return json_pack("{s:s,s:s,s:i,s:s,s:s}", "op", "net", "addr", ip, "prefix", 30, "gw", gw,
			 "resolv", v->resolv ? v->resolv : "");
}

void aj_mv_net_teardown(aj_mv_net **vp)
{
	aj_mv_net *v = *vp;
	if (!v)
		return;
	if (v->tap >= 0)
		close(v->tap);
	if (v->nsfd >= 0)
		close(v->nsfd);
	if (v->prepared)
		aj_net_teardown(&v->n); /* netd, the veth, the nft table, the slot */
	free(v->resolv);
	aj_strv_free(v->env);
	free(v);
	*vp = NULL;
}
