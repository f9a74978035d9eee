/* SPDX-License-Identifier: MIT */
/* Network policy that needs no network stack: the refused ranges, the sandbox's resolv.conf and
 * proxy environment. Linked by every program (the light `agentjail` too); the setup itself is in
 * net.c. */
#include "net_addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* Always refused, whatever the mode. 127/8 is the host's loopback (the
 * sandbox's own loopback never leaves it). */
const char *const aj_net_refused[] = {
    "0.0.0.0/8",	"10.0.0.0/8",	 "100.64.0.0/10", "127.0.0.0/8",
    "169.254.0.0/16",	"172.16.0.0/12", "192.0.0.0/24",  "192.168.0.0/16",
    "198.18.0.0/15",	"224.0.0.0/4",	 "240.0.0.0/4",	  "255.255.255.255/32",
    "168.63.129.16/32", /* Azure's WireServer (metadata, agent channel) */
    "::/128",		"::1/128",	 "::ffff:0:0/96", "64:ff9b::/96",
    "fc00::/7",		"fe80::/10",	 "ff00::/8",
};
const size_t aj_net_n_refused = AJ_ARRAY_SIZE(aj_net_refused);

bool aj_net_is_refused(const aj_policy *p, int family, const void *addr)
{
	for (size_t i = 0; i < aj_net_n_refused; i++) {
		aj_cidr c;
		if (aj_cidr_parse(aj_net_refused[i], &c) == 0 && aj_cidr_contains(&c, family, addr))
			return true;
	}
	for (size_t i = 0; p && i < p->n_deny; i++)
		if (aj_cidr_contains(&p->deny[i], family, addr))
			return true;
	return false;
}

char *aj_net_resolv_conf(const aj_net *n, const aj_policy *p, const char *host_resolv)
{
	if (p->net == AJ_NET_ALLOW) {
		char gw[INET_ADDRSTRLEN];
		uint32_t be = htonl(n->host_ip);
		inet_ntop(AF_INET, &be, gw, sizeof(gw));
		return aj_asprintf("# agentjail: its resolver answers only for --allow names\n"
				   "nameserver %s\noptions timeout:2 attempts:2\n",
				   gw);
	}
	if (p->net != AJ_NET_OPEN)
		return strdup("# agentjail: this sandbox has no network (loopback only)\n"
			      "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
	char out[512] = "# agentjail: the host's nameservers outside the refused ranges\n";
	int found = 0;
	for (const char *l = host_resolv; l && *l && found < 3;) {
		const char *nl = strchrnul(l, '\n');
		char line[256], addr[64];
		size_t len = (size_t)(nl - l);
		if (len < sizeof(line)) {
			memcpy(line, l, len);
			line[len] = '\0';
		} else {
			line[0] = '\0';
		}
		l = *nl ? nl + 1 : nl;
		unsigned char a[4];
		if (sscanf(line, " nameserver %63s", addr) == 1 &&
		    inet_pton(AF_INET, addr, a) == 1 && !aj_net_is_refused(p, AF_INET, a)) {
			size_t o = strlen(out);
			snprintf(out + o, sizeof(out) - o, "nameserver %s\n", addr);
			found++;
		}
	}
	if (found == 0)
		return strdup(
		    "# agentjail: none of the host's nameservers is reachable from the\n"
		    "# sandbox (they are in refused ranges, e.g. a local stub resolver):\n"
		    "# name resolution is not available; use addresses.\n"
		    "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
	size_t o = strlen(out);
	snprintf(out + o, sizeof(out) - o, "options timeout:2 attempts:2\n");
	return strdup(out);
}

char **aj_net_env(const aj_net *n, const aj_policy *p)
{
	const char *names[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"};
	/* what tools read for their CA bundle (node: extra certificates) */
	static const char *const ca_vars[] = {"SSL_CERT_FILE",	    "NODE_EXTRA_CA_CERTS",
					      "REQUESTS_CA_BUNDLE", "PIP_CERT",
					      "CURL_CA_BUNDLE",	    "GIT_SSL_CAINFO"};
	char **v = calloc(AJ_ARRAY_SIZE(names) + AJ_ARRAY_SIZE(ca_vars) + 3, sizeof(char *));
	if (!v || !aj_net_proxied(p))
		return v;
	char gw[INET_ADDRSTRLEN];
	uint32_t be = htonl(n->host_ip);
	inet_ntop(AF_INET, &be, gw, sizeof(gw));
	size_t k = 0;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(names); i++)
		v[k++] = aj_asprintf("%s=http://%s:%d", names[i], gw, AJ_PROXY_PORT);
	v[k++] = strdup("no_proxy=localhost,127.0.0.1,::1");
	v[k++] = strdup("NO_PROXY=localhost,127.0.0.1,::1");
	for (size_t i = 0; aj_net_tls_wanted(p) && i < AJ_ARRAY_SIZE(ca_vars); i++)
		v[k++] = aj_asprintf("%s=%s", ca_vars[i], AJ_NET_CA_BUNDLE);
	for (size_t i = 0; i < k; i++)
		if (!v[i]) {
			aj_strv_free(v);
			return NULL;
		}
	return v;
}

bool aj_net_tls_wanted(const aj_policy *p)
{
	/* levels 1 to 3 put netd's CA into the sandbox's trust store (level
	 * 1: mount.c, 2: the bundle's bind, 3: the guest's init); level 4
	 * has no network */
	if (p->isolation != AJ_ISO_PROCESS && p->isolation != AJ_ISO_GVISOR &&
	    p->isolation != AJ_ISO_MICROVM)
		return false;
	if (p->net == AJ_NET_NONE)
		return false;
	for (size_t i = 0; i < p->n_secrets; i++)
		if (p->secrets[i].n_hosts)
			return true;
	return p->n_inspect > 0;
}

bool aj_net_proxied(const aj_policy *p)
{
	if (p->net == AJ_NET_ALLOW)
		return true;
	if (p->net != AJ_NET_OPEN)
		return false;
	/* --net open: the proxy is the way to the secrets' hosts (and the
	 * inspected ones) that carries the values */
	for (size_t i = 0; i < p->n_secrets; i++)
		if (p->secrets[i].n_hosts)
			return true;
	return p->n_inspect > 0;
}

bool aj_net_wanted(const aj_policy *p)
{
	return p->net != AJ_NET_NONE || p->n_publish > 0;
}
