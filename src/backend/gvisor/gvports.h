/* SPDX-License-Identifier: MIT */
/* `agentjail run --isolation gvisor --publish HP:PORT` (gvports.c): the
 * run's listeners on the host's 127.0.0.1, each connection one `runsc
 * exec` of the agent, which connects to PORT on the sandbox's loopback. */
#ifndef AJ_GVPORTS_H
#define AJ_GVPORTS_H

#include "gvrun.h"

/* connections of one run at once (as level 3's agent ports for it) */
#define AJ_GV_PUBLISH_SLOTS 4

typedef struct aj_gv_publish aj_gv_publish;
/* The listeners, before the run starts (a port in use: 125); *out stays
 * NULL without --publish. */
int aj_gv_publish_listen(aj_gv_publish **out, const aj_policy *p, aj_error *err);
/* Connections served from now on (g's container started). */
int aj_gv_publish_start(aj_gv_publish *gp, gv_run *g, aj_error *err);
/* Listeners closed, connections ended (before g's teardown). */
void aj_gv_publish_stop(aj_gv_publish **gp);

#endif
