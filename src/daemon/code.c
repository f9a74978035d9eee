/* SPDX-License-Identifier: MIT */
/* The code interpreter (ops "code.run" and "code.ctx"; docs/api.md, "Code
 * interpreter"). Each sandbox that runs code gets one bridge
 * (code/bridge.py): a Python process started inside the sandbox through
 * the backend's exec (the same walls as any command), whose stdin and
 * stdout are ours. It keeps Jupyter kernels (ipykernel via jupyter_client)
 * as named contexts. We write it one JSON request a line; it answers one
 * JSON object a line, each with the request's id. A thread of ours waits
 * for the bridge (exec_wait) and gets its redacted output: each event of a
 * run goes on to that run's stream socket (NDJSON for the front), a
 * control request's answer wakes the op waiting for it.
 *
 * The bridge's output is taken as untrusted (the sandbox's code may write
 * to its stdout): lines are bounded, parsed strictly, matched to requests
 * of this sandbox only, and only the known event types go on. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backends.h"
#include "code.h"
#include "code_req.h"
#include "audit.h"
#include "reply.h"
#include "threads.h"
#include "util.h"

#define LINE_MAX_BYTES (16u << 20) /* one event: a large PNG fits; bounded per sandbox */
#define PENDING_MAX 32		   /* requests of one sandbox at once */
#define CTX_MAX 16		   /* contexts of one sandbox */
#define CONTROL_WAIT_S 120	   /* a kernel's start, restart */

extern const char aj_code_bridge_py[];

typedef struct pending {
	unsigned id;
	bool run; /* a run (events to sock), else a control request */
	int sock; /* a run: our end of its stream (-1: its client left) */
	bool done;
	int status;
	json_t *body; /* control: the answer */
	char ctx[AJ_CODE_CTX_NAME_MAX + 1];
	unsigned long long oom0; /* the sandbox's OOM kills when it began */
	bool oom;		 /* a run: the kernel died and the OOM count grew */
	struct pending *next;
} pending;

typedef struct aj_code {
	int refs; /* the bridge's thread's, each waiting op's (under mu) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_mutex_t write_mu; /* one request line at a time */
	aj_sandbox *sb;		  /* a reference while the bridge lives */
	int in;			  /* the bridge's stdin */
	int sig[2];
	aj_job *x;
	bool dead;
	char *buf; /* an incomplete line of the bridge's stdout */
	size_t len, cap;
	bool overlong; /* dropping the rest of a line too long */
	char err[512]; /* the tail of its stderr (why it failed) */
	pending *pend;
	unsigned next_id, npend;
	char ctxs[CTX_MAX][AJ_CODE_CTX_NAME_MAX + 1];
	unsigned nctx, next_ctx;
} aj_code;

static pthread_mutex_t code_mu = PTHREAD_MUTEX_INITIALIZER; /* sb->code */

static unsigned long long oom_kills(aj_sandbox *sb)
{
	aj_inst_stats st;
	aj_error err;
	aj_err_clear(&err);
	return sb->be->stats && sb->be->stats(sb->inst, &st, &err) == 0 ? st.oom_kills : 0;
}

static int send_line(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		s += w, n -= (size_t)w;
	}
	return 0;
}

/* One event to a run's stream (o consumed); a client gone: its socket
 * closed, the rest of the run dropped. */
static void to_stream(pending *p, json_t *o)
{
	char *line = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!line || p->sock < 0) {
		free(line);
		return;
	}
	size_t n = strlen(line);
	line[n] = '\n'; /* json_dumps' NUL becomes the newline */
	if (send_line(p->sock, line, n + 1) < 0) {
		close(p->sock);
		p->sock = -1;
	}
	free(line);
}

static pending *find(aj_code *c, unsigned id)
{
	for (pending *p = c->pend; p; p = p->next)
		if (p->id == id)
			return p;
	return NULL;
}

static void unlink_pending(aj_code *c, pending *p)
{
	for (pending **pp = &c->pend; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			c->npend--;
			return;
		}
}

