/* SPDX-License-Identifier: MIT */
/* One nftables table per sandbox, "inet agentjail-<PID>-<SLOT>", so IPv4
 * and IPv6 are both covered and a sandbox's rules go away in one command. */
#include "nft.h"

#include <arpa/inet.h>
#include <errno.h>
#include <nftables/libnftables.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "net_addr.h"
#include "util.h"

typedef struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || b->oom)
		return;
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
		char *s = realloc(b->s, cap);
		if (!s) {
			b->oom = true;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Elements of the refused set of one family, comma-separated. */
static void add_refused(sbuf *b, const aj_policy *p, int family)
{
	const char *sep = "";
	char text[INET6_ADDRSTRLEN + 8];
	for (size_t i = 0; i < aj_net_n_refused; i++) {
		aj_cidr c;
		if (aj_cidr_parse(aj_net_refused[i], &c) < 0 || c.family != family)
			continue;
		aj_cidr_format(&c, text, sizeof(text));
		sb_add(b, "%s%s", sep, text);
		sep = ", ";
	}
	for (size_t i = 0; i < p->n_deny; i++) {
		if (p->deny[i].family != family)
			continue;
		aj_cidr_format(&p->deny[i], text, sizeof(text));
		sb_add(b, "%s%s", sep, text);
		sep = ", ";
	}
}

/* Rules of the allow-list mode: addresses the resolver just answered for
 * allowed names (set allow4, "address . port", with the DNS TTL as timeout)
 * and the --allow CIDRs; TCP only. */
static void add_allow_rules(sbuf *b, const aj_net *n, const aj_policy *p)
{
	const char *v = n->host_if;
	sb_add(b, "\t\tiifname \"%s\" ct state established,related accept\n", v);
	char logs[64] = "";
	if (n->nflog_group)
		snprintf(logs, sizeof(logs), "log prefix \"aj-allow \" group %u ", n->nflog_group);
	sb_add(b, "\t\tiifname \"%s\" ip daddr . tcp dport @allow4 %saccept\n", v, logs);
	for (size_t i = 0; i < p->n_allow; i++) {
		const aj_allow *a = &p->allow[i];
		if (a->host)
			continue;
		char text[INET6_ADDRSTRLEN + 8];
		aj_cidr_format(&a->cidr, text, sizeof(text));
		if (a->port)
			sb_add(b, "\t\tiifname \"%s\" ip daddr %s tcp dport %u %saccept\n", v, text,
			       a->port, logs);
		else
			sb_add(b, "\t\tiifname \"%s\" ip daddr %s tcp dport { 80, 443 } %saccept\n",
			       v, text, logs);
	}
	sb_add(b, "\t\tiifname \"%s\" jump refuse\n", v);
}

int aj_nft_build(const aj_net *n, const aj_policy *p, char **out)
{
	sbuf b = {0};
	char sip[INET_ADDRSTRLEN], hip[INET_ADDRSTRLEN];
	uint32_t be = htonl(n->sandbox_ip), hbe = htonl(n->host_ip);
	inet_ntop(AF_INET, &be, sip, sizeof(sip));
	inet_ntop(AF_INET, &hbe, hip, sizeof(hip));
	const char *v = n->host_if;
	bool allow = p->net == AJ_NET_ALLOW;
	sb_add(&b, "add table inet %s\n", n->table);
	sb_add(&b, "table inet %s {\n", n->table);
	sb_add(&b, "\tset refused4 { type ipv4_addr; flags interval; auto-merge; elements = { ");
	add_refused(&b, p, AF_INET);
	sb_add(&b,
	       " } }\n\tset refused6 { type ipv6_addr; flags interval; auto-merge; elements = { ");
	add_refused(&b, p, AF_INET6);
	sb_add(&b, " } }\n");
	if (allow)
		sb_add(&b, "\tset allow4 { type ipv4_addr . inet_service; flags timeout; }\n");
	/* refusals: TCP reset, else ICMP admin-prohibited; logged for --net-log */
	sb_add(&b, "\tchain refuse {\n");
	if (n->nflog_group)
		sb_add(&b, "\t\tct state new log prefix \"aj-refuse \" group %u\n", n->nflog_group);
	sb_add(&b, "\t\tmeta l4proto tcp reject with tcp reset\n"
		   "\t\tmeta nfproto ipv4 reject with icmp type admin-prohibited\n"
		   "\t\treject with icmpv6 type admin-prohibited\n\t}\n");
	/* the host itself (every local address, its loopback): nothing from the
	 * sandbox is delivered locally but, in allow-list mode, agentjail's
	 * resolver and proxy on the gateway address */
	sb_add(
	    &b,
	    "\tchain input {\n\t\ttype filter hook input priority filter - 10; policy accept;\n");
	/* the gateway address serves the sandbox only (resolver, proxy) */
	sb_add(&b, "\t\tip daddr %s iifname != \"%s\" drop\n", hip, v);
	if (allow)
		sb_add(&b,
		       "\t\tiifname \"%s\" ip daddr %s udp dport 53 accept\n"
		       "\t\tiifname \"%s\" ip daddr %s tcp dport { 53, %u } accept\n",
		       v, hip, v, hip, AJ_PROXY_PORT);
	else if (aj_net_proxied(p)) /* --net open with scoped secrets: the proxy */
		sb_add(&b, "\t\tiifname \"%s\" ip daddr %s tcp dport %u accept\n", v, hip,
		       AJ_PROXY_PORT);
	sb_add(&b,
	       "\t\tiifname \"%s\" meta l4proto tcp reject with tcp reset\n"
	       "\t\tiifname \"%s\" reject with icmpx type admin-prohibited\n\t}\n",
	       v, v);
	sb_add(
	    &b,
	    "\tchain forward {\n\t\ttype filter hook forward priority filter - 10; policy accept;\n"
	    "\t\toifname \"%s\" ct state established,related accept\n"
	    "\t\toifname \"%s\" drop\n"
	    "\t\tiifname \"%s\" ip saddr != %s drop\n"
	    "\t\tiifname \"%s\" ip daddr @refused4 jump refuse\n"
	    "\t\tiifname \"%s\" ip6 daddr @refused6 jump refuse\n"
	    "\t\tiifname \"%s\" meta nfproto ipv6 jump refuse\n",
	    v, v, v, sip, v, v, v);
	if (allow)
		add_allow_rules(&b, n, p);
	else if (n->nflog_group)
		sb_add(&b, "\t\tiifname \"%s\" ct state new log prefix \"aj-allow \" group %u\n", v,
		       n->nflog_group);
	sb_add(&b, "\t}\n");
	sb_add(
	    &b,
	    "\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n"
	    "\t\tip saddr %s oifname != \"%s\" masquerade\n\t}\n}\n",
	    sip, v);
	if (b.oom) {
		free(b.s);
		return -ENOMEM;
	}
	*out = b.s;
	return 0;
}

static struct nft_ctx *ctx_new(void)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!ctx)
		return NULL;
	nft_ctx_buffer_output(ctx);
	nft_ctx_buffer_error(ctx);
	return ctx;
}

