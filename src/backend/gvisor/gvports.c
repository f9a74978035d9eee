/* SPDX-License-Identifier: MIT */
/* The ports of a level-2 sandbox (docs/api.md, "Ports"; docs/levels.md):
 * its loopback is inside gVisor's netstack (the Sentry's), which the host
 * cannot enter as level 1's proxy enters a network namespace. Each
 * connection is one `runsc exec` of the agent as the policy's user, with
 * no capabilities, op "connect" (agent.c), relayed by agent_relay.c as at
 * level 3: the service's ports proxy (port_connect) and `run --publish`. */
#include "gvports.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_relay.h"
#include "gvbox.h"
#include "util.h"

/* An agent stream that could not connect: the error to answer with. */
static int connect_error(int r, const aj_agent_relay *rl, gv_agent *a, unsigned port, aj_error *err)
{
	char msg[512];
	aj_gvbox_runsc_error(a, msg, sizeof(msg));
	if (r == -ECONNREFUSED)
		return -ECONNREFUSED;
	if (r == -EPIPE)
		return aj_err(err, EIO, "gvisor: the sandbox's agent did not answer: %s",
			      *msg ? msg : "runsc exec failed");
	return aj_err(err, -r, "gvisor: cannot connect to port %u in the sandbox%s%s", port,
		      *rl->x.error ? ": " : "", rl->x.error);
}

/* ---- the service's ports proxy ---- */

typedef struct gv_relay {
	aj_inst *i;
	int slot;
	gv_agent a;
	aj_agent_relay r;
} gv_relay;

static bool proxy_stopped(void *ctx)
{
	aj_inst *i = ctx;
	pthread_mutex_lock(&i->gate_mu);
	bool s = i->proxy_stop;
	pthread_mutex_unlock(&i->gate_mu);
	return s;
}

/* The relay's slot free again, its runsc exec reaped (killed unless its
 * agent answered). */
static void proxy_release(gv_relay *rl)
{
	aj_inst *i = rl->i;
	pthread_mutex_lock(&i->gate_mu);
	i->proxy[rl->slot].pid = 0; /* reaped below: no kill by pid after this */
	pthread_mutex_unlock(&i->gate_mu);
	aj_gvbox_agent_end(&rl->a, !rl->r.answered);
	pthread_mutex_lock(&i->gate_mu);
	i->proxy[rl->slot] = (gv_proxy_slot){.fd = -1};
	pthread_cond_broadcast(&i->gate_cv);
	pthread_mutex_unlock(&i->gate_mu);
	free(rl->r.ibuf);
	free(rl);
}

static void *proxy_main(void *arg)
{
	gv_relay *rl = arg;
	aj_agent_relay_run(&rl->r);
	pthread_mutex_lock(&rl->i->gate_mu);
	rl->i->proxy[rl->slot].fd = -1;
	pthread_mutex_unlock(&rl->i->gate_mu);
	close(rl->r.client);
	proxy_release(rl);
	return NULL;
}

/* Never waits for a free slot (a supervisor's thread would wait as long
 * as a connection lasts): -EBUSY with AJ_PROXY_MAX connections open. */
int aj_gvbox_port_connect(aj_inst *i, unsigned port, aj_error *err)
{
	if (port == 0 || port > 65535)
		return aj_err(err, EINVAL, "port %u: expected 1 to 65535", port);
	int slot = -1;
	pthread_mutex_lock(&i->gate_mu);
	for (int k = 0; k < AJ_PROXY_MAX && slot < 0 && !i->proxy_stop; k++)
		if (!i->proxy[k].used)
			slot = k;
	if (slot >= 0)
		i->proxy[slot] = (gv_proxy_slot){.used = true, .fd = -1};
	pthread_mutex_unlock(&i->gate_mu);
	if (slot < 0) {
		aj_err(err, EBUSY,
		       "gvisor: the sandbox's ports proxy has %d connections open, its most",
		       AJ_PROXY_MAX);
		aj_err_hint(err, "retry once one of them ends");
		return -EBUSY;
	}
	gv_relay *rl = calloc(1, sizeof(*rl));
	int r = rl ? aj_gvbox_agent_spawn(i, false, &rl->a, err) : aj_err(err, ENOMEM, "relay");
	if (r < 0) {
		pthread_mutex_lock(&i->gate_mu);
		i->proxy[slot] = (gv_proxy_slot){.fd = -1};
		pthread_cond_broadcast(&i->gate_cv);
		pthread_mutex_unlock(&i->gate_mu);
		free(rl);
		return r;
	}
	rl->i = i, rl->slot = slot;
	pthread_mutex_lock(&i->gate_mu);
	i->proxy[slot].pid = rl->a.pid;
	pthread_mutex_unlock(&i->gate_mu);
	rl->r = (aj_agent_relay){.client = -1,
				 .from = rl->a.from,
				 .to = rl->a.to,
				 .idle_ms = AJ_PROXY_IDLE_MS,
				 .stop = proxy_stopped,
				 .ctx = i};
	int sv[2] = {-1, -1};
	if ((r = aj_agent_relay_connect(&rl->r, port)) < 0) {
		r = connect_error(r, &rl->r, &rl->a, port, err);
	} else if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		r = aj_err(err, errno, "socketpair");
	} else {
		rl->r.client = sv[1];
		pthread_mutex_lock(&i->gate_mu);
		i->proxy[slot].fd = sv[1];
		pthread_mutex_unlock(&i->gate_mu);
		pthread_t t;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		int e = pthread_create(&t, &at, proxy_main, rl);
		pthread_attr_destroy(&at);
		if (e == 0) {
			(void)fcntl(sv[0], F_SETFL, O_NONBLOCK);
			return sv[0];
		}
		r = aj_err(err, e, "cannot start the connection's relay");
		pthread_mutex_lock(&i->gate_mu);
		i->proxy[slot].fd = -1;
		pthread_mutex_unlock(&i->gate_mu);
		close(sv[0]), close(sv[1]);
	}
	proxy_release(rl);
	return r;
}

