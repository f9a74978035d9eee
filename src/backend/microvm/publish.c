/* SPDX-License-Identifier: MIT */
/* `agentjail run --isolation microvm --publish HP:PORT` (docs/levels.md):
 * the run listens on the host's 127.0.0.1:HP, as level 1's netd does, and
 * each connection is relayed by the guest's agent to PORT on the guest's
 * loopback (op "connect", as the service's ports proxy, box.c) over one
 * of the VM's extra agent ports (aj.agent.1 ...), held for the connection.
 * A connection with no free port, or nothing listening in the guest, is
 * closed. */
#include "publish.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_frame.h"
#include "util.h"

struct aj_mv_publish {
	int lfd[AJ_MAX_PUBLISH];
	unsigned port[AJ_MAX_PUBLISH]; /* the guest's */
	size_t n;
	aj_mv_vm *m;
	pthread_t acceptor;
	bool started;
	int stop[2]; /* a pipe: written once to stop the acceptor */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
	int conns;		    /* connection threads running */
	bool busy[AJ_MV_MAX_PORTS]; /* agent ports 1.. in use */
	bool dead[AJ_MV_MAX_PORTS]; /* given up (a connection cut short) */
	int cfd[AJ_MV_MAX_PORTS];   /* the client's connection on port k, or -1 */
};

typedef struct conn {
	aj_mv_publish *pb;
	int fd;	    /* the client's connection */
	unsigned k; /* the agent port */
	unsigned port;
} conn;

