/* SPDX-License-Identifier: MIT */
/* Unit tests: the relays of `run --publish` at levels 2 and 3
 * (agent_relay.c) are bounded in idle time as the service's ports proxy
 * is, and a relay with nothing either way for its bound has the agent end
 * the server's connection and stops; no relay (levels 1 to 3, and the
 * agent's own) blocks on an end that stops reading (stall.h). The agent is
 * a thread of this test on a socket pair (or agentjail-agent itself); the
 * client connects to the host's 127.0.0.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_frame.h"
#include "agent_proto.h"
#include "agent_relay.h"
#include "policy.h"
#include "proxy.h"

static unsigned long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

/* ---- the publisher hands its relays the proxy's idle bound ---- */

typedef struct seen {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool opened;
	unsigned long long idle_ms;
} seen;

static int seen_open(void *ctx, unsigned slot, aj_agent_relay *r)
{
	(void)slot;
	seen *s = ctx;
	pthread_mutex_lock(&s->mu);
	s->opened = true;
	s->idle_ms = r->idle_ms;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return -1; /* no agent stream: the connection is closed */
}

static void seen_close(void *ctx, unsigned slot, const aj_agent_relay *r)
{
	(void)ctx, (void)slot, (void)r;
}

static void seen_wake(void *ctx, unsigned slot)
{
	(void)ctx, (void)slot;
}

/* a port of 127.0.0.1 free just now */
static unsigned free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void test_publish_relays_idle_bound(void **state)
{
	(void)state;
	aj_policy p;
	memset(&p, 0, sizeof(p));
	p.n_publish = 1;
	p.publish[0] = (aj_publish){.host_port = free_port(), .port = 8080};
	aj_error err;
	aj_err_clear(&err);
	aj_publisher *pb = NULL;
	assert_int_equal(aj_publish_listen(&pb, &p, &err), 0);
	assert_non_null(pb);
	seen s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	aj_publish_ops ops = {
	    .open = seen_open, .close = seen_close, .wake = seen_wake, .slots = 1, .ctx = &s};
	assert_int_equal(aj_publish_start(pb, &ops, &err), 0);
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)p.publish[0].host_port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&s.mu);
	while (!s.opened && pthread_cond_timedwait(&s.cv, &s.mu, &until) == 0)
		;
	bool opened = s.opened;
	unsigned long long idle = s.idle_ms;
	pthread_mutex_unlock(&s.mu);
	close(c);
	aj_publish_stop(&pb);
	assert_true(opened);
	/* before: 0, a connection held open for ever */
	assert_int_equal(idle, AJ_PROXY_IDLE_MS);
}

/* ---- a relay idle for its bound ends ---- */

/* The agent's side: connected ('T'), then silent until told to end the
 * server's connection ('S'), then its answer ('X'). */
static void *quiet_agent(void *arg)
{
	int fd = *(int *)arg;
	char type, *buf = NULL;
	uint32_t len;
	if (aj_agent_recv(fd, &type, &buf, &len) <= 0 || type != AJ_AG_REQUEST)
		return (void *)1;
	free(buf);
	const char *st = "{\"type\":\"s\"}";
	if (aj_agent_send(fd, AJ_AG_STAT, st, strlen(st)) < 0)
		return (void *)2;
	while (aj_agent_recv(fd, &type, &buf, &len) > 0) {
		free(buf);
		buf = NULL;
		if (type == AJ_AG_SIGNAL) {
			const char *x = "{\"exit\":0}";
			aj_agent_send(fd, AJ_AG_EXIT, x, strlen(x));
			return NULL;
		}
	}
	return (void *)3;
}

static void test_relay_ends_when_idle(void **state)
{
	(void)state;
	int ag[2], cl[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ag), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cl), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, quiet_agent, &ag[1]), 0);
	aj_agent_relay r = {.client = cl[0], .from = ag[0], .to = ag[0], .idle_ms = 300};
	assert_int_equal(aj_agent_relay_connect(&r, 8080), 0);
	unsigned long long t0 = mono_ms();
	aj_agent_relay_run(&r);
	unsigned long long took = mono_ms() - t0;
	void *ret;
	pthread_join(t, &ret);
	assert_null(ret);	  /* the agent was told to end the connection */
	assert_true(r.answered);  /* and its answer read */
	assert_true(took >= 300); /* not before its bound */
	assert_true(took < 3000); /* nor long after (polls of 500 ms) */
	free(r.ibuf);
	close(ag[0]), close(ag[1]), close(cl[0]), close(cl[1]);
}

