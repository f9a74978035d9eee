/* SPDX-License-Identifier: MIT */
/* agentjail oci's own parts (src/cli/cmd_oci.c and oci_*.c): the state
 * directory, errors, the container's cgroups (oci_common.c); the monitor,
 * hooks and console (oci_monitor.c); exec (oci_exec.c); pause, resume, ps,
 * update (oci_ctl.c). Private to the oci command. */
#ifndef AJ_OCI_COMMON_H
#define AJ_OCI_COMMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "cgroup.h"
#include "error.h"
#include "oci_bundle.h"

#define OCI_VERSION "1.2.0"
#define OCI_FIFO "exec.fifo"
#define OCI_STATE "state.json"
#define OCI_EXEC_SOCK "exec.sock"

/* the global options, for errors */
typedef struct aj_oci_opts {
	const char *root;
	FILE *log;
	bool json;
} aj_oci_opts;
extern aj_oci_opts aj_oci_g;

/* ---- oci_common.c ---- */

/* An error line on stderr, and in --log (JSON lines with --log-format json). */
void aj_oci_log_error(const char *msg);
/* err logged; its exit code (125 when it has none) */
int aj_oci_fail(const aj_error *err);
int aj_oci_failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A container id is one safe path component. */
bool aj_oci_id_valid(const char *id);
/* The state root (made with make): an fd, or -EPERM when it is not the caller's. */
int aj_oci_open_root(bool make);
/* The start time of a process, 0 when gone or a zombie. */
unsigned long long aj_oci_start_time(pid_t pid);
/* The command's host pid: init's child that started first, or 0. */
pid_t aj_oci_first_child(pid_t init);

typedef struct aj_oci_state {
	json_t *j;
	pid_t pid, init;
	pid_t cpid;	    /* the container's process (runtime-spec's pid), 0 if gone */
	const char *status; /* created, running, paused, stopped */
	bool orphan;	    /* its monitor gone, its init still there (frozen) */
	bool ending;	    /* its pid file's process gone, its monitor not yet */
} aj_oci_state;

/* ID's state (st->j to json_decref): 0, or 125 with the error printed. */
int aj_oci_load_state(int rootfd, const char *id, aj_oci_state *st);
bool aj_oci_init_alive(const aj_oci_state *st);
/* The sandbox's own cgroup directories: 0, or -1 with why in err. */
int aj_oci_container_cgroup(const aj_oci_state *st, aj_cgroup *cg, aj_error *err);
bool aj_oci_container_frozen(const aj_oci_state *st);
void aj_oci_thaw(const aj_oci_state *st);
/* An orphan's end, as its monitor's would have been: its init killed (and
 * thawed: a frozen process dies only then), its cgroups removed. */
void aj_oci_end_orphan(const aj_oci_state *st);
int aj_oci_remove_state(int rootfd, const char *id);
/* A file written atomically in dfd: 0 or a negative errno. */
int aj_oci_write_file_at(int dfd, const char *name, const char *text);
int aj_oci_write_pid_file(const char *path, pid_t pid);

/* ---- oci_monitor.c ---- */

/* The runtime's own network namespace once create joined an engine's
 * (hooks run in it), -1 when never left. */
extern int aj_oci_runtime_netns;
/* the runtime's own ipc and uts namespaces when create joined a pod's, or -1 */
extern int aj_oci_runtime_ipcns, aj_oci_runtime_utsns;
/* The hooks of one kind; strict: the first failure stops them. */
int aj_oci_run_hooks(const json_t *hooks, const char *kind, const char *id, const char *status,
		     pid_t pid, const char *bundle, const json_t *ann, bool strict, aj_error *err);
/* A new pty (*slave its terminal): the master, or a negative errno. */
int aj_oci_open_pty(int *slave);
/* master to the engine over its --console-socket: 0 or a negative errno. */
int aj_oci_send_console(const char *path, int master);
/* create's work: the monitor forked, the sandbox built and held, the
 * container's process forked, the state and pid file written. 0 or 125. */
int aj_oci_spawn_monitor(aj_oci_config *cfg, int rootfd, const char *id, const char *bundle,
			 const char *pid_file, const char *console, const char *text);

/* ---- oci_exec.c, oci_ctl.c: the commands ---- */

int aj_oci_cmd_exec(int rootfd, int argc, char **argv);
int aj_oci_cmd_pause(int rootfd, const char *id, bool frozen);
int aj_oci_cmd_ps(int rootfd, int argc, char **argv);
int aj_oci_cmd_update(int rootfd, int argc, char **argv);

#endif
