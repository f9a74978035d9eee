/* SPDX-License-Identifier: MIT */
/* The privileged supervisor of `agentjail serve` (docs/api.md, "Two
 * processes"): it holds the sandboxes and does what the front asks over
 * the message protocol of ipc.h. Every operation ("op") takes a JSON object
 * of arguments and answers a status, a JSON object and, for some, an fd.
 * Nothing from the front is trusted: ids, paths, sizes and fds are checked
 * here. To add an op: a function of type aj_op_fn (reply.h) in the file of its
 * part, declared in that file's header, and a line in sup.c's table. */
#ifndef AJ_SUP_H
#define AJ_SUP_H

#include "reply.h"

/* The op of a name, or NULL (sup.c). */
aj_op_fn aj_sup_op(const char *name);

/* sup.c: the supervisor's loop: requests from the front on sock until the
 * front ends or a signal stops it. Returns 0, or -EPIPE when the front
 * died. */
int aj_sup_serve(int sock, int front_pid, volatile int *stopping);

#endif
