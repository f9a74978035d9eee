/* SPDX-License-Identifier: MIT */
/* agentjail's resolver for --allow (runs in netd). It answers only for
 * allowed names and never sends any other name upstream (no DNS
 * exfiltration); A answers pointing into the refused ranges are dropped
 * (rebinding defence); every address it hands out is put in the sandbox's
 * nft set allow4 for the allowed ports, with the DNS TTL as timeout. AAAA
 * and other types get an empty answer: sandboxes have IPv4 egress only.
 * DNS wire format is parsed and built with ldns. */
#include <arpa/inet.h>
#include <errno.h>
#include <ldns/ldns.h>
#include <stdio.h>
#include <string.h>

#include "allow.h"
#include "dns.h"
#include "netlog.h"
#include "nft.h"
#include "util.h"

/* TTLs: a set element lives at least this long, so that a connection
 * right after a short-TTL answer still works, and at most this long. */
#define TTL_MIN 30u
#define TTL_MAX 3600u

int aj_dns_upstream(aj_netd_ctx *ctx, const char *host_resolv)
{
	const aj_policy *p = ctx->p;
	memset(&ctx->upstream, 0, sizeof(ctx->upstream));
	ctx->upstream.sin_family = AF_INET;
	if (p->dns.family == AF_INET) {
		memcpy(&ctx->upstream.sin_addr, p->dns.addr, 4);
		ctx->upstream.sin_port = htons((uint16_t)p->dns_port);
		ctx->have_upstream = true;
		return 0;
	}
	for (const char *l = host_resolv; l && *l;) {
		char addr[64];
		if (sscanf(l, " nameserver %63s", addr) == 1 &&
		    inet_pton(AF_INET, addr, &ctx->upstream.sin_addr) == 1) {
			ctx->upstream.sin_port = htons(53);
			ctx->have_upstream = true;
			return 0;
		}
		const char *nl = strchr(l, '\n');
		l = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* The question's name as a canonical host name, or -EINVAL for anything
 * that is not plain letters/digits/-/_ labels. */
static int qname_canon(const ldns_rdf *dname, char *out, size_t outlen)
{
	const uint8_t *d = ldns_rdf_data(dname);
	size_t size = ldns_rdf_size(dname), o = 0;
	char text[AJ_HOST_MAX + 2];
	for (size_t i = 0; i < size;) {
		uint8_t len = d[i++];
		if (len == 0)
			break;
		if (len > 63 || i + len > size || o + len + 1 >= sizeof(text))
			return -EINVAL;
		if (o)
			text[o++] = '.';
		memcpy(text + o, d + i, len);
		o += len;
		i += len;
	}
	if (o == 0 || memchr(text, '\0', o))
		return -EINVAL;
	return aj_host_canon(text, o, out, outlen);
}

static ldns_resolver *upstream_resolver(const aj_netd_ctx *ctx)
{
	ldns_resolver *res = ldns_resolver_new();
	if (!res)
		return NULL;
	ldns_rdf *ns = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_A, 4, &ctx->upstream.sin_addr);
	if (!ns || ldns_resolver_push_nameserver(res, ns) != LDNS_STATUS_OK) {
		ldns_rdf_deep_free(ns);
		ldns_resolver_deep_free(res);
		return NULL;
	}
	ldns_rdf_deep_free(ns);
	ldns_resolver_set_port(res, ntohs(ctx->upstream.sin_port));
	ldns_resolver_set_recursive(res, true);
	ldns_resolver_set_retry(res, 2);
	ldns_resolver_set_timeout(res, (struct timeval){.tv_sec = 1, .tv_usec = 500000});
	ldns_resolver_set_dnssec(res, false);
	return res;
}

/* Ask the upstream for name's A records. On success *ans is the reply. */
static int ask_upstream(aj_netd_ctx *ctx, const char *name, ldns_pkt **ans)
{
	if (!ctx->have_upstream)
		return -ENOENT;
	ldns_resolver *res = upstream_resolver(ctx);
	ldns_rdf *dn = ldns_dname_new_frm_str(name);
	int r = -ENOMEM;
	if (res && dn) {
		ldns_status st = ldns_resolver_query_status(ans, res, dn, LDNS_RR_TYPE_A,
							    LDNS_RR_CLASS_IN, LDNS_RD);
		r = st == LDNS_STATUS_OK && *ans ? 0 : -EHOSTUNREACH;
	}
	ldns_rdf_deep_free(dn);
	if (res)
		ldns_resolver_deep_free(res);
	return r;
}

/* Copy the usable records of the upstream's answer into reply (NULL: don't)
 * and addrs: CNAMEs, and A records outside the refused ranges. Returns the
 * number of addresses kept; *dropped counts the refused ones. */
static size_t filter_answer(const aj_policy *p, const ldns_pkt *ans, ldns_pkt *reply,
			    uint32_t *addrs, size_t max, unsigned *ttl, json_t *dropped)
{
	ldns_rr_list *an = ldns_pkt_answer(ans);
	size_t n = 0;
	*ttl = TTL_MAX;
	for (size_t i = 0; an && i < ldns_rr_list_rr_count(an); i++) {
		ldns_rr *rr = ldns_rr_list_rr(an, i);
		ldns_rr_type t = ldns_rr_get_type(rr);
		if (ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN ||
		    (t != LDNS_RR_TYPE_A && t != LDNS_RR_TYPE_CNAME))
			continue;
		if (t == LDNS_RR_TYPE_A) {
			ldns_rdf *a = ldns_rr_rdf(rr, 0);
			if (!a || ldns_rdf_size(a) != 4)
				continue;
			uint32_t ip;
			memcpy(&ip, ldns_rdf_data(a), 4);
			char text[INET_ADDRSTRLEN];
			inet_ntop(AF_INET, &ip, text, sizeof(text));
			if (aj_net_is_refused(p, AF_INET, &ip)) {
				json_array_append_new(dropped, json_string(text));
				continue;
			}
			if (n >= max)
				continue;
			addrs[n++] = ip;
		}
		if (ldns_rr_ttl(rr) < *ttl)
			*ttl = ldns_rr_ttl(rr);
		if (reply) {
			ldns_rr *copy = ldns_rr_clone(rr);
			if (copy && !ldns_pkt_push_rr(reply, LDNS_SECTION_ANSWER, copy))
				ldns_rr_free(copy);
		}
	}
	return n;
}

static unsigned clamp_ttl(unsigned ttl)
{
	return ttl < TTL_MIN ? TTL_MIN : ttl > TTL_MAX ? TTL_MAX : ttl;
}

static json_t *addr_array(const uint32_t *addrs, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		char text[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &addrs[i], text, sizeof(text));
		json_array_append_new(a, json_string(text));
	}
	return a;
}

