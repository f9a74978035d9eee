/* SPDX-License-Identifier: MIT */
/* Unit tests: the relays of `run --publish` at levels 2 and 3
 * (agent_relay.c) are bounded in idle time as the service's ports proxy
 * is, and a relay with nothing either way for its bound has the agent end
 * the server's connection and stops. The agent is a thread of this test
 * on a socket pair; the client connects to the host's 127.0.0.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent_frame.h"
#include "agent_proto.h"
#include "agent_relay.h"
#include "policy.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_publish_relays_idle_bound),
	    cmocka_unit_test(test_relay_ends_when_idle),
	    cmocka_unit_test(test_relay_idle_ignores_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
