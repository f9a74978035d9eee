/* SPDX-License-Identifier: MIT */
/* PID 1 of the sandbox: starts the command, reaps zombies, forwards
 * signals, and when the command ends kills everything else. */
#ifndef AJ_INIT_H
#define AJ_INIT_H

#include <signal.h>
#include <stdbool.h>

#include "policy.h"
#include "sysfilter.h"

typedef struct aj_init_args {
	const aj_policy *policy;
	char **argv;
	char **envp;
	int sync_fd;	       /* to the agentjail parent */
	const char *pty;       /* slave path inside the sandbox, or NULL */
	bool drop_groups;      /* setgroups() allowed (privileged mode) */
	const aj_bpf *seccomp; /* compiled filter, loaded last before exec */
	int stdio[3];	       /* the command's stdin/stdout/stderr, -1: inherit */
} aj_init_args;

/* Sent by agentjail to init: SIGTERM every process of the sandbox. */
#define AJ_SIG_TERM_ALL (SIGRTMIN + 1)

/* Never returns. */
__attribute__((noreturn)) void aj_init_main(const aj_init_args *a);

/* Exit status for an exec errno: 127 not found, 126 not executable. */
int aj_init_exec_exit(int errnum);

#endif
