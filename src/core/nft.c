/* SPDX-License-Identifier: MIT */
/* One nftables table per sandbox, "inet agentjail-<PID>-<SLOT>", so IPv4
 * and IPv6 are both covered and a sandbox's rules go away in one command. */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <nftables/libnftables.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

int aj_nft_build(const aj_net *n, const aj_policy *p, char **out)
{
	sbuf b = {0};
	char sip[INET_ADDRSTRLEN];
	uint32_t be = htonl(n->sandbox_ip);
	inet_ntop(AF_INET, &be, sip, sizeof(sip));
	const char *v = n->host_if;
	sb_add(&b, "add table inet %s\n", n->table);
	sb_add(&b, "table inet %s {\n", n->table);
	sb_add(&b, "\tset refused4 { type ipv4_addr; flags interval; auto-merge; elements = { ");
	add_refused(&b, p, AF_INET);
	sb_add(&b,
	       " } }\n\tset refused6 { type ipv6_addr; flags interval; auto-merge; elements = { ");
	add_refused(&b, p, AF_INET6);
	sb_add(&b, " } }\n");
	/* the host itself (every local address, its loopback): nothing from the
	 * sandbox is delivered locally */
	sb_add(&b,
	       "\tchain input {\n\t\ttype filter hook input priority filter - 10; policy accept;\n"
	       "\t\tiifname \"%s\" meta l4proto tcp reject with tcp reset\n"
	       "\t\tiifname \"%s\" reject with icmpx type admin-prohibited\n\t}\n",
	       v, v);
	sb_add(
	    &b,
	    "\tchain forward {\n\t\ttype filter hook forward priority filter - 10; policy accept;\n"
	    "\t\toifname \"%s\" ct state established,related accept\n"
	    "\t\toifname \"%s\" drop\n"
	    "\t\tiifname \"%s\" ip saddr != %s drop\n"
	    "\t\tiifname \"%s\" ip daddr @refused4 meta l4proto tcp reject with tcp reset\n"
	    "\t\tiifname \"%s\" ip daddr @refused4 reject with icmp type admin-prohibited\n"
	    "\t\tiifname \"%s\" ip6 daddr @refused6 meta l4proto tcp reject with tcp reset\n"
	    "\t\tiifname \"%s\" ip6 daddr @refused6 reject with icmpv6 type admin-prohibited\n"
	    "\t\tiifname \"%s\" meta nfproto ipv6 reject with icmpv6 type admin-prohibited\n"
	    "\t}\n",
	    v, v, v, sip, v, v, v, v, v);
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