static bool ctx_known(aj_code *c, const char *name)
{
	for (unsigned i = 0; i < c->nctx; i++)
		if (!strcmp(c->ctxs[i], name))
			return true;
	return false;
}

static void ctx_forget(aj_code *c, const char *name)
{
	for (unsigned i = 0; i < c->nctx; i++)
		if (!strcmp(c->ctxs[i], name)) {
			memmove(c->ctxs[i], c->ctxs[c->nctx - 1], sizeof(c->ctxs[i]));
			c->nctx--;
			return;
		}
}

/* An event of a run (code_req.c rebuilds it from known fields); a
 * kernel that died while the sandbox's OOM count grew is an OutOfMemory. */
static json_t *run_event(aj_code *c, pending *p, const char *type, json_t *m)
{
	const char *name = json_string_value(json_object_get(m, "name"));
	if (!strcmp(type, "error") && name && !strcmp(name, "KernelDied") &&
	    oom_kills(c->sb) > p->oom0) {
		p->oom = true;
		return json_pack("{s:s, s:s, s:s, s:[]}", "type", "error", "name", "OutOfMemory",
				 "value",
				 "the kernel was killed: the sandbox ran out of memory (its "
				 "'memory' limit); the context was restarted, its variables "
				 "are gone",
				 "traceback");
	}
	return aj_code_event(m, p->ctx, p->oom);
}

/* A run's client went away: its context is interrupted (as a command
 * whose client disconnects is killed); the answer (id 0) is dropped. */
static void interrupt_left(aj_code *c, const pending *p)
{
	char line[128];
	int n = snprintf(line, sizeof(line), "{\"id\":0,\"op\":\"interrupt\",\"context\":\"%s\"}\n",
			 p->ctx);
	pthread_mutex_lock(&c->write_mu);
	if (c->in >= 0 && aj_write_all(c->in, line, (size_t)n) < 0)
		(void)0;
	pthread_mutex_unlock(&c->write_mu);
}

