/* SPDX-License-Identifier: MIT */
/* agentjail's HTTP(S) proxy for --allow and the --publish forwarder (both
 * run in netd, one thread per connection). The proxy checks the CONNECT
 * target or the request's host against the allow-list, resolves the name
 * itself, refuses addresses in the refused ranges, connects to the address
 * it checked and only then relays bytes. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "allow.h"
#include "dns.h"
#include "inject.h"
#include "net_addr.h"
#include "netlog.h"
#include "proxy.h"
#include "proxy_common.h"
#include "proxy_parse.h"
#include "proxy_tls.h"
#include "stall.h"
#include "tls.h"
#include "util.h"

#define HEAD_MAX 16384
#define CONNECT_TIMEOUT_MS 10000
#define HEAD_TIMEOUT_MS 10000
#define BODY_TIMEOUT_MS 10000 /* a body held for a secret arrives within */

/* a spooled body's server taking none of it this long is given up */
#define SPOOL_SEND_S 60
/* a relayed connection with no byte either way for this long is closed */
#define SPLICE_IDLE_MS (15 * 60 * 1000)

static unsigned long long splice_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000;
}

void aj_splice_pair(int a, int b, unsigned long long stall_ms)
{
	char buf[2][65536];
	size_t len[2] = {0, 0}, off[2] = {0, 0};
	bool eof[2] = {false, false}, shut[2] = {false, false};
	int fd[2] = {a, b};
	/* direction k's stall window (stall.h): its taker must take
	 * AJ_RELAY_STALL_MIN bytes per stall_ms or all that waits */
	aj_stall_win win[2] = {{0}, {0}};
	/* direction k: fd[k] -> fd[1-k] */
	for (;;) {
		struct pollfd pfd[2] = {{.fd = a}, {.fd = b}};
		bool any = false;
		int wait = SPLICE_IDLE_MS;
		unsigned long long now = splice_now_ms();
		for (int k = 0; k < 2; k++) {
			if (!eof[k] && len[k] == 0)
				pfd[k].events |= POLLIN;
			if (len[k] > off[k]) {
				pfd[1 - k].events |= POLLOUT;
				/* an end that takes too little (a trickle) is dropped */
				unsigned long long left = aj_stall_left(&win[k], now, stall_ms);
				if (stall_ms && !left)
					return;
				if (stall_ms && left < (unsigned long long)wait)
					wait = (int)left;
			}
			if (eof[k] && len[k] == off[k] && !shut[k]) {
				shutdown(fd[1 - k], SHUT_WR);
				shut[k] = true;
			}
			any = any || !shut[k];
		}
		if (!any)
			return;
		/* an fd with nothing to wait for is not polled: a reset socket
		 * would report POLLHUP/POLLERR forever and spin this loop */
		for (int k = 0; k < 2; k++)
			if (!pfd[k].events)
				pfd[k].fd = -1;
		int pr = poll(pfd, 2, wait);
		if (pr == 0 && wait == SPLICE_IDLE_MS)
			return; /* idle for too long */
		if (pr <= 0) {
			if (pr == 0 || errno == EINTR)
				continue;
			return;
		}
		for (int k = 0; k < 2; k++)
			if ((pfd[k].revents & POLLERR) && !(pfd[k].revents & POLLIN))
				return; /* a broken connection ends both directions */
		for (int k = 0; k < 2; k++) {
			if ((pfd[k].revents & (POLLIN | POLLHUP)) && !eof[k] && len[k] == 0) {
				ssize_t r = read(fd[k], buf[k], sizeof(buf[k]));
				if (r <= 0) {
					if (r < 0 && (errno == EINTR || errno == EAGAIN))
						continue;
					eof[k] = true;
				} else {
					len[k] = (size_t)r;
					off[k] = 0;
					aj_stall_open(&win[k], splice_now_ms());
				}
			}
			/* never a blocking send: a peer that stops reading would
			 * hold this thread for good, past every bound */
			if ((pfd[1 - k].revents & (POLLOUT | POLLHUP)) && len[k] > off[k]) {
				ssize_t w = send(fd[1 - k], buf[k] + off[k], len[k] - off[k],
						 MSG_NOSIGNAL | MSG_DONTWAIT);
				if (w < 0 && errno != EINTR && errno != EAGAIN)
					return; /* the peer is gone: both ways end */
				if (w > 0) {
					off[k] += (size_t)w;
					aj_stall_took(&win[k], (size_t)w, splice_now_ms());
				}
				if (off[k] == len[k]) /* all taken: the window closes */
					len[k] = off[k] = 0, win[k].open = false;
			}
		}
	}
}

