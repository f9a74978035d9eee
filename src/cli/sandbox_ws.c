/* SPDX-License-Identifier: MIT */
/* agentjail sandbox exec -t: an interactive command over the service's
 * WebSocket exec (Kubernetes channels: 0 stdin, 1 stdout, 2 stderr,
 * 3 status, 4 resize), with a pseudo-terminal in the sandbox. Our terminal
 * is put in raw mode; its size follows ours (SIGWINCH). A thread reads our
 * stdin and wakes the libwebsockets loop (lws_cancel_service). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <libwebsockets.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "error.h"
#include "pty.h"
#include "sandbox_ws.h"

#define PEND_MAX (64 * 1024)
#define STATUS_MAX (64 * 1024)

typedef struct session {
	struct lws_context *ctx;
	struct lws *wsi;
	const char *auth; /* "Authorization: Bearer ..." or "" */
	pthread_mutex_t mu;
	pthread_cond_t room;
	unsigned char pend[PEND_MAX]; /* stdin not sent yet */
	size_t plen;
	bool eof, eof_sent, resize, closing, done;
	unsigned short cols, rows;
	int channel; /* of the message being received */
	char status[STATUS_MAX];
	size_t slen;
	int exit_code;
	char error[512];
} session;

/* The first error wins: what + detail. */
static void set_error(session *s, const char *what, const char *detail)
{
	if (!s->error[0])
		snprintf(s->error, sizeof(s->error), "%s%s", what, detail ? detail : "");
}

static void on_status(session *s)
{
	json_t *o = json_loadb(s->status, s->slen, 0, NULL);
	json_t *aj = json_object_get(o, "agentjail");
	json_t *code = json_object_get(aj, "exit_code");
	const char *m = json_string_value(json_object_get(json_object_get(aj, "error"), "message"));
	if (json_is_integer(code)) {
		s->exit_code = (int)json_integer_value(code);
		if (m)
			fprintf(stderr, "\r\nagentjail: %s\r\n", m);
		else if (json_is_true(json_object_get(aj, "timed_out")))
			fprintf(stderr,
				"\r\nagentjail: timeout: the command was stopped (exit 124)\r\n");
		else if (json_is_true(json_object_get(aj, "oom_killed")))
			fprintf(stderr,
				"\r\nagentjail: out of memory: the kernel killed a process\r\n");
	} else {
		set_error(s, "the service sent a status without an exit code", NULL);
	}
	json_decref(o);
}

static int send_msg(struct lws *wsi, unsigned char ch, const void *data, size_t len)
{
	unsigned char buf[LWS_PRE + 1 + PEND_MAX];
	buf[LWS_PRE] = ch;
	memcpy(buf + LWS_PRE + 1, data, len);
	return lws_write(wsi, buf + LWS_PRE, len + 1, LWS_WRITE_BINARY) < (int)(len + 1) ? -1 : 0;
}