/* One line of the bridge's stdout. */
static void on_line(aj_code *c, const char *s, size_t n)
{
	json_error_t je;
	json_t *m = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
	json_t *idv = json_object_get(m, "id");
	const char *type = json_string_value(json_object_get(m, "type"));
	pthread_mutex_lock(&c->mu);
	pending *p =
	    json_is_integer(idv) && type ? find(c, (unsigned)json_integer_value(idv)) : NULL;
	if (p && p->run) {
		/* a run's stream is written without the lock (a slow client must
		 * not hold up the ops that take it): only this thread writes to
		 * it and frees a run (submit leaves a failed one to us) */
		pthread_mutex_unlock(&c->mu);
		json_t *ev = p->sock >= 0 ? run_event(c, p, type, m) : NULL;
		if (ev)
			to_stream(p, ev);
		if (ev && p->sock < 0 && strcmp(type, "end"))
			interrupt_left(c, p);
		if (!strcmp(type, "end")) { /* the run is over: its stream too */
			aj_audit("code",
				 json_pack("{s:s, s:s, s:s, s:b, s:b}", "sandbox", c->sb->id,
					   "tenant", c->sb->tenant, "context", p->ctx, "timed_out",
					   json_is_true(json_object_get(m, "timed_out")),
					   "oom_killed", p->oom));
			if (p->sock >= 0)
				close(p->sock);
			pthread_mutex_lock(&c->mu);
			unlink_pending(c, p);
			pthread_mutex_unlock(&c->mu);
			free(p);
		}
		json_decref(m);
		return;
	} else if (p && !p->done && (!strcmp(type, "reply") || !strcmp(type, "fail"))) {
		json_int_t st = json_integer_value(json_object_get(m, "status"));
		p->status = st >= 200 && st < 600 ? (int)st : !strcmp(type, "reply") ? 200 : 500;
		if (!strcmp(type, "reply")) {
			json_t *b = json_object_get(m, "body");
			p->body = json_is_object(b) ? json_incref(b) : json_object();
		} else {
			const char *code = json_string_value(json_object_get(m, "code"));
			const char *msg = json_string_value(json_object_get(m, "message"));
			p->body =
			    json_pack("{s:{s:s, s:s}}", "error", "code", code ? code : "error",
				      "message", msg ? msg : "the code bridge failed");
		}
		p->done = true;
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	json_decref(m);
}

static int on_output(void *ctx, int stream, const char *buf, size_t len)
{
	aj_code *c = ctx;
	if (stream == 2) { /* stderr: keep its tail for error messages */
		pthread_mutex_lock(&c->mu);
		size_t have = strlen(c->err), room = sizeof(c->err) - 1;
		if (len >= room) {
			memcpy(c->err, buf + len - room, room);
			c->err[room] = '\0';
		} else {
			if (have + len > room) {
				memmove(c->err, c->err + have + len - room, room - len);
				have = room - len;
			}
			memcpy(c->err + have, buf, len);
			c->err[have + len] = '\0';
		}
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t take = nl ? (size_t)(nl - buf) : len;
		if (!c->overlong && c->len + take > LINE_MAX_BYTES) {
			c->overlong = true; /* drop this line: it is bigger than we keep */
			c->len = 0;
		}
		if (!c->overlong) {
			if (c->len + take + 1 > c->cap) {
				size_t cap = (c->len + take + 1) * 2;
				char *b = realloc(c->buf, cap);
				if (!b)
					return -1;
				c->buf = b, c->cap = cap;
			}
			memcpy(c->buf + c->len, buf, take);
			c->len += take;
		}
		if (!nl)
			break;
		if (!c->overlong)
			on_line(c, c->buf, c->len);
		c->len = 0;
		c->overlong = false;
		buf = nl + 1;
		len -= take + 1;
	}
	return 0;
}

static void code_free(aj_code *c);

/* Drop a reference (the last frees it). */
static void code_unref(aj_code *c)
{
	pthread_mutex_lock(&c->mu);
	int left = --c->refs;
	pthread_mutex_unlock(&c->mu);
	if (left == 0)
		code_free(c);
}

static void code_free(aj_code *c)
{
	if (c->in >= 0)
		close(c->in);
	for (int i = 0; i < 2; i++)
		if (c->sig[i] >= 0)
			close(c->sig[i]);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->write_mu);
	pthread_cond_destroy(&c->cv);
	free(c->buf);
	free(c);
}

/* The bridge's thread: waits for it; when it ends (the sandbox is
 * destroyed, the bridge failed), every request still open gets its end. */
