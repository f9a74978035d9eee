/* SPDX-License-Identifier: MIT */
/* What the one-shot run (runsc.c) and the persistent sandbox (box.c) of
 * level 2 share: the private directory, bundle, cgroup, network and
 * workspace guard of one runsc container, and its start and teardown. */
#ifndef AJ_GVRUN_H
#define AJ_GVRUN_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "backend.h"
#include "cgroup.h"
#include "gvisor.h"
#include "net.h"
#include "protect.h"
#include "userns.h"

/* The host's pids controller counts tasks (threads): a gVisor sandbox is
 * ~150 of them at rest (runsc run, the gofer, the Sentry's Go threads) and
 * ~10-14 more per process inside (the ptrace platform's stub process and
 * tracer threads; measured: 1, 10, 50 processes -> 160, 287, 669 tasks).
 * --pids N becomes this at the host cgroup: a ceiling against fork bombs
 * that lets N processes run (docs/levels.md). */
#define AJ_GVISOR_PIDS_BASE 192
#define AJ_GVISOR_PIDS_PER_PROC 16
static inline unsigned long long aj_gv_host_pids(unsigned long long pids)
{
	return pids ? AJ_GVISOR_PIDS_BASE + AJ_GVISOR_PIDS_PER_PROC * pids : 0;
}

typedef struct gv_run {
	const aj_policy *p;
	const aj_run_hooks *hooks;
	char runsc[PATH_MAX];
	char dir[64];	 /* the private directory */
	char bundle[96]; /* dir/bundle */
	char state[96];	 /* dir/state: runsc --root */
	char id[48];	 /* the container's id */
	aj_cgroup cg;
	bool have_cg;
	aj_idmap idm;
	aj_gv_staged staged;
	int etc_lock; /* the /etc copy's manifest, held while it is in use */
	aj_net net;   /* --net open, --allow: runsc run's netns gets the veth */
	bool net_ready;
	aj_protect *prot; /* the workspace's host-run files (protect.h), or NULL */
	/* a persistent sandbox (box.c): its directory is GV_BOX_PREFIX (the
	 * one-shot runs' sweep leaves it alone) and agent, the host path of
	 * agentjail-agent, is bound at AJ_AGENT_PATH */
	bool persistent;
	const char *agent;
	/* --net open, --allow: runsc's netns (its control socket is an abstract
	 * unix socket there), for the runsc commands after run; else -1 */
	int netns_fd;
	/* a checkpoint's directory (box.c): aj_gv_start runs `runsc restore`
	 * from it instead of `runsc run` (with detach) */
	const char *restore;
} gv_run;

#define GV_DIR_PREFIX "/tmp/agentjail-gvisor-"
#define GV_BOX_PREFIX "/tmp/agentjail-gvbox-"

/* runsc with args, its output to /dev/null (or up to len bytes in out):
 * its exit status, or -errno. */
int aj_gv_runsc_cmd(const char *runsc, char *const *args, char *out, size_t len);
/* The same in network namespace netns (-1: ours). */
int aj_gv_runsc_cmd_in(int netns, const char *runsc, char *const *args, char *out, size_t len);
/* The same with its stderr (which 2) or stdout (1) in out. */
int aj_gv_runsc_cmd_fd(int netns, const char *runsc, char *const *args, char *out, size_t len,
		       int which);
int aj_gv_refuse_unsupported(const aj_policy *p, aj_error *err);
/* The host's agentjail-agent (AGENTJAIL_GVISOR_AGENT, else next to this
 * program or in libexecdir) in out, or -ENOENT with the fix. */
int aj_gv_find_agent(char *out, size_t len, aj_error *err);
void aj_gv_warn(gv_run *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `runsc kill --all ID SIG` */
void aj_gv_runsc_signal(gv_run *g, const char *sig);
/* SIGKILL every task left in the cgroup */
void aj_gv_kill_cgroup(gv_run *g);
/* A new container id (and cgroup name) "agentjail-PID-RANDOM" in g->id. */
void aj_gv_new_id(gv_run *g);
/* The directory, bundle, cgroup, network and guard for g->p. */
int aj_gv_setup(gv_run *g, aj_error *err);
/* Start `runsc run` (stdout and stderr into out[] when >= 0), or with
 * detach `runsc run --detach` (stdio /dev/null, its errors in dir/runsc.err),
 * which returns once the sandbox's init runs (`runsc restore --detach`
 * with g->restore). The runsc process's pid. */
pid_t aj_gv_start(gv_run *g, const int out[2], bool detach, aj_error *err);
/* A new copy of the host /etc's mount for a second start (a restore in
 * place): the first went with runsc's mount namespace. */
int aj_gv_restage_etc(gv_run *g, aj_error *err);
/* Remove everything setup made (runsc delete --force first). */
void aj_gv_teardown(gv_run *g);

#endif
