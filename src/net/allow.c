/* SPDX-License-Identifier: MIT */
/* The allow-list of --allow: parsing the flags, and the one host-name
 * matcher used by agentjail's DNS resolver and its HTTP proxy. Names are
 * compared as whole labels after the one normaliser (core/hostname.c). */
#include "allow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "net_addr.h"
#include "util.h"

static bool entry_matches_name(const aj_allow *a, const char *name)
{
	return a->host && aj_host_match(a->host, name);
}

static bool port_ok(const aj_allow *a, unsigned port)
{
	if (a->port)
		return port == a->port;
	return port == 80 || port == 443;
}

bool aj_allow_name(const aj_policy *p, const char *name, unsigned port)
{
	for (size_t i = 0; i < p->n_allow; i++)
		if (entry_matches_name(&p->allow[i], name) &&
		    (port == 0 || port_ok(&p->allow[i], port)))
			return true;
	return false;
}

size_t aj_allow_ports(const aj_policy *p, const char *name, unsigned *ports, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_allow; i++) {
		if (!entry_matches_name(&p->allow[i], name))
			continue;
		unsigned want[2] = {p->allow[i].port ? p->allow[i].port : 80, 443};
		size_t nw = p->allow[i].port ? 1 : 2;
		for (size_t w = 0; w < nw; w++) {
			bool have = false;
			for (size_t j = 0; j < n; j++)
				have = have || ports[j] == want[w];
			if (!have && n < max)
				ports[n++] = want[w];
		}
	}
	return n;
}

bool aj_allow_addr(const aj_policy *p, int family, const void *addr, unsigned port)
{
	if (aj_net_is_refused(p, family, addr))
		return false;
	for (size_t i = 0; i < p->n_allow; i++)
		if (!p->allow[i].host && aj_cidr_contains(&p->allow[i].cidr, family, addr) &&
		    port_ok(&p->allow[i], port))
			return true;
	return false;
}

/* "SPEC" or "SPEC:PORT" (the last ':'; IPv6 is not accepted here). */
static int split_port(char *s, unsigned *port)
{
	*port = 0;
	char *colon = strrchr(s, ':');
	if (!colon)
		return 0;
	unsigned long long v;
	if (!colon[1] || aj_parse_uint(colon + 1, 65535, &v) < 0 || v == 0)
		return -EINVAL;
	*colon = '\0';
	*port = (unsigned)v;
	return 0;
}

/* RFC 1123 labels: no '-' at either end (and no '_' in names we're given) */
static bool ldh_ok(const char *s)
{
	if (strchr(s, '_'))
		return false;
	for (const char *l = s; l;) {
		const char *dot = strchr(l, '.');
		size_t len = dot ? (size_t)(dot - l) : strlen(l);
		if (len == 0 || l[0] == '-' || l[len - 1] == '-')
			return false;
		l = dot ? dot + 1 : NULL;
	}
	return true;
}

int aj_policy_add_allow(aj_policy *p, const char *spec, aj_error *err)
{
	if (p->n_allow >= AJ_MAX_ALLOW)
		return aj_err(err, E2BIG, "too many --allow (at most %d)", AJ_MAX_ALLOW);
	char buf[AJ_HOST_MAX + 16];
	aj_allow a = {0};
	if (strlen(spec) >= sizeof(buf) || strchr(spec, '[') || strchr(spec, ']'))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", spec);
	if (strchr(buf, ':') != strrchr(buf, ':')) {
		aj_err(err, EINVAL, "--allow '%s': IPv6 destinations are not supported yet", spec);
		aj_err_hint(err, "sandboxes have IPv4 egress only (docs/network.md)");
		return -EINVAL;
	}
	if (split_port(buf, &a.port) < 0)
		goto bad;
	if (aj_cidr_parse(buf, &a.cidr) == 0) {
		if (a.cidr.family != AF_INET) {
			aj_err(err, EINVAL, "--allow '%s': IPv6 is not supported yet", spec);
			return -EINVAL;
		}
		if (aj_net_is_refused(p, AF_INET, a.cidr.addr) && a.cidr.prefix >= 8) {
			aj_err(err, EINVAL,
			       "--allow '%s': that range is always refused (private, loopback, "
			       "link-local/metadata or reserved)",
			       spec);
			aj_err_hint(err, "docs/network.md lists the ranges no sandbox can reach");
			return -EINVAL;
		}
	} else {
		const char *name = buf;
		bool wild = strncmp(buf, "*.", 2) == 0;
		if (wild)
			name += 2;
		aj_host h;
		if (aj_host_norm(name, strlen(name), &h, NULL) < 0 || h.kind != AJ_HOST_NAME ||
		    !ldh_ok(h.text) || (wild && !strchr(h.text, '.')))
			goto bad;
		a.host = aj_asprintf("%s%s", wild ? "*." : "", h.text);
		if (!a.host)
			return aj_err(err, ENOMEM, "out of memory");
	}
	p->allow[p->n_allow++] = a;
	p->net = AJ_NET_ALLOW;
	return 0;
bad:
	aj_err(err, EINVAL, "--allow '%s': expected HOST[:PORT], *.DOMAIN[:PORT] or CIDR[:PORT]",
	       spec);
	aj_err_hint(err, "for example --allow pypi.org --allow '*.npmjs.org' --allow "
			 "api.example.com:8443 --allow 203.0.113.0/24:443");
	return -EINVAL;
}