/* The agent's side for a server that ended its sending, then trickles a
 * byte every 100 ms for 3 s (ignored: not passed on), until told to end. */
static void *trickling_agent(void *arg)
{
	int fd = *(int *)arg;
	char type, *buf = NULL;
	uint32_t len;
	if (aj_agent_recv(fd, &type, &buf, &len) <= 0 || type != AJ_AG_REQUEST)
		return (void *)1;
	free(buf);
	const char *st = "{\"type\":\"s\"}";
	if (aj_agent_send(fd, AJ_AG_STAT, st, strlen(st)) < 0 ||
	    aj_agent_send(fd, AJ_AG_STDOUT, NULL, 0) < 0)
		return (void *)2;
	for (unsigned long long t0 = mono_ms(); mono_ms() - t0 < 3000;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, 100) > 0) {
			if (aj_agent_recv(fd, &type, &buf, &len) <= 0)
				return (void *)3;
			free(buf);
			buf = NULL;
			if (type == AJ_AG_SIGNAL) {
				const char *x = "{\"exit\":0}";
				aj_agent_send(fd, AJ_AG_EXIT, x, strlen(x));
				return NULL;
			}
		} else if (aj_agent_send(fd, AJ_AG_STDOUT, "x", 1) < 0) {
			return (void *)4;
		}
	}
	return (void *)5; /* never told */
}

/* Bytes the relay drops (after the server's end) are not traffic: the
 * idle bound holds (was: each reset it, the connection held for ever). */
static void test_relay_idle_ignores_dropped(void **state)
{
	(void)state;
	int ag[2], cl[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ag), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cl), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, trickling_agent, &ag[1]), 0);
	aj_agent_relay r = {.client = cl[0], .from = ag[0], .to = ag[0], .idle_ms = 300};
	assert_int_equal(aj_agent_relay_connect(&r, 8080), 0);
	unsigned long long t0 = mono_ms();
	aj_agent_relay_run(&r);
	unsigned long long took = mono_ms() - t0;
	void *ret;
	pthread_join(t, &ret);
	assert_null(ret);
	assert_true(took < 2500);
	free(r.ibuf);
	close(ag[0]), close(ag[1]), close(cl[0]), close(cl[1]);
}

/* ---- relays that stall (stall.h) ---- */

/* A relay run on a thread of its own, watched: a relay still running
 * after a bound is unblocked (its client shut down) and reported. */
typedef struct watched {
	aj_agent_relay *r;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool ended;
} watched;

static void *run_watched(void *arg)
{
	watched *w = arg;
	aj_agent_relay_run(w->r);
	pthread_mutex_lock(&w->mu);
	w->ended = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* true: the relay ended within bound_ms; false: it was still blocked (its
 * client and agent shut down to end it). */
static bool run_within(aj_agent_relay *r, int peer_client, int peer_agent, unsigned bound_ms)
{
	watched w = {.r = r, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, run_watched, &w), 0);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += bound_ms / 1000;
	until.tv_nsec += (long)(bound_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000)
		until.tv_sec++, until.tv_nsec -= 1000000000;
	pthread_mutex_lock(&w.mu);
	while (!w.ended && pthread_cond_timedwait(&w.cv, &w.mu, &until) == 0)
		;
	bool ended = w.ended;
	pthread_mutex_unlock(&w.mu);
	if (!ended) {
		(void)shutdown(peer_client, SHUT_RDWR);
		(void)shutdown(peer_agent, SHUT_RDWR);
	}
	pthread_join(t, NULL);
	return ended;
}

typedef struct flood {
	int fd;
	unsigned long long sent_early; /* what it sent in its first 600 ms */
	bool told;		       /* it got the host's 'S' */
	uint32_t frame;		       /* its 'O' frames' size (0: 64 KiB) */
} flood;

