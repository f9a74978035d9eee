/* SPDX-License-Identifier: MIT */
/* The front's side of a stream from the supervisor (an exec's output, a
 * background process's replay): the stream's fd is adopted by the event
 * loop, which reads what comes into a bounded queue and sends it as the
 * connection can take it. NDJSON goes out as the HTTP body; frames
 * ([u32 length][channel][data], ipc.h) as WebSocket messages. A full queue
 * stops the reading (flow control), which fills the socket, which slows
 * the command; the connection closing closes the fd, which cancels it.
 * A sandbox's streams share a budget (SB_QUEUE_BUDGET): with many of them
 * open, each queues less (down to JOB_MIN_QUEUED), so that clients that do
 * not read cost a sandbox bounded memory (docs/security.md, "Streams a
 * client does not read"); the supervisor caps their number.
 * WebSocket stdin and resizes go back on the same fd as frames. No thread
 * stands between the stream and the connection (a reader thread cost a
 * wake-up per event: docs/performance.md, round 7). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "ipc.h"
#include "stream.h"
#include "util.h"

#define JOB_MAX_QUEUED (1u << 20)
#define JOB_MIN_QUEUED (128u * 1024) /* a WebSocket frame fits (ipc.h) */
#define SB_QUEUE_BUDGET (8u << 20)   /* the queues of one sandbox's streams */
/* NDJSON: what one read from the supervisor and one lws_write take (an
 * event is up to ~64 KiB of output; 64 KiB reads cut each in two, and a
 * poll round per 64 KiB written was the front's main cost) */
#define JOB_IO (256u * 1024)

/* The streams of one sandbox (by its id). */
typedef struct sb_streams {
	char id[AJ_SANDBOX_ID_SIZE];
	unsigned jobs;
	struct sb_streams *next;
} sb_streams;

static sb_streams *sbs;

static sb_streams *sb_join(const char *id)
{
	sb_streams *q = sbs;
	while (q && strcmp(q->id, id) != 0)
		q = q->next;
	if (!q && (q = calloc(1, sizeof(*q)))) {
		snprintf(q->id, sizeof(q->id), "%s", id);
		q->next = sbs;
		sbs = q;
	}
	if (q)
		q->jobs++;
	return q;
}

