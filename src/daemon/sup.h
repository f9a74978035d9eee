/* SPDX-License-Identifier: MIT */
/* The privileged supervisor of `agentjail serve` (docs/api.md, "Two
 * processes"): it holds the sandboxes and does what the front asks over
 * the message protocol of ipc.h. Every operation ("op") takes a JSON object
 * of arguments and answers a status, a JSON object and, for some, an fd.
 * Nothing from the front is trusted: ids, paths, sizes and fds are checked
 * here. To add an op: a function of this type and a line in sup.c's table. */
#ifndef AJ_SUP_H
#define AJ_SUP_H

#include <jansson.h>

#include "daemon.h"
#include "request.h"
#include "tenant.h"

typedef struct aj_reply {
	int status;   /* HTTP status */
	json_t *body; /* JSON object (owned) */
	int fd;	      /* an fd for the front (owned), or -1 */
} aj_reply;

typedef void (*aj_op_fn)(json_t *args, aj_reply *rep);

/* Answer a JSON object (o consumed). */
void aj_reply_json(aj_reply *rep, int status, json_t *o);
/* Answer {"error": {"code", "message"}}. */
void aj_reply_error(aj_reply *rep, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void aj_reply_fail(aj_reply *rep, int status, const char *code, const aj_error *err);
/* 403 {"error": {"code": "forbidden", "message", "policy_key", "policy_file"}} */
void aj_reply_denial(aj_reply *rep, const aj_denial *d);

/* Argument checks, answering 400 (or 404) when they fail. */
/* A string without NUL of at most max bytes; NULL when absent or bad
 * (optional: absent is not an error). */
const char *aj_arg_str(json_t *args, const char *key, size_t max, bool optional, aj_reply *rep);
/* The sandbox named by args.sandbox, with a reference; NULL: answered. */
aj_sandbox *aj_arg_sandbox(json_t *args, aj_reply *rep);
/* The same, and 409 sandbox_paused when it is paused (work that needs its
 * processes running: exec, files, signals). */
aj_sandbox *aj_arg_running(json_t *args, aj_reply *rep);
/* Who the front says the client is (audit only): never more than that. */
const char *aj_arg_peer(json_t *args);
/* A boolean (absent: false). */
bool aj_arg_bool(json_t *args, const char *key);

/* The ops (sup_api.c, sup_exec.c, procs.c, files.c). */
void aj_op_health(json_t *args, aj_reply *rep);
/* /readyz: 200 once every pool was full once, else 503 (docs/api.md) */
void aj_op_ready(json_t *args, aj_reply *rep);
void aj_op_metrics(json_t *args, aj_reply *rep);
void aj_op_create(json_t *args, aj_reply *rep);
void aj_op_list(json_t *args, aj_reply *rep);
void aj_op_get(json_t *args, aj_reply *rep);
void aj_op_patch(json_t *args, aj_reply *rep);
void aj_op_delete(json_t *args, aj_reply *rep);
void aj_op_exec(json_t *args, aj_reply *rep);
void aj_op_procs_list(json_t *args, aj_reply *rep);
void aj_op_procs_signal(json_t *args, aj_reply *rep);
void aj_op_procs_output(json_t *args, aj_reply *rep);
void aj_op_files_get(json_t *args, aj_reply *rep);
void aj_op_files_put(json_t *args, aj_reply *rep);
void aj_op_files_put_done(json_t *args, aj_reply *rep);
void aj_op_files_delete(json_t *args, aj_reply *rep);
void aj_op_files_mkdir(json_t *args, aj_reply *rep);
void aj_op_pools(json_t *args, aj_reply *rep);
void aj_op_pause(json_t *args, aj_reply *rep);
void aj_op_resume(json_t *args, aj_reply *rep);
void aj_op_snapshot(json_t *args, aj_reply *rep);
void aj_op_fork(json_t *args, aj_reply *rep);

/* The op of a name, or NULL (sup.c). */
aj_op_fn aj_sup_op(const char *name);

/* sup_exec.c */
/* Account for an ended command (metrics, audit) and build its exit event. */
json_t *aj_exec_ended(aj_sandbox *sb, const char *peer, json_t *cmd, int r,
		      const aj_run_result *res, const aj_error *err);
/* An output event {"type": stdout|stderr, "data"|"data_b64": ...}. */
json_t *aj_exec_data_event(int stream, const char *buf, size_t len);
/* Worker threads (exec and background processes) are counted... */
void aj_worker_enter(void);
void aj_worker_leave(void);
/* ...so that shutdown waits (bounded) for them to end (their sandboxes are gone). */
void aj_exec_shutdown(void);

/* procs.c: a background process (q taken). */
void aj_procs_start(aj_sandbox *sb, aj_exec_req *q, const char *peer, aj_reply *rep);
/* Free a sandbox's process list (its workers hold their own references). */
struct aj_proc;
void aj_procs_free_all(struct aj_proc *list);

/* sup.c: the supervisor's loop: requests from the front on sock until the
 * front ends or a signal stops it. Returns 0, or -EPIPE when the front
 * died. */
int aj_sup_serve(int sock, int front_pid, volatile int *stopping);

#endif
