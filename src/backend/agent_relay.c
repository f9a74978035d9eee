/* SPDX-License-Identifier: MIT */
/* The agent's "connect" relay and --publish's listeners (agent_relay.h):
 * the service's ports proxy at levels 2 and 3 and `run --publish` at
 * levels 2 and 3 relay through here; each level brings its agent stream
 * (a `runsc exec` of the agent at level 2, an agent port of the VM at
 * level 3). */
#include "agent_relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "stall.h"
#include "util.h"

static unsigned long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000;
}

static bool stopped(const aj_agent_relay *r)
{
	return r->stop && r->stop(r->ctx);
}

/* A write to an agent stream whose agent went is EPIPE, not SIGPIPE (the
 * calling thread's mask: relays run on threads of their own). */
static void block_sigpipe(void)
{
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
}

int aj_agent_relay_connect(aj_agent_relay *r, unsigned port)
{
	block_sigpipe();
	r->answered = false;
	memset(&r->x, 0, sizeof(r->x));
	char q[128];
	/* the agent's own bound on a server that takes none of the client's
	 * bytes (agent.c) */
	unsigned long long stall = r->stall_ms ? r->stall_ms : aj_relay_stall_ms();
	snprintf(q, sizeof(q), "{\"op\":\"connect\",\"port\":%u,\"stall_ms\":%llu}", port, stall);
	if (aj_agent_send(r->to, AJ_AG_REQUEST, q, strlen(q)) < 0)
		return -EPIPE;
	unsigned long long until = now_ms() + AJ_AGENT_CONNECT_MS;
	for (;;) {
		struct pollfd pf = {r->from, POLLIN, 0};
		int n = poll(&pf, 1, 500);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			break;
		if (stopped(r))
			return -ECANCELED;
		if (now_ms() >= until)
			return -ETIMEDOUT;
	}
	char type, *buf = NULL;
	uint32_t len;
	if (aj_agent_recv(r->from, &type, &buf, &len) <= 0)
		return -EPIPE;
	int e = type == AJ_AG_STAT ? 0 : -EPROTO; /* connected ('T'), or why not ('X') */
	if (type == AJ_AG_EXIT) {
		r->answered = true;
		aj_agent_exit_parse(buf, len, &r->x);
		e = -(r->x.err ? r->x.err : EIO);
	}
	free(buf);
	return e;
}

typedef struct relay_state {
	bool client_end;  /* the client's half-close (or reset) passed on */
	bool client_gone; /* the client's end closed, or it stalled: the server's bytes unwanted */
	bool server_end;
	bool gone;	/* the agent's stream ended or broke, or it stalled */
	bool done;	/* the server's connection to be ended ('S' once the stream is free) */
	bool signalled; /* that 'S' queued */
	unsigned long long last_ms, gave_up, stall_ms;
	/* what is left of an 'O' frame for the client: while there is, nothing
	 * more is read from the agent (back-pressure, no buffer without bound) */
	char *cb;
	size_t clen, coff;
	/* the client's stall window (stall.h), open while bytes wait for it
	 * here: a trickle is a stall */
	aj_stall_win cwin;
	/* one frame for the agent: while it is there, the client is not read */
	unsigned char ab[AJ_AGENT_HDR + 65536];
	size_t alen, aoff;
	unsigned long long asince;
} relay_state;

typedef struct frame_ctx {
	aj_agent_relay *r;
	relay_state *s;
} frame_ctx;

/* Bytes for the client (held: those waiting in s->cb), never blocking nor
 * raising SIGPIPE: what it does not take now waits in s->cb (false: it did
 * not take it all). */