static int on_writeable(session *s, struct lws *wsi)
{
	unsigned char chunk[PEND_MAX];
	size_t n = 0;
	bool resize = false, eof = false;
	char size[64];
	pthread_mutex_lock(&s->mu);
	if (s->resize) {
		resize = true;
		s->resize = false;
		snprintf(size, sizeof(size), "{\"Width\":%u,\"Height\":%u}", s->cols, s->rows);
	} else if (s->plen) {
		n = s->plen;
		memcpy(chunk, s->pend, n);
		s->plen = 0;
		pthread_cond_signal(&s->room);
	} else if (s->eof && !s->eof_sent) {
		eof = s->eof_sent = true;
	}
	bool more = s->resize || s->plen || (s->eof && !s->eof_sent);
	pthread_mutex_unlock(&s->mu);
	int r = 0;
	if (resize)
		r = send_msg(wsi, 4, size, strlen(size));
	else if (n || eof)
		r = send_msg(wsi, 0, chunk, n);
	if (!r && more)
		lws_callback_on_writable(wsi);
	return r;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		    size_t len)
{
	session *s = lws_context_user(lws_get_context(wsi));
	switch (reason) {
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
		if (s->auth[0]) {
			unsigned char **p = in, *end = *p + len;
			const char *v = s->auth + strlen("Authorization: ");
			if (lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_AUTHORIZATION,
							 (const unsigned char *)v, (int)strlen(v),
							 p, end))
				return -1;
		}
		break;
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		s->wsi = wsi;
		lws_callback_on_writable(wsi);
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE: {
		const unsigned char *p = in;
		if (lws_is_first_fragment(wsi)) {
			if (!len)
				break;
			s->channel = p[0];
			p++, len--;
		}
		if (s->channel == 1 || s->channel == 2) {
			FILE *f = s->channel == 1 ? stdout : stderr;
			fwrite(p, 1, len, f);
			fflush(f);
		} else if (s->channel == 3) {
			if (s->slen + len > sizeof(s->status))
				return -1;
			memcpy(s->status + s->slen, p, len);
			s->slen += len;
			if (lws_is_final_fragment(wsi))
				on_status(s);
		}
		break;
	}
	case LWS_CALLBACK_CLIENT_WRITEABLE: return on_writeable(s, wsi);
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		if (s->wsi)
			lws_callback_on_writable(s->wsi);
		break;
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		if (len > 2) {
			char reason_text[256];
			snprintf(reason_text, sizeof(reason_text), "%.*s",
				 (int)(len - 2 < 255 ? len - 2 : 255), (const char *)in + 2);
			set_error(s, reason_text, NULL);
		}
		break;
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		set_error(s, "cannot open the WebSocket: ", in ? (const char *)in : "refused");
		s->done = true;
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		s->done = true;
		s->wsi = NULL;
		break;
	default: break;
	}
	(void)user;
	return 0;
}

static const struct lws_protocols protocols[] = {
    {"v4.channel.k8s.io", callback, 0, PEND_MAX + 64, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void window_size(session *s)
{
	struct winsize ws;
	if ((ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 ||
	     ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) &&
	    ws.ws_col && ws.ws_row) {
		pthread_mutex_lock(&s->mu);
		s->cols = ws.ws_col;
		s->rows = ws.ws_row;
		s->resize = true;
		pthread_mutex_unlock(&s->mu);
	}
}

/* Our stdin and SIGWINCH (blocked in every thread, read from a signalfd). */
static void *reader(void *arg)
{
	session *s = arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	struct pollfd pf[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
			       {.fd = sfd, .events = POLLIN}};
	bool in_open = true;
	while (!__atomic_load_n(&s->closing, __ATOMIC_ACQUIRE)) {
		pf[0].fd = in_open ? STDIN_FILENO : -1;
		if (poll(pf, 2, 200) < 0 && errno != EINTR)
			break;
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) > 0)
				window_size(s);
		}
		if (in_open && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			unsigned char buf[4096];
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
			pthread_mutex_lock(&s->mu);
			if (n <= 0 && !(n < 0 && errno == EINTR)) {
				s->eof = true;
				in_open = false;
			}
			while (n > 0 && s->plen + (size_t)n > sizeof(s->pend) && !s->closing)
				pthread_cond_wait(&s->room, &s->mu);
			if (n > 0 && !s->closing) {
				memcpy(s->pend + s->plen, buf, (size_t)n);
				s->plen += (size_t)n;
			}
			pthread_mutex_unlock(&s->mu);
		}
		lws_cancel_service(s->ctx);
	}
	if (sfd >= 0)
		close(sfd);
	return NULL;
}

/* "?command=A&command=B&stdin=true&tty=true..." (curl escapes the values). */
static char *query(char **argv, int argc, const char *cwd, const char *timeout, char **env,
		   int nenv)
{
	CURL *h = curl_easy_init();
	size_t cap = 64;
	for (int i = 0; i < argc; i++)
		cap += 3 * strlen(argv[i]) + 16;
	for (int i = 0; i < nenv; i++)
		cap += 3 * strlen(env[i]) + 16;
	cap += cwd ? 3 * strlen(cwd) + 8 : 0;
	cap += timeout ? 3 * strlen(timeout) + 16 : 0;
	char *q = h ? malloc(cap) : NULL;
	if (!q) {
		curl_easy_cleanup(h);
		return NULL;
	}
	size_t off = (size_t)snprintf(q, cap, "?stdin=true&tty=true");
#define ADD(name, v)                                                                               \
	do {                                                                                       \
		char *e = curl_easy_escape(h, (v), 0);                                             \
		off += (size_t)snprintf(q + off, cap - off, "&%s=%s", (name), e ? e : "");         \
		curl_free(e);                                                                      \
	} while (0)
	for (int i = 0; i < argc; i++)
		ADD("command", argv[i]);
	for (int i = 0; i < nenv; i++)
		ADD("env", env[i]);
	if (cwd)
		ADD("cwd", cwd);
	if (timeout)
		ADD("timeout", timeout);
#undef ADD
	curl_easy_cleanup(h);
	return q;
}

