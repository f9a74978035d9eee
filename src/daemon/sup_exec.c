/* SPDX-License-Identifier: MIT */
/* The supervisor's exec (op "exec"): the supervisor's thread sends the
 * command to the sandbox (its backend's exec_start), then a worker thread waits
 * for it and writes its redacted output to a stream socket whose other end
 * goes to the front: NDJSON events, or for a WebSocket the frames of ipc.h
 * (channels 1, 2, 3). For a WebSocket a reader thread takes what the front
 * sends back (stdin, its EOF, terminal resizes); the front closing its end
 * cancels the command (for NDJSON the worker watches for that itself). A
 * slow client slows the command's output (the socket's buffer is the
 * queue). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "backends.h"
#include "exec_event.h"
#include "ipc.h"
#include "jsonstr.h"
#include "metrics.h"
#include "procs.h"
#include "registry.h"
#include "sup_exec.h"
#include "tenant.h"
#include "threads.h"
#include "util.h"

/* Exec streams (NDJSON or WebSocket) a sandbox may have open at once: each
 * holds bounded queues (here, in the front, in socket buffers) while its
 * client does not read (docs/security.md, "Streams a client does not
 * read"), so that a sandbox's clients cost bounded memory. */
#define AJ_SANDBOX_STREAMS 32

typedef struct job {
	pthread_mutex_t mu;
	int refs;
	int sock;   /* our end of the stream */
	int sig[2]; /* pipe: signals for the command (box.h); 0 cancels it */
	bool done;
	aj_sandbox *sb;
	char peer[80];
	aj_exec_req q;
	bool ws;	  /* frames (channels) instead of NDJSON */
	int stdin_rw[2];  /* the command's stdin pipe (or the pty master's dup) */
	int tty[2];	  /* a pty: master, slave (the worker hands it over) */
	char carry[2][4]; /* an incomplete UTF-8 sequence at a chunk's end */
	size_t carry_n[2];
	char *line; /* NDJSON: the event being written (jsonstr.h) */
	size_t line_cap;
	aj_job *x; /* the command, sent (the backend's exec_start) */
} job;

static void closep2(int fd[2])
{
	for (int i = 0; i < 2; i++)
		if (fd[i] >= 0) {
			close(fd[i]);
			fd[i] = -1;
		}
}

static void job_unref(job *j)
{
	pthread_mutex_lock(&j->mu);
	int left = --j->refs;
	pthread_mutex_unlock(&j->mu);
	if (left > 0)
		return;
	pthread_mutex_destroy(&j->mu);
	if (j->x)
		j->sb->be->exec_abandon(j->x);
	aj_exec_req_free(&j->q);
	closep2(j->stdin_rw);
	closep2(j->tty);
	closep2(j->sig);
	if (j->sock >= 0)
		close(j->sock);
	__atomic_sub_fetch(&j->sb->streams, 1, __ATOMIC_SEQ_CST);
	aj_sandbox_unref(j->sb);
	free(j->line);
	free(j);
}

