/* SPDX-License-Identifier: MIT */
/* Answers libwebsockets does not give: a connection whose request headers
 * never complete. From its accept to its first complete request line and
 * headers, a connection is "pending" here with a dup of its socket: if the
 * headers take longer than --header-timeout (a slow client, slowloris), it
 * gets 408; if lws drops it because its headers overflowed the 4096 bytes
 * lws holds (lws only logs it: the log line, and which socket lws just
 * read from, tell which connection), it gets 431.
 * Either answer is the usual JSON error, then the connection closes. An
 * unauthenticated WebSocket upgrade over TCP gets 401 (aj_guard_upgrade). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "util.h"

typedef struct pending {
	struct lws *wsi;
	int fd;	 /* our dup of the socket */
	int inq; /* unread bytes before this turn of the loop */
	bool answered;
	struct pending *next;
} pending;

static pending *list;
static unsigned timeout_s = 10;

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
	close(p->fd);
	free(p);
}

/* The raw answer on the socket: nothing was written on it yet. */
static void answer(pending *p, int status, const char *reason, const char *code, const char *msg)
{
	char body[512], all[1024];
	int bl = snprintf(body, sizeof(body), "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n",
			  code, msg);
	int n = snprintf(all, sizeof(all),
			 "HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: "
			 "%d\r\ncache-control: no-store\r\nconnection: close\r\n\r\n%s",
			 status, reason, bl, body);
	if (n > 0 && send(p->fd, all, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		(void)0; /* the client is gone */
	p->answered = true;
	aj_metrics_add(&aj_stats.requests, 1);
	aj_metrics_add(&aj_stats.errors, 1);
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
	p->next = list;
	list = p;
	lws_set_timer_usecs(wsi, (lws_usec_t)timeout_s * LWS_USEC_PER_SEC);
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
	if (!*pp || (*pp)->answered)
		return 0;
	char msg[128];
	snprintf(msg, sizeof(msg), "the request's headers did not come within %u seconds",
		 timeout_s);
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

int aj_guard_upgrade(struct lws *wsi)
{
	aj_req tmp = {.wsi = wsi};
	aj_http_peer(&tmp);
	if (aj_http_token_ok(&tmp))
		return 0;
	static const char body[] = "{\"error\":{\"code\":\"unauthorized\",\"message\":\"a valid "
				   "bearer token is required\"}}\n";
	unsigned char buf[LWS_PRE + 1024];
	unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf) - 1;
	aj_metrics_add(&aj_stats.requests, 1);
	aj_metrics_add(&aj_stats.errors, 1);
	if (lws_add_http_common_headers(wsi, 401, "application/json", sizeof(body) - 1, &p, end) ||
	    lws_add_http_header_by_name(wsi, (const unsigned char *)"www-authenticate:",
					(const unsigned char *)"Bearer", 6, &p, end) ||
	    lws_finalize_write_http_header(wsi, start, &p, end))
		return -1;
	memcpy(start, body, sizeof(body) - 1);
	if (lws_write(wsi, start, sizeof(body) - 1, LWS_WRITE_HTTP_FINAL) < 0)
		return -1;
	return 1; /* answered: no upgrade */
}
