/* SPDX-License-Identifier: MIT */
/* Background processes of a sandbox (supervisor ops "exec" with
 * "background": true, "procs.list", "procs.signal", "procs.output"). A
 * worker thread runs the command (the backend's exec); its output goes into a
 * ring of records (stream, offset, bytes) bounded to AJ_PROC_RING bytes;
 * a reader (procs.output) gets a stream socket on which a thread of ours
 * replays NDJSON events from an offset and may follow until the end. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "exec_event.h"
#include "metrics.h"
#include "procs.h"
#include "threads.h"
#include "util.h"

#define AJ_PROC_RING (1u << 20) /* output bytes kept per process */
#define AJ_PROC_MAX 64		/* processes remembered per sandbox */

#define RING_RECS 8192
#define AJ_PROC_FOLLOWERS 8 /* readers of one process's output at once */

typedef struct rec {
	int stream;
	unsigned long long off;
	size_t len;
	char data[];
} rec;

typedef struct aj_proc {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* something new for the readers */
	int refs;
	char id[16];
	aj_sandbox *sb; /* a reference while the worker runs */
	char peer[80];
	aj_exec_req q;
	int sig[2];
	long long started_ms;
	bool done;
	json_t *exit_ev;
	rec *ring[RING_RECS];
	size_t head, n; /* oldest record, records held */
	size_t bytes;	/* data bytes held */
	unsigned long long total, kept_from;
	int followers; /* readers (procs.output) at once */
	struct aj_proc *next;
} aj_proc;

typedef struct follow {
	aj_proc *p;
	int sock;
	unsigned long long off;
	bool follow, exit_sent;
} follow;

static void proc_unref(aj_proc *p)
{
	pthread_mutex_lock(&p->mu);
	int left = --p->refs;
	pthread_mutex_unlock(&p->mu);
	if (left > 0)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->ring[(p->head + i) % RING_RECS]);
	for (int i = 0; i < 2; i++)
		if (p->sig[i] >= 0)
			close(p->sig[i]);
	aj_exec_req_free(&p->q);
	json_decref(p->exit_ev);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

/* A sandbox's process list (its workers hold their own references). */
static void procs_free_all(aj_proc *list)
{
	while (list) {
		aj_proc *next = list->next;
		proc_unref(list);
		list = next;
	}
}

