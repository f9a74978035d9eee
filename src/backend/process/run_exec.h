/* SPDX-License-Identifier: MIT */
/* More commands in a running `agentjail run` sandbox (`agentjail oci
 * exec`): its runner listens on a unix socket (aj_run_hooks.exec_listen)
 * and forwards each request to the sandbox's init, which starts the
 * command as it starts the run's own (the same namespaces, cgroup,
 * capabilities, Landlock, seccomp filters, rlimits) and reports to the
 * requester directly: the box's protocol (init.h), over the connection. */
#ifndef AJ_RUN_EXEC_H
#define AJ_RUN_EXEC_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

typedef struct aj_run_exec_req {
	char *const *argv; /* required */
	char *const *env;  /* NAME=VALUE over the run's environment (later wins), or NULL */
	const char *cwd;   /* NULL: the policy's */
	int stdio[3];	   /* the command's; stdio[0] -1: it reads EOF */
	bool tty;	   /* stdio[0] is a terminal: its controlling one */
	bool set_user;	   /* uid, gid (0-65533 inside) instead of the policy's */
	uid_t uid;
	gid_t gid;
} aj_run_exec_req;

/* Runner side: one connection on listen_fd (readable) forwarded to init
 * (init_sock), env merged over base_env. Errors go to the requester. */
void aj_run_exec_forward(int listen_fd, int init_sock, char *const *base_env);

/* Requester side: connect to the socket at path, send req; returns the
 * connection once init has started the command, or a negative errno (err
 * filled, err->exit 126/127 when it could not be executed, else 125). */
int aj_run_exec_start(const char *path, const aj_run_exec_req *req, aj_error *err);
/* Wait for the command's end; each signal read from sigfd (a signalfd, or
 * -1) goes to its process group. Returns its exit code (128+N for a
 * signal, 137 when the sandbox ended under it). */
int aj_run_exec_wait(int conn, int sigfd);

#endif