static bool to_client(aj_agent_relay *r, relay_state *s, const char *buf, size_t len, bool held)
{
	ssize_t n = send(r->client, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		n = 0;
	if (n < 0) {
		s->client_gone = true; /* the client went: its bytes are dropped */
		return true;
	}
	unsigned long long t = now_ms();
	if (n > 0)
		s->last_ms = t; /* only bytes passed on count as traffic */
	aj_stall_took(&s->cwin, (size_t)n, t);
	if ((size_t)n == len)
		return true;
	if (!held) {
		s->cb = malloc(len - (size_t)n);
		if (!s->cb) {
			s->client_gone = true;
			return true;
		}
		memcpy(s->cb, buf + n, len - (size_t)n);
		s->clen = len - (size_t)n, s->coff = 0;
		aj_stall_open(&s->cwin, t);
	} else {
		s->coff += (size_t)n;
	}
	return false;
}

static void drop_client_bytes(relay_state *s)
{
	free(s->cb);
	s->cb = NULL;
	s->clen = s->coff = 0;
}

/* The client's bytes taken or dropped: the agent's stream is read again.
 * Its stall clock restarts: while it was not read, an agent writing its
 * 'O' frames could not take the host's 'I' frame either. */
static void resume_agent(relay_state *s)
{
	drop_client_bytes(s);
	if (s->aoff < s->alen)
		s->asince = now_ms();
}

static bool on_frame(void *ctx, char type, const char *buf, size_t len)
{
	aj_agent_relay *r = ((frame_ctx *)ctx)->r;
	relay_state *s = ((frame_ctx *)ctx)->s;
	if (type == AJ_AG_STDOUT && len) {
		/* a guest trickling to a client that is gone can't hold the
		 * connection: dropped bytes are no traffic */
		if (!s->client_gone && !s->server_end)
			return to_client(r, s, buf, len, false);
	} else if (type == AJ_AG_STDOUT) {
		s->server_end = true;
		(void)shutdown(r->client, SHUT_WR);
	} else if (type == AJ_AG_EXIT) {
		r->answered = true;
		return false;
	}
	return true;
}

/* The whole frames in r->ibuf handled (after reading what came, when
 * more), up to one whose bytes the client did not take all of; a broken
 * stream sets s->gone. */
static void from_agent(aj_agent_relay *r, relay_state *s, bool more)
{
	if (more && r->icap - r->ilen < 65536) {
		size_t cap = r->icap ? r->icap * 2 : 131072;
		char *nb = realloc(r->ibuf, cap);
		if (!nb) {
			s->gone = true;
			return;
		}
		r->ibuf = nb, r->icap = cap;
	}
	ssize_t n = more ? read(r->from, r->ibuf + r->ilen, r->icap - r->ilen) : 0;
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (more && n <= 0) {
		s->gone = true;
		return;
	}
	r->ilen += (size_t)n;
	frame_ctx fc = {r, s};
	ssize_t off = aj_agent_split(r->ibuf, r->ilen, on_frame, &fc);
	if (off < 0) {
		s->gone = true;
		return;
	}
	memmove(r->ibuf, r->ibuf + off, r->ilen - (size_t)off);
	r->ilen -= (size_t)off;
}

/* The pending frame to the agent, as much as its stream takes now. */
static void to_agent(aj_agent_relay *r, relay_state *s)
{
	while (s->aoff < s->alen) {
		ssize_t n = write(r->to, s->ab + s->aoff, s->alen - s->aoff);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			s->gone = true;
			return;
		}
		s->aoff += (size_t)n;
		s->asince = now_ms();
	}
	s->alen = s->aoff = 0;
}

static void queue_frame(aj_agent_relay *r, relay_state *s, char type, size_t len)
{
	aj_agent_hdr(s->ab, type, (uint32_t)len);
	s->alen = AJ_AGENT_HDR + len, s->aoff = 0, s->asince = now_ms();
	to_agent(r, s);
}

/* The client's bytes as one 'I' frame (its end, or its reset, an empty one). */
static void from_client(aj_agent_relay *r, relay_state *s)
{
	ssize_t got = read(r->client, s->ab + AJ_AGENT_HDR, sizeof(s->ab) - AJ_AGENT_HDR);
	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	s->client_end = got <= 0;
	s->last_ms = now_ms();
	queue_frame(r, s, AJ_AG_STDIN, got > 0 ? (size_t)got : 0);
}

/* A frame cut in the middle leaves the agent's stream unusable (level 3
 * reuses it): finished once its agent answered, within AJ_AGENT_DRAIN_MS. */
