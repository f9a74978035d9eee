/* SPDX-License-Identifier: MIT */
/* agentjail serve: options, state directory, listeners (a unix socket,
 * optionally TCP with a bearer token), the event loop, TTLs, shutdown. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"
#include "pool.h"
#include "util.h"

int aj_http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		     size_t len);

static char token[256];
static volatile sig_atomic_t stopping;
static struct lws_context *context;
static lws_sorted_usec_list_t ttl_timer;

bool aj_http_token_ok(aj_req *r)
{
	if (!r->remote)
		return true; /* the unix socket: its mode (0600) says who may connect */
	if (!token[0])
		return false;
	char h[320];
	int n = lws_hdr_copy(r->wsi, h, sizeof(h), WSI_TOKEN_HTTP_AUTHORIZATION);
	if (n <= 7 || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	const char *t = h + 7;
	size_t tl = strlen(t), kl = strlen(token);
	unsigned char diff = (unsigned char)(tl != kl);
	for (size_t i = 0; i < kl; i++) /* constant time in the token's length */
		diff |= (unsigned char)(token[i] ^ (i < tl ? t[i] : 0));
	return diff == 0;
}

static int read_token(const char *path, aj_error *err)
{
	_cleanup_free_ char *txt = NULL;
	int r = aj_read_file(path, &txt, NULL);
	if (r < 0)
		return aj_err(err, -r, "cannot read --token-file %s", path);
	size_t n = strcspn(txt, "\r\n");
	txt[n] = '\0';
	if (n < 16 || n >= sizeof(token) || strpbrk(txt, " \t"))
		return aj_err(err, EINVAL,
			      "--token-file %s: expected one line of 16 to %zu characters", path,
			      sizeof(token) - 1);
	snprintf(token, sizeof(token), "%s", txt);
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
	if (context)
		lws_cancel_service(context);
}

static void ttl_tick(lws_sorted_usec_list_t *sul)
{
	aj_registry_expire();
	lws_sul_schedule(context, 0, sul, ttl_tick, LWS_US_PER_SEC / 2);
}

static const struct lws_protocols protocols[] = {
    {"http", aj_http_callback, sizeof(aj_req), 65536, 0, NULL, 0},
    /* WebSocket exec (ws.c), by the subprotocols Kubernetes clients ask for */
    {"v4.channel.k8s.io", aj_http_callback, sizeof(aj_req), 65536, 0, NULL, 0},
    {"channel.k8s.io", aj_http_callback, sizeof(aj_req), 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

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
	} else {
		info.options = LWS_SERVER_OPTION_UNIX_SOCK;
		info.iface = o->socket;
		info.port = 0; /* lws: a unix socket wants port 0 */
	}
	if (!lws_create_vhost(context, &info))
		return aj_err(err, EADDRINUSE, "cannot listen on %s", tcp ? o->listen : o->socket);
	if (!tcp && chmod(o->socket, 0600) < 0)
		return aj_err(err, errno, "chmod %s", o->socket);
	return 0;
}

static int make_context(const aj_daemon_opts *o, aj_error *err)
{
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_DISABLE_IPV6;
	info.max_http_header_data = 4096; /* a header flood gets 431/closes */
	info.max_http_header_pool = 256;
	info.timeout_secs = 20; /* a slow client is dropped */
	info.fd_limit_per_thread = 4096;
	lws_set_log_level(o->quiet ? LLL_ERR : LLL_ERR | LLL_WARN, NULL);
	context = lws_create_context(&info);
	if (!context)
		return aj_err(err, ENOMEM, "cannot create the libwebsockets context");
	aj_exec_set_context(context);
	/* a stale socket of a killed service (never anything else) */
	struct stat st;
	if (lstat(o->socket, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(o->socket);
	int r = make_vhost(o, false, err);
	if (r == 0 && o->listen)
		r = make_vhost(o, true, err);
	return r;
}

/* One service per state directory: a lock held for the service's life. */
static int lock_state(const char *dir, aj_error *err)
{
	int r = aj_mkdir_p(dir, 0700);
	if (r < 0)
		return aj_err(err, -r, "cannot create --state-dir %s", dir);
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/lock", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return aj_err(err, errno, "cannot open %s", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		r = aj_err(err, EBUSY, "another agentjail serve uses %s", dir);
		aj_err_hint(err, "stop it, or give this one its own --state-dir");
		return r;
	}
	return fd;
}

static int start(const aj_daemon_opts *o, aj_error *err)
{
	if (o->listen && !o->token_file)
		return aj_err(err, EINVAL,
			      "--listen needs --token-file: TCP clients must "
			      "authenticate");
	if (o->token_file && read_token(o->token_file, err) < 0)
		return -EINVAL;
	char path[PATH_MAX];
	aj_registry_init(o->state_dir, o->max_sandboxes);
	for (size_t i = 0; i < o->n_pools; i++)
		if (aj_pool_add(o->pools[i], err) < 0)
			return -EINVAL;
	aj_registry_sweep();
	if (aj_pool_start(err) < 0)
		return -EAGAIN;
	snprintf(path, sizeof(path), "%s/audit.log", o->state_dir);
	if (aj_audit_open(path, err) < 0)
		return -EIO;
	_cleanup_free_ char *sockdir = strdup(o->socket);
	char *slash = sockdir ? strrchr(sockdir, '/') : NULL;
	if (slash && slash != sockdir) {
		*slash = '\0';
		(void)aj_mkdir_p(sockdir, 0755);
	}
	return make_context(o, err);
}

int aj_daemon_run(const aj_daemon_opts *o, aj_error *err)
{
	int lock = lock_state(o->state_dir, err);
	if (lock < 0)
		return lock;
	struct sigaction sa = {.sa_handler = on_signal}, ign = {.sa_handler = SIG_IGN};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	int r = start(o, err);
	if (r == 0) {
		aj_audit("start", json_pack("{s:s, s:s?, s:i}", "socket", o->socket, "listen",
					    o->listen, "pid", (int)getpid()));
		lws_sul_schedule(context, 0, &ttl_timer, ttl_tick, LWS_US_PER_SEC / 2);
		if (!o->quiet)
			fprintf(stderr, "agentjail: serving on %s%s%s\n", o->socket,
				o->listen ? " and " : "", o->listen ? o->listen : "");
		while (!stopping && lws_service(context, 0) >= 0)
			;
		aj_audit("stop", NULL);
	}
	aj_registry_destroy_all();
	aj_pool_stop(); /* after: its thread built some of them */
	aj_exec_shutdown();
	if (context)
		lws_context_destroy(context);
	context = NULL;
	struct stat st;
	if (r == 0 && lstat(o->socket, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(o->socket);
	aj_audit_close();
	explicit_bzero(token, sizeof(token));
	close(lock);
	return r;
}