/* Something new for p: wake its readers. */
static void wake(aj_proc *p)
{
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static int on_output(void *c, int stream, const char *buf, size_t len)
{
	aj_proc *p = c;
	aj_metrics_add(&aj_stats.bytes_out, len);
	rec *r = malloc(sizeof(*r) + len);
	if (!r)
		return 0;
	r->stream = stream;
	r->len = len;
	memcpy(r->data, buf, len);
	pthread_mutex_lock(&p->mu);
	r->off = p->total;
	p->total += len;
	/* the oldest output goes first */
	while (p->n && (p->bytes + len > AJ_PROC_RING || p->n == RING_RECS)) {
		rec *old = p->ring[p->head];
		p->head = (p->head + 1) % RING_RECS;
		p->n--;
		p->bytes -= old->len;
		p->kept_from = old->off + old->len;
		free(old);
	}
	p->ring[(p->head + p->n++) % RING_RECS] = r;
	p->bytes += len;
	pthread_mutex_unlock(&p->mu);
	wake(p);
	return 0;
}

static void *worker(void *arg)
{
	aj_proc *p = arg;
	aj_exec_spec spec = {.argv = p->q.argv,
			     .env = p->q.env,
			     .cwd = p->q.cwd,
			     .stdin_data = p->q.stdin_data,
			     .stdin_len = p->q.stdin_len,
			     .timeout_ms = p->q.timeout_ms};
	aj_exec_io io = {.output = on_output, .ctx = p, .signal_fd = p->sig[0]};
	aj_run_result res;
	aj_error err;
	aj_err_clear(&err);
	__atomic_add_fetch(&p->sb->execs, 1, __ATOMIC_SEQ_CST);
	int r = p->sb->be->exec_wait(p->sb->be->exec_start(p->sb->inst, &spec, &io), &res, &err);
	json_t *ev = aj_exec_ended(p->sb, p->peer, p->q.cmd, r, &res, &err);
	pthread_mutex_lock(&p->mu);
	p->exit_ev = ev;
	p->done = true;
	aj_sandbox *sb = p->sb;
	p->sb = NULL;
	pthread_mutex_unlock(&p->mu);
	wake(p);
	aj_sandbox_unref(sb);
	proc_unref(p);
	aj_worker_leave();
	return NULL;
}

/* Room in the sandbox's list: forget the oldest ended process if needed. */
static int make_room(aj_sandbox *sb)
{
	size_t n = 0;
	aj_proc **oldest = NULL;
	for (aj_proc **pp = &sb->procs; *pp; pp = &(*pp)->next) {
		n++;
		pthread_mutex_lock(&(*pp)->mu);
		if ((*pp)->done)
			oldest = pp; /* the list is newest first */
		pthread_mutex_unlock(&(*pp)->mu);
	}
	if (n < AJ_PROC_MAX)
		return 0;
	if (!oldest)
		return -EAGAIN;
	aj_proc *gone = *oldest;
	*oldest = gone->next;
	proc_unref(gone);
	return 0;
}

void aj_procs_start(aj_sandbox *sb, aj_exec_req *q, const char *peer, aj_reply *rep)
{
	aj_proc *p = calloc(1, sizeof(*p));
	if (!p) {
		aj_exec_req_free(q);
		aj_reply_error(rep, 500, "internal", "out of memory");
		return;
	}
	p->sig[0] = p->sig[1] = -1;
	p->q = *q;
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->refs = 1;
	snprintf(p->peer, sizeof(p->peer), "%s", peer);
	p->started_ms = aj_now_ms();
	pthread_mutex_lock(&sb->procs_mu);
	int e = make_room(sb);
	if (e == 0 && pipe2(p->sig, O_CLOEXEC | O_NONBLOCK) < 0)
		e = -errno;
	snprintf(p->id, sizeof(p->id), "p%u", ++sb->next_proc);
	p->sb = sb;
	aj_sandbox_ref(sb);
	p->refs = 2; /* the list's and the worker's */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	if (e == 0) {
		aj_worker_enter();
		if ((e = -pthread_create(&t, &attr, worker, p)) < 0)
			aj_worker_leave();
	}
	pthread_attr_destroy(&attr);
	if (e == 0) {
		p->next = sb->procs;
		sb->procs = p;
		sb->procs_free = procs_free_all;
	}
	pthread_mutex_unlock(&sb->procs_mu);
	if (e < 0) {
		aj_sandbox_unref(sb);
		p->refs = 1;
		proc_unref(p);
		aj_reply_error(rep, e == -EAGAIN ? 429 : 503, "busy",
			       "cannot start a background process: %s", strerror(-e));
		return;
	}
	aj_reply_json(rep, 201, json_pack("{s:s, s:s}", "sandbox", sb->id, "process", p->id));
}

static aj_proc *find(aj_reply *rep, aj_sandbox *sb, const char *id)
{
	aj_proc *found = NULL;
	pthread_mutex_lock(&sb->procs_mu);
	for (aj_proc *p = sb->procs; p && !found; p = p->next)
		if (strcmp(p->id, id) == 0) {
			found = p;
			pthread_mutex_lock(&p->mu);
			p->refs++;
			pthread_mutex_unlock(&p->mu);
		}
	pthread_mutex_unlock(&sb->procs_mu);
	if (!found)
		aj_reply_error(rep, 404, "not_found", "no process '%s' in sandbox %s", id, sb->id);
	return found;
}

static json_t *proc_json(aj_proc *p)
{
	pthread_mutex_lock(&p->mu);
	json_t *o =
	    json_pack("{s:s, s:O, s:b, s:I, s:I, s:I}", "id", p->id, "cmd", p->q.cmd, "running",
		      !p->done, "started_ms", (json_int_t)p->started_ms, "output_bytes",
		      (json_int_t)p->total, "kept_from", (json_int_t)p->kept_from);
	if (p->exit_ev)
		json_object_set(o, "exit", p->exit_ev);
	pthread_mutex_unlock(&p->mu);
	return o;
}

/* The process named by args.process (a reference), the sandbox's too. */
static aj_proc *arg_proc(json_t *args, aj_reply *rep, aj_sandbox **sbp, bool optional, bool running)
{
	*sbp = running ? aj_arg_running(args, rep) : aj_arg_sandbox(args, rep);
	if (!*sbp)
		return NULL;
	const char *id = aj_arg_str(args, "process", 15, optional, rep);
	if (!id)
		return NULL;
	return find(rep, *sbp, id);
}

void aj_op_procs_list(json_t *args, aj_reply *rep)
{
	aj_sandbox *sb;
	aj_proc *p = arg_proc(args, rep, &sb, true, false);
	if (p) {
		aj_reply_json(rep, 200, proc_json(p));
		proc_unref(p);
	} else if (sb && !rep->body) {
		json_t *a = json_array();
		pthread_mutex_lock(&sb->procs_mu);
		for (aj_proc *q = sb->procs; q; q = q->next)
			json_array_append_new(a, proc_json(q));
		pthread_mutex_unlock(&sb->procs_mu);
		aj_reply_json(rep, 200, json_pack("{s:o}", "processes", a));
	}
	aj_sandbox_unref(sb);
}

static int parse_signal(json_t *v)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT},
		     {"HUP", SIGHUP},	{"QUIT", SIGQUIT}, {"USR1", SIGUSR1},
		     {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}};
	if (json_is_integer(v))
		return json_integer_value(v) > 0 && json_integer_value(v) < 65
			   ? (int)json_integer_value(v)
			   : -1;
	const char *s = json_string_value(v);
	if (s && aj_startswith(s, "SIG"))
		s += 3;
	for (size_t i = 0; s && i < AJ_ARRAY_SIZE(names); i++)
		if (!strcmp(s, names[i].name))
			return names[i].sig;
	return -1;
}