/* The agent's side for a server that writes without end and reads nothing:
 * 'O' frames as fast as its stream takes them, until told to end ('S'),
 * then its answer. */
static void *flooding_agent(void *arg)
{
	flood *f = arg;
	char type, *buf = NULL;
	uint32_t len;
	if (aj_agent_recv(f->fd, &type, &buf, &len) <= 0 || type != AJ_AG_REQUEST)
		return (void *)1;
	free(buf);
	buf = NULL;
	if (aj_agent_send(f->fd, AJ_AG_STAT, "{}", 2) < 0)
		return (void *)2;
	static unsigned char frb[AJ_AGENT_HDR + 65536];
	uint32_t fl = f->frame ? f->frame : 65536;
	unsigned char *fr = frb;
	size_t frl = AJ_AGENT_HDR + fl;
	aj_agent_hdr(fr, AJ_AG_STDOUT, fl);
	memset(fr + AJ_AGENT_HDR, 'z', fl);
	size_t off = 0;
	unsigned long long t0 = mono_ms(), sent = 0;
	while (mono_ms() - t0 < 10000) {
		struct pollfd pf = {.fd = f->fd, .events = POLLIN | POLLOUT};
		if (poll(&pf, 1, 100) < 0)
			return (void *)3;
		if (pf.revents & POLLIN) {
			if (aj_agent_recv(f->fd, &type, &buf, &len) <= 0)
				return (void *)4;
			free(buf);
			buf = NULL;
			if (type == AJ_AG_SIGNAL) {
				f->told = true;
				/* the rest of a frame begun, then the answer */
				const char *x = "{\"exit\":0}";
				if ((off && send(f->fd, fr + off, frl - off, MSG_NOSIGNAL) !=
						(ssize_t)(frl - off)) ||
				    aj_agent_send(f->fd, AJ_AG_EXIT, x, strlen(x)) < 0)
					return (void *)5;
				break;
			}
		} else if (pf.revents & POLLOUT) {
			ssize_t n = send(f->fd, fr + off, frl - off, MSG_DONTWAIT);
			if (n > 0) {
				off = (off + (size_t)n) % frl;
				sent += (unsigned long long)n;
				if (mono_ms() - t0 < 600)
					f->sent_early = sent;
			}
		}
	}
	return NULL;
}

/* A client that stops reading a server that writes a lot is dropped after
 * the stall bound, the agent told to end the server's connection and its
 * answer read (the port free again); meanwhile the relay reads no more
 * than the client takes (was: blocked in a write for good, past the idle
 * bound, holding the agent's stream). */
static void test_relay_drops_stalled_client(void **state)
{
	(void)state;
	int ag[2], cl[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ag), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cl), 0);
	flood f = {.fd = ag[1]};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, flooding_agent, &f), 0);
	aj_agent_relay r = {
	    .client = cl[0], .from = ag[0], .to = ag[0], .idle_ms = 60000, .stall_ms = 1000};
	assert_int_equal(aj_agent_relay_connect(&r, 8080), 0);
	unsigned long long t0 = mono_ms();
	bool ended = run_within(&r, cl[1], ag[1], 6000);
	unsigned long long took = mono_ms() - t0;
	void *ret;
	pthread_join(t, &ret);
	assert_true(ended);	   /* not blocked on the client */
	assert_null(ret);	   /* the agent ended well */
	assert_true(f.told);	   /* told to end the server's connection */
	assert_true(took >= 1000); /* not before the bound */
	/* back-pressure: the client took nothing, nor was more read for it
	 * than the sockets hold (no buffer without bound) */
	assert_true(f.sent_early < (8u << 20));
	free(r.ibuf);
	close(ag[0]), close(ag[1]), close(cl[0]), close(cl[1]);
}

/* The agent's side of a server that reads nothing: its answer ('T'),
 * then nothing read from the host for 8 s. */