static bool finish_frame(aj_agent_relay *r, relay_state *s)
{
	if (s->aoff == 0 || s->aoff >= s->alen)
		return true;
	if (!r->answered || s->gone)
		return false;
	unsigned long long until = now_ms() + AJ_AGENT_DRAIN_MS;
	while (s->aoff < s->alen && !s->gone) {
		unsigned long long t = now_ms();
		struct pollfd pf = {r->to, POLLOUT, 0};
		if (t >= until || (poll(&pf, 1, (int)(until - t)) < 0 && errno != EINTR))
			return false;
		to_agent(r, s);
	}
	return !s->gone;
}

/* The client's poll events: its bytes while no frame waits for the agent,
 * room for what it has not taken; after its half-close still watched (a
 * POLLHUP: closed for good). -1: not polled. */
static short client_events(const relay_state *s, bool *watch)
{
	short ev = 0;
	if (s->coff < s->clen)
		ev |= POLLOUT;
	if (!s->client_end && s->aoff >= s->alen && !s->done)
		ev |= POLLIN;
	*watch = !s->client_gone && (ev || s->client_end);
	return ev;
}

/* The stall bounds (stall.h): a client that takes less than
 * AJ_RELAY_STALL_MIN bytes (or all it has pending) in stall_ms is dropped
 * as one that hung up; an agent that takes none of a frame for longer
 * (its own bound on the server is stall_ms, then it answers) while its
 * stream is read ends the relay as a broken stream. */
static void check_stalls(aj_agent_relay *r, relay_state *s, unsigned long long t)
{
	if (s->coff < s->clen && !aj_stall_left(&s->cwin, t, s->stall_ms)) {
		resume_agent(s);
		s->client_gone = true;
		(void)shutdown(r->client, SHUT_RDWR);
		from_agent(r, s, false); /* the frames after it, dropped */
	}
	unsigned long long margin =
	    s->stall_ms < AJ_AGENT_DRAIN_MS ? s->stall_ms : AJ_AGENT_DRAIN_MS;
	if (s->coff >= s->clen && s->aoff < s->alen && t - s->asince >= s->stall_ms + margin)
		s->gone = true;
}

void aj_agent_relay_run(aj_agent_relay *r)
{
	block_sigpipe();
	relay_state s = {.last_ms = now_ms(),
			 .stall_ms = r->stall_ms ? r->stall_ms : aj_relay_stall_ms()};
	r->answered = r->broken = false;
	/* writes to the agent never block: a stream it does not read stalls */
	int afl = fcntl(r->to, F_GETFL);
	if (afl >= 0)
		(void)fcntl(r->to, F_SETFL, afl | O_NONBLOCK);
	if (r->ilen) /* frames that came with the connect's answer */
		from_agent(r, &s, false);
	while (!r->answered && !s.gone) {
		bool watch;
		short cev = client_events(&s, &watch);
		struct pollfd pf[3] = {{s.coff < s.clen ? -1 : r->from, POLLIN, 0},
				       {s.aoff < s.alen ? r->to : -1, POLLOUT, 0},
				       {watch ? r->client : -1, cev, 0}};
		int n = poll(pf, 3, 500);
		if ((n < 0 && errno != EINTR) || stopped(r))
			break;
		if (n > 0 && pf[2].revents && s.coff < s.clen &&
		    to_client(r, &s, s.cb + s.coff, s.clen - s.coff, true)) {
			resume_agent(&s);
			from_agent(r, &s, false);      /* the frames that waited for it */
			s.cwin.open = s.coff < s.clen; /* all taken: the window closes */
		}
		if (n > 0 && pf[0].revents && !r->answered && !s.gone)
			from_agent(r, &s, true);
		if (n > 0 && pf[1].revents && !s.gone)
			to_agent(r, &s);
		if (n > 0 && (pf[2].revents & (POLLIN | POLLHUP | POLLERR)) && (cev & POLLIN) &&
		    !r->answered && !s.gone && !s.client_gone && s.aoff >= s.alen)
			from_client(r, &s);
		else if (n > 0 && (pf[2].revents & (POLLHUP | POLLERR)) && s.client_end)
			s.client_gone = true;
		unsigned long long t = now_ms();
		check_stalls(r, &s, t);
		if (r->answered || s.gone)
			break;
		/* the client gone, or nothing passed either way for idle_ms: the
		 * agent ends the server's connection ('S', after the frame it is
		 * taking) and answers; no answer in AJ_AGENT_DRAIN_MS once told:
		 * given up */
		if (s.client_gone || (r->idle_ms && t - s.last_ms >= r->idle_ms))
			s.done = true;
		if (s.done && !s.signalled && s.aoff >= s.alen) {
			s.signalled = true;
			s.ab[AJ_AGENT_HDR] = SIGKILL;
			queue_frame(r, &s, AJ_AG_SIGNAL, 1);
		}
		if (s.signalled && !s.gave_up && s.aoff >= s.alen)
			s.gave_up = t;
		else if (s.gave_up && t - s.gave_up >= AJ_AGENT_DRAIN_MS)
			break;
	}
	r->broken = (s.gone && !r->answered) || !finish_frame(r, &s);
	if (afl >= 0)
		(void)fcntl(r->to, F_SETFL, afl);
	drop_client_bytes(&s);
}