static void *bridge_thread(void *arg)
{
	aj_code *c = arg;
	aj_run_result res;
	aj_error err;
	aj_err_clear(&err);
	c->sb->be->exec_wait(c->x, &res, &err);
	c->x = NULL;
	pthread_mutex_lock(&code_mu);
	if (c->sb->code == c)
		c->sb->code = NULL;
	pthread_mutex_unlock(&code_mu);
	pthread_mutex_lock(&c->mu);
	c->dead = true;
	pending *runs = NULL; /* taken out, ended below without the lock */
	for (pending **pp = &c->pend; *pp;) {
		pending *p = *pp;
		if (!p->run) { /* its waiter sees dead */
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		c->npend--;
		p->next = runs;
		runs = p;
	}
	char why[sizeof(c->err)];
	snprintf(why, sizeof(why), "the sandbox's code bridge ended%s%s",
		 c->err[0] ? ": " : " (the sandbox was deleted or expired)", c->err);
	pthread_mutex_unlock(&c->mu);
	/* the bridge itself killed for memory (level 4: the contexts are its
	 * threads) is said as such */
	unsigned long long ooms = runs ? oom_kills(c->sb) : 0;
	while (runs) {
		pending *p = runs;
		runs = p->next;
		bool oom = ooms > p->oom0;
		to_stream(
		    p, json_pack("{s:s, s:s, s:s, s:[]}", "type", "error", "name",
				 oom ? "OutOfMemory" : "BridgeEnded", "value",
				 oom ? "the code bridge was killed: the sandbox ran out of memory "
				       "(its 'memory' limit); every context's variables are gone"
				     : why,
				 "traceback"));
		to_stream(p, json_pack("{s:s, s:s, s:n, s:b, s:b, s:b, s:i}", "type", "end",
				       "context", p->ctx, "execution_count", "timed_out", false,
				       "oom_killed", oom, "restarted", oom, "duration_ms", 0));
		if (p->sock >= 0)
			close(p->sock);
		free(p);
	}
	pthread_mutex_lock(&c->mu);
	pthread_cond_broadcast(&c->cv);
	aj_sandbox *sb = c->sb;
	c->sb = NULL;
	pthread_mutex_unlock(&c->mu);
	code_unref(c);
	aj_sandbox_unref(sb);
	aj_worker_leave();
	return NULL;
}

/* The sandbox's bridge, started when it has none: a reference held by
 * sb->code (code_mu held by the caller). */
static aj_code *bridge_start(aj_sandbox *sb, aj_error *err)
{
	if (sb->code)
		return sb->code;
	aj_code *c = calloc(1, sizeof(*c));
	if (!c) {
		aj_err(err, ENOMEM, "code bridge");
		return NULL;
	}
	int inp[2];
	c->in = c->sig[0] = c->sig[1] = -1;
	c->refs = 1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->write_mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->next_id = 1;
	strcpy(c->ctxs[c->nctx++], "default");
	if (pipe2(inp, O_CLOEXEC) < 0 || pipe2(c->sig, O_CLOEXEC) < 0) {
		aj_err(err, errno, "code bridge pipes");
		code_free(c);
		return NULL;
	}
	c->in = inp[1];
	char *argv[] = {"python3", "-u", "-c", (char *)aj_code_bridge_py, NULL};
	aj_exec_spec spec = {.argv = argv, .stdin_fd = inp[0]};
	aj_exec_io io = {.output = on_output, .ctx = c, .signal_fd = c->sig[0], .cancel_fd = -1};
	aj_sandbox_ref(sb);
	c->sb = sb;
	c->x = sb->be->code_start ? sb->be->code_start(sb->inst, &spec, &io)
				  : sb->be->exec_start(sb->inst, &spec, &io);
	close(inp[0]);
	aj_worker_enter();
	if (aj_thread_start(bridge_thread, c) < 0) {
		aj_worker_leave();
		sb->be->exec_abandon(c->x);
		aj_sandbox_unref(sb);
		code_free(c);
		aj_err(err, EAGAIN, "cannot start the code bridge's thread");
		return NULL;
	}
	sb->code = c;
	return c;
}

/* Send a request (o consumed) for a new pending p (c->mu not held). */
static int submit(aj_code *c, pending *p, json_t *o)
{
	pthread_mutex_lock(&c->mu);
	if (c->dead || c->npend >= PENDING_MAX) {
		bool dead = c->dead;
		pthread_mutex_unlock(&c->mu);
		json_decref(o);
		return dead ? -EPIPE : -EBUSY;
	}
	p->id = c->next_id++;
	p->next = c->pend;
	c->pend = p;
	c->npend++;
	pthread_mutex_unlock(&c->mu);
	json_object_set_new(o, "id", json_integer(p->id));
	char *line = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	int r = -ENOMEM;
	if (line) {
		size_t n = strlen(line);
		line[n] = '\n';
		pthread_mutex_lock(&c->write_mu);
		r = aj_write_all(c->in, line, n + 1);
		pthread_mutex_unlock(&c->write_mu);
		free(line);
	}
	if (r < 0 && !p->run) { /* a run stays: the bridge's thread ends it and frees it */
		pthread_mutex_lock(&c->mu);
		unlink_pending(c, p);
		pthread_mutex_unlock(&c->mu);
	}
	return r;
}

/* The sandbox of args, running, at a level that runs code; its bridge
 * (started when none). NULL: answered. */
static aj_code *code_of(json_t *args, aj_reply *rep, aj_sandbox **sbp)
{
	aj_sandbox *sb = aj_arg_running(args, rep);
	if (!sb)
		return NULL;
	aj_error err;
	aj_err_clear(&err);
	if (!sb->be->exec_start) {
		aj_reply_error(rep, 501, "not_supported",
			       "the '%s' isolation level cannot keep code contexts", sb->be->name);
		aj_sandbox_unref(sb);
		return NULL;
	}
	pthread_mutex_lock(&code_mu);
	aj_code *c = bridge_start(sb, &err);
	if (c) {
		pthread_mutex_lock(&c->mu);
		c->refs++; /* the caller's (code_unref) */
	}
	pthread_mutex_unlock(&code_mu);
	if (!c) {
		aj_reply_fail(rep, 500, "code_failed", &err);
		aj_sandbox_unref(sb);
		return NULL;
	}
	/* c->mu held: the caller unlocks */
	*sbp = sb;
	return c;
}

static void busy_reply(aj_reply *rep, int e, aj_code *c)
{
	if (e == -EBUSY)
		aj_reply_error(rep, 429, "busy",
			       "the sandbox has %d code requests open: wait for one to end",
			       PENDING_MAX);
	else
		aj_reply_error(rep, 500, "code_failed",
			       "the sandbox's code bridge is not running: %s (fix: %s)",
			       c->err[0] ? c->err : strerror(-e),
			       c->sb && c->sb->be->code_start
				   ? "the level's code runtime is missing: agentjail doctor says "
				     "what to install"
				   : "the sandbox needs python3 with ipykernel and jupyter_client: "
				     "apt-get install python3-ipykernel python3-jupyter-client, or "
				     "the image 'python'");
}

/* code.run {sandbox, peer, body}: 200 and an NDJSON stream of the run. */
void aj_op_code_run(json_t *args, aj_reply *rep)
{
	aj_error err;
	aj_err_clear(&err);
	aj_code_req q;
	_cleanup_free_ char *txt = json_dumps(json_object_get(args, "body"), JSON_COMPACT);
	if (!txt || aj_code_req_parse(txt, strlen(txt), &q, &err) < 0) {
		if (!txt)
			aj_err(&err, EINVAL, "expected the code request as a JSON object");
		aj_reply_fail(rep, 400, "bad_request", &err);
		return;
	}
	aj_sandbox *sb = NULL;
	aj_code *c = code_of(args, rep, &sb);
	if (!c) {
		aj_code_req_free(&q);
		return;
	}
	bool known = ctx_known(c, q.context);
	pthread_mutex_unlock(&c->mu);
	int s[2] = {-1, -1};
	pending *p = NULL;
	int e = 0;
	if (!known) {
		aj_reply_error(rep, 404, "not_found", "no code context '%s' in sandbox %s",
			       q.context, sb->id);
		goto out;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) < 0 ||
	    !(p = calloc(1, sizeof(*p)))) {
		aj_reply_error(rep, 503, "busy", "cannot open the stream: %s", strerror(errno));
		goto out;
	}
	int sz = 4 << 20;
	(void)setsockopt(s[0], SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz));
	p->run = true;
	p->sock = s[0];
	snprintf(p->ctx, sizeof(p->ctx), "%s", q.context);
	p->oom0 = oom_kills(sb);
	json_t *o = json_pack("{s:s, s:s, s:s, s:f}", "op", "run", "context", q.context, "code",
			      q.code, "timeout", q.timeout_s);
	if ((e = submit(c, p, o)) < 0) {
		if (p->id) /* sent to no one, but linked: the bridge's thread ends it */
			p = NULL, s[0] = -1;
		busy_reply(rep, e, c);
		goto out;
	}
	p = NULL; /* the bridge's thread frees it */
	s[0] = -1;
	__atomic_add_fetch(&sb->execs, 1, __ATOMIC_SEQ_CST);
	rep->fd = s[1];
	s[1] = -1;
	aj_reply_json(rep, 200, json_pack("{s:s}", "stream", "ndjson"));