static void *deaf_agent(void *arg)
{
	int fd = *(int *)arg;
	char type, *buf = NULL;
	uint32_t len;
	if (aj_agent_recv(fd, &type, &buf, &len) <= 0 || type != AJ_AG_REQUEST)
		return (void *)1;
	free(buf);
	if (aj_agent_send(fd, AJ_AG_STAT, "{}", 2) < 0)
		return (void *)2;
	struct pollfd pf = {.fd = fd, .events = POLLRDHUP};
	(void)poll(&pf, 1, 8000);
	return NULL;
}

static void *flooding_client(void *arg)
{
	int fd = *(int *)arg;
	static char junk[65536];
	while (send(fd, junk, sizeof(junk), MSG_NOSIGNAL) > 0)
		;
	return NULL;
}

/* A client that takes 1 KiB per 100 ms until its end is shut down. */
static void *trickling_client(void *arg)
{
	int fd = *(int *)arg;
	char b[1024];
	for (unsigned long long t0 = mono_ms(); mono_ms() - t0 < 5000;) {
		if (recv(fd, b, sizeof(b), 0) <= 0)
			break;
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* A client that takes only a trickle (1 KiB per 100 ms, far below
 * AJ_RELAY_STALL_MIN per stall bound) of a server that writes a lot is
 * dropped as one that stopped reading (was: each byte taken restarted
 * the bound, the relay and its agent port held for good). */
static void test_relay_drops_trickling_client(void **state)
{
	(void)state;
	int ag[2], cl[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ag), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cl), 0);
	int small = 4096; /* the trickle reaches the relay at once */
	assert_int_equal(setsockopt(cl[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	flood f = {.fd = ag[1], .frame = 1024}; /* each taken whole by the trickle */
	pthread_t t, c;
	assert_int_equal(pthread_create(&t, NULL, flooding_agent, &f), 0);
	aj_agent_relay r = {
	    .client = cl[0], .from = ag[0], .to = ag[0], .idle_ms = 60000, .stall_ms = 300};
	assert_int_equal(aj_agent_relay_connect(&r, 8080), 0);
	assert_int_equal(pthread_create(&c, NULL, trickling_client, &cl[1]), 0);
	bool ended = run_within(&r, cl[1], ag[1], 2500);
	(void)shutdown(cl[1], SHUT_RDWR);
	void *ret;
	pthread_join(c, NULL);
	pthread_join(t, &ret);
	assert_true(ended);  /* dropped, not held by the trickle */
	assert_null(ret);    /* the agent ended well */
	assert_true(f.told); /* told to end the server's connection */
	assert_false(r.broken);
	free(r.ibuf);
	close(ag[0]), close(ag[1]), close(cl[0]), close(cl[1]);
}

/* An agent that stops reading while the client writes a lot: the relay
 * gives it up after its bound (stall 300 ms and a margin as long), the
 * stream not to be reused (was: blocked in the write to the agent). */
static void test_relay_gives_up_stalled_agent(void **state)
{
	(void)state;
	int ag[2], cl[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ag), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cl), 0);
	pthread_t t, c;
	assert_int_equal(pthread_create(&t, NULL, deaf_agent, &ag[1]), 0);
	aj_agent_relay r = {
	    .client = cl[0], .from = ag[0], .to = ag[0], .idle_ms = 60000, .stall_ms = 300};
	assert_int_equal(aj_agent_relay_connect(&r, 8080), 0);
	assert_int_equal(pthread_create(&c, NULL, flooding_client, &cl[1]), 0);
	unsigned long long t0 = mono_ms();
	bool ended = run_within(&r, cl[1], ag[1], 4000);
	unsigned long long took = mono_ms() - t0;
	assert_true(ended);
	assert_true(took >= 600);
	assert_true(r.broken);
	assert_false(r.answered);
	/* the agent's stream is as it was: blocking */
	assert_int_equal(fcntl(ag[0], F_GETFL) & O_NONBLOCK, 0);
	(void)shutdown(cl[0], SHUT_RDWR);
	(void)shutdown(ag[0], SHUT_RDWR);
	pthread_join(c, NULL);
	pthread_join(t, NULL);
	free(r.ibuf);
	close(ag[0]), close(ag[1]), close(cl[0]), close(cl[1]);
}

/* ---- level 1's --publish (netd: aj_splice_pair) ---- */

typedef struct spliced {
	int a, b;
	unsigned long long stall_ms; /* 0: 300 */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool ended;
} spliced;

static void *run_splice(void *arg)
{
	spliced *sp = arg;
	aj_splice_pair(sp->a, sp->b, sp->stall_ms ? sp->stall_ms : 300);
	pthread_mutex_lock(&sp->mu);
	sp->ended = true;
	pthread_cond_broadcast(&sp->cv);
	pthread_mutex_unlock(&sp->mu);
	return NULL;
}

/* A client of a --publish port that reads nothing of a server that writes
 * a lot: netd's relay drops it after the stall bound (was: blocked in a
 * send for good, the 15-minute idle bound never reached). */
static void test_splice_drops_stalled_client(void **state)
{
	(void)state;
	int cl[2], sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cl), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pthread_t srv, t;
	assert_int_equal(pthread_create(&srv, NULL, flooding_client, &sv[1]), 0);
	spliced sp = {.a = cl[0],
		      .b = sv[0],
		      .mu = PTHREAD_MUTEX_INITIALIZER,
		      .cv = PTHREAD_COND_INITIALIZER};
	assert_int_equal(pthread_create(&t, NULL, run_splice, &sp), 0);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 4;
	pthread_mutex_lock(&sp.mu);
	while (!sp.ended && pthread_cond_timedwait(&sp.cv, &sp.mu, &until) == 0)
		;
	bool ended = sp.ended;
	pthread_mutex_unlock(&sp.mu);
	if (!ended)
		(void)shutdown(cl[1], SHUT_RDWR);
	pthread_join(t, NULL);
	(void)shutdown(sv[0], SHUT_RDWR);
	pthread_join(srv, NULL);
	assert_true(ended);
	close(cl[0]), close(cl[1]), close(sv[0]), close(sv[1]);
}

