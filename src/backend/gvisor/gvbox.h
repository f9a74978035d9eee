/* SPDX-License-Identifier: MIT */
/* A persistent level-2 sandbox (box.c): a runsc container whose init is
 * agentjail-agent, each command and file operation one `runsc exec` of the
 * agent speaking the agent protocol (agent_proto.h, exec.c, files.c). */
#ifndef AJ_GV_BOX_H
#define AJ_GV_BOX_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "agent_relay.h"
#include "backend.h"
#include "gvrun.h"

/* A connection of the ports proxy (gvports.c): its runsc exec of the
 * agent and our end of the front's socket pair, under gate_mu. */
typedef struct gv_proxy_slot {
	bool used;
	int fd;	   /* -1: none */
	pid_t pid; /* its runsc exec, until reaped (0) */
} gv_proxy_slot;

struct aj_inst {
	gv_run g;
	aj_policy q; /* p with the agent's init as its command (shallow) */
	char *init_argv[3];
	char agent[PATH_MAX]; /* the host's agentjail-agent */
	char **envp;	      /* the command's base environment (config.json's) */
	pid_t sandbox_pid;    /* runsc's sandbox process (the Sentry) */
	bool killed;
	bool paused; /* runsc pause: a checkpoint is refused */
	/* the gate of checkpoint: each runsc exec of the agent is one of busy
	 * (runsc cannot save the host pipes it hands the Sentry); while saving,
	 * a new one waits */
	pthread_mutex_t gate_mu;
	pthread_cond_t gate_cv;
	unsigned busy;
	bool saving;
	/* the ports proxy's connections, under gate_mu (each holds the gate
	 * with its runsc exec); proxy_stop: the sandbox goes, they end */
	gv_proxy_slot proxy[AJ_PROXY_MAX];
	bool proxy_stop;
};

/* One `runsc exec` of the agent: ours are the ends of its stdin (to),
 * stdout (from) and stderr (errp, runsc's own messages). root: as the
 * sandbox's root user with the capabilities file operations need, else
 * as the policy's user with none. */
typedef struct gv_agent {
	pid_t pid;
	int to, from, errp;
	aj_inst *gate; /* the sandbox whose gate it holds, or NULL */
} gv_agent;
int aj_gvbox_agent_spawn(aj_inst *i, bool root, gv_agent *a, aj_error *err);
/* The same for g's container, through no gate (a one-shot run's). */
int aj_gv_agent_spawn(gv_run *g, bool root, gv_agent *a, aj_error *err);
/* Close our ends, wait until it has exited without reaping it (SIGKILL
 * first when kill, or after grace_ms): its pid stays safe to kill. */
void aj_gvbox_agent_settle(gv_agent *a, bool kill, int grace_ms);
#define AJ_GV_AGENT_GRACE_MS 3000
/* a file operation's agent silent this long is given up (as level 3's) */
#define AJ_GV_AGENT_IDLE_MS 30000
/* Close our ends, reap it (SIGKILL first when kill). */
void aj_gvbox_agent_end(gv_agent *a, bool kill);
/* runsc's message on errp (the last line), for an error. */
void aj_gvbox_runsc_error(gv_agent *a, char *out, size_t len);

aj_job *aj_gvbox_exec_start(aj_inst *i, const aj_exec_spec *spec, const aj_exec_io *io);
int aj_gvbox_exec_wait(aj_job *j, aj_run_result *res, aj_error *err);
void aj_gvbox_exec_abandon(aj_job *j);

int aj_gvbox_file_read(aj_inst *i, const char *path, int *fd, aj_file_stat *st, aj_error *err);
int aj_gvbox_file_write(aj_inst *i, const char *path, int src_fd, unsigned long long len,
			unsigned mode, aj_error *err);
int aj_gvbox_file_stat(aj_inst *i, const char *path, aj_file_stat *st, aj_error *err);
int aj_gvbox_file_list(aj_inst *i, const char *path, aj_dirent_fn fn, void *ctx, aj_error *err);
int aj_gvbox_file_remove(aj_inst *i, const char *path, bool recursive, aj_error *err);
int aj_gvbox_file_mkdir(aj_inst *i, const char *path, bool parents, aj_error *err);

/* The ports proxy (gvports.c): a connection to port on the sandbox's
 * loopback (backend.h, port_connect); the sandbox's relays ended (before
 * its teardown). */
int aj_gvbox_port_connect(aj_inst *i, unsigned port, aj_error *err);
void aj_gvbox_ports_close(aj_inst *i);

#endif