out:
	for (int i = 0; i < 2; i++)
		if (s[i] >= 0)
			close(s[i]);
	free(p);
	aj_code_req_free(&q);
	code_unref(c);
	aj_sandbox_unref(sb);
}

/* Wait for a control request's answer; p freed. */
static void wait_reply(aj_code *c, aj_sandbox *sb, pending *p, aj_reply *rep)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += CONTROL_WAIT_S;
	pthread_mutex_lock(&c->mu);
	while (!p->done && !c->dead && pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT)
		;
	unlink_pending(c, p);
	char why[sizeof(c->err)];
	snprintf(why, sizeof(why), "%s", c->err);
	bool dead = c->dead;
	pthread_mutex_unlock(&c->mu);
	if (p->done && p->body)
		aj_reply_json(rep, p->status, p->body);
	else if (!p->done && dead && oom_kills(sb) > p->oom0)
		aj_reply_error(rep, 500, "code_failed",
			       "the code bridge was killed: the sandbox ran out of memory (its "
			       "'memory' limit); every context is gone (fix: a larger 'memory', or "
			       "fewer contexts)");
	else
		aj_reply_error(rep, p->done || dead ? 500 : 504, "code_failed",
			       "the code bridge did not answer: %s",
			       why[0] ? why : "it ended or timed out");
	free(p);
}