/* ---- --publish ---- */

struct aj_publisher {
	int lfd[AJ_MAX_PUBLISH];
	unsigned port[AJ_MAX_PUBLISH]; /* the sandbox's */
	size_t n;
	aj_publish_ops ops;
	pthread_t acceptor;
	bool started;
	int stop[2]; /* a pipe: written once to stop the acceptor */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
	int conns;		   /* connection threads running */
	int cfd[AJ_PUBLISH_SLOTS]; /* the client's connection in slot k, or -1 */
};

typedef struct conn {
	aj_publisher *pb;
	aj_agent_relay r;
	unsigned slot;
	unsigned port;
} conn;

int aj_publish_listen(aj_publisher **out, const aj_policy *p, aj_error *err)
{
	*out = NULL;
	if (!p->n_publish)
		return 0;
	aj_publisher *pb = calloc(1, sizeof(*pb));
	if (!pb)
		return aj_err(err, ENOMEM, "--publish");
	pb->stop[0] = pb->stop[1] = -1;
	pthread_mutex_init(&pb->mu, NULL);
	pthread_cond_init(&pb->cv, NULL);
	for (size_t k = 0; k < AJ_PUBLISH_SLOTS; k++)
		pb->cfd[k] = -1;
	*out = pb;
	for (size_t i = 0; i < p->n_publish; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port = htons((uint16_t)p->publish[i].host_port),
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd >= 0)
			(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    listen(fd, 16) < 0) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			return aj_err(err, e, "--publish: cannot listen on 127.0.0.1:%u",
				      p->publish[i].host_port);
		}
		pb->lfd[pb->n] = fd;
		pb->port[pb->n++] = p->publish[i].port;
	}
	if (pipe2(pb->stop, O_CLOEXEC) < 0)
		return aj_err(err, errno, "--publish: pipe");
	return 0;
}

static bool pb_stopping(void *ctx)
{
	aj_publisher *pb = ctx;
	pthread_mutex_lock(&pb->mu);
	bool s = pb->stopping;
	pthread_mutex_unlock(&pb->mu);
	return s;
}

static void *conn_main(void *arg)
{
	conn *c = arg;
	aj_publisher *pb = c->pb;
	/* nothing listening there, or no agent: the connection is closed */
	if (aj_agent_relay_connect(&c->r, c->port) == 0)
		aj_agent_relay_run(&c->r);
	pthread_mutex_lock(&pb->mu);
	pb->cfd[c->slot] = -1;
	pthread_mutex_unlock(&pb->mu);
	close(c->r.client);
	pb->ops.close(pb->ops.ctx, c->slot, &c->r);
	pthread_mutex_lock(&pb->mu);
	pb->conns--;
	pthread_cond_broadcast(&pb->cv);
	pthread_mutex_unlock(&pb->mu);
	free(c->r.ibuf);
	free(c);
	return NULL;
}

/* A connection in a free slot whose agent stream opens, on a thread of its
 * own; none: closed. */