static void sb_leave(sb_streams *q)
{
	if (!q || --q->jobs > 0)
		return;
	for (sb_streams **pp = &sbs; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	free(q);
}

typedef struct aj_job {
	sb_streams *sb; /* its sandbox's streams (NULL: none known) */
	char *buf;	/* queued bytes [off, len) */
	size_t len, off, cap;
	bool done;	 /* the stream ended: nothing more comes */
	bool paused;	 /* its reading stopped: the queue is full */
	int refs;	 /* the connection's and the stream's (raw) */
	struct lws *wsi; /* the connection; NULL once it closed */
	struct lws *raw; /* the stream in the event loop; NULL once closed */
	int fd;		 /* the stream (lws has a copy of its own) */
	bool ws;
	char *in_pend; /* ws: frames for the supervisor not sent yet */
	size_t in_len;
	unsigned char *out; /* LWS_PRE + JOB_IO (or a frame), what goes to lws_write */
	int sndbuf;	    /* the connection's send buffer (0: unknown) */
} aj_job;

static struct lws_context *ctx;
static struct lws_vhost *stream_vhost;

void aj_exec_set_context(struct lws_context *c, struct lws_vhost *vh)
{
	ctx = c;
	stream_vhost = vh;
}

static void job_unref(aj_job *j)
{
	if (--j->refs > 0)
		return;
	sb_leave(j->sb);
	free(j->buf);
	free(j->in_pend);
	free(j->out);
	close(j->fd);
	free(j);
}

static size_t queued(const aj_job *j)
{
	return j->len - j->off;
}

/* What this stream may queue: its share of its sandbox's budget. */
static size_t job_max(const aj_job *j)
{
	size_t m = j->sb ? SB_QUEUE_BUDGET / j->sb->jobs : JOB_MAX_QUEUED;
	return m > JOB_MAX_QUEUED ? JOB_MAX_QUEUED : m < JOB_MIN_QUEUED ? JOB_MIN_QUEUED : m;
}

/* Room for n more bytes at the end of the queue. */
static int reserve(aj_job *j, size_t n)
{
	if (j->off && j->len + n > j->cap) { /* sent bytes to the front */
		memmove(j->buf, j->buf + j->off, j->len - j->off);
		j->len -= j->off;
		j->off = 0;
	}
	if (j->len + n <= j->cap)
		return 0;
	size_t cap = (j->len + n) * 2;
	char *b = realloc(j->buf, cap);
	if (!b)
		return -1;
	j->buf = b;
	j->cap = cap;
	return 0;
}

/* What the stream has, into the queue: one read, or (all) until it has
 * nothing more. 0, or -1 at its end (EOF, an error). */
static int take(aj_job *j, bool all)
{
	for (;;) {
		/* at most what the queue has room for (a little more at its end) */
		size_t want = all || queued(j) + JOB_IO <= job_max(j) ? JOB_IO
			      : queued(j) + 4096 < job_max(j)	      ? job_max(j) - queued(j)
								      : 4096;
		if (reserve(j, want) < 0)
			return -1;
		ssize_t n = recv(j->fd, j->buf + j->len, want, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		j->len += (size_t)n;
		if (!all)
			return 0;
	}
}

static void wake(aj_job *j)
{
	if (j->wsi)
		lws_callback_on_writable(j->wsi);
}

int aj_stream_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		       size_t len)
{
	(void)in, (void)len;
	aj_job *j = user;
	if (!j)
		return 0; /* adopted, not ours yet (RAW_ADOPT_FILE) */
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		if (!j->wsi || take(j, false) < 0) {
			j->done = true;
			wake(j);
			return -1; /* closed: RAW_CLOSE_FILE */
		}
		if (queued(j) >= job_max(j) && !j->paused) {
			j->paused = true;
			lws_rx_flow_control(wsi, 0);
		}
		wake(j);
		return 0;
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		/* lws closes on a hang-up even when bytes are left to read (or
		 * while paused): they are taken now, at most a socket buffer */
		if (j->wsi && !j->done)
			(void)take(j, true);
		j->done = true;
		j->raw = NULL;
		wake(j);
		job_unref(j);
		return 0;
	default: return 0;
	}
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
	int theirs = fcntl(fd, F_DUPFD_CLOEXEC, 3); /* lws closes the one it adopts */
	/* NDJSON: room for the headers, a chunk's size line and its end */
	size_t out = ws ? AJ_IPC_FRAME_MAX : AJ_HTTP_HEAD_MAX + 32 + JOB_IO;
	if (!j || theirs < 0 || !(j->out = malloc(LWS_PRE + out))) {
		if (j)
			free(j->out);
		free(j);
		if (theirs >= 0)
			close(theirs);
		close(fd);
		return -ENOMEM;
	}
	j->fd = fd;
	j->ws = ws;
	j->wsi = r->wsi;
	j->sb = r->sb_id[0] ? sb_join(r->sb_id) : NULL;
	lws_sock_file_fd_type u = {.filefd = theirs};
	j->raw = lws_adopt_descriptor_vhost(stream_vhost, LWS_ADOPT_RAW_FILE_DESC, u,
					    "agentjail-stream", NULL);
	if (!j->raw) {
		sb_leave(j->sb);
		free(j->out);
		free(j);
		close(fd);
		return -ENOMEM;
	}
	lws_set_wsi_user(j->raw, j);
	j->refs = 2; /* the connection's and the stream's */
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

/* The stream's reading again once the queue has room. */
static void resume(aj_job *j)
{
	if (j->paused && j->raw && queued(j) < job_max(j) / 2) {
		j->paused = false;
		lws_rx_flow_control(j->raw, 1);
	}
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

/* One queued frame out as a binary WebSocket message (a frame not all
 * there yet waits for the rest). */
static int ws_writable(aj_req *r, aj_job *j)
{
	if (j->in_len)
		feed(r, j);
	int fd = lws_get_socket_fd(r->wsi);
	if (fd >= 0)
		(void)send_buffer(fd, j); /* a message goes whole: room for one */
	uint32_t l = 0;
	bool whole = false;
	if (queued(j) >= 4) {
		memcpy(&l, j->buf + j->off, 4);
		if (l == 0 || l > AJ_IPC_FRAME_MAX)
			return -1; /* not the protocol: the end */
		whole = queued(j) >= 4 + (size_t)l;
	}
	if (whole) {
		memcpy(j->out + LWS_PRE, j->buf + j->off + 4, l);
		j->off += 4 + l;
		if (j->off == j->len)
			j->off = j->len = 0;
		resume(j);
		if (lws_write(r->wsi, j->out + LWS_PRE, l, LWS_WRITE_BINARY) < (int)l)
			return -1;
		/* the end comes on the next writable, once this is flushed */
		lws_callback_on_writable(r->wsi);
		return 0;
	}
	if (j->done) { /* a frame cut short at the end is dropped with it */
		lws_close_reason(r->wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
		return -1;
	}
	return 0;
}

/* The queue ends with the exit event, and nothing comes after it
 * (sup_exec.c): the response can end with it, in the same write, instead
 * of on the stream's close (the client learns the end one wake-up
 * sooner). Output events are JSON strings: only the exit event begins a
 * line with this. */
static bool ends_with_exit(const aj_job *j)
{
	static const char tag[] = "{\"type\":\"exit\"";
	size_t n = queued(j);
	const char *b = j->buf + j->off;
	if (n <= sizeof(tag) || b[n - 1] != '\n')
		return false;
	const char *nl = memrchr(b, '\n', n - 1);
	const char *line = nl ? nl + 1 : b;
	return (size_t)(b + n - line) > sizeof(tag) && memcmp(line, tag, sizeof(tag) - 1) == 0;
}

/* NDJSON: the headers with the first bytes (a command that ends at once
 * is one write: headers, its events, the end), then pieces as the
 * connection takes them; in chunks for HTTP/1.1, whose connection then
 * serves the next request, else to the connection's close. */
int aj_exec_writable(aj_req *r)
{
	aj_job *j = r->job;
	if (j->ws)
		return ws_writable(r, j);
	size_t n = queued(j), room = send_room(r, j);
	if (room > job_max(j))
		room = job_max(j);
	if (n > room)
		n = room;
	bool fin = n == queued(j) && (j->done || ends_with_exit(j));
	if (!r->headers_sent && !n && !fin)
		return 0; /* nothing to say yet */
	unsigned char *start = j->out + LWS_PRE, *p = start;
	if (!r->headers_sent && aj_http_head(r, &p, start + AJ_HTTP_HEAD_MAX) < 0)
		return -1;
	if (n && r->chunked)
		p += snprintf((char *)p, 20, "%zx\r\n", n);
	if (n)
		memcpy(p, j->buf + j->off, n);
	p += n;
	if (n && r->chunked) {
		memcpy(p, "\r\n", 2);
		p += 2;
	}
	if (fin && r->chunked) {
		memcpy(p, "0\r\n\r\n", 5); /* the last chunk */
		p += 5;
	}
	j->off += n;
	if (j->off == j->len)
		j->off = j->len = 0;
	resume(j);
	int len = (int)(p - start);
	if (len && lws_write(r->wsi, start, (size_t)len, LWS_WRITE_HTTP) < len)
		return -1;
	if (fin)
		return 1; /* complete: at once, as conn.c's complete() says */
	if (n)
		lws_callback_on_writable(r->wsi);
	return 0;
}

void aj_exec_detach(aj_req *r)
{
	aj_job *j = r->job;
	r->job = NULL;
	j->wsi = NULL;
	shutdown(j->fd, SHUT_RDWR); /* the supervisor cancels; the stream ends */
	if (j->raw)
		lws_set_timeout(j->raw, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
	job_unref(j);
}
