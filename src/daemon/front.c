/* SPDX-License-Identifier: MIT */
/* The front process of `agentjail serve` (docs/api.md, "Two processes"):
 * it listens (sockets bound while still root), then drops to uid 65534
 * with no capability, no_new_privs and a seccomp allow-list before it
 * reads a byte from a client. It parses HTTP, WebSocket and JSON, and asks
 * the supervisor for everything else over the protocol of ipc.h: a request
 * is sent with an id; the supervisor's socket is adopted by the event loop,
 * which reads each reply when it comes and hands it to its request, so no
 * request blocks the loop and no thread stands between the two (a hand-off
 * from a receiver thread cost a wake-up per reply: docs/performance.md). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "caps.h"
#include "conn.h"
#include "front.h"
#include "front_call.h"
#include "front_seccomp.h"
#include "guard.h"
#include "http.h"
#include "stream.h"
#include "tunnel.h"
#include "util.h"

static int ipc = -1;
static int activated = -1;	  /* systemd's listening socket (socket_fd) */
static struct lws_vhost *unix_vh; /* its connections' vhost */
static struct lws_context *context;
static volatile sig_atomic_t stopping;

/* The supervisor's socket in the event loop: a reply is read when poll says
 * one is there (a SEQPACKET message: one recvmsg, which does not block). */
static int ipc_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
			size_t len)
{
	(void)wsi, (void)user, (void)in, (void)len;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		if (aj_front_receive() == 0)
			return 0;
		__attribute__((fallthrough)); /* the supervisor is gone, so are we */
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		stopping = 1;
		lws_cancel_service(context);
		return -1;
	default: return 0;
	}
}

int aj_front_drop(uid_t uid, gid_t gid, aj_error *err)
{
	int r = 0;
	if (geteuid() == 0)
		r = aj_caps_drop_all(uid, gid, 1, err);
	else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		r = aj_err(err, errno, "cannot set no_new_privs");
	if (r == 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		r = aj_err(err, errno, "cannot make the front undumpable");
	return r;
}

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
	if (context)
		lws_cancel_service(context);
}

/* tx_packet_size: what one send() may take (lws's default, rx_buffer_size,
 * cut each 256 KiB chunk of a stream into four sends and kept three of
 * them in a buffer it malloc'ed and copied: stream.c sends what fits) */
static const struct lws_protocols protocols[] = {
    {"http", aj_http_callback, sizeof(aj_req), 65536, 0, NULL, 1u << 20},
    /* WebSocket exec (ws.c), by the subprotocols Kubernetes clients ask for */
    {"v4.channel.k8s.io", aj_http_callback, sizeof(aj_req), 65536, 0, NULL, 1u << 20},
    {"channel.k8s.io", aj_http_callback, sizeof(aj_req), 65536, 0, NULL, 1u << 20},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* systemd's listening socket (socket activation) in the event loop: each
 * connection accepted is adopted by the unix socket's vhost, as lws's own
 * listener would. */
static int accept_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
			   size_t len)
{
	(void)wsi, (void)user, (void)in, (void)len;
	if (reason != LWS_CALLBACK_RAW_RX_FILE)
		return 0;
	int c = accept4(activated, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c >= 0 && !lws_adopt_socket_vhost(unix_vh, c))
		aj_log("error", "agentjail serve: ", "cannot adopt a connection");
	return 0;
}

/* The supervisor's socket and the streams it passes (stream.c), on a vhost
 * of their own that listens nowhere: a client cannot ask for these
 * protocols by name. */
