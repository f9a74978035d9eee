/* SPDX-License-Identifier: MIT */
/* Background processes of a sandbox: started by an exec with
 * "background": true, their output kept in a bounded ring per process, read
 * (and followed) from a byte offset, signalled, listed. */
#ifndef AJ_PROCS_H
#define AJ_PROCS_H

#include "http.h"

#define AJ_PROC_RING (1u << 20) /* output bytes kept per process */
#define AJ_PROC_MAX 64		/* processes remembered per sandbox */

struct aj_proc;
struct aj_follow;

/* POST .../exec {"background": true, ...}: start it; 201 {"process": id}. */
void aj_procs_start(aj_req *r, aj_sandbox *sb);
/* GET .../processes, GET .../processes/{pid} */
void aj_procs_list(aj_req *r, aj_sandbox *sb, const char *pid);
/* POST .../processes/{pid}/signal {"signal": 15 | "TERM"} */
void aj_procs_signal(aj_req *r, aj_sandbox *sb, const char *pid);
/* GET .../processes/{pid}/output?offset=N&follow=true: NDJSON */
void aj_procs_output(aj_req *r, aj_sandbox *sb, const char *pid);
/* Writable for an output request. Returns -1 to close. */
int aj_procs_writable(aj_req *r, unsigned char *buf, size_t cap);
void aj_procs_detach(aj_req *r);
void aj_procs_wake_all(void);
/* Free a sandbox's process list (its workers hold their own references). */
void aj_procs_free_all(struct aj_proc *list);

#endif
