/* SPDX-License-Identifier: MIT */
/* A TCP connection to a port inside a box, for the service's ports proxy
 * (docs/api.md, "Ports"). A short-lived thread joins the box's network
 * namespace (setns changes only the calling thread's), connects to the
 * loopback address there and hands the socket back: the socket belongs
 * to the sandbox's namespace for good, so the proxy reaches what listens
 * on the sandbox's own loopback, and nothing of the sandbox's network
 * (its veth, its nftables rules, what it may reach) changes. */
#include "port.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "loopback.h"
#include "util.h"

typedef struct conn {
	int ns;
	unsigned port;
	int fd;	 /* the connected socket, or a negative errno */
	int err; /* setns's errno, or 0 */
} conn;

static void *connect_inside(void *arg)
{
	conn *c = arg;
	if (setns(c->ns, CLONE_NEWNET) < 0) {
		c->err = errno;
		return NULL;
	}
	c->fd = aj_loopback_connect(c->port, true);
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
