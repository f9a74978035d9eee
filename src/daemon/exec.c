/* SPDX-License-Identifier: MIT */
/* POST /v1/sandboxes/{id}/exec: a worker thread runs the command in the
 * sandbox (aj_box_exec) and queues NDJSON events; the service thread sends
 * them as the connection can take them. The queue is bounded: a slow
 * client slows the command's output, a vanished one kills the command. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "redact.h"
#include "request.h"
#include "util.h"

#define JOB_MAX_QUEUED (1u << 20)

typedef struct aj_job {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *buf; /* queued NDJSON bytes [off, len) */
	size_t len, off, cap;
	bool done, gone, wake;
	int refs;
	struct lws *wsi;
	int sig[2]; /* pipe: signals for the command (box.h); 0 cancels it */
	aj_sandbox *sb;
	char peer[80];
	aj_exec_req q;
	bool ws;	 /* a WebSocket (channels) instead of NDJSON */
	int stdin_rw[2]; /* ws with stdin: the command's stdin pipe (or the pty master) */
	int tty[2];	 /* ws with a pty: master, slave (the worker hands it over) */
	char *in_pend;	 /* ws: stdin bytes the pipe did not take yet */
	size_t in_len;
	char carry[2][4]; /* an incomplete UTF-8 sequence at a chunk's end */
	size_t carry_n[2];
	struct aj_job *next;
} aj_job;

static pthread_mutex_t jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_cv = PTHREAD_COND_INITIALIZER;
static aj_job *jobs;  /* attached to a connection */
static int n_workers; /* running */
static struct lws_context *ctx;

void aj_exec_set_context(struct lws_context *c)
{
	ctx = c;
}

static void job_unref(aj_job *j)
{
	pthread_mutex_lock(&j->mu);
	int left = --j->refs;
	pthread_mutex_unlock(&j->mu);
	if (left > 0)
		return;
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j->buf);
	aj_exec_req_free(&j->q);
	for (int i = 0; i < 2; i++) {
		if (j->stdin_rw[i] >= 0)
			close(j->stdin_rw[i]);
		if (j->tty[i] >= 0)
			close(j->tty[i]);
	}
	free(j->in_pend);
	for (int i = 0; i < 2; i++)
		if (j->sig[i] >= 0)
			close(j->sig[i]);
	aj_sandbox_unref(j->sb);
	free(j);
}

/* Queue one event (o consumed). Waits while the queue is full; returns -1
 * when the client is gone. */
/* Queue head + data + tail. Waits while the queue is full; returns -1
 * when the client is gone. */
static int push_bytes(aj_job *j, const void *head, size_t hl, const void *data, size_t dl,
		      const char *tail, size_t tl)
{
	size_t n = hl + dl + tl;
	int r = 0;
	pthread_mutex_lock(&j->mu);
	while (!j->gone && j->len - j->off > JOB_MAX_QUEUED)
		pthread_cond_wait(&j->cv, &j->mu);
	if (j->gone) {
		r = -1;
	} else {
		if (j->len + n > j->cap) {
			size_t cap = (j->len + n) * 2;
			char *b = realloc(j->buf, cap);
			if (b)
				j->buf = b, j->cap = cap;
		}
		if (j->len + n <= j->cap) {
			memcpy(j->buf + j->len, head, hl);
			if (dl)
				memcpy(j->buf + j->len + hl, data, dl);
			memcpy(j->buf + j->len + hl + dl, tail, tl);
			j->len += n;
		}
		j->wake = true;
	}
	pthread_mutex_unlock(&j->mu);
	if (r == 0)
		lws_cancel_service(ctx);
	return r;
}

/* A WebSocket message: [length (4 bytes)][channel][data] in the queue. */
static int push_ws(aj_job *j, unsigned char channel, const void *data, size_t len)
{
	unsigned char head[5];
	uint32_t l = (uint32_t)len + 1;
	memcpy(head, &l, 4);
	head[4] = channel;
	return push_bytes(j, head, sizeof(head), data, len, "", 0);
}

/* Queue one NDJSON event (o consumed). */
static int push(aj_job *j, json_t *o)
{
	char *line = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!line)
		return 0;
	int r = push_bytes(j, line, strlen(line), NULL, 0, "\n", 1);
	free(line);
	return r;
}

