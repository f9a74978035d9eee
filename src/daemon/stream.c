/* SPDX-License-Identifier: MIT */
/* The front's side of a stream from the supervisor (an exec's output, a
 * background process's replay): a reader thread takes what comes on the
 * stream's fd into a bounded queue, the service thread sends it as the
 * connection can take it. NDJSON goes out as the HTTP body; frames
 * ([u32 length][channel][data], ipc.h) as WebSocket messages. A full queue
 * stops the reader, which fills the socket, which slows the command; the
 * connection closing closes the fd, which cancels it. WebSocket stdin and
 * resizes go back on the same fd as frames. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "ipc.h"
#include "threads.h"
#include "util.h"

#define JOB_MAX_QUEUED (1u << 20)
/* NDJSON: what one read from the supervisor and one lws_write take (an
 * event is up to ~64 KiB of output; 64 KiB reads cut each in two, and a
 * poll round per 64 KiB written was the front's main cost) */
#define JOB_IO (256u * 1024)

typedef struct aj_job {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *buf; /* queued bytes [off, len) */
	size_t len, off, cap;
	bool done, gone, wake;
	int refs;
	struct lws *wsi;
	int fd;
	bool ws;
	char *in_pend; /* ws: frames for the supervisor not sent yet */
	size_t in_len;
	unsigned char *out; /* LWS_PRE + JOB_IO (or a frame), what goes to lws_write */
	int sndbuf;	    /* the connection's send buffer (0: unknown) */
	struct aj_job *next;
} aj_job;

static pthread_mutex_t jobs_mu = PTHREAD_MUTEX_INITIALIZER;
static aj_job *jobs;
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
	free(j->in_pend);
	free(j->out);
	close(j->fd);
	free(j);
}

/* Queue head + data. Waits while the queue is full; -1 when the client is gone.
 * The service thread is woken only when the queue was empty: while it is
 * not, each writable callback that takes bytes asks for the next one. */
static int push(aj_job *j, const void *head, size_t hl, const void *data, size_t dl)
{
	size_t n = hl + dl;
	int r = 0;
	bool idle;
	pthread_mutex_lock(&j->mu);
	while (!j->gone && j->len - j->off > JOB_MAX_QUEUED)
		pthread_cond_wait(&j->cv, &j->mu);
	idle = j->off == j->len;
	if (j->gone) {
		r = -1;
	} else {
		if (j->off && j->len + n > j->cap) { /* sent bytes to the front */
			memmove(j->buf, j->buf + j->off, j->len - j->off);
			j->len -= j->off;
			j->off = 0;
		}
		if (j->len + n > j->cap) { /* bounded: JOB_MAX_QUEUED + n */
			size_t cap = (j->len + n) * 2;
			char *b = realloc(j->buf, cap);
			if (b)
				j->buf = b, j->cap = cap;
		}
		if (j->len + n <= j->cap) {
			memcpy(j->buf + j->len, head, hl);
			if (dl)
				memcpy(j->buf + j->len + hl, data, dl);
			j->len += n;
		} else {
			r = -1;
		}
		j->wake = true;
	}
	pthread_mutex_unlock(&j->mu);
	if (idle || r < 0)
		lws_cancel_service(ctx);
	return r;
}

static void *reader(void *arg)
{
	aj_job *j = arg;
	_cleanup_free_ char *buf = malloc(j->ws ? AJ_IPC_FRAME_MAX : JOB_IO);
	for (;;) {
		if (!buf)
			break;
		if (j->ws) {
			uint32_t l;
			if (aj_read_all(j->fd, &l, 4) < 0 || l == 0 || l > AJ_IPC_FRAME_MAX ||
			    aj_read_all(j->fd, buf, l) < 0 || push(j, &l, 4, buf, l) < 0)
				break;
		} else {
			ssize_t n = read(j->fd, buf, JOB_IO);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || push(j, buf, (size_t)n, NULL, 0) < 0)
				break;
		}
	}
	pthread_mutex_lock(&j->mu);
	j->done = true;
	j->wake = true;
	pthread_mutex_unlock(&j->mu);
	lws_cancel_service(ctx);
	job_unref(j);
	return NULL;
}

/* Frames for the supervisor: sent as far as its socket takes them; the
 * rest kept (and the client's input paused) until it does. */
