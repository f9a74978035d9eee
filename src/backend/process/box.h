/* SPDX-License-Identifier: MIT */
/* A persistent sandbox ("box"): built once by the same pipeline as
 * `agentjail run` (sandbox.c), then many commands run in it, each with the
 * policy's capabilities drop, Landlock, seccomp, rlimits and redaction. The
 * sandbox is held by a small keeper process (init's parent, so init dies
 * with it, and it dies with its creator); closing the keeper's socket tears
 * the sandbox down. */
#ifndef AJ_BOX_H
#define AJ_BOX_H

#include <stdbool.h>
#include <sys/types.h>

#include "backend.h"
#include "cgroup.h"
#include "error.h"
#include "policy.h"
#include "sync.h"

/* What the keeper tells its creator once the sandbox is up. */
typedef struct aj_box_info {
	aj_msg m; /* AJ_MSG_SETUP_DONE (with init's socket) or AJ_MSG_ERROR */
	pid_t init;
	uid_t uid; /* host ids of the sandbox's root user (files written by the service) */
	gid_t gid;
	bool have_cg;
	aj_cgroup cg;
} aj_box_info;

struct aj_box;
/* A warm interpreter of the box (zygote.h) as box.c reaches it: zygote.c,
 * which is built on the box, sets these when it starts one, so that the
 * box does not depend on it. */
typedef struct aj_box_warm {
	/* the client's argv for a command's argv, or NULL (aj_zygote_argv) */
	char **(*argv)(const struct aj_box *b, char *const *argv);
	/* wait for its thread and free it (aj_zygote_free) */
	void (*free)(struct aj_box *b);
} aj_box_warm;

typedef struct aj_box {
	const aj_policy *policy; /* borrowed: must outlive the box */
	pid_t keeper;
	int ctl;  /* to the keeper; closing it ends the sandbox */
	int sock; /* requests to init */
	int root; /* O_PATH of the sandbox's root (opened by its init) */
	int oom;  /* the cgroup's OOM kill count (aj_cgroup_oom_fd), or -1 */
	aj_box_info info;
	char **envp;		  /* the policy's environment, the base of every command's */
	struct aj_zygote *zygote; /* a warm interpreter (zygote.h), or NULL */
	const aj_box_warm *warm;  /* its hooks, set with it (or NULL) */
} aj_box;

/* An empty box (no fds: aj_box_destroy closes nothing of the caller's). */
void aj_box_init(aj_box *b);
/* Build a sandbox for p (p->argv is ignored). The calling thread must
 * live as long as the box (the keeper dies with it). source: p as the
 * JSON text it was made from (aj_policy_from_json, with quiet set): the
 * keeper is the light `agentjail` program (`agentjail-box
 * AJ_KEEPER_COMMAND CTL-FD SOURCE-FD`), which rebuilds p from it. */
int aj_box_create(aj_box *b, const aj_policy *p, const char *source, aj_error *err);
#define AJ_KEEPER_COMMAND "__keeper"
/* Kill everything in it and remove every trace; waits for the keeper. */
void aj_box_destroy(aj_box *b);

/* Run one command in the box and wait for it, streaming its output. Returns
 * 0 when it ran (res: exit_code, term_signal, timed_out (124), oom_killed
 * (137), wall_ms; not peak_memory_bytes), or a negative errno with err filled when it could not
 * start (err->exit 126/127: not executable/not found, 125: other). Safe to
 * call from several threads at once. */
int aj_box_exec(aj_box *b, const aj_exec_spec *spec, const aj_exec_io *io, aj_run_result *res,
		aj_error *err);

/* aj_box_exec in two halves, for a caller whose thread should not be the
 * one that waits: aj_box_exec_start sends the command to the sandbox's
 * init and returns (NULL: out of memory; an error to send it is kept for
 * the wait); aj_box_exec_wait, on any thread, waits as aj_box_exec does
 * and frees the job; aj_box_exec_abandon frees it without waiting (a
 * command still running is killed). io is copied. */
typedef struct aj_box_job aj_box_job;
aj_box_job *aj_box_exec_start(aj_box *b, const aj_exec_spec *spec, const aj_exec_io *io);
int aj_box_exec_wait(aj_box_job *x, aj_run_result *res, aj_error *err);
void aj_box_exec_abandon(aj_box_job *x);

/* The same, never through the warm interpreter (zygote.h). */
int aj_box_exec_direct(aj_box *b, const aj_exec_spec *spec, const aj_exec_io *io,
		       aj_run_result *res, aj_error *err);

/* A new fd (O_PATH) on the sandbox's root directory (opened by its init,
 * passed up: no ptrace access to init needed), for openat2 with
 * RESOLVE_IN_ROOT. */
int aj_box_root_fd(const aj_box *b, aj_error *err);

/* Resize the sandbox's writable space (--disk: its scratch tmpfs, in
 * bytes and inodes), a pooled sandbox at hand-out. 0 or a negative errno
 * (err filled); the tmpfs cannot shrink below what it holds. */
int aj_box_set_disk(const aj_box *b, unsigned long long bytes, aj_error *err);

/* A new pseudo-terminal (80x24) in the sandbox's own devpts: pty[0] the
 * master, pty[1] the terminal (owned by the sandbox's root user) for
 * aj_exec_spec.tty_slave. Returns 0 or a negative errno (err filled). */
int aj_box_open_pty(const aj_box *b, int pty[2], aj_error *err);

#endif
