/* SPDX-License-Identifier: MIT */
/* Level 3's ports proxy: a connection to a port on the guest's loopback
 * through the VM's agent (op "connect"), relayed by agent_relay.c. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mvbox.h"
#include "stall.h"
#include "util.h"

/* A connection to a port on the guest's loopback (docs/api.md, "Ports"):
 * the guest's agent connects there (op "connect") and relays its bytes as
 * frames on an agent port, held for the connection; the front gets one end
 * of a socket pair whose other end a thread of ours relays to that port. */
typedef struct mv_relay {
	aj_inst *i;
	int k;	  /* the agent port */
	int slot; /* in i->relay_fd */
	int fd;	  /* our end of the pair */
} mv_relay;

static bool relay_killed(void *ctx)
{
	aj_inst *i = ctx;
	pthread_mutex_lock(&i->mu);
	bool killed = i->killed;
	pthread_mutex_unlock(&i->mu);
	return killed;
}

/* The bytes both ways as at level 2 (agent_relay.c), the server's first
 * ones read with the 'T' frame in the port's buffer. */
static void *relay_thread(void *arg)
{
	mv_relay *r = arg;
	aj_inst *i = r->i;
	mv_port *pt = &i->port[r->k];
	aj_agent_relay ar = {.client = r->fd,
			     .from = pt->fd,
			     .to = pt->fd,
			     .idle_ms = RELAY_IDLE_MS,
			     .stop = relay_killed,
			     .ctx = i,
			     .ibuf = pt->ibuf,
			     .ilen = pt->ilen,
			     .icap = pt->icap};
	aj_agent_relay_run(&ar);
	pt->ibuf = ar.ibuf, pt->ilen = ar.ilen, pt->icap = ar.icap;
	pthread_mutex_lock(&i->mu);
	i->relay_fd[r->slot] = -1;
	pthread_mutex_unlock(&i->mu);
	close(r->fd);
	aj_mvbox_port_give(i, r->k, ar.answered, ar.broken);
	pthread_mutex_lock(&i->mu);
	i->relays--;
	pthread_cond_broadcast(&i->cv);
	pthread_mutex_unlock(&i->mu);
	free(r);
	return NULL;
}

typedef struct connect_ctx {
	mv_call c;
	bool ok;
} connect_ctx;

static bool connect_frame(void *ctx, char type, const char *buf, size_t len)
{
	connect_ctx *cc = ctx;
	if (type == AJ_AG_STAT) {
		cc->ok = true;
		return false;
	}
	return aj_mvbox_call_frame(&cc->c, type, buf, len);
}

/* A proxy connection's reservation given back (it never started). */
static void relay_unreserve(aj_inst *i)
{
	pthread_mutex_lock(&i->mu);
	i->relays--;
	pthread_cond_broadcast(&i->cv);
	pthread_mutex_unlock(&i->mu);
}

/* Never waits for a port (a supervisor's thread would wait as long as a
 * connection lasts): -EBUSY when the proxy has AJ_MV_PROXY_MAX connections
 * or no agent port is free. */
int aj_mvbox_port_connect(aj_inst *i, unsigned port, aj_error *err)
{
	if (port == 0 || port > 65535)
		return aj_err(err, EINVAL, "port %u: expected 1 to 65535", port);
	pthread_mutex_lock(&i->mu);
	bool full = i->relays >= AJ_MV_PROXY_MAX;
	if (!full)
		i->relays++;
	pthread_mutex_unlock(&i->mu);
	if (full) {
		aj_err(err, EBUSY,
		       "microvm: the sandbox's ports proxy has %d connections open, its most",
		       AJ_MV_PROXY_MAX);
		aj_err_hint(err, "retry once one of them ends");
		return -EBUSY;
	}
	/* the agent's bound on a server that takes none of the client's bytes */
	json_t *q = json_pack("{s:s,s:i,s:I}", "op", "connect", "port", (int)port, "stall_ms",
			      (json_int_t)aj_relay_stall_ms());
	char *txt = q ? json_dumps(q, JSON_COMPACT) : NULL;
	json_decref(q);
	if (!txt)
		return relay_unreserve(i), aj_err(err, ENOMEM, "request");
	int k = aj_mvbox_port_take(i, false);
	if (k < 0) {
		free(txt);
		relay_unreserve(i);
		if (k != -EBUSY)
			return aj_mvbox_vm_gone(i, err);
		aj_err(err, EBUSY,
		       "microvm: every agent port of the sandbox's VM is busy (commands, "
		       "file operations or proxy connections)");
		aj_err_hint(err, "retry once one of them ends");
		return -EBUSY;
	}
	mv_port *pt = &i->port[k];
	int r = aj_agent_send(pt->fd, AJ_AG_REQUEST, txt, strlen(txt));
	free(txt);
	/* the agent's first frame: connected ('T'), or why not ('X'); what
	 * follows stays in the port's buffer for the relay */
	connect_ctx cc = {.c = {.data_fd = -1}};
	unsigned long long until = aj_mvbox_now_ms() + 10000;
	while (r == 0 && !cc.ok && !cc.c.have_exit) {
		unsigned long long t = aj_mvbox_now_ms();
		int rr = t >= until ? -ETIMEDOUT
				    : aj_mvbox_port_read(pt, (int)(until - t), connect_frame, &cc);
		if (rr < 0)
			r = rr;
	}
	mv_call c = cc.c;
	bool connected = cc.ok;
	if (r < 0 || !connected) {
		aj_mvbox_port_give(i, k, c.have_exit, r == -EPIPE);
		relay_unreserve(i);
		if (r == -EPIPE)
			return aj_mvbox_vm_gone(i, err);
		if (r < 0)
			return aj_err(err, -r, "microvm: connecting to port %u in the VM", port);
		if (c.x.err == ECONNREFUSED)
			return -ECONNREFUSED;
		return aj_err(err, c.x.err ? c.x.err : EIO,
			      "cannot connect to port %u in the VM: %s", port, c.x.error);
	}
	int sv[2];
	mv_relay *rl = calloc(1, sizeof(*rl));
	if (!rl || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		int e = rl ? errno : ENOMEM;
		free(rl);
		aj_mvbox_port_give(i, k, false, false); /* drained before its next use */
		relay_unreserve(i);
		return aj_err(err, e, "socketpair");
	}
	*rl = (mv_relay){.i = i, .k = k, .fd = sv[1]};
	pthread_mutex_lock(&i->mu);
	/* a free slot: at most AJ_MV_PROXY_MAX relays, this one reserved */
	while (i->relay_fd[rl->slot] >= 0)
		rl->slot++;
	i->relay_fd[rl->slot] = sv[1];
	pthread_mutex_unlock(&i->mu);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int e = pthread_create(&t, &at, relay_thread, rl);
	pthread_attr_destroy(&at);
	if (e) {
		pthread_mutex_lock(&i->mu);
		i->relay_fd[rl->slot] = -1;
		pthread_mutex_unlock(&i->mu);
		close(sv[0]), close(sv[1]);
		free(rl);
		aj_mvbox_port_give(i, k, false, false);
		relay_unreserve(i);
		return aj_err(err, e, "cannot start the connection's relay");
	}
	(void)fcntl(sv[0], F_SETFL, O_NONBLOCK);
	return sv[0];
}
