/* SPDX-License-Identifier: MIT */
/* Answers libwebsockets does not give: a connection whose request headers
 * never complete. From its accept to its first complete request line and
 * headers, a connection is "pending" here with a dup of its socket: if the
 * headers take longer than --header-timeout (a slow client, slowloris), it
 * gets 408; if lws drops it because its headers overflowed the 4096 bytes
 * lws holds (lws only logs it: the log line, and which socket lws just
 * read from, tell which connection), it gets 431.
 * Either answer is the usual JSON error, then the connection closes. An
 * unauthenticated WebSocket upgrade over TCP gets 401 (aj_guard_upgrade).
 *
 * A TCP connection is unauthenticated until its first request's headers
 * have come with the token; then it is either served or answered 401 and
 * closed (aj_guard_refuse), so an unauthenticated connection is always a
 * pending one. They have a budget (docs/security.md, "A flood of idle
 * connections"): AJ_GUARD_PER_PEER per client address and AJ_GUARD_TCP_MAX
 * in all, and a shorter header timeout (AJ_GUARD_TCP_TIMEOUT_S). A new
 * connection over the budget sheds an older one: the oldest that has sent
 * nothing yet (a flood's), else the oldest, so that a client that sends its
 * request at once gets in however many idle ones are held. The unix socket
 * and authenticated connections are outside this budget: the fds and
 * header buffers the budget leaves are theirs (front.c). */
#include <errno.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "guard.h"
#include "http.h"
#include "metrics.h"
#include "util.h"

typedef struct pending {
	struct lws *wsi;
	int fd;	 /* our dup of the socket */
	int inq; /* unread bytes before this turn of the loop */
	bool answered;
	bool shed;		/* shut down for the budget, not closed by lws yet */
	bool remote;		/* TCP: unauthenticated, in the budget */
	unsigned char addr[16]; /* the client's address (IPv4 mapped) */
	unsigned long long seq; /* order of acceptance */
	struct pending *next;
} pending;

static pending *list;
static unsigned timeout_s = 10;
static unsigned long long accepted;
static unsigned long long shed;
static unsigned zombies; /* shed, not destroyed yet */
static long long last_shed_ms;

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void aj_guard_set_timeout(unsigned seconds)
{
	timeout_s = seconds;
}

static pending **find(struct lws *wsi)
{
	pending **pp = &list;
	while (*pp && (*pp)->wsi != wsi)
		pp = &(*pp)->next;
	return pp;
}