void aj_op_procs_signal(json_t *args, aj_reply *rep)
{
	json_t *body = json_object_get(args, "body");
	int sig = parse_signal(json_object_get(body, "signal"));
	if (sig <= 0 || json_object_size(body) != 1) { /* strict: "signal" only */
		aj_reply_error(rep, 400, "bad_request",
			       "expected {\"signal\": a number or TERM, KILL, INT, HUP, ...}");
		return;
	}
	aj_sandbox *sb;
	aj_proc *p = arg_proc(args, rep, &sb, false, true);
	if (!p) {
		aj_sandbox_unref(sb);
		return;
	}
	pthread_mutex_lock(&p->mu);
	bool running = !p->done;
	unsigned char b = (unsigned char)sig;
	if (running && write(p->sig[1], &b, 1) < 0)
		running = false;
	pthread_mutex_unlock(&p->mu);
	aj_audit("signal", json_pack("{s:s, s:s, s:s, s:i}", "sandbox", sb->id, "peer",
				     aj_arg_peer(args), "process", p->id, "signal", sig));
	if (!running)
		aj_reply_error(rep, 409, "not_running", "process %s has ended", p->id);
	else
		aj_reply_json(rep, 200, json_pack("{s:s, s:i}", "process", p->id, "signal", sig));
	proc_unref(p);
	aj_sandbox_unref(sb);
}

/* Events from f->off on, at most about cap bytes; the end when done. */
static char *collect(follow *f, size_t cap, bool *fin)
{
	aj_proc *p = f->p;
	json_t *evs = json_array();
	size_t size = 0;
	pthread_mutex_lock(&p->mu);
	if (f->off < p->kept_from) {
		json_array_append_new(evs, json_pack("{s:s, s:I, s:I}", "type", "gap", "offset",
						     (json_int_t)f->off, "next",
						     (json_int_t)p->kept_from));
		f->off = p->kept_from;
	}
	for (size_t i = 0; i < p->n && size < cap; i++) {
		rec *rc = p->ring[(p->head + i) % RING_RECS];
		if (rc->off + rc->len <= f->off)
			continue;
		size_t skip = f->off > rc->off ? (size_t)(f->off - rc->off) : 0;
		size_t n = rc->len - skip;
		if (n > cap - size)
			n = cap - size;
		json_t *ev = aj_exec_data_event(rc->stream, rc->data + skip, n);
		if (ev) {
			json_object_set_new(ev, "offset",
					    json_integer((json_int_t)(rc->off + skip)));
			json_array_append_new(evs, ev);
		}
		f->off = rc->off + skip + n;
		size += n;
	}
	bool drained = f->off >= p->total;
	if (drained && p->done && !f->exit_sent) {
		json_array_append(evs, p->exit_ev);
		f->exit_sent = true;
	}
	*fin = drained && (f->exit_sent || !f->follow);
	pthread_mutex_unlock(&p->mu);
	char *out = NULL;
	size_t len = 0, i;
	json_t *ev;
	json_array_foreach(evs, i, ev)
	{
		char *line = json_dumps(ev, JSON_COMPACT);
		size_t l = line ? strlen(line) : 0;
		char *nb = line ? realloc(out, len + l + 2) : NULL;
		if (nb) {
			out = nb;
			memcpy(out + len, line, l);
			out[len + l] = '\n';
			len += l + 1;
			out[len] = '\0';
		}
		free(line);
	}
	json_decref(evs);
	return out;
}