/* Non-blocking connect with a deadline; returns a connected fd or -errno. */
static int connect_to(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		return -e;
	}
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int e = 0;
	socklen_t el = sizeof(e);
	int r = poll(&p, 1, CONNECT_TIMEOUT_MS);
	if (r <= 0)
		e = r == 0 ? ETIMEDOUT : errno;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (e) {
		close(fd);
		return -e;
	}
	int flags = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

/* Read the request head (up to the empty line) within one deadline for
 * the whole head; returns bytes read or -1. */
static ssize_t read_head(int fd, char *buf, size_t max, size_t *head_end)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	size_t len = 0;
	while (len < max) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = HEAD_TIMEOUT_MS - ((now.tv_sec - t0.tv_sec) * 1000 +
					       (now.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		ssize_t r = read(fd, buf + len, max - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		len += (size_t)r;
		char *end = memmem(buf, len, "\r\n\r\n", 4);
		if (end) {
			*head_end = (size_t)(end - buf) + 4;
			return (ssize_t)len;
		}
	}
	return -1;
}

/* Is ip (network order) one of the addresses of the namespace netd runs
 * in? netd connects from there: its connections don't pass the sandbox's
 * input chain, so it refuses the host's own addresses itself. */
static bool host_local(uint32_t ip)
{
	struct ifaddrs *ifs = NULL;
	if (getifaddrs(&ifs) < 0)
		return true; /* can't tell: refuse */
	bool local = false;
	for (struct ifaddrs *i = ifs; i && !local; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		const struct sockaddr_in *a = (const void *)i->ifa_addr;
		local = a->sin_addr.s_addr == ip;
		if (!local && i->ifa_broadaddr && (i->ifa_flags & IFF_BROADCAST))
			local = ((const struct sockaddr_in *)(const void *)i->ifa_broadaddr)
				    ->sin_addr.s_addr == ip;
	}
	freeifaddrs(ifs);
	return local;
}

/* The address to connect to for req, checked; 0 or an HTTP status. */
static int choose_address(aj_netd_ctx *ctx, const aj_proxy_req *req, struct sockaddr_in *sa,
			  const char **why)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)req->port);
	/* req->host is canonical (aj_host_norm): any spelling of an IPv4
	 * address is checked as that address, never as a name */
	/* --net open (scoped secrets): any address the sandbox could reach
	 * directly, so none of the refused ranges or --deny */
	bool open = ctx->p->net == AJ_NET_OPEN;
	if (req->host_kind == AJ_HOST_IPV4) {
		if (inet_pton(AF_INET, req->host, &sa->sin_addr) != 1 ||
		    (open ? aj_net_is_refused(ctx->p, AF_INET, &sa->sin_addr)
			  : !aj_allow_addr(ctx->p, AF_INET, &sa->sin_addr, req->port)) ||
		    host_local(sa->sin_addr.s_addr)) {
			*why = "address not allowed";
			return 403;
		}
		return 0;
	}
	if (req->host_kind != AJ_HOST_NAME) {
		*why = "IPv6 destinations are not supported";
		return 403;
	}
	const char *name = req->host;
	if (!open && !aj_allow_name(ctx->p, name, req->port)) {
		*why = aj_allow_name(ctx->p, name, 0) ? "port not allowed" : "host not allowed";
		return 403;
	}
	uint32_t addrs[8];
	unsigned ttl;
	int n = aj_dns_lookup4(ctx, name, addrs, AJ_ARRAY_SIZE(addrs), &ttl);
	for (int i = 0; i < n; i++) {
		if (host_local(addrs[i]))
			continue; /* the host itself: never */
		memcpy(&sa->sin_addr, &addrs[i], 4);
		return 0;
	}
	*why = n < 0 ? "name resolution failed" : "no usable address (refused ranges)";
	return 502;
}

typedef struct held {
	http_parser hp;
	aj_body_buf body, extra; /* the body, de-framed; bytes after it */
	bool done, big;		 /* big: past AJ_INJECT_BODY_MAX, streamed (relay_big) */
} held;

static int held_body(http_parser *hp, const char *at, size_t n)
{
	held *h = hp->data;
	if (h->body.len + n > AJ_INJECT_BODY_MAX)
		h->big = h->body.unbounded = true;
	return aj_body_append(&h->body, at, n) < 0;
}

static int held_done(http_parser *hp)
{
	held *h = hp->data;
	h->done = true;
	http_parser_pause(hp, 1);
	return 0;
}