/* Bytes at the end of buf that begin a UTF-8 sequence not complete yet. */
static size_t incomplete_tail(const unsigned char *b, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = b[n - back];
		if ((c & 0xC0) == 0x80)
			continue; /* continuation byte: look further back */
		size_t need = (c & 0xE0) == 0xC0   ? 2
			      : (c & 0xF0) == 0xE0 ? 3
			      : (c & 0xF8) == 0xF0 ? 4
						   : 1;
		return need > back ? back : 0;
	}
	return 0;
}

/* One piece of output: text as "data", anything else as "data_b64". */
json_t *aj_exec_data_event(int stream, const char *buf, size_t len)
{
	const char *name = stream == 1 ? "stdout" : "stderr";
	json_t *s = json_stringn(buf, len);
	if (s)
		return json_pack("{s:s, s:o}", "type", name, "data", s);
	size_t cap = len * 4 / 3 + 8;
	_cleanup_free_ char *b64 = malloc(cap);
	if (!b64 || lws_b64_encode_string(buf, (int)len, b64, (int)cap) < 0)
		return NULL;
	return json_pack("{s:s, s:s}", "type", name, "data_b64", b64);
}

static int push_data(aj_job *j, int stream, const char *buf, size_t len)
{
	json_t *ev = aj_exec_data_event(stream, buf, len);
	return ev ? push(j, ev) : 0;
}

static int on_output(void *c, int stream, const char *buf, size_t len)
{
	aj_job *j = c;
	int k = stream - 1;
	aj_metrics_add(&aj_stats.bytes_out, len);
	if (j->ws)
		return push_ws(j, (unsigned char)stream, buf, len);
	_cleanup_free_ char *all = malloc(j->carry_n[k] + len);
	if (!all)
		return 0;
	memcpy(all, j->carry[k], j->carry_n[k]);
	memcpy(all + j->carry_n[k], buf, len);
	size_t n = j->carry_n[k] + len;
	size_t keep = incomplete_tail((const unsigned char *)all, n);
	memcpy(j->carry[k], all + n - keep, keep);
	j->carry_n[k] = keep;
	return n - keep ? push_data(j, stream, all, n - keep) : 0;
}

/* The command as given, for the audit log: a secret's value in it (or its
 * base64) is redacted as in the output. */
/* The command as given, for the audit log: a secret's value in it (or its
 * base64) is redacted as in the output. */
static json_t *redacted_cmd(const aj_sandbox *sb, json_t *cmd)
{
	_cleanup_free_ char *txt = json_dumps(cmd, JSON_COMPACT | JSON_ENCODE_ANY);
	_cleanup_free_ char *out = NULL;
	size_t olen = 0;
	aj_redactor red;
	int r = txt ? aj_redactor_init_policy(&red, &sb->policy) : -ENOMEM;
	if (r == 0)
		r = aj_redactor_feed(&red, txt, strlen(txt), true, &out, &olen);
	aj_redactor_free(&red);
	if (r < 0 || !out)
		return json_string("[unavailable]");
	if (olen == strlen(txt) && memcmp(out, txt, olen) == 0)
		return json_incref(cmd);
	return json_stringn(out, olen);
}

