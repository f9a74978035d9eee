/* SPDX-License-Identifier: MIT */
/* Inside netd, the network helper of one sandbox: the state its services
 * (dns.c, proxy.c, netlog.c) share. */
#ifndef AJ_NETD_CTX_H
#define AJ_NETD_CTX_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "net_addr.h"
#include "policy.h"

typedef struct aj_netd_ctx {
	const aj_policy *p;
	const aj_net *n;
	struct sockaddr_in upstream; /* the resolver agentjail asks for allowed names */
	bool have_upstream;
	int log_fd;	      /* --net-log, -1 if none */
	int audit_fd;	      /* the service's audit log (secret_* events); < 3: none */
	pthread_mutex_t lock; /* the log and the nft context */
	struct nft_ctx *nft;
	pid_t publisher;      /* the --publish forwarder child next to --allow */
	bool publisher_child; /* this is that child */
	bool privileged;      /* started as root (host root, not a userns' root) */
	struct aj_tls *tls;   /* HTTPS interception for scoped secrets (tls.h), or NULL */
	int spool_dir;	      /* large :body request bodies spooled here (O_TMPFILE); 0: none */
	/* ... up to this many bytes for all of the sandbox's bodies at once
	 * (spool_used: what the open spools hold), so many connections can't
	 * fill the host's disk */
	unsigned long long spool_max;
	_Atomic unsigned long long spool_used;
} aj_netd_ctx;

#endif