/* code.ctx {sandbox, peer, action, context, body}: create, list,
 * restart, interrupt, delete a context. */
void aj_op_code_ctx(json_t *args, aj_reply *rep)
{
	aj_error err;
	aj_err_clear(&err);
	const char *action = json_string_value(json_object_get(args, "action"));
	const char *name = json_string_value(json_object_get(args, "context"));
	static const char *const actions[] = {"create", "list", "restart", "interrupt", "delete"};
	size_t a = 0;
	while (action && a < AJ_ARRAY_SIZE(actions) && strcmp(actions[a], action))
		a++;
	if (!action || a == AJ_ARRAY_SIZE(actions) ||
	    (a >= 2 && (!name || !aj_code_ctx_name_ok(name)))) {
		aj_reply_error(rep, 400, "bad_request",
			       "a code context action and a context's name");
		return;
	}
	aj_code_ctx_req q = {0};
	if (a == 0) {
		_cleanup_free_ char *txt = json_dumps(json_object_get(args, "body"), JSON_COMPACT);
		if (!txt || aj_code_ctx_req_parse(txt, strlen(txt), &q, &err) < 0) {
			aj_reply_fail(rep, 400, "bad_request", &err);
			return;
		}
	}
	aj_sandbox *sb = NULL;
	aj_code *c = code_of(args, rep, &sb);
	if (!c) {
		aj_code_ctx_req_free(&q);
		return;
	}
	char id[AJ_CODE_CTX_NAME_MAX + 1];
	if (a == 0 && !q.id[0])
		snprintf(id, sizeof(id), "ctx-%u", ++c->next_ctx);
	else
		snprintf(id, sizeof(id), "%s", a == 0 ? q.id : name ? name : "");
	int refuse = 0;
	if (a == 0 && ctx_known(c, id))
		refuse = 409;
	else if (a == 0 && c->nctx >= CTX_MAX)
		refuse = 429;
	else if (a >= 2 && !ctx_known(c, id))
		refuse = 404;
	else if (a == 0)
		strcpy(c->ctxs[c->nctx++], id);
	else if (a == 4)
		ctx_forget(c, id);
	pthread_mutex_unlock(&c->mu);
	if (refuse) {
		aj_reply_error(rep, refuse,
			       refuse == 409   ? "conflict"
			       : refuse == 429 ? "too_many_contexts"
					       : "not_found",
			       refuse == 409   ? "the code context '%s' exists"
			       : refuse == 429 ? "a sandbox has at most 16 code contexts ('%s')"
					       : "no code context '%s'",
			       id);
		goto out;
	}
	pending *p = calloc(1, sizeof(*p));
	if (p)
		p->oom0 = oom_kills(sb);
	json_t *o = json_pack("{s:s, s:s}", "op", action, "context", id);
	if (q.cwd)
		json_object_set_new(o, "cwd", json_string(q.cwd));
	int e = p ? submit(c, p, o) : -ENOMEM;
	if (e < 0) {
		free(p);
		if (a == 0) {
			pthread_mutex_lock(&c->mu);
			ctx_forget(c, id);
			pthread_mutex_unlock(&c->mu);
		}
		busy_reply(rep, e, c);
		goto out;
	}
	wait_reply(c, sb, p, rep);
	if (a == 0 && rep->status != 201) {
		pthread_mutex_lock(&code_mu);
		if (sb->code == c) {
			pthread_mutex_lock(&c->mu);
			ctx_forget(c, id);
			pthread_mutex_unlock(&c->mu);
		}
		pthread_mutex_unlock(&code_mu);
	}
	aj_audit("code_context", json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "sandbox", sb->id,
					   "tenant", sb->tenant, "peer", aj_arg_peer(args),
					   "action", action, "context", id, "status", rep->status));
