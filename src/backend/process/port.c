/* SPDX-License-Identifier: MIT */
/* A TCP connection to a port inside a box, for the service's ports proxy
 * (docs/api.md, "Ports"). A short-lived thread joins the box's network
 * namespace (setns changes only the calling thread's), connects to the
 * loopback address there and hands the socket back: the socket belongs
 * to the sandbox's namespace for good, so the proxy reaches what listens
 * on the sandbox's own loopback, and nothing of the sandbox's network
 * (its veth, its nftables rules, what it may reach) changes. */
#include "port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "util.h"

typedef struct conn {
	int ns;
	unsigned port;
	int fd;	 /* the connected socket, or a negative errno */
	int err; /* setns's errno, or 0 */
} conn;

/* A connected socket to the loopback address of family, or a negative errno. */
static int try_connect(int family, unsigned port)
{
	int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	struct timeval tv = {.tv_sec = AJ_PORT_CONNECT_TIMEOUT_S};
	(void)setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)); /* bounds connect */
	struct sockaddr_in a4 = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6,
				  .sin6_port = htons((uint16_t)port),
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int r = family == AF_INET ? connect(s, (struct sockaddr *)&a4, sizeof(a4))
				  : connect(s, (struct sockaddr *)&a6, sizeof(a6));
	int fl = r == 0 ? fcntl(s, F_GETFL) : -1;
	if (r < 0 || fl < 0 || fcntl(s, F_SETFL, fl | O_NONBLOCK) < 0) {
		int e = errno;
		close(s);
		return -(e == EINPROGRESS ? ETIMEDOUT : e); /* (SO_SNDTIMEO ran out) */
	}
	return s;
}

static void *connect_inside(void *arg)
{
	conn *c = arg;
	if (setns(c->ns, CLONE_NEWNET) < 0) {
		c->err = errno;
		return NULL;
	}
	c->fd = try_connect(AF_INET, c->port);
	if (c->fd == -ECONNREFUSED) { /* a server on ::1 only */
		int fd6 = try_connect(AF_INET6, c->port);
		if (fd6 >= 0 || (fd6 != -EAFNOSUPPORT && fd6 != -EADDRNOTAVAIL))
			c->fd = fd6;
	}
	return NULL;
}

int aj_box_port_connect(const aj_box *b, unsigned port, aj_error *err)
{
	if (port == 0 || port > 65535)
		return aj_err(err, EINVAL, "port %u: expected 1 to 65535", port);
	/* init is the keeper's child, reaped only when the box ends: its pid
	 * names it as long as the box lives */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)b->info.init);
	conn c = {.port = port, .fd = -EIO};
	c.ns = b->info.init > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (c.ns < 0)
		return aj_err(err, errno ? errno : ESRCH,
			      "cannot open the sandbox's network namespace");
	pthread_t t;
	int e = pthread_create(&t, NULL, connect_inside, &c);
	if (e == 0)
		pthread_join(t, NULL);
	close(c.ns);
	if (e != 0)
		return aj_err(err, e, "cannot start a thread to connect to port %u", port);
	if (c.err)
		return aj_err(err, c.err, "cannot enter the sandbox's network namespace");
	if (c.fd == -ECONNREFUSED)
		return -ECONNREFUSED;
	if (c.fd < 0)
		return aj_err(err, -c.fd, "cannot connect to port %u in the sandbox", port);
	return c.fd;
}