int aj_policy_add_publish(aj_policy *p, const char *spec, aj_error *err)
{
	if (p->n_publish >= AJ_MAX_PUBLISH)
		return aj_err(err, E2BIG, "too many --publish (at most %d)", AJ_MAX_PUBLISH);
	char buf[32];
	unsigned long long hp, cp;
	char *colon;
	if (strlen(spec) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", spec);
	colon = strchr(buf, ':');
	if (!colon)
		goto bad;
	*colon = '\0';
	if (aj_parse_uint(buf, 65535, &hp) < 0 || hp == 0 ||
	    aj_parse_uint(colon + 1, 65535, &cp) < 0 || cp == 0)
		goto bad;
	for (size_t i = 0; i < p->n_publish; i++)
		if (p->publish[i].host_port == hp)
			return aj_err(err, EINVAL, "--publish: host port %llu given twice", hp);
	p->publish[p->n_publish++] = (aj_publish){.host_port = (unsigned)hp, .port = (unsigned)cp};
	return 0;
bad:
	aj_err(err, EINVAL, "--publish '%s': expected HOSTPORT:PORT", spec);
	aj_err_hint(err, "for example --publish 8080:3000 makes the sandbox's port 3000 "
			 "reachable at 127.0.0.1:8080 on the host");
	return -EINVAL;
}

int aj_policy_set_dns(aj_policy *p, const char *spec, aj_error *err)
{
	char buf[64];
	unsigned port = 0;
	if (strlen(spec) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", spec);
	if (split_port(buf, &port) < 0 || aj_cidr_parse(buf, &p->dns) < 0 ||
	    p->dns.family != AF_INET || strchr(buf, '/'))
		goto bad;
	p->dns_port = port ? port : 53;
	return 0;
bad:
	memset(&p->dns, 0, sizeof(p->dns));
	aj_err(err, EINVAL, "--dns '%s': expected an IPv4 address, optionally with :PORT", spec);
	return -EINVAL;
}

int aj_policy_set_net_log(aj_policy *p, const char *path, aj_error *err)
{
	if (!path[0] || path[0] != '/') {
		aj_err(err, EINVAL, "--net-log '%s': expected an absolute path", path);
		aj_err_hint(err, "for example --net-log \"$PWD/net.jsonl\"");
		return -EINVAL;
	}
	free(p->net_log);
	p->net_log = strdup(path);
	return p->net_log ? 0 : aj_err(err, ENOMEM, "out of memory");
}

int aj_policy_set_upstream_ca(aj_policy *p, const char *path, aj_error *err)
{
	if (path[0] != '/' || access(path, R_OK) < 0) {
		aj_err(err, path[0] != '/' ? EINVAL : errno,
		       "--upstream-ca '%s': expected an absolute path to a readable PEM file",
		       path);
		aj_err_hint(err, "for example --upstream-ca \"$PWD/ca.pem\"");
		return -EINVAL;
	}
	free(p->upstream_ca);
	p->upstream_ca = strdup(path);
	return p->upstream_ca ? 0 : aj_err(err, ENOMEM, "out of memory");
}

/* Is every name of pattern (a host, "*.domain" or an IPv4 address) one
 * the allow-list lets through? */
static bool allow_covers(const aj_policy *p, const char *pattern)
{
	if (pattern[0] != '*') {
		unsigned char a[4];
		if (inet_pton(AF_INET, pattern, a) == 1) {
			for (size_t i = 0; i < p->n_allow; i++)
				if (!p->allow[i].host &&
				    aj_cidr_contains(&p->allow[i].cidr, AF_INET, a))
					return true;
			return false;
		}
		return aj_allow_name(p, pattern, 0);
	}
	/* "*.s" is covered by an allowed "*.t" where s is t or below it */
	const char *s = pattern + 2;
	for (size_t i = 0; i < p->n_allow; i++) {
		const char *h = p->allow[i].host;
		if (!h || h[0] != '*')
			continue;
		size_t tl = strlen(h + 2), sl = strlen(s);
		if (!strcmp(s, h + 2) ||
		    (sl > tl && s[sl - tl - 1] == '.' && !strcmp(s + sl - tl, h + 2)))
			return true;
	}
	return false;
}

/* A scoped secret goes out only through agentjail's proxy: with --allow
 * (then its hosts must be allowed) or with --net open (the proxy is then
 * the way to them that carries the value). --inspect likewise. */
static int validate_secrets(const aj_policy *p, aj_net_mode mode, aj_error *err)
{
	for (size_t i = 0; i < p->n_secrets; i++) {
		const aj_secret *s = &p->secrets[i];
		if (!s->n_hosts)
			continue;
		if (mode == AJ_NET_NONE) {
			aj_err(err, EINVAL,
			       "--secret %s@%s: a secret scoped to hosts needs a network with "
			       "agentjail's proxy (it puts the value into requests)",
			       s->name, s->hosts[0]);
			aj_err_hint(err,
				    "add --allow %s (and the secret's other hosts) or --net open",
				    s->hosts[0]);
			return -EINVAL;
		}
		for (size_t h = 0; mode == AJ_NET_ALLOW && h < s->n_hosts; h++)
			if (!allow_covers(p, s->hosts[h])) {
				aj_err(err, EINVAL,
				       "--secret %s: its host %s is not in the --allow list",
				       s->name, s->hosts[h]);
				aj_err_hint(err,
					    "add --allow '%s', or drop it from the secret's hosts",
					    s->hosts[h]);
				return -EINVAL;
			}
	}
	for (size_t i = 0; i < p->n_inspect; i++) {
		if (mode == AJ_NET_NONE) {
			aj_err(err, EINVAL, "--inspect %s: needs --allow or --net open",
			       p->inspect[i]);
			aj_err_hint(err, "add --allow %s", p->inspect[i]);
			return -EINVAL;
		}
		if (mode == AJ_NET_ALLOW && !allow_covers(p, p->inspect[i])) {
			aj_err(err, EINVAL, "--inspect %s: the host is not in the --allow list",
			       p->inspect[i]);
			aj_err_hint(err, "add --allow '%s'", p->inspect[i]);
			return -EINVAL;
		}
	}
	return 0;
}

int aj_policy_validate_net(const aj_policy *p, aj_error *err)
{
	if (p->n_allow && p->net_explicit) {
		aj_err(err, EINVAL,
		       "--allow is a network mode of its own; it can't be combined "
		       "with --net");
		aj_err_hint(err, "drop --net: --allow gives the sandbox only the allowed "
				 "destinations");
		return -EINVAL;
	}
	aj_net_mode mode = p->n_allow ? AJ_NET_ALLOW : p->net;
	if (p->n_deny && mode == AJ_NET_NONE) {
		aj_err(err, EINVAL, "--deny needs a network: the sandbox has only loopback");
		aj_err_hint(err, "add --net open or --allow");
		return -EINVAL;
	}
	if (p->dns.family && mode != AJ_NET_ALLOW && !(mode == AJ_NET_OPEN && aj_net_proxied(p))) {
		aj_err(err, EINVAL,
		       "--dns is the upstream of --allow's resolver (or, with --net open, of "
		       "the proxy of scoped secrets)");
		aj_err_hint(err, "add --allow HOST");
		return -EINVAL;
	}
	return validate_secrets(p, mode, err);
}
