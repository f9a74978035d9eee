/* SPDX-License-Identifier: MIT */
/* --net-log: one JSON object per line for every DNS query, proxy request,
 * published connection and direct connection of the sandbox, with the
 * verdict. Direct connections are seen through the nft rules' "log group"
 * (nfnetlink_log, read with libmnl). */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "netlog.h"
#include "util.h"

/* A secret_* event, also as a line of the service's audit log: its
 * format ("ts" in seconds, sorted keys), the sandbox's id and tenant; one write
 * (O_APPEND: whole lines between the service's own). */
static void audit_line(aj_netd_ctx *ctx, json_t *ev, const struct timespec *ts)
{
	const char *name = json_string_value(json_object_get(ev, "event"));
	if (ctx->audit_fd < 3 || !name || strncmp(name, "secret_", 7) != 0)
		return;
	json_t *a = json_copy(ev);
	if (!a)
		return;
	json_object_set_new(a, "sandbox", json_string(ctx->p->audit_sandbox));
	if (ctx->p->audit_tenant)
		json_object_set_new(a, "tenant", json_string(ctx->p->audit_tenant));
	json_object_set_new(a, "ts", json_real((double)ts->tv_sec + (double)ts->tv_nsec / 1e9));
	char *line = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(a);
	if (!line)
		return;
	size_t n = strlen(line);
	char *nl = realloc(line, n + 2);
	if (nl) {
		nl[n] = '\n';
		(void)aj_write_all(ctx->audit_fd, nl, n + 1);
		line = nl;
	}
	free(line);
}

void aj_netlog(aj_netd_ctx *ctx, json_t *ev)
{
	if (!ev)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	audit_line(ctx, ev, &ts);
	if (ctx->log_fd < 0) {
		json_decref(ev);
		return;
	}
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[40];
	size_t w = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + w, sizeof(when) - w, ".%03ldZ", ts.tv_nsec / 1000000);
	json_object_set_new(ev, "time", json_string(when));
	char *line = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(ev);
	if (!line)
		return;
	pthread_mutex_lock(&ctx->lock);
	(void)aj_write_all(ctx->log_fd, line, strlen(line));
	(void)aj_write_all(ctx->log_fd, "\n", 1);
	pthread_mutex_unlock(&ctx->lock);
	free(line);
}

static struct nlmsghdr *cfg_header(char *buf, unsigned group)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	struct nfgenmsg *nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_UNSPEC;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = htons((uint16_t)group);
	return nlh;
}

static int cfg_send(int fd, struct nlmsghdr *nlh)
{
	if (send(fd, nlh, nlh->nlmsg_len, 0) < 0)
		return -errno;
	char buf[MNL_SOCKET_BUFFER_SIZE];
	ssize_t r = recv(fd, buf, sizeof(buf), 0);
	if (r < 0)
		return -errno;
	return mnl_cb_run(buf, (size_t)r, 0, 0, NULL, NULL) < 0 ? -errno : 0;
}

int aj_nflog_open(unsigned group)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	if (fd < 0)
		return -errno;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	if (r == 0) {
		nlh = cfg_header(buf, group);
		struct nfulnl_msg_config_cmd cmd = {.command = NFULNL_CFG_CMD_BIND};
		mnl_attr_put(nlh, NFULA_CFG_CMD, sizeof(cmd), &cmd);
		r = cfg_send(fd, nlh);
	}
	if (r == 0) {
		nlh = cfg_header(buf, group);
		struct nfulnl_msg_config_mode mode = {.copy_range = htonl(80),
						      .copy_mode = NFULNL_COPY_PACKET};
		mnl_attr_put(nlh, NFULA_CFG_MODE, sizeof(mode), &mode);
		/* one packet per message, sent at once: nothing waits in the
		 * kernel when the sandbox ends */
		mnl_attr_put_u32(nlh, NFULA_CFG_QTHRESH, htonl(1));
		r = cfg_send(fd, nlh);
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

typedef struct pkt_attrs {
	const char *prefix;
	const unsigned char *payload;
	size_t len;
} pkt_attrs;

static int attr_cb(const struct nlattr *attr, void *data)
{
	pkt_attrs *a = data;
	switch (mnl_attr_get_type(attr)) {
	case NFULA_PREFIX:
		if (mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) >= 0)
			a->prefix = mnl_attr_get_str(attr);
		break;
	case NFULA_PAYLOAD:
		a->payload = mnl_attr_get_payload(attr);
		a->len = mnl_attr_get_payload_len(attr);
		break;
	}
	return MNL_CB_OK;
}

/* One logged packet: an IPv4 header and the start of its TCP/UDP header. */
static json_t *packet_event(const pkt_attrs *a)
{
	if (!a->prefix || !a->payload || a->len < sizeof(struct iphdr))
		return NULL;
	const struct iphdr *ip = (const void *)a->payload;
	size_t ihl = (size_t)ip->ihl * 4;
	if (ip->version != 4 || ihl < sizeof(*ip) || ihl > a->len)
		return NULL;
	char dst[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &ip->daddr, dst, sizeof(dst));
	const char *proto = ip->protocol == IPPROTO_TCP	   ? "tcp"
			    : ip->protocol == IPPROTO_UDP  ? "udp"
			    : ip->protocol == IPPROTO_ICMP ? "icmp"
							   : "other";
	json_t *ev =
	    json_pack("{s:s,s:s,s:s,s:s}", "event", "connect", "protocol", proto, "address", dst,
		      "verdict", strncmp(a->prefix, "aj-allow", 8) == 0 ? "allowed" : "refused");
	if ((ip->protocol == IPPROTO_TCP || ip->protocol == IPPROTO_UDP) && a->len >= ihl + 4) {
		uint16_t port;
		memcpy(&port, a->payload + ihl + 2, 2);
		json_object_set_new(ev, "port", json_integer(ntohs(port)));
	}
	return ev;
}

int aj_nflog_read(aj_netd_ctx *ctx, int fd)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (r <= 0)
		return -1;
	int left = (int)r;
	for (const struct nlmsghdr *nlh = (const void *)buf; mnl_nlmsg_ok(nlh, left);
	     nlh = mnl_nlmsg_next(nlh, &left)) {
		if ((nlh->nlmsg_type & 0xff) != NFULNL_MSG_PACKET ||
		    (nlh->nlmsg_type >> 8) != NFNL_SUBSYS_ULOG)
			continue;
		pkt_attrs a = {0};
		mnl_attr_parse(nlh, sizeof(struct nfgenmsg), attr_cb, &a);
		aj_netlog(ctx, packet_event(&a));
	}
	return 0;
}