static const struct lws_protocols ipc_protocols[] = {
    {"agentjail-ipc", ipc_callback, 0, 0, 0, NULL, 0},
    {"agentjail-stream", aj_stream_callback, 0, 0, 0, NULL, 0}, /* stream.c */
    {"agentjail-accept", accept_callback, 0, 0, 0, NULL, 0},
    {"agentjail-tunnel", aj_tunnel_callback, 0, 0, 0, NULL, 0}, /* tunnel.c */
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static int adopt_ipc(aj_error *err)
{
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.protocols = ipc_protocols;
	info.vhost_name = "supervisor";
	info.port = CONTEXT_PORT_NO_LISTEN;
	struct lws_vhost *vh = lws_create_vhost(context, &info);
	lws_sock_file_fd_type fd = {.filefd = ipc};
	if (!vh ||
	    !lws_adopt_descriptor_vhost(vh, LWS_ADOPT_RAW_FILE_DESC, fd, "agentjail-ipc", NULL))
		return aj_err(err, ENOMEM, "cannot watch the supervisor's socket");
	lws_sock_file_fd_type lfd = {.filefd = activated};
	if (activated > 2 &&
	    !lws_adopt_descriptor_vhost(vh, LWS_ADOPT_RAW_FILE_DESC, lfd, "agentjail-accept", NULL))
		return aj_err(err, ENOMEM, "cannot watch systemd's socket");
	aj_exec_set_context(context, vh);
	return 0;
}

static int make_vhost(const aj_daemon_opts *o, bool tcp, aj_error *err)
{
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.protocols = protocols;
	info.vhost_name = tcp ? "tcp" : "unix";
	info.keepalive_timeout = 30;
	char host[256] = "";
	if (tcp) {
		const char *colon = strrchr(o->listen, ':');
		unsigned long long port;
		if (!colon || aj_parse_uint(colon + 1, 65535, &port) < 0 || port == 0)
			return aj_err(err, EINVAL, "--listen '%s': expected ADDR:PORT", o->listen);
		snprintf(host, sizeof(host), "%.*s", (int)(colon - o->listen), o->listen);
		info.port = (int)port;
		info.iface = host[0] ? host : NULL;
	} else if (o->socket_fd > 2) { /* systemd's: its connections are adopted */
		activated = o->socket_fd;
		info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
	} else {
		info.options = LWS_SERVER_OPTION_UNIX_SOCK;
		info.iface = o->socket;
		info.port = 0; /* lws: a unix socket wants port 0 */
	}
	struct lws_vhost *vh = lws_create_vhost(context, &info);
	if (!vh)
		return aj_err(err, EADDRINUSE, "cannot listen on %s", tcp ? o->listen : o->socket);
	if (!tcp)
		unix_vh = vh;
	/* (systemd's socket has the mode of its unit's SocketMode=) */
	if (!tcp && o->socket_fd <= 2 && chmod(o->socket, 0600) < 0)
		return aj_err(err, errno, "chmod %s", o->socket);
	return 0;
}

/* The front's fd limit, raised (as root before the drop, the hard limit
 * too) to AJ_FRONT_NOFILE: lws serves at most that many connections, and
 * the unauthenticated budget (guard.c) takes only a part of them. */
static unsigned raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	if (rl.rlim_max < AJ_FRONT_NOFILE && geteuid() == 0)
		rl.rlim_max = AJ_FRONT_NOFILE;
	rl.rlim_cur = rl.rlim_max < AJ_FRONT_NOFILE ? rl.rlim_max : AJ_FRONT_NOFILE;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	return rl.rlim_cur > AJ_FRONT_NOFILE ? AJ_FRONT_NOFILE : (unsigned)rl.rlim_cur;
}

/* The context and its listeners (as root: privileged ports, the socket's
 * directory). */
static int make_context(const aj_daemon_opts *o, aj_error *err)
{
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_DISABLE_IPV6;
	info.max_http_header_data = 4096; /* a header flood gets 431 */
	info.max_http_header_pool = AJ_FRONT_HEADER_POOL;
	info.timeout_secs = 20;
	info.fd_limit_per_thread = raise_nofile();
	/* info too: lws tells some header overflows only there (aj_guard_log) */
	aj_guard_log_level(o->quiet ? LLL_ERR : LLL_ERR | LLL_WARN);
	lws_set_log_level(LLL_ERR | LLL_WARN | LLL_NOTICE | LLL_INFO, aj_guard_log);
	context = lws_create_context(&info);
	if (!context)
		return aj_err(err, ENOMEM, "cannot create the libwebsockets context");
	int r = make_vhost(o, false, err);
	if (r == 0 && o->listen)
		r = make_vhost(o, true, err);
	if (r == 0)
		r = adopt_ipc(err);
	return r;
}

void aj_front_main(const aj_daemon_opts *o, int sock, const char *token_value)
{
	pid_t parent = getppid();
	ipc = sock;
	aj_front_call_init(sock);
	(void)token_value; /* the tokens' digests are tenant.c's */
	struct sigaction sa = {.sa_handler = on_signal}, ign = {.sa_handler = SIG_IGN};
	sigaction(SIGINT, &ign, NULL); /* the supervisor says when (SIGTERM) */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	aj_error err;
	aj_err_clear(&err);
	aj_guard_set_timeout(o->header_timeout_s ? o->header_timeout_s : 10);
	int r = make_context(o, &err);
	bool quiet = o->quiet;
	char where[600];
	snprintf(where, sizeof(where), "%s%s%s", o->socket, o->listen ? " and " : "",
		 o->listen ? o->listen : "");
	aj_proctitle_set("agentjail-front"); /* over argv: o's strings are gone */
	prctl(PR_SET_NAME, "agentjail-front", 0, 0, 0);
	if (r == 0)
		r = aj_front_drop(AJ_FRONT_UID, AJ_FRONT_UID, &err);
	/* dies with the supervisor (set after the drop: a credential change clears it) */
	if (r == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent))
		r = aj_err(&err, ESRCH, "the supervisor is gone");
	if (r == 0)
		r = aj_front_seccomp(&err);
	if (r < 0) {
		char msg[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
		aj_err_format(&err, msg, sizeof(msg));
		aj_log("error", "agentjail: error: ", "%s", msg);
		_exit(AJ_EXIT_INTERNAL);
	}
	if (!quiet)
		aj_log("info", "agentjail: ", "serving on %s", where);
	while (!stopping) {
		aj_guard_before_service();
		if (lws_service(context, 0) < 0)
			break;
	}
	lws_context_destroy(context);
	_exit(0);
}