/* Bytes to the front, in one writev when they fit; -1 when it is gone. */
static int out(job *j, const void *a, size_t al, const void *b, size_t bl)
{
	struct iovec v[2] = {{(void *)a, al}, {(void *)b, bl}};
	struct iovec *p = v;
	int n = bl ? 2 : 1;
	while (n) {
		ssize_t w = writev(j->sock, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		while (n && (size_t)w >= p->iov_len) { /* what was written, whole */
			w -= (ssize_t)p->iov_len;
			p++, n--;
		}
		if (n) {
			p->iov_base = (char *)p->iov_base + w;
			p->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int out_frame(job *j, unsigned char channel, const void *data, size_t len)
{
	while (len > AJ_IPC_FRAME_MAX - 1) { /* long output in several frames */
		if (out_frame(j, channel, data, AJ_IPC_FRAME_MAX - 1) < 0)
			return -1;
		data = (const char *)data + AJ_IPC_FRAME_MAX - 1;
		len -= AJ_IPC_FRAME_MAX - 1;
	}
	unsigned char head[5];
	uint32_t l = (uint32_t)len + 1;
	memcpy(head, &l, 4);
	head[4] = channel;
	return out(j, head, sizeof(head), data, len);
}

/* One NDJSON event (o consumed). */
static int out_event(job *j, json_t *o)
{
	char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!line)
		return 0;
	int r = out(j, line, strlen(line), "\n", 1);
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

/* Text as {"type":...,"data":"..."} escaped here in one pass, written in
 * one write (jansson built a json_t and a string per chunk, and the
 * newline took a second write: docs/performance.md); bytes that are not
 * UTF-8 go through aj_exec_data_event (data_b64), as before. */
static int out_data(job *j, int stream, const char *buf, size_t len)
{
	size_t need = AJ_JSON_EVENT_MAX(len);
	if (need > j->line_cap) {
		char *l = realloc(j->line, need);
		if (l)
			j->line = l, j->line_cap = need;
	}
	long n = need <= j->line_cap ? aj_json_output_event(stream, buf, len, j->line) : -1;
	if (n < 0)
		return out_event(j, aj_exec_data_event(stream, buf, len));
	return out(j, j->line, (size_t)n, NULL, 0);
}

static int on_output(void *c, int stream, const char *buf, size_t len)
{
	job *j = c;
	int k = stream - 1;
	aj_metrics_add(&aj_stats.bytes_out, len);
	if (j->ws)
		return out_frame(j, (unsigned char)stream, buf, len);
	_cleanup_free_ char *joined = NULL; /* the carry and buf, when there is a carry */
	const char *all = buf;
	if (j->carry_n[k]) {
		if (!(joined = malloc(j->carry_n[k] + len)))
			return 0;
		memcpy(joined, j->carry[k], j->carry_n[k]);
		memcpy(joined + j->carry_n[k], buf, len);
		all = joined;
	}
	size_t n = j->carry_n[k] + len;
	size_t keep = incomplete_tail((const unsigned char *)all, n);
	memcpy(j->carry[k], all + n - keep, keep);
	j->carry_n[k] = keep;
	return n - keep ? out_data(j, stream, all, n - keep) : 0;
}

/* The command has ended: its pty goes now, not when the front closes the
 * stream (the next exec's pty would get another number). /dev/null is put
 * in the fds' places (dup3 is atomic), so the reader may still use them.
 * Called with j->mu held; the reader closes stdin_rw[1] under it. */
static void release_tty(job *j)
{
	if (j->tty[0] < 0)
		return;
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0)
		return;
	(void)dup3(nul, j->tty[0], O_CLOEXEC);
	if (j->stdin_rw[1] >= 0)
		(void)dup3(nul, j->stdin_rw[1], O_CLOEXEC);
	close(nul);
}

static void finish(job *j, int r, const aj_run_result *res, const aj_error *err)
{
	pthread_mutex_lock(&j->mu);
	release_tty(j); /* before the end is told */
	pthread_mutex_unlock(&j->mu);
	for (int k = 0; k < 2; k++)
		if (j->carry_n[k])
			out_data(j, k + 1, j->carry[k], j->carry_n[k]);
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
			out_frame(j, 3, txt, strlen(txt));
		free(txt);
	} else {
		out_event(j, ev);
	}
	pthread_mutex_lock(&j->mu);
	j->done = true;
	pthread_mutex_unlock(&j->mu);
	shutdown(j->sock, SHUT_WR); /* the end of the stream for the front */
}

static void *worker(void *arg)
{
	job *j = arg;
	aj_run_result res;
	aj_error err;
	aj_err_clear(&err);
	int r = j->sb->be->exec_wait(j->x, &res, &err);
	j->x = NULL;
	finish(j, r, &res, &err);
	job_unref(j);
	aj_worker_leave();
	return NULL;
}

static void cancel(job *j)
{
	pthread_mutex_lock(&j->mu);
	bool running = !j->done;
	pthread_mutex_unlock(&j->mu);
	unsigned char zero = 0;
	if (running && j->sig[1] >= 0 && write(j->sig[1], &zero, 1) < 0)
		(void)0;
}

/* What the front sends: frames (stdin, its EOF, resizes) until it closes
 * its end, which cancels a command still running. */
static void *reader(void *arg)
{
	job *j = arg;
	static const size_t cap = AJ_IPC_FRAME_MAX;
	_cleanup_free_ unsigned char *buf = malloc(cap);
	for (;;) {
		uint32_t l;
		/* poll, not a blocking read: a reader blocked in read(2) on a unix
		 * socket is woken each time the front makes room for the worker's
		 * writes on it (one wait queue), ~1 wake-up per event for nothing */
		struct pollfd p = {j->sock, POLLIN, 0};
		if (poll(&p, 1, -1) < 0 && errno == EINTR)
			continue;
		if (!buf || aj_read_all(j->sock, &l, 4) < 0 || l == 0 || l > cap ||
		    aj_read_all(j->sock, buf, l) < 0)
			break; /* the end, or a frame the protocol has not: the end */
		unsigned char ch = buf[0];
		if (ch == 0 && j->stdin_rw[1] >= 0) {
			if (l == 1) { /* EOF of stdin (a pty has none: ^D is data) */
				if (j->tty[0] < 0) {
					close(j->stdin_rw[1]);
					j->stdin_rw[1] = -1;
				}
			} else if (aj_write_all(j->stdin_rw[1], buf + 1, l - 1) < 0) {
				pthread_mutex_lock(&j->mu); /* release_tty */
				close(j->stdin_rw[1]);	    /* the command closed its stdin */
				j->stdin_rw[1] = -1;
				pthread_mutex_unlock(&j->mu);
			}
		} else if (ch == 4 && j->tty[0] >= 0) {
			json_t *o = json_loadb((const char *)buf + 1, l - 1, 0, NULL);
			json_int_t w = json_integer_value(json_object_get(o, "Width"));
			json_int_t h = json_integer_value(json_object_get(o, "Height"));
			json_decref(o);
			struct winsize ws = {.ws_col = (unsigned short)w,
					     .ws_row = (unsigned short)h};
			if (w > 0 && w < 10000 && h > 0 && h < 10000)
				(void)ioctl(j->tty[0], TIOCSWINSZ, &ws);
		}
	}
	cancel(j);
	pthread_mutex_lock(&j->mu);
	if (j->stdin_rw[1] >= 0) {
		close(j->stdin_rw[1]);
		j->stdin_rw[1] = -1;
	}
	pthread_mutex_unlock(&j->mu);
	job_unref(j);
	aj_worker_leave();
	return NULL;
}

static int start_thread(void *(*fn)(void *), job *j)
{
	aj_worker_enter();
	int e = aj_thread_start(fn, j);
	if (e < 0)
		aj_worker_leave();
	return e;
}

/* The job's pipes, pty (in the sandbox's own devpts) and stream; *front:
 * the front's end. */
static int job_setup(job *j, bool with_stdin, bool tty, int *front, aj_error *err)
{
	int s[2];
	if ((j->ws && pipe2(j->sig, O_CLOEXEC) < 0) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) < 0)
		return -errno;
	j->sock = s[0];
	*front = s[1];
	/* room for a whole event of EXEC_READ_MAX bytes in flight: the front
	 * reads it in one or two reads, not in the ~40 KiB pieces the
	 * default buffer let through (best effort: FORCE needs root) */
	int sz = 1 << 20;
	(void)setsockopt(s[0], SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz));
	int r = 0;
	if (tty && !aj_backend_can(j->sb->be, AJ_CAP_PTY, err))
		return -ENOTSUP;
	if (tty && (r = j->sb->be->open_pty(j->sb->inst, j->tty, err)) == 0 &&
	    (j->stdin_rw[1] = fcntl(j->tty[0], F_DUPFD_CLOEXEC, 3)) < 0)
		r = -errno;
	else if (!tty && with_stdin && pipe2(j->stdin_rw, O_CLOEXEC) < 0)
		r = -errno;
	if (r < 0)
		return r;
	/* the command goes to the sandbox now, from this thread: it starts
	 * while the worker that waits for it wakes up. A WebSocket's reader
	 * cancels through sig; NDJSON has no reader: the front closing its end
	 * of the stream cancels (the front never writes to it). */
	aj_exec_spec spec = {.argv = j->q.argv,
			     .env = j->q.env,
			     .cwd = j->q.cwd,
			     .stdin_data = j->q.stdin_data,
			     .stdin_len = j->q.stdin_len,
			     .stdin_fd = j->stdin_rw[0],
			     .tty_master = j->tty[0],
			     .tty_slave = steal_fd(&j->tty[1]),
			     .timeout_ms = j->q.timeout_ms};
	aj_exec_io io = {.output = on_output,
			 .ctx = j,
			 .signal_fd = j->sig[0],
			 .cancel_fd = j->ws ? -1 : j->sock};
	__atomic_add_fetch(&j->sb->execs, 1, __ATOMIC_SEQ_CST);
	j->x = j->sb->be->exec_start(j->sb->inst, &spec, &io);
	return 0;
}