static void feed(aj_req *r, aj_job *j)
{
	while (j->in_len) {
		ssize_t n = send(j->fd, j->in_pend, j->in_len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) { /* the command has ended: drop the rest */
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

int aj_stream_start(aj_req *r, int fd, bool ws)
{
	aj_job *j = calloc(1, sizeof(*j));
	if (!j) {
		close(fd);
		return -ENOMEM;
	}
	if (!(j->out = malloc(LWS_PRE + (ws ? AJ_IPC_FRAME_MAX : JOB_IO)))) {
		free(j);
		close(fd);
		return -ENOMEM;
	}
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->fd = fd;
	j->ws = ws;
	j->wsi = r->wsi;
	j->refs = 2; /* the connection's and the reader's */
	int e = aj_thread_start(reader, j);
	if (e < 0) {
		j->refs = 1;
		job_unref(j);
		return e;
	}
	pthread_mutex_lock(&jobs_mu);
	j->next = jobs;
	jobs = j;
	pthread_mutex_unlock(&jobs_mu);
	r->job = j;
	if (ws && r->body_len) { /* what the client sent while it started */
		j->in_pend = r->body;
		j->in_len = r->body_len;
		r->body = NULL;
		r->body_len = 0;
	}
	if (ws)
		feed(r, j);
	return 0;
}

/* A frame [length][channel][data] at the end of *buf. */
static int frame_append(char **buf, size_t *blen, int channel, const void *data, size_t len)
{
	if (len >= AJ_IPC_FRAME_MAX || *blen + len + 5 > JOB_MAX_QUEUED)
		return -1;
	char *b = realloc(*buf, *blen + len + 5);
	if (!b)
		return -1;
	*buf = b;
	uint32_t l = (uint32_t)len + 1;
	memcpy(b + *blen, &l, 4);
	b[*blen + 4] = (char)channel;
	if (len)
		memcpy(b + *blen + 5, data, len);
	*blen += len + 5;
	return 0;
}

int aj_exec_ws_receive(aj_req *r, int channel, const unsigned char *data, size_t len, bool eof)
{
	aj_job *j = r->job;
	if (channel != 0 && channel != 4)
		return 0; /* nothing else goes to the command */
	if (!eof && len == 0)
		return 0;
	if (!j && r->call) { /* the command is starting: kept until it has */
		lws_rx_flow_control(r->wsi, 0);
		return frame_append(&r->body, &r->body_len, channel, data, len);
	}
	if (!j || frame_append(&j->in_pend, &j->in_len, channel, data, len) < 0)
		return j ? -1 : 0;
	feed(r, j);
	return 0;
}

/* The connection's send buffer, once: a unix socket's made as large as the
 * system lets (it is all a local client has; TCP tunes its own, and
 * setting it would turn that off). -1: unknown. */
static int send_buffer(int fd, aj_job *j)
{
	if (!j->sndbuf) {
		int dom = 0, sz = 1 << 20;
		socklen_t l = sizeof(dom);
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) == 0 && dom == AF_UNIX)
			(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		l = sizeof(j->sndbuf);
		if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &j->sndbuf, &l) < 0 || j->sndbuf <= 0)
			j->sndbuf = -1;
	}
	return j->sndbuf;
}

/* How much one lws_write may take: what the connection's send buffer has
 * room for. lws keeps what a send() does not take in a buffer it mallocs
 * and copies (fresh pages, faulted in, for every chunk); sending only what
 * fits avoids that (docs/performance.md). */
static size_t send_room(aj_req *r, aj_job *j)
{
	int fd = lws_get_socket_fd(r->wsi), queued = 0;
	if (fd < 0 || send_buffer(fd, j) < 0 || ioctl(fd, TIOCOUTQ, &queued) < 0 || queued < 0)
		return JOB_IO;
	/* the queue counts buffers with their overhead: keep an eighth spare */
	size_t room = queued < j->sndbuf ? (size_t)(j->sndbuf - queued) / 8 * 7 : 0;
	return room < 4096 ? 4096 : room > JOB_IO ? JOB_IO : room;
}

/* One queued frame out as a binary WebSocket message. */
static int ws_writable(aj_req *r, aj_job *j)
{
	if (j->in_len)
		feed(r, j);
	int fd = lws_get_socket_fd(r->wsi);
	if (fd >= 0)
		(void)send_buffer(fd, j); /* a message goes whole: room for one */
	pthread_mutex_lock(&j->mu);
	uint32_t l = 0;
	if (j->len - j->off >= 5)
		memcpy(&l, j->buf + j->off, 4);
	unsigned char *out = l ? j->out : NULL; /* the reader took l <= AJ_IPC_FRAME_MAX */
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
	if (w < (int)l)
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

int aj_exec_writable(aj_req *r)
{
	aj_job *j = r->job;
	if (j->ws)
		return ws_writable(r, j);
	unsigned char *buf = j->out;
	size_t room = send_room(r, j);
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
	j->gone = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	shutdown(j->fd, SHUT_RDWR); /* the supervisor cancels; our reader ends */
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