/* Resolve an allowed name for the sandbox: filter, open the nft set,
 * fill the reply. Returns the rcode. */
static int resolve_for_sandbox(aj_netd_ctx *ctx, const char *name, ldns_pkt *reply, json_t *ev)
{
	ldns_pkt *ans = NULL;
	if (ask_upstream(ctx, name, &ans) < 0) {
		json_object_set_new(ev, "verdict", json_string("error"));
		json_object_set_new(ev, "reason",
				    json_string("the upstream resolver did not answer"));
		return LDNS_RCODE_SERVFAIL;
	}
	uint32_t addrs[32];
	unsigned ttl;
	json_t *dropped = json_array();
	size_t n = filter_answer(ctx->p, ans, reply, addrs, AJ_ARRAY_SIZE(addrs), &ttl, dropped);
	int rcode = ldns_pkt_get_rcode(ans);
	ldns_pkt_free(ans);
	/* the client must not cache an address longer than the set holds it */
	unsigned timeout = clamp_ttl(ttl);
	ldns_rr_list *an = ldns_pkt_answer(reply);
	for (size_t i = 0; an && i < ldns_rr_list_rr_count(an); i++)
		if (ldns_rr_ttl(ldns_rr_list_rr(an, i)) > timeout)
			ldns_rr_set_ttl(ldns_rr_list_rr(an, i), timeout);
	unsigned ports[16];
	size_t np = aj_allow_ports(ctx->p, name, ports, AJ_ARRAY_SIZE(ports));
	pthread_mutex_lock(&ctx->lock);
	for (size_t i = 0; i < n && ctx->nft; i++)
		(void)aj_nft_allow(ctx->nft, ctx->n->table, addrs[i], ports, np, timeout);
	pthread_mutex_unlock(&ctx->lock);
	json_object_set_new(ev, "verdict", json_string("allowed"));
	json_object_set_new(ev, "addresses", addr_array(addrs, n));
	if (json_array_size(dropped))
		json_object_set_new(ev, "dropped", json_incref(dropped));
	json_decref(dropped);
	return rcode;
}