static const http_parser_settings held_set = {.on_body = held_body,
					      .on_message_complete = held_done};

/* Feed n bytes at p to the body's parser; bytes past the body are kept. */
static int held_feed(held *h, const char *p, size_t n)
{
	if (n == 0) /* to http-parser, no bytes means the end of the stream */
		return 0;
	if (h->done)
		return aj_body_append(&h->extra, p, n) < 0 ? -1 : 0;
	size_t k = http_parser_execute(&h->hp, &held_set, p, n);
	enum http_errno e = HTTP_PARSER_ERRNO(&h->hp);
	if (e != HPE_OK && e != HPE_PAUSED)
		return -1;
	if (h->done && k < n && aj_body_append(&h->extra, p + k, n - k) < 0)
		return -1;
	return 0;
}

/* A plain-HTTP request toward a host with "body" secrets (inject.h): its
 * body (Content-Length or chunked) read, de-framed, into h: whole up to
 * AJ_INJECT_BODY_MAX, or its first part past that (h->big: relay_big
 * goes on). 0 (h->done: the whole body; !h->done && !h->big: none), or an
 * HTTP status with *why. */
static int hold_body(int fd, const aj_proxy_req *req, const char *buf, size_t head_end, size_t len,
		     held *h, const char **why)
{
	http_parser_init(&h->hp, HTTP_REQUEST);
	h->hp.data = h;
	size_t k = http_parser_execute(&h->hp, &held_set, buf, head_end);
	enum http_errno e = HTTP_PARSER_ERRNO(&h->hp);
	if (h->done) { /* no body */
		h->done = false;
		return 0;
	}
	if ((e != HPE_OK && e != HPE_PAUSED) || k != head_end) {
		*why = "malformed request body framing";
		return 400;
	}
	if (req->expect_continue) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		(void)send(fd, cont, sizeof(cont) - 1, MSG_NOSIGNAL);
	}
	char *chunk = malloc(65536);
	int r = chunk ? held_feed(h, buf + head_end, len - head_end) : -1;
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (r == 0 && !h->done && !h->big) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = BODY_TIMEOUT_MS - ((now.tv_sec - t0.tv_sec) * 1000 +
					       (now.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;
		if (left <= 0 || poll(&p, 1, (int)left) <= 0 || (n = read(fd, chunk, 65536)) <= 0) {
			r = -2;
			break;
		}
		r = held_feed(h, chunk, (size_t)n);
	}
	if (chunk)
		explicit_bzero(chunk, 65536);
	free(chunk);
	if (r == 0)
		return 0;
	*why = r == -2 ? "the request body did not arrive (10 s)" : "malformed request body";
	return 400;
}

/* The head of req (secrets in) to up: one checked request per connection
 * ("Connection: close"), or a protocol switch (WebSocket: both ways
 * relayed until either side closes). 0 or -1. */
static int send_head(int up, const aj_proxy_req *req)
{
	/* an absolute-form request may come without Host: add it */
	char host[300] = "";
	if (!req->has_host && req->port == 80)
		snprintf(host, sizeof(host), "Host: %s\r\n", req->host);
	else if (!req->has_host)
		snprintf(host, sizeof(host), "Host: %s:%u\r\n", req->host, req->port);
	char *head = aj_asprintf("%s %s HTTP/%d.%d\r\n%s%sConnection: %s\r\n\r\n", req->method,
				 req->target, req->http_major, req->http_minor, host, req->headers,
				 req->upgrade ? "Upgrade" : "close");
	bool ok = head && aj_write_all(up, head, strlen(head)) == 0;
	if (head) /* it may hold a secret's value */
		explicit_bzero(head, strlen(head));
	free(head);
	return ok ? 0 : -1;
}

/* A held body grown past AJ_INJECT_BODY_MAX (h->big), the rest read from
 * fd as it comes (idle 10 s at most) into an aj_body_out: spooled, then
 * the head with its filled length and the body; or the head with
 * "Transfer-Encoding: chunked" and the body filled chunk by chunk. The
 * head's notes are logged once it went. 0: sent; an HTTP status with
 * *why: not sent, or cut (up is then of no use). */
