/* SPDX-License-Identifier: MIT */
/* Inside netd, the network helper of one sandbox: its shared state and the
 * services it runs (dns.c, proxy.c, netlog.c). */
#ifndef AJ_NETD_H
#define AJ_NETD_H

#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "net.h"
#include "policy.h"

typedef struct aj_netd_ctx {
	const aj_policy *p;
	const aj_net *n;
	struct sockaddr_in upstream; /* the resolver agentjail asks for allowed names */
	bool have_upstream;
	int log_fd;	      /* --net-log, -1 if none */
	pthread_mutex_t lock; /* the log and the nft context */
	struct nft_ctx *nft;
	pid_t publisher;      /* the --publish forwarder child next to --allow */
	bool publisher_child; /* this is that child */
	bool privileged;      /* started as root (host root, not a userns' root) */
} aj_netd_ctx;

/* dns.c. Answer one DNS query from the sandbox (wire format). Returns the
 * reply's length in out, or -1 to drop the query. max: 512 for UDP. */
ssize_t aj_dns_handle(aj_netd_ctx *ctx, const uint8_t *q, size_t qlen, uint8_t *out, size_t max);
/* Resolve name's IPv4 addresses through the upstream; refused addresses
 * (rebinding) are dropped. Returns how many are in addrs (network order),
 * or a negative errno; *ttl: the smallest TTL seen. */
int aj_dns_lookup4(aj_netd_ctx *ctx, const char *name, uint32_t *addrs, size_t max, unsigned *ttl);
/* Pick the upstream: --dns, else the host's first IPv4 nameserver. */
int aj_dns_upstream(aj_netd_ctx *ctx, const char *host_resolv);

/* proxy.c. Serve one client connection of the HTTP(S) proxy / of a
 * --publish port; both close fd. */
void aj_proxy_serve(aj_netd_ctx *ctx, int fd);
void aj_publish_serve(aj_netd_ctx *ctx, int fd, unsigned port);
/* Copy both ways between a and b until both directions are done. */
void aj_splice_pair(int a, int b);

/* The head of a proxy request, parsed (proxy_parse.c). */
typedef struct aj_proxy_req {
	bool connect;	/* CONNECT host:port */
	bool has_host;	/* a Host header came with it */
	char host[256]; /* as the client wrote it (not yet canonical) */
	unsigned port;	/* explicit or 80 */
	char method[16];
	char target[2048]; /* origin-form path?query for plain HTTP */
	int http_major, http_minor;
	size_t head_len;    /* bytes of the head (request line + headers + CRLF) */
	char headers[8192]; /* kept headers, "Name: value\r\n" each */
	const char *error;  /* why the request is refused (400) */
} aj_proxy_req;

/* Parse the request head in buf (len bytes, the whole head present).
 * Returns 0, or -EINVAL with req->error set. */
int aj_proxy_parse(const char *buf, size_t len, aj_proxy_req *req);

/* netlog.c: write ev (a JSON object; the reference is stolen) as one line
 * of --net-log, with "time" added. No-op without --net-log. */
void aj_netlog(aj_netd_ctx *ctx, json_t *ev);
/* Read the kernel's nflog messages of the sandbox's nft rules (direct
 * connections) and log them; returns the socket to poll, or -errno. */
int aj_nflog_open(unsigned group);
/* Log what is queued; -1 when nothing was. */
int aj_nflog_read(aj_netd_ctx *ctx, int fd);

#endif