static void drop(pending **pp)
{
	pending *p = *pp;
	/* what the client sent and nobody read: read, so that closing does not
	 * reset the connection (and lose the answer) */
	char buf[4096];
	for (int i = 0; p->answered && i < 256; i++)
		if (recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			break;
	*pp = p->next;
	if (p->fd >= 0)
		close(p->fd);
	if (p->shed)
		zombies--;
	free(p);
}

/* The raw answer on the socket: nothing was written on it yet. */
static void raw_answer(int fd, int status, const char *reason, const char *code, const char *msg,
		       const char *extra)
{
	char body[512], all[1024];
	int bl = snprintf(body, sizeof(body), "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n",
			  code, msg);
	int n = snprintf(all, sizeof(all),
			 "HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: "
			 "%d\r\ncache-control: no-store\r\n%sconnection: close\r\n\r\n%s",
			 status, reason, bl, extra, body);
	if (n > 0 && send(fd, all, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		(void)0; /* the client is gone */
	aj_metrics_add(&aj_stats.requests, 1);
	aj_metrics_add(&aj_stats.errors, 1);
}

static void answer(pending *p, int status, const char *reason, const char *code, const char *msg)
{
	raw_answer(p->fd, status, reason, code, msg, "");
	p->answered = true;
}

/* A TCP client's address (IPv4 as IPv4-mapped); false: not TCP. */
static bool peer_addr(int fd, unsigned char addr[16])
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	memset(addr, 0, 16);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return false;
	if (ss.ss_family == AF_INET) {
		addr[10] = addr[11] = 0xff;
		memcpy(addr + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
		return true;
	}
	if (ss.ss_family == AF_INET6) {
		memcpy(addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
		return true;
	}
	return false;
}

/* The client has sent nothing yet (what lws read counts too). */
static bool silent(const pending *p)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(p->fd, IPPROTO_TCP, TCP_INFO, &ti, &l) < 0 ||
	    l < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return false;
	return ti.tcpi_bytes_received == 0;
}

/* Shed one unauthenticated connection: its client is told why and the
 * socket is shut down, so that lws sees it hang up and closes it in the
 * next turn of the loop (lws 4.1's LWS_TO_KILL_ASYNC did not close a
 * connection still waiting for a header buffer). */
static void shed_one(pending *p)
{
	answer(p, 503, "Service Unavailable", "too_many_connections",
	       "too many connections without a request: this one was closed");
	char buf[4096];
	for (int i = 0; i < 16; i++)
		if (recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			break;
	shutdown(p->fd, SHUT_RDWR);
	close(p->fd);
	p->fd = -1;
	p->shed = true;
	lws_set_timer_usecs(p->wsi, LWS_SET_TIMER_USEC_CANCEL);
	zombies++;
	shed++;
	last_shed_ms = now_ms();
}

/* The budget before a new unauthenticated connection is counted: over
 * it, the oldest silent one of that peer (or of all) goes, else the
 * oldest. */
static void make_room(const unsigned char addr[16])
{
	unsigned same = 0, all = 0;
	for (pending *p = list; p; p = p->next)
		if (p->remote && !p->answered) {
			all++;
			same += memcmp(p->addr, addr, 16) == 0;
		}
	bool by_peer = same >= AJ_GUARD_PER_PEER;
	if (!by_peer && all < AJ_GUARD_TCP_MAX)
		return;
	/* the oldest; when it has sent something, the oldest silent one
	 * (one getsockopt in the usual flood, whose oldest is silent) */
	pending *victim = NULL, *quiet = NULL;
	for (pending *p = list; p; p = p->next)
		if (p->remote && !p->answered && (!by_peer || !memcmp(p->addr, addr, 16)) &&
		    (!victim || p->seq < victim->seq))
			victim = p;
	if (victim && !silent(victim))
		for (pending *p = list; p; p = p->next)
			if (p != victim && p->remote && !p->answered &&
			    (!by_peer || !memcmp(p->addr, addr, 16)) &&
			    (!quiet || p->seq < quiet->seq) && silent(p))
				quiet = p;
	if (quiet || victim)
		shed_one(quiet ? quiet : victim);
}

int aj_guard_filter(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 || ss.ss_family == AF_UNIX)
		return 0; /* the unix socket is never refused */
	/* a burst: as many shed and not closed yet as the budget itself. The
	 * rest wait in the kernel's queue for the next turn of the loop (lws
	 * stops accepting for this one), the unix socket has its turn. */
	/* (only while shedding goes on: a count that went wrong never shuts
	 * TCP for good) */
	return zombies >= AJ_GUARD_TCP_MAX && now_ms() - last_shed_ms < 1000 ? 1 : 0;
}

unsigned long long aj_guard_shed(void)
{
	return shed;
}

void aj_guard_accepted(struct lws *wsi)
{
	int fd = lws_get_socket_fd(wsi);
	pending *p = fd >= 0 ? calloc(1, sizeof(*p)) : NULL;
	if (!p)
		return;
	p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (p->fd < 0) {
		free(p);
		return;
	}
	p->wsi = wsi;
	p->seq = ++accepted;
	p->remote = peer_addr(fd, p->addr);
	if (p->remote)
		make_room(p->addr);
	p->next = list;
	list = p;
	unsigned t = timeout_s;
	if (p->remote && t > AJ_GUARD_TCP_TIMEOUT_S)
		t = AJ_GUARD_TCP_TIMEOUT_S;
	lws_set_timer_usecs(wsi, (lws_usec_t)t * LWS_USEC_PER_SEC);
}

void aj_guard_headers_done(struct lws *wsi)
{
	pending **pp = find(wsi);
	if (*pp) {
		lws_set_timer_usecs(wsi, LWS_SET_TIMER_USEC_CANCEL);
		drop(pp);
	}
}

static int inq(int fd)
{
	int n = 0;
	return ioctl(fd, FIONREAD, &n) < 0 ? -1 : n;
}

void aj_guard_before_service(void)
{
	for (pending *p = list; p; p = p->next)
		p->inq = inq(p->fd);
}

/* lws says it drops a connection for its headers (before it shuts the
 * socket, after no callback of ours): the one whose unread bytes changed in
 * this turn of the loop (lws read it: what came during the poll and was
 * not all read, or less than before), when it is the only one. */
static void overflowed(void)
{
	pending *hit = NULL;
	int n = 0;
	for (pending *p = list; p; p = p->next)
		if (!p->answered && inq(p->fd) != p->inq) {
			hit = p;
			n++;
		}
	if (n == 1)
		answer(hit, 431, "Request Header Fields Too Large", "headers_too_large",
		       "the request's headers are larger than 4096 bytes");
}

static int log_mask = LLL_ERR | LLL_WARN;

void aj_guard_log_level(int mask)
{
	log_mask = mask;
}

void aj_guard_log(int level, const char *line)
{
	if (strstr(line, "Ran out of header data space")) {
		overflowed();
		return; /* answered, not an error of ours */
	}
	if (level & log_mask)
		lwsl_emit_stderr(level, line);
}

int aj_guard_timer(struct lws *wsi)
{
	pending **pp = find(wsi);
	if (!*pp || (*pp)->answered || (*pp)->fd < 0)
		return 0;
	char msg[128];
	unsigned t = timeout_s;
	if ((*pp)->remote && t > AJ_GUARD_TCP_TIMEOUT_S)
		t = AJ_GUARD_TCP_TIMEOUT_S;
	snprintf(msg, sizeof(msg), "the request's headers did not come within %u seconds", t);
	answer(*pp, 408, "Request Timeout", "request_timeout", msg);
	return -1; /* lws closes it; the rest in aj_guard_destroyed */
}

void aj_guard_destroyed(struct lws *wsi)
{
	pending **pp = find(wsi);
	if (!*pp)
		return;
	drop(pp);
}

int aj_guard_refuse(struct lws *wsi)
{
	int fd = lws_get_socket_fd(wsi);
	if (fd < 0)
		return -1;
	raw_answer(fd, 401, "Unauthorized", "unauthorized", "a valid bearer token is required",
		   "www-authenticate: Bearer\r\n");
	/* what the client sent and nobody read: read, so that closing does not
	 * reset the connection (and lose the answer) */
	char buf[4096];
	for (int i = 0; i < 256; i++)
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			break;
	return -1; /* lws closes it: an unauthenticated connection is not kept */
}

int aj_guard_upgrade(struct lws *wsi)
{
	aj_req tmp = {.wsi = wsi};
	aj_http_peer(&tmp);
	if (aj_http_token_ok(&tmp))
		return 0;
	return aj_guard_refuse(wsi);
}