json_t *aj_exec_ended(aj_sandbox *sb, const char *peer, json_t *cmd, int r,
		      const aj_run_result *res, const aj_error *err)
{
	json_t *ev;
	if (r < 0) {
		char msg[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
		aj_err_format(err, msg, sizeof(msg));
		const char *code = err->exit == AJ_EXIT_NOTFOUND ? "command_not_found"
				   : err->exit == AJ_EXIT_NOEXEC ? "command_not_executable"
								 : "exec_failed";
		ev = json_pack("{s:s, s:i, s:{s:s, s:s}, s:I}", "type", "exit", "exit_code",
			       err->exit, "error", "code", code, "message", msg, "duration_ms",
			       (json_int_t)res->wall_ms);
		aj_metrics_add(&aj_stats.exec_failed, 1);
	} else {
		ev = json_pack("{s:s, s:i, s:o, s:b, s:b, s:I}", "type", "exit", "exit_code",
			       res->exit_code, "signal",
			       res->term_signal ? json_integer(res->term_signal) : json_null(),
			       "timed_out", res->timed_out, "oom_killed", res->oom_killed,
			       "duration_ms", (json_int_t)res->wall_ms);
		if (res->timed_out)
			aj_metrics_add(&aj_stats.timeouts, 1);
		if (res->oom_killed)
			aj_metrics_add(&aj_stats.oom_kills, 1);
	}
	aj_metrics_add(&aj_stats.execs, 1);
	aj_metrics_exec((double)res->wall_ms / 1000.0);
	aj_audit("exec",
		 json_pack("{s:s, s:s, s:o, s:i, s:I, s:b}", "sandbox", sb->id, "peer", peer, "cmd",
			   redacted_cmd(sb, cmd), "exit_code", r < 0 ? err->exit : res->exit_code,
			   "duration_ms", (json_int_t)res->wall_ms, "timed_out",
			   r == 0 && res->timed_out));
	return ev;
}

static void finish(aj_job *j, int r, const aj_run_result *res, const aj_error *err)
{
	for (int k = 0; k < 2; k++)
		if (j->carry_n[k])
			push_data(j, k + 1, j->carry[k], j->carry_n[k]);
	json_t *ev = aj_exec_ended(j->sb, j->peer, j->q.cmd, r, res, err);
	if (j->ws) { /* the Kubernetes status on channel 3, with our exit event */
		int code = (int)json_integer_value(json_object_get(ev, "exit_code"));
		json_t *st = json_pack("{s:{}, s:s}", "metadata", "status",
				       code == 0 ? "Success" : "Failure");
		if (code != 0) {
			json_object_set_new(st, "reason", json_string("NonZeroExitCode"));
			json_object_set_new(
			    st, "message",
			    json_string("command terminated with non-zero exit code"));
			json_object_set_new(st, "details",
					    json_pack("{s:[{s:s, s:o}]}", "causes", "reason",
						      "ExitCode", "message",
						      json_sprintf("%d", code)));
		}
		json_object_set_new(st, "agentjail", ev);
		char *txt = json_dumps(st, JSON_COMPACT);
		json_decref(st);
		if (txt)
			push_ws(j, 3, txt, strlen(txt));
		free(txt);
	} else {
		push(j, ev);
	}
	pthread_mutex_lock(&j->mu);
	j->done = true;
	j->wake = true;
	pthread_mutex_unlock(&j->mu);
	lws_cancel_service(ctx);
}

void aj_worker_enter(void)
{
	pthread_mutex_lock(&jobs_mu);
	n_workers++;
	pthread_mutex_unlock(&jobs_mu);
}

void aj_worker_leave(void)
{
	pthread_mutex_lock(&jobs_mu);
	n_workers--;
	pthread_cond_broadcast(&jobs_cv);
	pthread_mutex_unlock(&jobs_mu);
}

static void *worker(void *arg)
{
	aj_job *j = arg;
	aj_exec_spec spec = {.argv = j->q.argv,
			     .env = j->q.env,
			     .cwd = j->q.cwd,
			     .stdin_data = j->q.stdin_data,
			     .stdin_len = j->q.stdin_len,
			     .stdin_fd = j->stdin_rw[0],
			     .tty_master = j->tty[0],
			     .tty_slave = steal_fd(&j->tty[1]),
			     .timeout_ms = j->q.timeout_ms};
	aj_exec_io io = {.output = on_output, .ctx = j, .signal_fd = j->sig[0]};
	aj_run_result res;
	aj_error err;
	aj_err_clear(&err);
	__atomic_add_fetch(&j->sb->execs, 1, __ATOMIC_SEQ_CST);
	int r = aj_box_exec(&j->sb->box, &spec, &io, &res, &err);
	finish(j, r, &res, &err);
	job_unref(j);
	pthread_mutex_lock(&jobs_mu);
	n_workers--;
	pthread_cond_broadcast(&jobs_cv);
	pthread_mutex_unlock(&jobs_mu);
	return NULL;
}

/* A job for a parsed request (q taken), its worker started. Returns NULL
 * with an error answered. */
static aj_job *launch(aj_req *r, aj_sandbox *sb, aj_exec_req *q, bool ws, bool with_stdin,
		      const int *tty)
{
	aj_job *j = calloc(1, sizeof(*j));
	if (!j) {
		aj_exec_req_free(q);
		aj_http_error(r, 500, "internal", "out of memory");
		return NULL;
	}
	j->q = *q;
	memset(q, 0, sizeof(*q));
	j->ws = ws;
	j->sig[0] = j->sig[1] = j->stdin_rw[0] = j->stdin_rw[1] = -1;
	j->tty[0] = tty ? tty[0] : -1;
	j->tty[1] = tty ? tty[1] : -1;
	int pe = pipe2(j->sig, O_CLOEXEC | O_NONBLOCK);
	if (pe == 0 && tty) /* stdin goes to the master */
		pe = (j->stdin_rw[1] = fcntl(tty[0], F_DUPFD_CLOEXEC, 3)) < 0
			 ? -1
			 : fcntl(j->stdin_rw[1], F_SETFL, O_NONBLOCK);
	else if (pe == 0 && with_stdin && pipe2(j->stdin_rw, O_CLOEXEC) == 0)
		pe = fcntl(j->stdin_rw[1], F_SETFL, O_NONBLOCK);
	else if (pe == 0 && with_stdin)
		pe = -1;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->refs = 2; /* the connection's and the worker's */
	j->wsi = r->wsi;
	j->sb = sb;
	aj_sandbox_ref(sb);
	snprintf(j->peer, sizeof(j->peer), "%s", r->peer);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	pthread_mutex_lock(&jobs_mu);
	int e = pe < 0 ? errno : pthread_create(&t, &attr, worker, j);
	if (e == 0) {
		n_workers++;
		j->next = jobs;
		jobs = j;
	}
	pthread_mutex_unlock(&jobs_mu);
	pthread_attr_destroy(&attr);
	if (e != 0) {
		j->refs = 1;
		job_unref(j);
		aj_http_error(r, 503, "busy", "cannot start a worker: %s", strerror(e));
		return NULL;
	}
	r->job = j;
	return j;
}

void aj_exec_start(aj_req *r, aj_sandbox *sb)
{
	aj_error err;
	aj_err_clear(&err);
	aj_exec_req q;
	if (aj_exec_req_parse(r->body, r->body_len, &q, &err) < 0) {
		aj_http_fail(r, 400, "bad_request", &err);
		return;
	}
	if (launch(r, sb, &q, false, false, NULL))
		aj_http_stream(r, 200, "application/x-ndjson");
}

int aj_exec_ws_start(aj_req *r, aj_sandbox *sb, const char *body, bool with_stdin, const int *tty,
		     aj_error *err)
{
	aj_exec_req q;
	if (aj_exec_req_parse(body, strlen(body), &q, err) < 0)
		return -EINVAL;
	if (!launch(r, sb, &q, true, with_stdin, tty))
		return aj_err(err, EAGAIN, "cannot start the command");
	return 0;
}

/* Stdin bytes for the command: into its pipe, the rest kept (and the
 * socket's input paused) until the pipe takes it. */
static void feed_stdin(aj_req *r, aj_job *j)
{
	while (j->in_len && j->stdin_rw[1] >= 0) {
		ssize_t n = write(j->stdin_rw[1], j->in_pend, j->in_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) { /* the command closed its stdin: drop the rest */
			j->in_len = 0;
			break;
		}
		memmove(j->in_pend, j->in_pend + n, j->in_len - (size_t)n);
		j->in_len -= (size_t)n;
	}
	lws_rx_flow_control(r->wsi, j->in_len == 0);
	if (j->in_len)
		lws_callback_on_writable(r->wsi);
}

int aj_exec_ws_receive(aj_req *r, int channel, const unsigned char *data, size_t len, bool eof)
{
	aj_job *j = r->job;
	if (j && channel == 4 && j->tty[0] >= 0) { /* resize: {"Width": W, "Height": H} */
		json_t *o = json_loadb((const char *)data, len, 0, NULL);
		struct winsize ws = {
		    .ws_col = (unsigned short)json_integer_value(json_object_get(o, "Width")),
		    .ws_row = (unsigned short)json_integer_value(json_object_get(o, "Height"))};
		json_decref(o);
		if (ws.ws_col && ws.ws_row)
			(void)ioctl(j->tty[0], TIOCSWINSZ, &ws);
		return 0;
	}
	if (!j || channel != 0 || j->stdin_rw[1] < 0)
		return 0; /* stdin not asked for: ignored */
	if (eof) {	  /* an empty stdin message: EOF */
		close(j->stdin_rw[1]);
		j->stdin_rw[1] = -1;
		return 0;
	}
	if (j->in_len + len > JOB_MAX_QUEUED)
		return -1;
	char *b = len ? realloc(j->in_pend, j->in_len + len) : j->in_pend;
	if (len && !b)
		return -1;
	j->in_pend = b;
	if (len)
		memcpy(j->in_pend + j->in_len, data, len);
	j->in_len += len;
	feed_stdin(r, j);
	return 0;
}

/* One queued message out as a binary WebSocket frame. */
static int ws_writable(aj_req *r, aj_job *j, unsigned char *buf, size_t cap)
{
	if (j->in_len)
		feed_stdin(r, j);
	pthread_mutex_lock(&j->mu);
	uint32_t l = 0;
	if (j->len - j->off >= 5)
		memcpy(&l, j->buf + j->off, 4);
	unsigned char *out = l && l <= cap - LWS_PRE ? buf : l ? malloc(LWS_PRE + l) : NULL;
	if (out) {
		memcpy(out + LWS_PRE, j->buf + j->off + 4, l);
		j->off += 4 + l;
		if (j->off == j->len)
			j->off = j->len = 0;
	}
	bool fin = j->done && j->len == 0;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	int w = out ? lws_write(r->wsi, out + LWS_PRE, l, LWS_WRITE_BINARY) : 0;
	if (out && out != buf)
		free(out);
	if (w < (int)l || (l && !out))
		return -1;
	if (l) { /* the end comes on the next writable, once this is flushed */
		lws_callback_on_writable(r->wsi);
		return 0;
	}
	if (fin) {
		lws_close_reason(r->wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
		return -1;
	}
	return 0;
}

int aj_exec_writable(aj_req *r, unsigned char *buf, size_t cap)
{
	aj_job *j = r->job;
	if (j->ws)
		return ws_writable(r, j, buf, cap);
	size_t room = cap - LWS_PRE - 16;
	pthread_mutex_lock(&j->mu);
	size_t n = j->len - j->off;
	if (n > room)
		n = room;
	if (n)
		memcpy(buf + LWS_PRE, j->buf + j->off, n);
	j->off += n;
	if (j->off == j->len)
		j->off = j->len = 0;
	bool fin = j->done && j->len == 0;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	if (n && lws_write(r->wsi, buf + LWS_PRE, n, LWS_WRITE_HTTP) < (int)n)
		return -1;
	if (fin) {
		r->finished = true; /* completed (and closed) once this is flushed */
		lws_callback_on_writable(r->wsi);
	} else if (n) {
		lws_callback_on_writable(r->wsi);
	}
	return 0;
}

void aj_exec_detach(aj_req *r)
{
	aj_job *j = r->job;
	r->job = NULL;
	pthread_mutex_lock(&jobs_mu);
	for (aj_job **pp = &jobs; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	pthread_mutex_unlock(&jobs_mu);
	pthread_mutex_lock(&j->mu);
	bool running = !j->done;
	j->gone = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	if (running) { /* nobody reads its output any more */
		unsigned char cancel = 0;
		if (write(j->sig[1], &cancel, 1) < 0)
			(void)0;
	}
	job_unref(j);
}

void aj_exec_wake_all(void)
{
	pthread_mutex_lock(&jobs_mu);
	for (aj_job *j = jobs; j; j = j->next) {
		pthread_mutex_lock(&j->mu);
		bool w = j->wake && !j->gone;
		j->wake = false;
		pthread_mutex_unlock(&j->mu);
		if (w)
			lws_callback_on_writable(j->wsi);
	}
	pthread_mutex_unlock(&jobs_mu);
}

void aj_exec_shutdown(void)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&jobs_mu);
	while (n_workers > 0 && pthread_cond_timedwait(&jobs_cv, &jobs_mu, &until) == 0)
		;
	pthread_mutex_unlock(&jobs_mu);
}
