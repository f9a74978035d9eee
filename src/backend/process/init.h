/* SPDX-License-Identifier: MIT */
/* PID 1 of the sandbox: starts the command, reaps zombies, forwards
 * signals, and when the command ends kills everything else. */
#ifndef AJ_INIT_H
#define AJ_INIT_H

#include <signal.h>
#include <stdbool.h>

#include "policy.h"
#include "sysfilter.h"

/* One command to start in the sandbox. */
typedef struct aj_init_cmd {
	char **argv;
	char **envp;
	const char *cwd; /* NULL: the policy's */
	const char *pty; /* slave path inside the sandbox, or NULL */
	int stdio[3];	 /* the command's stdin/stdout/stderr, -1: inherit */
	bool no_stdin;	 /* stdin: init's empty pipe (EOF), not stdio[0] */
	bool ctty;	 /* stdin is a terminal: make it the controlling one */
	bool warmup;	 /* no command: the path up to exec, then _exit(0) */
	bool set_user;	 /* run as uid/gid below, not the policy's (AJ_EXEC_USER) */
	uid_t uid;
	gid_t gid;
} aj_init_cmd;

typedef struct aj_init_args {
	const aj_policy *policy;
	int sync_fd;	       /* to the agentjail parent */
	bool drop_groups;      /* setgroups() allowed (privileged mode) */
	const aj_bpf *seccomp; /* compiled filter, loaded last before exec */
	aj_init_cmd cmd;       /* aj_init_main: the one command */
	/* aj_init_main: while the command runs, also start commands on
	 * request (AJ_MSG_EXEC on sync_fd, as aj_init_serve's): `agentjail oci
	 * exec`; they end with the command */
	bool serve_execs;
} aj_init_args;

/* A persistent sandbox's init runs as this uid inside the sandbox (the
 * last of its 65536, never a command's: --user takes 0 to 65533; should
 * that change, AJ_INIT_UID - 1 when the commands run as it): its commands,
 * in its Landlock domain, cannot signal it (init.c, share_domain). */
#define AJ_INIT_UID 65535

/* Sent by agentjail to init: SIGTERM every process of the sandbox. */
#define AJ_SIG_TERM_ALL (SIGRTMIN + 1)

/* Run a->cmd and end with it. Never returns. */
__attribute__((noreturn)) void aj_init_main(const aj_init_args *a);

/* A persistent sandbox's init: start commands on request and stay. Each
 * AJ_MSG_EXEC on sync_fd carries up to five fds: a SEQPACKET socket for
 * that command (STARTED or ERROR, then EXIT, are sent there; AJ_MSG_SIGNAL
 * read from there signals the command's process group, EOF kills it), its
 * stdin (none with AJ_EXEC_NO_STDIN: it reads EOF), stdout, stderr, and the
 * spec: NUL-terminated strings, the working directory ("" for the
 * policy's), then argc arguments, then envc environment entries; after the
 * message itself (AJ_EXEC_SPEC_INLINE) or in a memfd. When a command ends
 * its process group is killed. EOF on sync_fd ends the sandbox. Never
 * returns. */
__attribute__((noreturn)) void aj_init_serve(const aj_init_args *a);

/* Most commands one persistent sandbox runs at once. */
#define AJ_INIT_MAX_EXECS 128

/* Exit status for an exec errno: 127 not found, 126 not executable. */
int aj_init_exec_exit(int errnum);

#endif