int aj_dns_lookup4(aj_netd_ctx *ctx, const char *name, uint32_t *addrs, size_t max, unsigned *ttl)
{
	ldns_pkt *ans = NULL;
	int r = ask_upstream(ctx, name, &ans);
	if (r < 0)
		return r;
	json_t *dropped = json_array();
	size_t n = filter_answer(ctx->p, ans, NULL, addrs, max, ttl, dropped);
	json_decref(dropped);
	ldns_pkt_free(ans);
	return (int)n;
}

static ssize_t to_wire(ldns_pkt *reply, uint8_t *out, size_t max)
{
	uint8_t *wire = NULL;
	size_t len = 0;
	if (ldns_pkt2wire(&wire, reply, &len) != LDNS_STATUS_OK)
		return -1;
	if (len > max) {
		/* too big for UDP: say so, the client retries over TCP */
		free(wire);
		ldns_rr_list_deep_free(ldns_pkt_answer(reply));
		ldns_pkt_set_answer(reply, ldns_rr_list_new());
		ldns_pkt_set_ancount(reply, 0);
		ldns_pkt_set_tc(reply, true);
		if (ldns_pkt2wire(&wire, reply, &len) != LDNS_STATUS_OK || len > max) {
			free(wire);
			return -1;
		}
	}
	memcpy(out, wire, len);
	free(wire);
	return (ssize_t)len;
}

/* One uncompressed name at *off: labels of at most 63 bytes, 255 in all. */
static bool wire_name_ok(const uint8_t *q, size_t qlen, size_t *off)
{
	size_t total = 0;
	for (;;) {
		if (*off >= qlen)
			return false;
		uint8_t l = q[(*off)++];
		if (l == 0)
			return total + 1 <= 255;
		if (l > 63 || qlen - *off < l)
			return false; /* a compression pointer or a label past the end */
		*off += l;
		total += l + 1u;
	}
}

/* The shape of a stub resolver's query, checked before ldns parses it:
 * one question, no answer or authority records, at most one additional
 * record (EDNS's OPT), nothing after. libldns 1.8 leaks the record it was
 * parsing when a section is malformed, so netd never hands it one. */
static bool wire_query_ok(const uint8_t *q, size_t qlen)
{
	if (qlen < 12 || qlen > 4096)
		return false;
	unsigned qd = (unsigned)q[4] << 8 | q[5], an = (unsigned)q[6] << 8 | q[7];
	unsigned ns = (unsigned)q[8] << 8 | q[9], ar = (unsigned)q[10] << 8 | q[11];
	if (qd != 1 || an != 0 || ns != 0 || ar > 1)
		return false;
	size_t off = 12;
	if (!wire_name_ok(q, qlen, &off) || qlen - off < 4)
		return false;
	off += 4; /* type, class */
	if (ar == 1) {
		/* EDNS's OPT only: the root name, type 41 (ldns parses its data raw) */
		if (qlen - off < 11 || q[off] != 0 || q[off + 1] != 0 || q[off + 2] != 41)
			return false;
		off += 1;
		size_t rdlen = (size_t)q[off + 8] << 8 | q[off + 9];
		off += 10;
		if (qlen - off < rdlen)
			return false;
		off += rdlen;
	}
	return off == qlen;
}