static void serve(aj_publisher *pb, int fd, unsigned port)
{
	conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	/* idle as long as the service's ports proxy allows (level 1's --publish:
	 * netd's splice has its own bound) */
	*c = (conn){
	    .pb = pb,
	    .port = port,
	    .r = {.client = fd, .idle_ms = AJ_PROXY_IDLE_MS, .stop = pb_stopping, .ctx = pb}};
	bool opened = false;
	for (unsigned k = 0; k < pb->ops.slots && !opened; k++) {
		pthread_mutex_lock(&pb->mu);
		bool free_k = pb->cfd[k] < 0;
		if (free_k)
			pb->cfd[k] = fd, pb->conns++;
		pthread_mutex_unlock(&pb->mu);
		if (!free_k)
			continue;
		c->slot = k;
		opened = pb->ops.open(pb->ops.ctx, k, &c->r) == 0;
		if (!opened) {
			pthread_mutex_lock(&pb->mu);
			pb->cfd[k] = -1, pb->conns--;
			pthread_mutex_unlock(&pb->mu);
		}
	}
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (opened && pthread_create(&t, &at, conn_main, c) == 0)
		c = NULL;
	pthread_attr_destroy(&at);
	if (!c)
		return;
	if (opened) { /* no thread: the stream back, unused */
		pthread_mutex_lock(&pb->mu);
		pb->cfd[c->slot] = -1;
		pthread_mutex_unlock(&pb->mu);
		pb->ops.close(pb->ops.ctx, c->slot, &c->r);
		pthread_mutex_lock(&pb->mu);
		pb->conns--;
		pthread_mutex_unlock(&pb->mu);
	}
	close(fd);
	free(c);
}

static void *accept_main(void *arg)
{
	aj_publisher *pb = arg;
	/* the connections' threads inherit it */
	block_sigpipe();
	for (;;) {
		struct pollfd pf[AJ_MAX_PUBLISH + 1];
		for (size_t i = 0; i < pb->n; i++)
			pf[i] = (struct pollfd){pb->lfd[i], POLLIN, 0};
		pf[pb->n] = (struct pollfd){pb->stop[0], POLLIN, 0};
		if (poll(pf, (nfds_t)pb->n + 1, -1) < 0 && errno != EINTR)
			return NULL;
		if (pf[pb->n].revents)
			return NULL;
		for (size_t i = 0; i < pb->n; i++) {
			int fd = pf[i].revents ? accept4(pb->lfd[i], NULL, NULL, SOCK_CLOEXEC) : -1;
			if (fd >= 0)
				serve(pb, fd, pb->port[i]);
		}
	}
}

int aj_publish_start(aj_publisher *pb, const aj_publish_ops *ops, aj_error *err)
{
	if (!pb)
		return 0;
	pb->ops = *ops;
	if (pb->ops.slots > AJ_PUBLISH_SLOTS)
		pb->ops.slots = AJ_PUBLISH_SLOTS;
	int e = pthread_create(&pb->acceptor, NULL, accept_main, pb);
	if (e)
		return aj_err(err, e, "--publish: cannot start its thread");
	pb->started = true;
	return 0;
}

void aj_publish_stop(aj_publisher **pbp)
{
	aj_publisher *pb = *pbp;
	if (!pb)
		return;
	if (pb->started) {
		(void)!write(pb->stop[1], "", 1);
		pthread_join(pb->acceptor, NULL);
		pthread_mutex_lock(&pb->mu);
		pb->stopping = true;
		/* a connection blocked on a client that does not read (or on its
		 * agent stream) wakes: the run's end waits for no one */
		for (unsigned k = 0; k < pb->ops.slots; k++)
			if (pb->cfd[k] >= 0) {
				(void)shutdown(pb->cfd[k], SHUT_RDWR);
				pb->ops.wake(pb->ops.ctx, k);
			}
		while (pb->conns)
			pthread_cond_wait(&pb->cv, &pb->mu);
		pthread_mutex_unlock(&pb->mu);
	}
	for (size_t i = 0; i < pb->n; i++)
		close(pb->lfd[i]);
	if (pb->stop[0] >= 0)
		close(pb->stop[0]), close(pb->stop[1]);
	pthread_mutex_destroy(&pb->mu);
	pthread_cond_destroy(&pb->cv);
	free(pb);
	*pbp = NULL;
}
