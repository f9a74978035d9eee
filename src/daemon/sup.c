/* SPDX-License-Identifier: MIT */
/* The supervisor's loop (sup.h): receive the front's requests, check them,
 * run each op on a pool of long-lived threads (a sandbox's keeper dies with
 * the thread that created it) or, when it waits for nothing, on its own
 * thread (which lives as long as the process), reply with the request's id. A request the
 * supervisor refuses gets a 400 reply when its id is readable; the front
 * never gets more than an op gives. */
#include "sup.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "code.h"
#include "files.h"
#include "ipc.h"
#include "pool.h"
#include "ports.h"
#include "procs.h"
#include "registry.h"
#include "sup_api.h"
#include "sup_exec.h"
#include "tenant.h"
#include "threads.h"
#include "util.h"

#define POOL 6

/* now: answered on the supervisor's own thread, at once (they do not wait
 * for anything: an exec only starts its worker). A hand-off to a pool
 * thread is a wake-up of 0.1-0.3 ms on a paravirtualized VM, on the path of
 * every command (docs/performance.md). The rest may take long (a create
 * without a pool, a delete, files, snapshots) and go to the pool. */
static const struct {
	const char *name;
	aj_op_fn fn;
	bool now;
} ops[] = {
    {"health", aj_op_health, true},
    {"ready", aj_op_ready, true},
    {"metrics", aj_op_metrics, false},
    {"create", aj_op_create, false},
    {"list", aj_op_list, true},
    {"get", aj_op_get, true},
    {"patch", aj_op_patch, false},
    {"delete", aj_op_delete, false},
    {"exec", aj_op_exec, true},
    {"procs.list", aj_op_procs_list, true},
    {"procs.signal", aj_op_procs_signal, false},
    {"procs.output", aj_op_procs_output, false},
    {"files.get", aj_op_files_get, false},
    {"files.put", aj_op_files_put, false},
    {"files.put_done", aj_op_files_put_done, false},
    {"files.delete", aj_op_files_delete, false},
    {"files.mkdir", aj_op_files_mkdir, false},
    {"pools", aj_op_pools, true},
    {"pause", aj_op_pause, false},
    {"resume", aj_op_resume, false},
    {"snapshot", aj_op_snapshot, false},
    {"fork", aj_op_fork, false},
    {"code.run", aj_op_code_run, false},
    {"code.ctx", aj_op_code_ctx, false},
    {"port.connect", aj_op_port_connect, false},
};

aj_op_fn aj_sup_op(const char *name)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(ops); i++)
		if (!strcmp(ops[i].name, name))
			return ops[i].fn;
	return NULL;
}

/* Answered at once (ops[].now), or a create that a pool serves (a
 * hand-out waits for nothing; building a sandbox goes to the pool). */
static bool op_now(aj_op_fn fn, json_t *args)
{
	if (fn == aj_op_create) {
		json_t *body = json_object_get(args, "body");
		return json_is_object(body) && aj_pool_ready(body);
	}
	for (size_t i = 0; i < AJ_ARRAY_SIZE(ops); i++)
		if (ops[i].fn == fn)
			return ops[i].now;
	return false;
}

/* ---- the pool ---- */

typedef struct job {
	uint32_t id;
	aj_op_fn fn;
	json_t *args;
	struct job *next;
} job;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;	  /* a job queued, or closing */
static pthread_cond_t drained = PTHREAD_COND_INITIALIZER; /* queued fell to 0 */
static job *head, *tail;
static unsigned queued, busy;
static bool closing;
static int ipc = -1;

static void reply(uint32_t id, aj_reply *rep)
{
	if (!rep->body)
		aj_reply_error(rep, 500, "internal", "the operation gave no answer");
	int r = aj_ipc_send(ipc, AJ_IPC_REPLY, id, NULL, rep->status, rep->body, rep->fd);
	if (r == -EMSGSIZE)
		r = aj_ipc_send(ipc, AJ_IPC_REPLY, id, NULL, 507,
				json_pack("{s:{s:s, s:s}}", "error", "code", "too_large", "message",
					  "the answer is too large"),
				-1);
	(void)r; /* the front is gone: the loop sees it */
	json_decref(rep->body);
	if (rep->fd >= 0)
		close(rep->fd); /* the front has its own copy */
	rep->body = NULL;
	rep->fd = -1;
}

/* An op, as the tenant its request came from (tenant.h). */
static void run_op(aj_op_fn fn, json_t *args, aj_reply *rep)
{
	aj_tenant_set_current(aj_tenant_of(args));
	fn(args, rep);
	aj_tenant_set_current(NULL);
}