struct nft_ctx *aj_nft_ctx_new(void)
{
	return ctx_new();
}

int aj_nft_allow(struct nft_ctx *ctx, const char *table, uint32_t ip_be, const unsigned *ports,
		 size_t nports, unsigned timeout_s)
{
	char ip[INET_ADDRSTRLEN], cmd[256];
	inet_ntop(AF_INET, &ip_be, ip, sizeof(ip));
	int r = 0;
	for (size_t i = 0; i < nports; i++) {
		/* "add" keeps an existing element's old timeout: replace it */
		snprintf(cmd, sizeof(cmd), "delete element inet %s allow4 { %s . %u }\n", table, ip,
			 ports[i]);
		(void)nft_run_cmd_from_buffer(ctx, cmd);
		snprintf(cmd, sizeof(cmd), "add element inet %s allow4 { %s . %u timeout %us }\n",
			 table, ip, ports[i], timeout_s);
		if (nft_run_cmd_from_buffer(ctx, cmd) != 0)
			r = -EINVAL;
	}
	return r;
}

int aj_nft_apply(const char *cmds, aj_error *err)
{
	struct nft_ctx *ctx = ctx_new();
	if (!ctx)
		return aj_err(err, ENOMEM, "cannot create an nftables context");
	int r = 0;
	if (nft_run_cmd_from_buffer(ctx, cmds) != 0) {
		char msg[256];
		const char *e = nft_ctx_get_error_buffer(ctx);
		snprintf(msg, sizeof(msg), "%s", e && *e ? e : "unknown error");
		msg[strcspn(msg, "\n")] = '\0';
		r = aj_err(err, EINVAL, "nftables refused the sandbox's rules: %s", msg);
		aj_err_hint(err, "check that the kernel has nf_tables (nft list ruleset) and that "
				 "agentjail runs as root");
	}
	nft_ctx_free(ctx);
	return r;
}

void aj_nft_delete_table(const char *table)
{
	struct nft_ctx *ctx = ctx_new();
	if (!ctx)
		return;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "delete table inet %s\n", table);
	(void)nft_run_cmd_from_buffer(ctx, cmd);
	nft_ctx_free(ctx);
}

void aj_nft_sweep_stale(void)
{
	struct nft_ctx *ctx = ctx_new();
	if (!ctx)
		return;
	_cleanup_free_ char *list = NULL;
	if (nft_run_cmd_from_buffer(ctx, "list tables inet") == 0) {
		const char *o = nft_ctx_get_output_buffer(ctx);
		list = o ? strdup(o) : NULL;
	}
	nft_ctx_free(ctx);
	for (char *save = NULL, *l = list ? strtok_r(list, "\n", &save) : NULL; l;
	     l = strtok_r(NULL, "\n", &save)) {
		int pid;
		unsigned slot;
		char name[64], end;
		if (sscanf(l, "table inet %63s", name) != 1 ||
		    sscanf(name, "agentjail-%d-%u%c", &pid, &slot, &end) != 2 || pid <= 0)
			continue;
		if (kill(pid, 0) == 0 || errno == EPERM)
			continue; /* its agentjail still runs */
		aj_nft_delete_table(name);
	}
}