ssize_t aj_dns_handle(aj_netd_ctx *ctx, const uint8_t *q, size_t qlen, uint8_t *out, size_t max)
{
	ldns_pkt *qp = NULL;
	if (!wire_query_ok(q, qlen))
		return -1; /* not a query of a stub resolver: drop */
	if (ldns_wire2pkt(&qp, q, qlen) != LDNS_STATUS_OK || !qp)
		return -1; /* not DNS: drop */
	ldns_pkt *reply = ldns_pkt_new();
	if (!reply || ldns_pkt_qr(qp)) {
		ldns_pkt_free(qp);
		if (reply)
			ldns_pkt_free(reply);
		return -1;
	}
	ldns_pkt_set_id(reply, ldns_pkt_id(qp));
	ldns_pkt_set_qr(reply, true);
	ldns_pkt_set_ra(reply, true);
	ldns_pkt_set_rd(reply, ldns_pkt_rd(qp));
	ldns_pkt_set_opcode(reply, ldns_pkt_get_opcode(qp));
	int rcode = LDNS_RCODE_FORMERR;
	json_t *ev = json_pack("{s:s}", "event", "dns");
	ldns_rr_list *ql = ldns_pkt_question(qp);
	if (ldns_pkt_get_opcode(qp) == LDNS_PACKET_QUERY && ql && ldns_rr_list_rr_count(ql) == 1) {
		ldns_rr *qrr = ldns_rr_list_rr(ql, 0);
		ldns_rr *qcopy = ldns_rr_clone(qrr);
		if (qcopy && !ldns_pkt_push_rr(reply, LDNS_SECTION_QUESTION, qcopy))
			ldns_rr_free(qcopy);
		char name[AJ_HOST_MAX + 1];
		ldns_rr_type t = ldns_rr_get_type(qrr);
		char *tname = ldns_rr_type2str(t);
		json_object_set_new(ev, "type", json_string(tname ? tname : "?"));
		free(tname);
		if (qname_canon(ldns_rr_owner(qrr), name, sizeof(name)) < 0) {
			char *raw = ldns_rdf2str(ldns_rr_owner(qrr));
			json_object_set_new(ev, "name", json_string(raw ? raw : "?"));
			free(raw);
			rcode = LDNS_RCODE_REFUSED;
		} else {
			json_object_set_new(ev, "name", json_string(name));
			if (ldns_rr_get_class(qrr) != LDNS_RR_CLASS_IN ||
			    !aj_allow_name(ctx->p, name, 0))
				rcode = LDNS_RCODE_REFUSED; /* never asked upstream */
			else if (t == LDNS_RR_TYPE_A)
				rcode = resolve_for_sandbox(ctx, name, reply, ev);
			else
				rcode = LDNS_RCODE_NOERROR; /* no data: IPv4 egress only */
		}
		if (rcode == LDNS_RCODE_REFUSED)
			json_object_set_new(ev, "verdict", json_string("refused"));
		else if (!json_object_get(ev, "verdict"))
			json_object_set_new(ev, "verdict", json_string("allowed"));
	} else {
		json_object_set_new(ev, "verdict", json_string("malformed"));
	}
	ldns_pkt_set_rcode(reply, (uint8_t)rcode);
	ssize_t len = to_wire(reply, out, max);
	ldns_pkt_free(reply);
	ldns_pkt_free(qp);
	aj_netlog(ctx, ev);
	return len;
}
