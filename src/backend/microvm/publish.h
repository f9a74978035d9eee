/* SPDX-License-Identifier: MIT */
/* --publish for a one-shot level-3 run (publish.c): listeners on the
 * host's 127.0.0.1 (agent_relay.h), each connection relayed by the
 * guest's agent to the guest's loopback over an agent port of its own. */
#ifndef AJ_MV_PUBLISH_H
#define AJ_MV_PUBLISH_H

#include "agent_relay.h"
#include "boot.h"

/* agent ports a run with --publish adds for its connections */
#define AJ_MV_PUBLISH_PORTS 4

typedef struct aj_mv_publish aj_mv_publish;

/* The listeners, before the boot (a port in use stops the run: 125);
 * *out stays NULL without --publish. */
int aj_mv_publish_listen(aj_mv_publish **out, const aj_policy *p, aj_error *err);
/* Connections served once the VM's agent ports are there. */
int aj_mv_publish_start(aj_mv_publish *pb, aj_mv_vm *m, aj_error *err);
/* Listeners closed, connections ended (before the VM's teardown). */
void aj_mv_publish_stop(aj_mv_publish **pb);

#endif