int aj_sandbox_exec_tty(const aj_ws_target *t, const char *id, char **argv, int argc,
			const char *cwd, const char *timeout, char **env, int nenv)
{
	static session s; /* big: not on the stack */
	memset(&s, 0, sizeof(s));
	s.auth = t->auth;
	s.exit_code = AJ_EXIT_INTERNAL;
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.room, NULL);
	lws_set_log_level(0, NULL);

	char *q = query(argv, argc, cwd, timeout, env, nenv);
	char path[16384];
	if (!q ||
	    snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec%s", id, q) >= (int)sizeof(path)) {
		free(q);
		fprintf(stderr, "agentjail: exec -t: the command line is too long\n");
		return AJ_EXIT_INTERNAL;
	}
	free(q);

	char address[512], host[256] = "agentjail";
	int port = 0;
	bool tls = false;
	if (t->url) {
		char copy[512];
		const char *proto, *addr, *upath;
		snprintf(copy, sizeof(copy), "%s", t->url);
		if (lws_parse_uri(copy, &proto, &addr, &port, &upath) ||
		    (strcmp(proto, "http") && strcmp(proto, "https"))) {
			fprintf(stderr, "agentjail: --url %s: expected http(s)://HOST:PORT\n",
				t->url);
			return AJ_EXIT_INTERNAL;
		}
		tls = !strcmp(proto, "https");
		snprintf(address, sizeof(address), "%s", addr);
		snprintf(host, sizeof(host), "%s", addr);
	} else {
		snprintf(address, sizeof(address), "+%s", t->socket);
	}

	struct lws_context_creation_info ci;
	memset(&ci, 0, sizeof(ci));
	ci.port = CONTEXT_PORT_NO_LISTEN;
	ci.protocols = protocols;
	ci.user = &s;
	ci.options = tls ? LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT : 0;
	s.ctx = lws_create_context(&ci);
	if (!s.ctx) {
		fprintf(stderr, "agentjail: cannot start a WebSocket client\n");
		return AJ_EXIT_INTERNAL;
	}
	struct lws_client_connect_info cc;
	memset(&cc, 0, sizeof(cc));
	cc.context = s.ctx;
	cc.address = address;
	cc.port = port;
	cc.path = path;
	cc.host = host;
	cc.origin = host;
	cc.protocol = protocols[0].name;
	cc.ssl_connection = tls ? LCCSCF_USE_SSL : 0;

	/* SIGWINCH is read by the reader thread's signalfd */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	aj_term term = {0};
	aj_term_make_raw(&term, STDIN_FILENO);
	window_size(&s);

	pthread_t th;
	bool have_thread = false;
	if (!lws_client_connect_via_info(&cc)) {
		set_error(&s, "cannot reach the service at ", t->url ? t->url : t->socket);
	} else {
		have_thread = pthread_create(&th, NULL, reader, &s) == 0;
		while (!s.done && lws_service(s.ctx, 0) >= 0)
			;
	}
	pthread_mutex_lock(&s.mu);
	__atomic_store_n(&s.closing, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&s.room);
	pthread_mutex_unlock(&s.mu);
	if (have_thread)
		pthread_join(th, NULL);
	aj_term_restore(&term);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	lws_context_destroy(s.ctx);
	if (!s.slen) {
		fprintf(stderr, "agentjail: %s\n",
			s.error[0] ? s.error : "the service closed the session without a status");
		return AJ_EXIT_INTERNAL;
	}
	return s.exit_code;
}