out:
	aj_code_ctx_req_free(&q);
	code_unref(c);
	aj_sandbox_unref(sb);
}

bool aj_code_warm_ready(aj_sandbox *sb)
{
	pthread_mutex_lock(&code_mu);
	bool r = sb->code != NULL;
	pthread_mutex_unlock(&code_mu);
	return r;
}

int aj_code_warm(aj_sandbox *sb, const char *code, aj_error *err)
{
	pthread_mutex_lock(&code_mu);
	aj_code *c = bridge_start(sb, err);
	if (c) {
		pthread_mutex_lock(&c->mu);
		c->refs++;
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_unlock(&code_mu);
	if (!c)
		return -EIO;
	pending *p = calloc(1, sizeof(*p));
	int s[2] = {-1, -1};
	if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) < 0) {
		free(p);
		code_unref(c);
		return aj_err(err, ENOMEM, "code warm-up");
	}
	p->run = true;
	p->sock = s[0];
	strcpy(p->ctx, "default");
	int e = submit(
	    c, p, json_pack("{s:s, s:s, s:s}", "op", "warm", "context", "default", "code", code));
	if (e < 0) {
		if (!p->id) { /* linked ones are the bridge's thread's */
			free(p);
			close(s[0]);
		}
		close(s[1]);
		aj_err(err, -e, "the code bridge did not start: %s", c->err);
		code_unref(c);
		return -EIO;
	}
	code_unref(c);
	/* the events of the warm-up, to its end (the bridge closes our end) */
	char buf[4096];
	bool failed = false;
	ssize_t n;
	while ((n = read(s[1], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && memmem(buf, (size_t)n, "\"type\":\"error\"", 14))
			failed = true;
	close(s[1]);
	if (failed)
		return aj_err(err, EIO, "the code warm-up failed in the sandbox");
	return 0;
}

void aj_code_drop(aj_sandbox *sb, bool kill)
{
	pthread_mutex_lock(&code_mu);
	aj_code *c = sb->code;
	if (c) {
		pthread_mutex_lock(&c->write_mu);
		close(c->in); /* the bridge ends its kernels at its stdin's EOF */
		c->in = -1;
		pthread_mutex_unlock(&c->write_mu);
		unsigned char zero = 0; /* a 0 byte: SIGKILL (its kernels die with the sandbox) */
		if (kill && write(c->sig[1], &zero, 1) < 0)
			(void)0;
		sb->code = NULL;
	}
	pthread_mutex_unlock(&code_mu);
}