void aj_gvbox_ports_close(aj_inst *i)
{
	pthread_mutex_lock(&i->gate_mu);
	i->proxy_stop = true;
	for (;;) {
		bool any = false;
		/* a relay blocked writing to the front, or to its agent, wakes */
		for (int k = 0; k < AJ_PROXY_MAX; k++) {
			any = any || i->proxy[k].used;
			if (i->proxy[k].fd >= 0)
				(void)shutdown(i->proxy[k].fd, SHUT_RDWR);
			if (i->proxy[k].pid > 0)
				kill(i->proxy[k].pid, SIGKILL);
		}
		if (!any)
			break;
		pthread_cond_wait(&i->gate_cv, &i->gate_mu);
	}
	pthread_mutex_unlock(&i->gate_mu);
}

/* ---- run --publish ---- */

struct aj_gv_publish {
	aj_publisher *pb;
	gv_run *g;
	pthread_mutex_t mu;
	gv_agent a[AJ_GV_PUBLISH_SLOTS];
	pid_t pid[AJ_GV_PUBLISH_SLOTS]; /* a[k]'s runsc exec until it is reaped, under mu */
};

int aj_gv_publish_listen(aj_gv_publish **out, const aj_policy *p, aj_error *err)
{
	*out = NULL;
	if (!p->n_publish)
		return 0;
	aj_gv_publish *gp = calloc(1, sizeof(*gp));
	if (!gp)
		return aj_err(err, ENOMEM, "--publish");
	pthread_mutex_init(&gp->mu, NULL);
	*out = gp;
	return aj_publish_listen(&gp->pb, p, err);
}

static int gv_open(void *ctx, unsigned slot, aj_agent_relay *r)
{
	aj_gv_publish *gp = ctx;
	aj_error err;
	aj_err_clear(&err);
	if (aj_gv_agent_spawn(gp->g, false, &gp->a[slot], &err) < 0)
		return -1;
	pthread_mutex_lock(&gp->mu);
	gp->pid[slot] = gp->a[slot].pid;
	pthread_mutex_unlock(&gp->mu);
	r->from = gp->a[slot].from, r->to = gp->a[slot].to;
	return 0;
}

static void gv_close(void *ctx, unsigned slot, const aj_agent_relay *r)
{
	aj_gv_publish *gp = ctx;
	pthread_mutex_lock(&gp->mu);
	gp->pid[slot] = 0;
	pthread_mutex_unlock(&gp->mu);
	aj_gvbox_agent_end(&gp->a[slot], !r->answered);
}

static void gv_wake(void *ctx, unsigned slot)
{
	aj_gv_publish *gp = ctx;
	pthread_mutex_lock(&gp->mu);
	if (gp->pid[slot] > 0)
		kill(gp->pid[slot], SIGKILL);
	pthread_mutex_unlock(&gp->mu);
}

int aj_gv_publish_start(aj_gv_publish *gp, gv_run *g, aj_error *err)
{
	if (!gp)
		return 0;
	gp->g = g;
	aj_publish_ops ops = {.open = gv_open,
			      .close = gv_close,
			      .wake = gv_wake,
			      .slots = AJ_GV_PUBLISH_SLOTS,
			      .ctx = gp};
	return aj_publish_start(gp->pb, &ops, err);
}

void aj_gv_publish_stop(aj_gv_publish **gpp)
{
	aj_gv_publish *gp = *gpp;
	if (!gp)
		return;
	aj_publish_stop(&gp->pb);
	pthread_mutex_destroy(&gp->mu);
	free(gp);
	*gpp = NULL;
}