/* ---- the agent's side (agent.c, op "connect") ---- */

typedef struct holder {
	int l, quit[2];
} holder;

/* A server that accepts, then reads nothing until told to quit. */
static void *accept_and_hold(void *arg)
{
	holder *h = arg;
	int c = accept(h->l, NULL, NULL);
	struct pollfd pf = {.fd = h->quit[0], .events = POLLIN};
	(void)poll(&pf, 1, 8000);
	if (c >= 0)
		close(c);
	return NULL;
}

/* The agent itself (agentjail-agent, run on the host) connected to a
 * server that reads nothing while the client writes a lot: it drops the
 * server after the host's "stall_ms" and answers ETIMEDOUT, so its stream
 * is read again (was: blocked in a write to the server, deaf to 'S'). */
static void test_agent_drops_stalled_server(void **state)
{
	(void)state;
	char self[PATH_MAX], agent[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = '\0';
	*strrchr(self, '/') = '\0';
	snprintf(agent, sizeof(agent), "%s/../agentjail-agent", self);
	if (access(agent, X_OK) < 0)
		skip(); /* no static jansson/libseccomp: no agent built */
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &alen), 0);
	holder h = {.l = l};
	assert_int_equal(pipe2(h.quit, O_CLOEXEC), 0);
	pthread_t srv;
	assert_int_equal(pthread_create(&srv, NULL, accept_and_hold, &h), 0);
	int ag[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ag), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, ag[1], 0);
	posix_spawn_file_actions_adddup2(&fa, ag[1], 1);
	char *argv[] = {agent, NULL}, *envp[] = {NULL};
	pid_t pid;
	assert_int_equal(posix_spawn(&pid, agent, &fa, NULL, argv, envp), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(ag[1]);
	char q[128];
	snprintf(q, sizeof(q), "{\"op\":\"connect\",\"port\":%u,\"stall_ms\":300}",
		 ntohs(a.sin_port));
	assert_int_equal(aj_agent_send(ag[0], AJ_AG_REQUEST, q, strlen(q)), 0);
	char type, *buf = NULL;
	uint32_t len;
	assert_int_equal(aj_agent_recv(ag[0], &type, &buf, &len), 1);
	free(buf);
	buf = NULL;
	assert_int_equal(type, AJ_AG_STAT);
	/* 'I' frames as fast as the agent takes them, until its answer */
	static unsigned char fr[AJ_AGENT_HDR + 65536];
	aj_agent_hdr(fr, AJ_AG_STDIN, 65536);
	size_t off = 0;
	aj_agent_exit x = {0};
	bool answered = false;
	for (unsigned long long t0 = mono_ms(); !answered && mono_ms() - t0 < 5000;) {
		struct pollfd pf = {.fd = ag[0], .events = POLLIN | POLLOUT};
		if (poll(&pf, 1, 100) <= 0)
			continue;
		if (pf.revents & POLLIN) {
			if (aj_agent_recv(ag[0], &type, &buf, &len) <= 0)
				break;
			if (type == AJ_AG_EXIT) {
				aj_agent_exit_parse(buf, len, &x);
				answered = true;
			}
			free(buf);
			buf = NULL;
		} else if (pf.revents & POLLOUT) {
			ssize_t w =
			    send(ag[0], fr + off, sizeof(fr) - off, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w > 0)
				off = (off + (size_t)w) % sizeof(fr);
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(ag[0]);
	assert_int_equal(write(h.quit[1], "", 1), 1);
	pthread_join(srv, NULL);
	close(l), close(h.quit[0]), close(h.quit[1]);
	assert_true(answered);
	assert_int_equal(x.err, ETIMEDOUT);
}

/* The agent's side as agentjail-agent wrote it: its 'O' frames (512 KiB)
 * with blocking writes, reading none of the host's frames meanwhile; then
 * the host's frames read for 300 ms, its answer, and the rest skipped (a
 * level-3 port's next agent). */
static void *blocking_agent(void *arg)
{
	int fd = *(int *)arg;
	char type, *buf = NULL;
	uint32_t len;
	if (aj_agent_recv(fd, &type, &buf, &len) <= 0 || type != AJ_AG_REQUEST)
		return (void *)1;
	free(buf);
	buf = NULL;
	if (aj_agent_send(fd, AJ_AG_STAT, "{}", 2) < 0)
		return (void *)2;
	static char o[65536];
	for (int i = 0; i < 8; i++)
		if (aj_agent_send(fd, AJ_AG_STDOUT, o, sizeof(o)) < 0)
			return (void *)3;
	for (unsigned long long t0 = mono_ms(); mono_ms() - t0 < 300;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, 50) > 0 && aj_agent_recv(fd, &type, &buf, &len) <= 0)
			return (void *)4;
		free(buf);
		buf = NULL;
	}
	const char *x = "{\"exit\":0}";
	if (aj_agent_send(fd, AJ_AG_EXIT, x, strlen(x)) < 0)
		return (void *)5;
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	while (poll(&pf, 1, 3000) > 0 && read(fd, o, sizeof(o)) > 0)
		;
	return NULL;
}