/* The front has closed its end of the stream. */
static bool peer_gone(int sock)
{
	struct pollfd pf = {.fd = sock, .events = POLLRDHUP};
	return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void *follower(void *arg)
{
	follow *f = arg;
	for (;;) {
		bool fin = false;
		char *o = collect(f, 65536, &fin);
		int r = o ? aj_write_all(f->sock, o, strlen(o)) : 0;
		free(o);
		if (r < 0 || fin)
			break;
		if (o)
			continue;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 200 * 1000000L;
		if (until.tv_nsec >= 1000000000L)
			until.tv_sec++, until.tv_nsec -= 1000000000L;
		pthread_mutex_lock(&f->p->mu);
		if (!f->p->done && f->off >= f->p->total)
			pthread_cond_timedwait(&f->p->cv, &f->p->mu, &until);
		pthread_mutex_unlock(&f->p->mu);
		if (peer_gone(f->sock))
			break;
	}
	close(f->sock);
	pthread_mutex_lock(&f->p->mu);
	f->p->followers--;
	pthread_mutex_unlock(&f->p->mu);
	proc_unref(f->p);
	free(f);
	aj_worker_leave();
	return NULL;
}

/* procs.output {sandbox, process, offset, follow}: the NDJSON stream. */
void aj_op_procs_output(json_t *args, aj_reply *rep)
{
	json_t *o = json_object_get(args, "offset");
	if (o && (!json_is_integer(o) || json_integer_value(o) < 0)) {
		aj_reply_error(rep, 400, "bad_request", "'offset' must be a byte offset");
		return;
	}
	aj_sandbox *sb;
	aj_proc *p = arg_proc(args, rep, &sb, false, false);
	aj_sandbox_unref(sb);
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	bool room = p->followers < AJ_PROC_FOLLOWERS;
	if (room)
		p->followers++;
	pthread_mutex_unlock(&p->mu);
	if (!room) {
		proc_unref(p);
		aj_reply_error(rep, 429, "too_many_streams",
			       "the process's output has %d readers already", AJ_PROC_FOLLOWERS);
		return;
	}
	follow *f = calloc(1, sizeof(*f));
	int s[2] = {-1, -1};
	if (!f || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) < 0) {
		pthread_mutex_lock(&p->mu);
		p->followers--;
		pthread_mutex_unlock(&p->mu);
		free(f);
		proc_unref(p);
		aj_reply_error(rep, 500, "internal", "cannot make a stream: %s", strerror(errno));
		return;
	}
	f->p = p;
	f->sock = s[0];
	f->off = (unsigned long long)json_integer_value(o);
	f->follow = aj_arg_bool(args, "follow");
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	aj_worker_enter();
	int e = pthread_create(&t, &attr, follower, f);
	pthread_attr_destroy(&attr);
	if (e) {
		aj_worker_leave();
		close(s[0]);
		close(s[1]);
		pthread_mutex_lock(&p->mu);
		p->followers--;
		pthread_mutex_unlock(&p->mu);
		proc_unref(p);
		free(f);
		aj_reply_error(rep, 503, "busy", "cannot start a reader: %s", strerror(e));
		return;
	}
	rep->fd = s[1];
	aj_reply_json(rep, 200, json_pack("{s:s}", "stream", "ndjson"));
}