static void *pool_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!head && !closing)
			pthread_cond_wait(&cv, &mu);
		if (!head)
			break;
		job *j = head;
		head = j->next;
		if (!head)
			tail = NULL;
		busy++;
		pthread_mutex_unlock(&mu);
		aj_reply rep = {.status = 500, .fd = -1};
		run_op(j->fn, j->args, &rep);
		reply(j->id, &rep);
		json_decref(j->args);
		free(j);
		pthread_mutex_lock(&mu);
		busy--;
		/* only the shutdown waits for this: a broadcast on cv woke every
		 * idle thread of the pool after each request, on the request's
		 * path (docs/performance.md) */
		if (--queued == 0)
			pthread_cond_broadcast(&drained);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void refuse(uint32_t id, int status, const char *code, const aj_error *err)
{
	aj_reply rep = {.fd = -1};
	aj_reply_fail(&rep, status, code, err);
	reply(id, &rep);
}

/* One request from the front: checked, queued (or refused). */
static int on_request(void)
{
	aj_ipc_msg m;
	aj_error err;
	aj_err_clear(&err);
	int r = aj_ipc_recv(ipc, AJ_IPC_REQUEST, &m, &err);
	if (r == -EPIPE || r == -ECONNRESET)
		return -EPIPE;
	if (r < 0) {
		if (m.h.magic == AJ_IPC_MAGIC)
			refuse(m.h.id, 400, "bad_message", &err);
		static unsigned refused; /* a few lines, not a flood of them */
		if (refused++ < 10)
			aj_log("error", "agentjail serve: ", "refused a message of the front: %s",
			       err.msg);
		return 0;
	}
	aj_op_fn fn = aj_sup_op(m.h.op);
	json_t *args = fn ? aj_ipc_json(&m, &err) : NULL;
	if (!fn)
		aj_err(&err, EBADMSG, "ipc: unknown op '%s'", m.h.op);
	uint32_t id = m.h.id;
	aj_ipc_msg_free(&m);
	if (!args) {
		refuse(id, 400, "bad_message", &err);
		return 0;
	}
	/* who asks: decided here from the token, not from what the front says;
	 * the probes (/healthz, /readyz) ask nobody and answer only a state */
	bool probe = fn == aj_op_health || fn == aj_op_ready;
	if (probe) {
		json_object_del(args, "auth");
		json_object_del(args, "tenant");
	} else if (!aj_tenant_resolve(args, &err)) {
		json_decref(args);
		refuse(id, 401, "unauthorized", &err);
		return 0;
	}
	if (op_now(fn, args)) {
		aj_reply rep = {.status = 500, .fd = -1};
		run_op(fn, args, &rep);
		reply(id, &rep);
		json_decref(args);
		return 0;
	}
	job *j = calloc(1, sizeof(*j));
	pthread_mutex_lock(&mu);
	bool full = queued >= AJ_IPC_MAX_INFLIGHT || !j;
	if (!full) {
		*j = (job){.id = id, .fn = fn, .args = args};
		if (tail)
			tail->next = j;
		else
			head = j;
		tail = j;
		queued++;
		pthread_cond_signal(&cv);
	}
	pthread_mutex_unlock(&mu);
	if (full) {
		free(j);
		json_decref(args);
		aj_err(&err, EBUSY, "the supervisor has %u requests in flight",
		       AJ_IPC_MAX_INFLIGHT);
		refuse(id, 503, "busy", &err);
	}
	return 0;
}

int aj_sup_serve(int sock, int front_pid, volatile int *stopping)
{
	ipc = sock;
	aj_registry_teardown_elsewhere(true); /* an exec never waits for a teardown */
	pthread_t t[POOL];
	size_t n = 0;
	for (; n < POOL; n++)
		if (pthread_create(&t[n], NULL, pool_thread, NULL) != 0)
			break;
	int r = n ? 0 : -EAGAIN;
	long long next_ttl = 0;
	while (r == 0 && !*stopping) {
		struct pollfd p = {.fd = sock, .events = POLLIN};
		int k = poll(&p, 1, 250);
		if (k > 0)
			r = on_request();
		long long now = aj_now_ms();
		if (now >= next_ttl) {
			aj_registry_expire();
			next_ttl = now + 500;
		}
	}
	/* no more requests: the front ends first */
	if (front_pid > 0)
		kill(front_pid, SIGTERM);
	/* the ops in flight end (a create finishes, and is destroyed with the
	 * rest); the pool lives on until then: keepers die with their creator */
	pthread_mutex_lock(&mu);
	while (queued)
		pthread_cond_wait(&drained, &mu);
	pthread_mutex_unlock(&mu);
	aj_registry_destroy_all();
	/* commands and readers end (their sandboxes are dying) and drop the last
	 * references: the boxes are torn down while their creators live */
	aj_exec_shutdown();
	pthread_mutex_lock(&mu);
	closing = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (size_t i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return r;
}