typedef struct bursts {
	int fd;
	size_t got;
} bursts;

/* A client that takes 64 KiB once per 150 ms (the relay's bound: 64 KiB
 * per 300 ms), until its end is shut down. */
static void *read_in_bursts(void *arg)
{
	bursts *b = arg;
	static char buf[65536];
	for (unsigned long long t0 = mono_ms(); mono_ms() - t0 < 6000;) {
		ssize_t n = recv(b->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0)
			break;
		b->got += n > 0 ? (size_t)n : 0;
		struct timespec ts = {0, 150000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* A client uploading a lot while it reads the replies in bursts within the
 * bound: the agent, blocked writing them, takes none of the relay's frame
 * meanwhile, yet it is not given up, its port not marked broken (was:
 * after the bound and a margin, 600 ms, the relay counted its own holding
 * back as the agent's stall and gave the port up for good). */
static void test_relay_spares_slow_reader(void **state)
{
	(void)state;
	int ag[2], cl[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ag), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cl), 0);
	int sb = 40000; /* what the client takes reaches the relay at once */
	assert_int_equal(setsockopt(cl[0], SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb)), 0);
	pthread_t t, up, down;
	assert_int_equal(pthread_create(&t, NULL, blocking_agent, &ag[1]), 0);
	aj_agent_relay r = {
	    .client = cl[0], .from = ag[0], .to = ag[0], .idle_ms = 60000, .stall_ms = 300};
	assert_int_equal(aj_agent_relay_connect(&r, 8080), 0);
	bursts b = {.fd = cl[1]};
	assert_int_equal(pthread_create(&up, NULL, flooding_client, &cl[1]), 0);
	assert_int_equal(pthread_create(&down, NULL, read_in_bursts, &b), 0);
	bool ended = run_within(&r, cl[1], ag[1], 6000);
	(void)shutdown(cl[0], SHUT_RDWR);
	(void)shutdown(ag[0], SHUT_RDWR);
	void *ret;
	pthread_join(up, NULL);
	pthread_join(down, NULL);
	pthread_join(t, &ret);
	free(r.ibuf);
	close(ag[0]), close(ag[1]), close(cl[0]), close(cl[1]);
	assert_true(ended);
	assert_null(ret);
	assert_true(r.answered); /* the agent's answer came */
	assert_false(r.broken);	 /* the port is not given up */
	assert_true(b.got >= (512u << 10));
}

/* Whether netd's relay (a stall bound of 1 s) of a flooding server to a
 * client reading with reader (its end's send buffer sndbuf) ends within ms. */
static bool splice_ends_within(int sndbuf, void *(*reader)(void *), void *arg, int *cl1,
			       unsigned ms)
{
	int cl[2], sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cl), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(setsockopt(cl[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	*cl1 = cl[1];
	pthread_t srv, t, rd;
	assert_int_equal(pthread_create(&srv, NULL, flooding_client, &sv[1]), 0);
	spliced sp = {.a = cl[0],
		      .b = sv[0],
		      .stall_ms = 1000,
		      .mu = PTHREAD_MUTEX_INITIALIZER,
		      .cv = PTHREAD_COND_INITIALIZER};
	assert_int_equal(pthread_create(&t, NULL, run_splice, &sp), 0);
	assert_int_equal(pthread_create(&rd, NULL, reader, arg), 0);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L)
		until.tv_sec++, until.tv_nsec -= 1000000000L;
	pthread_mutex_lock(&sp.mu);
	while (!sp.ended && pthread_cond_timedwait(&sp.cv, &sp.mu, &until) == 0)
		;
	bool ended = sp.ended;
	pthread_mutex_unlock(&sp.mu);
	(void)shutdown(cl[1], SHUT_RDWR);
	(void)shutdown(cl[0], SHUT_RDWR);
	pthread_join(t, NULL);
	pthread_join(rd, NULL);
	(void)shutdown(sv[0], SHUT_RDWR);
	pthread_join(srv, NULL);
	close(cl[0]), close(cl[1]), close(sv[0]), close(sv[1]);
	return ended;
}

/* netd's relay keeps the rule of levels 2 and 3 (stall.h): a client taking
 * a trickle (1 KiB per 100 ms, reaching the relay at once: a small send
 * buffer) is dropped after the bound (was: each piece taken restarted the
 * bound, the relay held for good); one taking 64 KiB per 150 ms is not. */
static void test_splice_drops_trickling_client(void **state)
{
	(void)state;
	int fd;
	assert_true(splice_ends_within(4096, trickling_client, &fd, &fd, 3000));
	bursts b = {0};
	assert_false(splice_ends_within(40000, read_in_bursts, &b, &b.fd, 1500));
	assert_true(b.got >= (256u << 10));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_publish_relays_idle_bound),
	    cmocka_unit_test(test_relay_ends_when_idle),
	    cmocka_unit_test(test_relay_idle_ignores_dropped),
	    cmocka_unit_test(test_relay_drops_stalled_client),
	    cmocka_unit_test(test_relay_gives_up_stalled_agent),
	    cmocka_unit_test(test_splice_drops_stalled_client),
	    cmocka_unit_test(test_splice_drops_trickling_client),
	    cmocka_unit_test(test_agent_drops_stalled_server),
	    cmocka_unit_test(test_relay_drops_trickling_client),
	    cmocka_unit_test(test_relay_spares_slow_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