static int relay_big(aj_netd_ctx *ctx, int fd, int up, aj_proxy_req *req, held *h,
		     aj_proxy_notes *notes, const char **why)
{
	long long length = (h->hp.flags & F_CHUNKED)
			       ? -1
			       : (long long)(h->body.len + (size_t)h->hp.content_length);
	aj_body_out bo;
	int st = aj_body_out_start(ctx, &bo, req, length, why);
	if (st)
		return st;
	char host[sizeof(req->host)];
	unsigned port = req->port;
	snprintf(host, sizeof(host), "%s", req->host);
	bool sent = false; /* the head went */
	char *chunk = malloc(65536), *piece = NULL;
	size_t pl = 0;
	if (!chunk)
		st = 500, *why = "out of memory";
	while (st == 0) {
		st = aj_body_out_take(&bo, h->body.p, h->body.len, h->done, &piece, &pl, why);
		if (h->body.p)
			explicit_bzero(h->body.p, h->body.len);
		h->body.len = 0;
		if (st == 0 && !bo.spooling && !sent) {
			if (send_head(up, req) < 0)
				st = 502, *why = "the server closed the connection";
			sent = st == 0;
			aj_proxy_log_notes(ctx, host, port, notes, sent);
		}
		if (st == 0 && pl && aj_write_all(up, piece, pl) < 0)
			st = 502, *why = "the server closed the connection";
		if (piece)
			explicit_bzero(piece, pl);
		free(piece);
		piece = NULL;
		if (st || h->done)
			break;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;
		if (poll(&p, 1, BODY_TIMEOUT_MS) <= 0 || (n = read(fd, chunk, 65536)) <= 0)
			st = 400, *why = "the request body stopped arriving (10 s)";
		else if (held_feed(h, chunk, (size_t)n) < 0)
			st = 400, *why = "malformed request body";
	}
	if (st == 0 && bo.spooling) { /* whole: the head with its length, then the spool */
		/* a server that stops reading can't hold the spool's budget */
		struct timeval tv = {.tv_sec = SPOOL_SEND_S};
		(void)setsockopt(up, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (aj_body_out_ready(&bo, req) < 0)
			st = 431, *why = "the request head is too large";
		else if (send_head(up, req) < 0)
			st = 502, *why = "the server closed the connection";
		sent = st == 0;
		aj_proxy_log_notes(ctx, host, port, notes, sent);
		while (st == 0 && !bo.eof) {
			if (aj_body_out_next(&bo, &piece, &pl) < 0)
				st = 500, *why = "cannot read the proxy's spool";
			else if (pl && aj_write_all(up, piece, pl) < 0)
				st = 502,
				*why = "the server closed the connection or stopped reading";
			if (piece)
				explicit_bzero(piece, pl);
			free(piece);
			piece = NULL;
		}
	}
	if (sent) /* values went out piece by piece */
		aj_proxy_stream_notes(ctx, host, port, &bo.fill, notes);
	aj_body_out_free(&bo);
	if (chunk)
		explicit_bzero(chunk, 65536);
	free(chunk);
	return st;
}

/* The server's answer to an Upgrade request: its final status, and
 * whether that answer has been read whole. */
typedef struct answer {
	int status;
	bool done, head_req;
} answer;

static int answer_head(http_parser *hp)
{
	answer *a = hp->data;
	if (hp->status_code == 101 || hp->status_code >= 200)
		a->status = hp->status_code;	 /* 100, 102, 103 come before it */
	return a->head_req && a->status ? 1 : 0; /* a HEAD's answer has no body */
}

static int answer_done(http_parser *hp)
{
	answer *a = hp->data;
	if (a->status) {
		a->done = true;
		http_parser_pause(hp, 1);
	}
	return 0;
}

/* An Upgrade request went to up: relay the server's answer to fd, reading
 * nothing of the client's. Only a 101 to it turns the connection into a
 * relay of bytes (true); any other answer is relayed to its end and the
 * connection then ends (false): this path carries one checked request per
 * connection, and what the client sends next must come as a new one. */
static bool await_switch(int fd, int up, bool head_req)
{
	static const http_parser_settings set = {.on_headers_complete = answer_head,
						 .on_message_complete = answer_done};
	answer a = {.head_req = head_req};
	http_parser hp;
	http_parser_init(&hp, HTTP_RESPONSE);
	hp.data = &a;
	char *chunk = malloc(65536);
	bool more = chunk != NULL;
	while (more) {
		struct pollfd p = {.fd = up, .events = POLLIN};
		ssize_t n = poll(&p, 1, SPLICE_IDLE_MS) == 1 ? read(up, chunk, 65536) : -1;
		if (n < 0 && errno == EINTR)
			continue;
		size_t k = http_parser_execute(&hp, &set, chunk, n > 0 ? (size_t)n : 0);
		enum http_errno e = HTTP_PARSER_ERRNO(&hp);
		more = n > 0 && (e == HPE_OK || e == HPE_PAUSED) && !a.done;
		/* a 101: what follows it is the new protocol's, the client's;
		 * else nothing past the answer */
		size_t give = n <= 0 ? 0 : a.status == 101 || e != HPE_PAUSED ? (size_t)n : k;
		if (give && aj_write_all(fd, chunk, give) < 0)
			break;
	}
	free(chunk);
	return a.done && a.status == 101;
}

static void log_proxy(aj_netd_ctx *ctx, const aj_proxy_req *req, const struct sockaddr_in *sa,
		      int status, const char *why)
{
	json_t *ev = json_pack("{s:s,s:s,s:s,s:i,s:s}", "event", "proxy", "method", req->method,
			       "host", req->host, "port", (int)req->port, "verdict",
			       status == 0 ? "allowed" : "refused");
	if (!ev)
		return;
	if (sa && status == 0) {
		char text[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &sa->sin_addr, text, sizeof(text));
		json_object_set_new(ev, "address", json_string(text));
	}
	if (status) {
		json_object_set_new(ev, "status", json_integer(status));
		json_object_set_new(ev, "reason", json_string(why));
	}
	aj_netlog(ctx, ev);
}

void aj_proxy_serve(aj_netd_ctx *ctx, int fd)
{
	char *buf = malloc(HEAD_MAX);
	aj_proxy_req *req = calloc(1, sizeof(*req));
	size_t head_end = 0, body_len = 0;
	char *filled = NULL; /* a held body with the secrets in (hold_body) */
	held hold = {0};
	aj_proxy_notes *notes = calloc(1, sizeof(*notes)); /* logged once sent or refused */
	ssize_t len = buf && req && notes ? read_head(fd, buf, HEAD_MAX, &head_end) : -1;
	if (len < 0) {
		if (buf && req && notes)
			aj_proxy_reply(fd, 400, "Bad Request",
				       "agentjail proxy: incomplete or oversized "
				       "request head\n");
		goto out;
	}
	if (aj_proxy_parse(buf, head_end, req) < 0) {
		char body[256];
		snprintf(body, sizeof(body), "agentjail proxy: %s\n", req->error);
		aj_proxy_reply(fd, 400, "Bad Request", body);
		json_t *ev = json_pack("{s:s,s:s,s:s}", "event", "proxy", "verdict", "refused",
				       "reason", req->error);
		aj_netlog(ctx, ev);
		goto out;
	}
	struct sockaddr_in sa;
	const char *why = "";
	int status = choose_address(ctx, req, &sa, &why);
	int up = -1;
	if (status == 0 && (up = connect_to(&sa)) < 0) {
		status = up == -ETIMEDOUT ? 504 : 502;
		why = "connection to the server failed";
	}
	/* HTTPS to a host with scoped secrets: terminated here (proxy_tls.c);
	 * the client must not have sent anything past the CONNECT yet */
	bool intercept =
	    status == 0 && req->connect && ctx->tls && aj_tls_intercepts(ctx->p, req->host);
	if (intercept && (size_t)len > head_end) {
		status = 400;
		why = "data sent before the CONNECT was answered";
		close(up);
	}
	log_proxy(ctx, req, &sa, status, why);
	if (status) {
		char body[512];
		snprintf(body, sizeof(body), "agentjail proxy: %s:%u: %s\n", req->host, req->port,
			 why);
		aj_proxy_reply(fd, status,
			       status == 403   ? "Forbidden"
			       : status == 400 ? "Bad Request"
					       : "Bad Gateway",
			       body);
		goto out;
	}
	if (intercept) {
		free(buf);
		buf = NULL;
		aj_proxy_tls(ctx, fd, up, req);
		close(up);
		goto out;
	}
	if (req->connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		(void)send(fd, ok, sizeof(ok) - 1, MSG_NOSIGNAL);
	} else {
		int ir = aj_proxy_fill_secrets(ctx, req, notes);
		if (ir < 0) {
			aj_proxy_log_notes(ctx, req->host, req->port, notes, false);
			aj_proxy_reply(
			    fd, 431, "Request Header Fields Too Large",
			    "agentjail proxy: the request head is too large with the secret's "
			    "value in it\n");
			close(up);
			goto out;
		}
		/* an Upgrade waits for the server's 101 (await_switch), and only
		 * a request without a body can wait so */
		if (req->upgrade && req->has_body) {
			static const char msg[] =
			    "agentjail proxy: an Upgrade request with a body is not relayed\n";
			aj_proxy_log_notes(ctx, req->host, req->port, notes, false);
			log_proxy(ctx, req, &sa, 400, "an Upgrade request with a body");
			aj_proxy_reply(fd, 400, "Bad Request", msg);
			close(up);
			goto out;
		}
		/* a "body" secret toward this host: the body is held, filled
		 * and sent with its new length; past AJ_INJECT_BODY_MAX spooled
		 * or streamed (relay_big) */
		bool big = false;
		if (!req->upgrade && aj_inject_body_wanted(ctx->p, req->host)) {
			int hs = hold_body(fd, req, buf, head_end, (size_t)len, &hold, &why);
			big = hs == 0 && hold.big;
			int fr = hs == 0 && hold.done && !big
				     ? aj_proxy_fill_body(ctx, req, hold.body.p, hold.body.len,
							  &filled, &body_len, notes)
				     : 0;
			if (big)
				hs = relay_big(ctx, fd, up, req, &hold, notes, &why);
			if (fr == -EFBIG)
				hs = 413,
				why = "the body is too large with the secrets' values in it";
			else if (fr < 0)
				hs = 431, why = "the request head is too large";
			if (hs) {
				char msg[512];
				snprintf(msg, sizeof(msg), "agentjail proxy: %s:%u: %s\n",
					 req->host, req->port, why);
				aj_proxy_log_notes(ctx, req->host, req->port, notes, false);
				log_proxy(ctx, req, &sa, hs, why);
				aj_proxy_reply(fd, hs,
					       hs == 413   ? "Content Too Large"
					       : hs == 431 ? "Request Header Fields Too Large"
					       : hs == 502 ? "Bad Gateway"
					       : hs == 507 ? "Insufficient Storage"
					       : hs == 500 ? "Internal Server Error"
							   : "Bad Request",
					       msg);
				/* the client may still be sending: read on a while,
				 * so that the answer is not lost to a reset */
				shutdown(fd, SHUT_WR);
				char sink[16384];
				struct pollfd pl = {.fd = fd, .events = POLLIN};
				for (int i = 0; i < 1024 && poll(&pl, 1, 1000) == 1 &&
						read(fd, sink, sizeof(sink)) > 0;
				     i++)
					;
				close(up);
				goto out;
			}
		}
		bool ok = big || send_head(up, req) == 0;
		if (ok && filled)
			ok = aj_write_all(up, filled, body_len) == 0;
		if (ok && (filled || big))
			ok = aj_write_all(up, hold.extra.p, hold.extra.len) == 0;
		/* the request went out: now its secret_* lines */
		aj_proxy_log_notes(ctx, req->host, req->port, notes, ok);
		if (!ok) {
			close(up);
			goto out;
		}
		if (filled || big)
			len = (ssize_t)head_end; /* what followed the head is sent */
		/* what the client sent after an Upgrade's head goes on only
		 * once the server switched */
		if (req->upgrade && !await_switch(fd, up, !strcmp(req->method, "HEAD"))) {
			close(up);
			goto out;
		}
	}
	/* what the client sent after the head (a body, TLS hello) goes on */
	if ((size_t)len > head_end &&
	    aj_write_all(up, buf + head_end, (size_t)len - head_end) < 0) {
		close(up);
		goto out;
	}
	free(buf);
	buf = NULL;
	aj_splice_pair(fd, up, 0);
	close(up);
out:
	free(buf);
	if (filled)
		explicit_bzero(filled, body_len);
	free(filled);
	aj_body_free(&hold.body);
	aj_body_free(&hold.extra);
	if (req)
		explicit_bzero(req, sizeof(*req));
	free(req);
	free(notes);
	close(fd);
}

/* A socket connected to the sandbox's loopback: the forwarder runs in the
 * sandbox's network namespace. */
static int connect_inside(unsigned port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return connect_to(&sa);
}

void aj_publish_serve(aj_netd_ctx *ctx, int fd, unsigned port)
{
	int in = connect_inside(port);
	json_t *ev = json_pack("{s:s,s:i,s:s}", "event", "publish", "port", (int)port, "verdict",
			       in >= 0 ? "allowed" : "error");
	if (in < 0 && ev)
		json_object_set_new(ev, "reason", json_string(strerror(-in)));
	aj_netlog(ctx, ev);
	if (in >= 0) {
		aj_splice_pair(fd, in, aj_relay_stall_ms());
		close(in);
	}
	close(fd);
}