int aj_mv_publish_listen(aj_mv_publish **out, const aj_policy *p, aj_error *err)
{
	*out = NULL;
	if (!p->n_publish)
		return 0;
	aj_mv_publish *pb = calloc(1, sizeof(*pb));
	if (!pb)
		return aj_err(err, ENOMEM, "--publish");
	pb->stop[0] = pb->stop[1] = -1;
	pthread_mutex_init(&pb->mu, NULL);
	pthread_cond_init(&pb->cv, NULL);
	for (size_t k = 0; k < AJ_MV_MAX_PORTS; k++)
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

/* A free agent port (1 ..), or 0. */
static unsigned take(aj_mv_publish *pb)
{
	unsigned k = 0;
	pthread_mutex_lock(&pb->mu);
	for (unsigned j = 1; j < pb->m->nports && !k; j++)
		if (!pb->busy[j] && !pb->dead[j])
			k = j;
	if (k)
		pb->busy[k] = true;
	pthread_mutex_unlock(&pb->mu);
	return k;
}

static bool stopping(aj_mv_publish *pb)
{
	pthread_mutex_lock(&pb->mu);
	bool s = pb->stopping;
	pthread_mutex_unlock(&pb->mu);
	return s;
}

/* The agent's next frame, waiting at most 500 ms at a time while the run
 * goes on: 1, 0 on stop, -1 when the port's stream ended. */
static int next_frame(conn *c, int ag, char *type, char **buf, uint32_t *len)
{
	for (;;) {
		struct pollfd pf = {ag, POLLIN, 0};
		int n = poll(&pf, 1, 500);
		if (stopping(c->pb))
			return 0;
		if (n > 0)
			return aj_agent_recv(ag, type, buf, len) > 0 ? 1 : -1;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

/* All of buf to a client's connection, never raising SIGPIPE. */
static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n, len -= (size_t)n;
	}
	return 0;
}

static void *conn_main(void *arg)
{
	conn *c = arg;
	aj_mv_publish *pb = c->pb;
	int ag = pb->m->ports[c->k];
	bool answered = false, connected = false, client_end = false;
	char q[96];
	snprintf(q, sizeof(q), "{\"op\":\"connect\",\"port\":%u}", c->port);
	int r = aj_agent_send(ag, AJ_AG_REQUEST, q, strlen(q));
	char type, *buf = NULL;
	uint32_t len;
	/* connected ('T'), or nothing listens there ('X') */
	if (r == 0 && next_frame(c, ag, &type, &buf, &len) == 1) {
		connected = type == AJ_AG_STAT;
		answered = type == AJ_AG_EXIT;
	}
	free(buf);
	bool server_end = false, client_gone = false, gave_up = false;
	while (connected && !answered) {
		/* after the client's half-close its end is still watched: a
		 * hang-up (or a reset) ends the guest's connection */
		struct pollfd pf[2] = {{ag, POLLIN, 0},
				       {client_gone ? -1 : c->fd, client_end ? 0 : POLLIN, 0}};
		int n = poll(pf, 2, 500);
		if (stopping(pb) || (n < 0 && errno != EINTR))
			break;
		if (n > 0 && pf[0].revents) {
			buf = NULL;
			if (aj_agent_recv(ag, &type, &buf, &len) <= 0)
				break;
			/* MSG_NOSIGNAL: a client that hung up is no SIGPIPE */
			if (type == AJ_AG_STDOUT && len && !client_gone &&
			    send_all(c->fd, buf, len) < 0)
				client_gone = true;
			else if (type == AJ_AG_STDOUT && !len) {
				server_end = true;
				(void)shutdown(c->fd, SHUT_WR);
			}
			answered = type == AJ_AG_EXIT;
			free(buf);
		}
		if (n > 0 && pf[1].revents && !client_end && !answered) {
			char b[65536];
			ssize_t got = read(c->fd, b, sizeof(b));
			if (got < 0 && errno == EINTR)
				continue;
			client_end = got <= 0;
			if (aj_agent_send(ag, AJ_AG_STDIN, b, got > 0 ? (size_t)got : 0) < 0)
				break;
		} else if (n > 0 && (pf[1].revents & (POLLHUP | POLLERR)) && client_end)
			client_gone = true;
		/* the client gone, the server still talking: the agent ends the
		 * guest's connection and answers */
		if (client_gone && !server_end && !gave_up && !answered) {
			char sig = SIGKILL;
			gave_up = true;
			if (aj_agent_send(ag, AJ_AG_SIGNAL, &sig, 1) < 0)
				break;
		}
	}
	pthread_mutex_lock(&pb->mu);
	pb->cfd[c->k] = -1;
	close(c->fd);
	pb->busy[c->k] = false;
	pb->dead[c->k] = !answered; /* cut short: its agent may still speak */
	pb->conns--;
	pthread_cond_broadcast(&pb->cv);
	pthread_mutex_unlock(&pb->mu);
	free(c);
	return NULL;
}

static void *accept_main(void *arg)
{
	aj_mv_publish *pb = arg;
	/* the connections' threads (they inherit it): a write to an agent port
	 * whose VM went is EPIPE, not the run's end by SIGPIPE */
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
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
			if (!pf[i].revents)
				continue;
			int fd = accept4(pb->lfd[i], NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			unsigned k = take(pb);
			conn *c = k ? calloc(1, sizeof(*c)) : NULL;
			if (!c) { /* no free agent port: refused */
				close(fd);
				continue;
			}
			*c = (conn){.pb = pb, .fd = fd, .k = k, .port = pb->port[i]};
			pthread_mutex_lock(&pb->mu);
			pb->conns++;
			pb->cfd[k] = fd;
			pthread_mutex_unlock(&pb->mu);
			pthread_t t;
			pthread_attr_t at;
			pthread_attr_init(&at);
			pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
			if (pthread_create(&t, &at, conn_main, c) != 0) {
				close(fd);
				free(c);
				pthread_mutex_lock(&pb->mu);
				pb->conns--;
				pb->busy[k] = false;
				pb->cfd[k] = -1;
				pthread_mutex_unlock(&pb->mu);
			}
			pthread_attr_destroy(&at);
		}
	}
}

int aj_mv_publish_start(aj_mv_publish *pb, aj_mv_vm *m, aj_error *err)
{
	if (!pb)
		return 0;
	pb->m = m;
	int e = pthread_create(&pb->acceptor, NULL, accept_main, pb);
	if (e)
		return aj_err(err, e, "--publish: cannot start its thread");
	pb->started = true;
	return 0;
}

void aj_mv_publish_stop(aj_mv_publish **pbp)
{
	aj_mv_publish *pb = *pbp;
	if (!pb)
		return;
	if (pb->started) {
		(void)!write(pb->stop[1], "", 1);
		pthread_join(pb->acceptor, NULL);
		pthread_mutex_lock(&pb->mu);
		pb->stopping = true;
		/* a connection blocked on a client that does not read (or on an
		 * agent port) wakes: the run's end waits for no one */
		for (unsigned k = 1; k < pb->m->nports && k < AJ_MV_MAX_PORTS; k++)
			if (pb->cfd[k] >= 0) {
				(void)shutdown(pb->cfd[k], SHUT_RDWR);
				(void)shutdown(pb->m->ports[k], SHUT_RDWR);
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
