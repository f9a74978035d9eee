/* SPDX-License-Identifier: MIT */
/* `agentjail run --isolation microvm --publish HP:PORT` (docs/levels.md):
 * the run listens on the host's 127.0.0.1:HP (agent_relay.c, as level 2),
 * and each connection is relayed by the guest's agent to PORT on the
 * guest's loopback (op "connect", as the service's ports proxy, box.c)
 * over one of the VM's extra agent ports (aj.agent.1 ...), held for the
 * connection. A connection with no free port, or nothing listening in the
 * guest, is closed. */
#include "publish.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "util.h"

struct aj_mv_publish {
	aj_publisher *pb;
	aj_mv_vm *m;
	bool dead[AJ_MV_MAX_PORTS]; /* agent ports given up (a connection cut short) */
};

int aj_mv_publish_listen(aj_mv_publish **out, const aj_policy *p, aj_error *err)
{
	*out = NULL;
	if (!p->n_publish)
		return 0;
	aj_mv_publish *mp = calloc(1, sizeof(*mp));
	if (!mp)
		return aj_err(err, ENOMEM, "--publish");
	*out = mp;
	return aj_publish_listen(&mp->pb, p, err);
}

/* slot k: agent port k + 1 (0 is the command's) */
static int mv_open(void *ctx, unsigned slot, aj_agent_relay *r)
{
	aj_mv_publish *mp = ctx;
	unsigned k = slot + 1;
	if (k >= mp->m->nports || k >= AJ_MV_MAX_PORTS || mp->dead[k])
		return -1;
	r->from = r->to = mp->m->ports[k];
	return 0;
}

static void mv_close(void *ctx, unsigned slot, const aj_agent_relay *r)
{
	aj_mv_publish *mp = ctx;
	/* cut short (its agent may still speak) or left mid-frame: not reused */
	mp->dead[slot + 1] = !r->answered || r->broken;
}

static void mv_wake(void *ctx, unsigned slot)
{
	aj_mv_publish *mp = ctx;
	(void)shutdown(mp->m->ports[slot + 1], SHUT_RDWR);
}

int aj_mv_publish_start(aj_mv_publish *mp, aj_mv_vm *m, aj_error *err)
{
	if (!mp)
		return 0;
	mp->m = m;
	aj_publish_ops ops = {.open = mv_open,
			      .close = mv_close,
			      .wake = mv_wake,
			      .slots = m->nports > 1 ? m->nports - 1 : 0,
			      .ctx = mp};
	return aj_publish_start(mp->pb, &ops, err);
}

void aj_mv_publish_stop(aj_mv_publish **mpp)
{
	aj_mv_publish *mp = *mpp;
	if (!mp)
		return;
	aj_publish_stop(&mp->pb);
	free(mp);
	*mpp = NULL;
}