/* exec {sandbox, peer, req: {cmd, env, cwd, timeout, stdin, background},
 * ws, stdin, tty}: 200 and the stream, or 201 {process} (background). */
void aj_op_exec(json_t *args, aj_reply *rep)
{
	aj_error err;
	aj_err_clear(&err);
	aj_exec_req q;
	_cleanup_free_ char *txt = json_dumps(json_object_get(args, "req"), JSON_COMPACT);
	if (!txt || aj_exec_req_parse(txt, strlen(txt), &q, &err) < 0) {
		if (!txt)
			aj_err(&err, EINVAL, "expected the exec request as a JSON object");
		aj_reply_fail(rep, 400, "bad_request", &err);
		return;
	}
	aj_sandbox *sb = aj_arg_running(args, rep);
	if (!sb) {
		aj_exec_req_free(&q);
		return;
	}
	bool ws = aj_arg_bool(args, "ws");
	if (q.background && !ws) {
		aj_procs_start(sb, &q, aj_arg_peer(args), rep);
		aj_sandbox_unref(sb);
		return;
	}
	if (__atomic_add_fetch(&sb->streams, 1, __ATOMIC_SEQ_CST) > AJ_SANDBOX_STREAMS) {
		__atomic_sub_fetch(&sb->streams, 1, __ATOMIC_SEQ_CST);
		aj_exec_req_free(&q);
		aj_sandbox_unref(sb);
		aj_reply_error(rep, 429, "too_many_streams",
			       "the sandbox has %d exec streams open: end one (or read it to its "
			       "end) first",
			       AJ_SANDBOX_STREAMS);
		return;
	}
	job *j = calloc(1, sizeof(*j));
	if (!j) {
		__atomic_sub_fetch(&sb->streams, 1, __ATOMIC_SEQ_CST);
		aj_exec_req_free(&q);
		aj_sandbox_unref(sb);
		aj_reply_error(rep, 500, "internal", "out of memory");
		return;
	}
	pthread_mutex_init(&j->mu, NULL);
	j->q = q;
	j->sb = sb;
	j->ws = ws;
	j->sock = -1;
	j->sig[0] = j->sig[1] = j->stdin_rw[0] = j->stdin_rw[1] = j->tty[0] = j->tty[1] = -1;
	snprintf(j->peer, sizeof(j->peer), "%s", aj_arg_peer(args));
	int front = -1;
	int e = job_setup(j, ws && aj_arg_bool(args, "stdin"), ws && aj_arg_bool(args, "tty"),
			  &front, &err);
	j->refs = ws ? 3 : 2; /* this function's, the worker's and the reader's */
	if (e == 0 && (e = start_thread(worker, j)) < 0) {
		j->refs = 1;
		sb->be->exec_abandon(j->x); /* nobody waits: the command is killed */
		j->x = NULL;
	} else if (e == 0 && ws && (e = start_thread(reader, j)) < 0) {
		j->refs--;
		cancel(j); /* the worker ends (and drops its reference) */
	} else if (e < 0) {
		j->refs = 1;
	}
	job_unref(j);
	if (e < 0) {
		if (front >= 0)
			close(front);
		if (err.msg[0]) /* 501: a terminal at a level without one */
			aj_reply_fail(rep, err.status ? err.status : 500,
				      err.api_code[0] ? err.api_code : "exec_failed", &err);
		else
			aj_reply_error(rep, 503, "busy", "cannot start the command: %s",
				       strerror(-e));
		return;
	}
	rep->fd = front;
	aj_reply_json(rep, 200, json_pack("{s:s}", "stream", ws ? "frames" : "ndjson"));
}
