/* SPDX-License-Identifier: MIT */
/* netd: the network helper of one sandbox, a child of agentjail in
 * agentjail's network namespace. It serves, on the sandbox's gateway
 * address, the resolver (UDP and TCP 53) and the HTTP(S) proxy of --allow;
 * on the host's 127.0.0.1 the --publish ports; and writes --net-log. It
 * dies with agentjail (parent-death signal) and is killed at teardown, so
 * it holds no state beyond the sandbox's life. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <nftables/libnftables.h>
#include <unistd.h>

#include "caps.h"
#include "dns.h"
#include "net_addr.h"
#include "netd.h"
#include "netd_ctx.h"
#include "netlog.h"
#include "nft.h"
#include "proxy.h"
#include "sysfilter.h"
#include "tls.h"
#include "util.h"

#define MAX_THREADS 256
#define MAX_LISTEN (3 + AJ_MAX_PUBLISH + 2)

enum kind { K_DNS_UDP, K_DNS_TCP, K_PROXY, K_PUBLISH, K_NFLOG, K_STOP };

typedef struct listener {
	int fd;
	enum kind kind;
	unsigned port; /* K_PUBLISH: the sandbox's port */
} listener;

static atomic_int n_threads;

bool aj_netd_needed(const aj_policy *p)
{
	return aj_net_proxied(p) || p->n_publish > 0 || (p->net_log && p->net != AJ_NET_NONE);
}

static int bind_socket(int type, uint32_t ip_be, unsigned port)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = ip_be;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 128) < 0)) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

typedef struct job {
	aj_netd_ctx *ctx;
	enum kind kind;
	int fd;
	unsigned port;
	uint8_t pkt[512];
	size_t len;
	struct sockaddr_in from;
} job;

/* DNS over TCP: two-byte length, message; one query per connection */
static void dns_tcp(aj_netd_ctx *ctx, int fd)
{
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	uint8_t lenb[2], q[4096], out[4096 + 2];
	if (aj_read_all(fd, lenb, 2) < 0)
		return;
	size_t len = (size_t)lenb[0] << 8 | lenb[1];
	if (len == 0 || len > sizeof(q) || aj_read_all(fd, q, len) < 0)
		return;
	ssize_t n = aj_dns_handle(ctx, q, len, out + 2, sizeof(out) - 2);
	if (n < 0)
		return;
	out[0] = (uint8_t)(n >> 8);
	out[1] = (uint8_t)n;
	(void)aj_write_all(fd, out, (size_t)n + 2);
}

static void *job_thread(void *arg)
{
	job *j = arg;
	switch (j->kind) {
	case K_DNS_UDP: {
		uint8_t out[512];
		ssize_t n = aj_dns_handle(j->ctx, j->pkt, j->len, out, sizeof(out));
		if (n > 0)
			(void)sendto(j->fd, out, (size_t)n, MSG_NOSIGNAL,
				     (struct sockaddr *)&j->from, sizeof(j->from));
		break;
	}
	case K_DNS_TCP:
		dns_tcp(j->ctx, j->fd);
		close(j->fd);
		break;
	case K_PROXY: aj_proxy_serve(j->ctx, j->fd); break;
	case K_PUBLISH: aj_publish_serve(j->ctx, j->fd, j->port); break;
	case K_NFLOG:
	case K_STOP: break;
	}
	free(j);
	atomic_fetch_sub(&n_threads, 1);
	return NULL;
}

static void spawn(job *j)
{
	pthread_attr_t a;
	pthread_t t;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	atomic_fetch_add(&n_threads, 1);
	if (pthread_create(&t, &a, job_thread, j) != 0) {
		atomic_fetch_sub(&n_threads, 1);
		if (j->kind != K_DNS_UDP)
			close(j->fd);
		free(j);
	}
	pthread_attr_destroy(&a);
}

static void serve_one(aj_netd_ctx *ctx, const listener *l)
{
	job *j = calloc(1, sizeof(*j));
	if (!j)
		return;
	*j = (job){.ctx = ctx, .kind = l->kind, .port = l->port, .fd = -1};
	if (l->kind == K_DNS_UDP) {
		socklen_t sl = sizeof(j->from);
		ssize_t n = recvfrom(l->fd, j->pkt, sizeof(j->pkt), MSG_DONTWAIT,
				     (struct sockaddr *)&j->from, &sl);
		if (n <= 0 || atomic_load(&n_threads) >= MAX_THREADS) {
			free(j);
			return;
		}
		j->len = (size_t)n;
		j->fd = l->fd;
	} else {
		j->fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (j->fd < 0 || atomic_load(&n_threads) >= MAX_THREADS) {
			if (j->fd >= 0)
				close(j->fd);
			free(j);
			return;
		}
	}
	spawn(j);
}

static void loop(aj_netd_ctx *ctx, listener *ls, size_t n)
{
	struct pollfd pfd[MAX_LISTEN];
	for (size_t i = 0; i < n; i++)
		pfd[i] = (struct pollfd){.fd = ls[i].fd, .events = POLLIN};
	for (;;) {
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (size_t i = 0; i < n; i++) {
			if (ls[i].kind == K_STOP && pfd[i].revents) {
				/* agentjail tears down: log what the kernel still
				 * holds for us, then go */
				for (size_t k = 0; k < n; k++)
					while (ls[k].kind == K_NFLOG &&
					       aj_nflog_read(ctx, ls[k].fd) == 0)
						;
				return;
			}
			if (!(pfd[i].revents & POLLIN))
				continue;
			if (ls[i].kind == K_NFLOG)
				(void)aj_nflog_read(ctx, ls[i].fd);
			else
				serve_one(ctx, &ls[i]);
		}
	}
}

/* netd parses what the sandbox sends (DNS, HTTP): once its sockets exist it
 * runs as nobody with CAP_NET_ADMIN only (for the nft set of --allow; none
 * otherwise), no_new_privs and a seccomp filter. */
static int drop_privileges(const aj_netd_ctx *ctx, aj_error *err)
{
	int keep[1];
	size_t n = 0;
	if (ctx->p->net == AJ_NET_ALLOW && !ctx->publisher_child)
		keep[n++] = CAP_NET_ADMIN;
	uid_t nobody = 65534;
	int r = ctx->privileged ? aj_caps_drop_keep(nobody, nobody, 1, keep, n, err)
				/* unprivileged: nothing to give up but caps */
				: aj_caps_drop_keep(geteuid(), getegid(), 0, NULL, 0, err);
	return r < 0 ? r : aj_seccomp_netd(err);
}

/* --publish: join the sandbox's network namespace for good (unprivileged:
 * through its user namespace, where we own every capability), so that the
 * forwarders' sockets are made there. */
static int join_sandbox_net(const aj_netd_ctx *ctx, pid_t child, aj_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)child);
	_cleanup_close_ int ns = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)child);
	_cleanup_close_ int us = ctx->privileged ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0 || (!ctx->privileged && (us < 0 || setns(us, CLONE_NEWUSER) < 0)) ||
	    setns(ns, CLONE_NEWNET) < 0)
		return aj_err(err, errno, "--publish: cannot join the sandbox's network");
	return 0;
}

/* A child reports its setup over fd as one aj_error (empty: ready); wait
 * for it (10 s at most), and pass its error on. */
static int await_child_open(int fd, const char *what, aj_error *err)
{
	aj_error child_err;
	struct pollfd pw = {.fd = fd, .events = POLLIN};
	int r = poll(&pw, 1, 10000) == 1 ? aj_read_all(fd, &child_err, sizeof(child_err)) : -1;
	if (r < 0)
		return aj_err(err, EPROTO, "%s did not start", what);
	if (child_err.code || child_err.msg[0]) {
		*err = child_err;
		return -(child_err.code ? child_err.code : EINVAL);
	}
	return 0;
}

/* await_child_open, and close fd */
static int await_child(int fd, const char *what, aj_error *err)
{
	int r = await_child_open(fd, what, err);
	close(fd);
	return r;
}

/* netd's CA certificate, after its ready report (netd_main) */
static int read_ca(int fd, aj_net *n, aj_error *err)
{
	uint32_t len = 0;
	if (aj_read_all(fd, &len, sizeof(len)) < 0 || len == 0 || len > 65536 ||
	    !(n->ca_pem = calloc(1, (size_t)len + 1)) || aj_read_all(fd, n->ca_pem, len) < 0)
		return aj_err(err, EPROTO, "the network helper gave no CA certificate");
	return 0;
}

/* With --allow, netd itself stays in agentjail's namespace: the --publish
 * listeners go to a child of their own that joins the sandbox's (and keeps
 * no capability). Returns 1 in that child, 0 in netd, or -errno. */
static int split_publisher(aj_netd_ctx *ctx, pid_t child, listener *ls, size_t *n, aj_error *err)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return aj_err(err, errno, "pipe");
	pid_t pub = fork();
	if (pub < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return aj_err(err, errno, "--publish: cannot start the forwarder");
	}
	size_t k = 0;
	for (size_t i = 0; i < *n; i++) {
		bool publish = ls[i].kind == K_PUBLISH;
		if (publish == (pub == 0))
			ls[k++] = ls[i];
		else
			close(ls[i].fd);
	}
	*n = k;
	if (pub == 0) {
		close(pfd[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "agentjail-pub");
		ctx->publisher_child = true;
		if (ctx->nft) {
			nft_ctx_free(ctx->nft);
			ctx->nft = NULL;
		}
		aj_tls_free(ctx->tls); /* the CA's key stays in netd only */
		ctx->tls = NULL;
		if (ctx->spool_dir > 0) /* nor its spool: the forwarder parses no bodies */
			close(ctx->spool_dir);
		ctx->spool_dir = 0;
		int r = join_sandbox_net(ctx, child, err);
		if (r == 0)
			r = drop_privileges(ctx, err);
		(void)aj_write_all(pfd[1], err, sizeof(*err));
		close(pfd[1]);
		if (r < 0)
			_exit(1);
		return 1;
	}
	close(pfd[1]);
	ctx->publisher = pub;
	return await_child(pfd[0], "--publish: the forwarder", err);
}

/* A :body secret's large request bodies (proxy_common.h) are spooled into
 * $AGENTJAIL_STATE_DIR/spool (default /var/lib/agentjail/spool): 0700,
 * owned by the uid netd runs as once it dropped its privileges; netd
 * keeps an fd to it and makes only unlinked files there (O_TMPFILE). Up
 * to $AGENTJAIL_BODY_SPOOL_MAX bytes a body (default 256 MiB; a bad
 * value stops the start). A directory it cannot make or own: no spool
 * (those bodies go chunked, as before). */
static int open_spool(aj_netd_ctx *ctx, aj_error *err)
{
	ctx->spool_max = 256ULL << 20;
	const char *max = getenv("AGENTJAIL_BODY_SPOOL_MAX");
	if (max && (aj_parse_size(max, &ctx->spool_max) < 0 || ctx->spool_max == 0)) {
		aj_err(err, EINVAL, "AGENTJAIL_BODY_SPOOL_MAX=%s is not a size", max);
		aj_err_hint(err, "give bytes, or a size such as 64M or 1G");
		return -EINVAL;
	}
	const char *state = getenv("AGENTJAIL_STATE_DIR");
	if (!state || state[0] != '/')
		state = "/var/lib/agentjail";
	char path[4096];
	snprintf(path, sizeof(path), "%s/spool", state);
	uid_t uid = ctx->privileged ? 65534 : geteuid();
	(void)aj_mkdir_p(state, 0755);
	(void)mkdir(path, 0700);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && ctx->privileged && fstat(fd, &st) == 0 &&
	    (st.st_uid != uid || (st.st_mode & 0777) != 0700) &&
	    (fchown(fd, uid, uid) < 0 || fchmod(fd, 0700) < 0)) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != uid || (st.st_mode & 077))) {
		close(fd); /* not ours alone: no spool */
		fd = -1;
	}
	ctx->spool_dir = fd > 0 ? fd : 0;
	return 0;
}

/* Everything netd needs before the sandbox goes on; err says what failed.
 * Returns 1 in the --publish forwarder child (see split_publisher). */
static int netd_setup(aj_netd_ctx *ctx, pid_t child, listener *ls, size_t *n, aj_error *err)
{
	const aj_policy *p = ctx->p;
	const aj_net *net = ctx->n;
	uint32_t gw = htonl(net->host_ip);
	int fd;
	*n = 0;
	if (aj_net_proxied(p)) {
		_cleanup_free_ char *resolv = NULL;
		(void)aj_read_file("/etc/resolv.conf", &resolv, NULL);
		if (aj_dns_upstream(ctx, resolv) < 0) {
			aj_err(err, ENOENT,
			       "--allow: no upstream resolver (no IPv4 nameserver in "
			       "/etc/resolv.conf)");
			aj_err_hint(err, "give one with --dns ADDR");
			return -ENOENT;
		}
		static const struct {
			int type;
			unsigned port;
			enum kind kind;
		} svc[] = {{SOCK_STREAM, AJ_PROXY_PORT, K_PROXY},
			   {SOCK_DGRAM, 53, K_DNS_UDP},
			   {SOCK_STREAM, 53, K_DNS_TCP}};
		/* --net open: the proxy only (the sandbox asks the host's
		 * resolvers itself; the proxy resolves through the upstream) */
		size_t n_svc = p->net == AJ_NET_ALLOW ? AJ_ARRAY_SIZE(svc) : 1;
		for (size_t i = 0; i < n_svc; i++) {
			if ((fd = bind_socket(svc[i].type, gw, svc[i].port)) < 0)
				return aj_err(err, -fd,
					      "--allow: cannot listen on the gateway port %u",
					      svc[i].port);
			ls[(*n)++] = (listener){.fd = fd, .kind = svc[i].kind};
		}
		if (p->net == AJ_NET_ALLOW && !(ctx->nft = aj_nft_ctx_new()))
			return aj_err(err, ENOMEM, "--allow: cannot create an nftables context");
		/* scoped secrets: HTTPS to their hosts is intercepted with a CA
		 * made here, after the sandbox was cloned (tls.c) */
		if (aj_net_tls_wanted(p) && aj_tls_new(p, &ctx->tls, err) < 0)
			return -EPROTO;
		/* the tests' way to know the key they search the sandbox for */
		const char *key_out = getenv("AGENTJAIL_CA_KEY_FILE");
		if (ctx->tls && key_out && aj_tls_export_key(ctx->tls, key_out, err) < 0)
			return -EIO;
		bool body = false;
		for (size_t i = 0; i < p->n_secrets; i++)
			body = body || (p->secrets[i].body && p->secrets[i].n_hosts);
		if (body && open_spool(ctx, err) < 0)
			return -EINVAL;
	}
	if (net->nflog_group) {
		if ((fd = aj_nflog_open(net->nflog_group)) < 0)
			return aj_err(err, -fd,
				      "--net-log: cannot read the kernel's nflog group %u",
				      net->nflog_group);
		ls[(*n)++] = (listener){.fd = fd, .kind = K_NFLOG};
	}
	for (size_t i = 0; i < p->n_publish; i++) {
		if ((fd = bind_socket(SOCK_STREAM, htonl(INADDR_LOOPBACK),
				      p->publish[i].host_port)) < 0) {
			aj_err(err, -fd, "--publish: cannot listen on 127.0.0.1:%u",
			       p->publish[i].host_port);
			aj_err_hint(err, "choose a free host port");
			return -EADDRINUSE;
		}
		ls[(*n)++] = (listener){.fd = fd, .kind = K_PUBLISH, .port = p->publish[i].port};
	}
	int r;
	if (p->n_publish && aj_net_proxied(p)) {
		if ((r = split_publisher(ctx, child, ls, n, err)) != 0)
			return r;
	} else if (p->n_publish && (r = join_sandbox_net(ctx, child, err)) < 0) {
		return r;
	}
	return drop_privileges(ctx, err);
}

/* What netd doesn't need of agentjail's memory: the values of the
 * secrets its proxy does not put into requests (those scoped to hosts it
 * keeps: inject.c). */
static void scrub_secrets(aj_policy *p)
{
	for (size_t i = 0; i < p->n_secrets; i++)
		if (p->secrets[i].value && !p->secrets[i].n_hosts)
			explicit_bzero(p->secrets[i].value, strlen(p->secrets[i].value));
	for (size_t i = 0; i < p->n_redact; i++)
		explicit_bzero(p->redact[i], strlen(p->redact[i]));
}

static void netd_main(aj_netd_ctx *ctx, pid_t child, int ready, int stop)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_IGN);
	int keep[4] = {ready, stop, ctx->log_fd, ctx->audit_fd}; /* -1s are skipped */
	aj_close_all_except(keep, 4);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 0), dup2(devnull, 1), dup2(devnull, 2);
		if (devnull > 2)
			close(devnull);
	}
	prctl(PR_SET_NAME, "agentjail-netd");
	/* it may hold scoped secrets' values: no core dump, no ptrace or
	 * /proc/PID/mem by another process of the same uid */
	prctl(PR_SET_DUMPABLE, 0);
	scrub_secrets((aj_policy *)ctx->p); /* our copy-on-write copy */
	listener ls[MAX_LISTEN];
	size_t n = 0;
	aj_error err;
	aj_err_clear(&err);
	int r = netd_setup(ctx, child, ls, &n, &err);
	ls[n++] = (listener){.fd = stop, .kind = K_STOP};
	if (r != 1) { /* the --publish forwarder child reports to netd instead */
		(void)aj_write_all(ready, &err, sizeof(err));
		/* then the CA certificate the sandbox is to trust (public) */
		const char *pem = r >= 0 && ctx->tls ? aj_tls_ca_pem(ctx->tls) : "";
		uint32_t len = (uint32_t)strlen(pem);
		if (r >= 0 && aj_net_tls_wanted(ctx->p))
			(void)(aj_write_all(ready, &len, sizeof(len)) == 0 &&
			       aj_write_all(ready, pem, len) == 0);
	}
	close(ready);
	if (r >= 0)
		loop(ctx, ls, n);
	if (ctx->publisher > 0) {
		kill(ctx->publisher, SIGKILL);
		while (waitpid(ctx->publisher, NULL, 0) < 0 && errno == EINTR)
			;
	}
	_exit(0);
}

int aj_netd_start(aj_net *n, const aj_policy *p, pid_t child, aj_error *err)
{
	n->netd = 0;
	if (!aj_netd_needed(p))
		return 0;
	int log_fd = -1;
	if (p->net_log) {
		log_fd =
		    open(p->net_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (log_fd < 0)
			return aj_err(err, errno, "cannot open --net-log %s", p->net_log);
	}
	int pfd[2], stop[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		int e = errno;
		if (log_fd >= 0)
			close(log_fd);
		return aj_err(err, e, "pipe");
	}
	if (pipe2(stop, O_CLOEXEC) < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		if (log_fd >= 0)
			close(log_fd);
		return aj_err(err, e, "pipe");
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		close(stop[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		aj_netd_ctx ctx = {.p = p,
				   .n = n,
				   .log_fd = log_fd,
				   .audit_fd =
				       p->audit_fd > 2 && p->audit_sandbox ? p->audit_fd : -1,
				   .privileged = geteuid() == 0};
		pthread_mutex_init(&ctx.lock, NULL);
		netd_main(&ctx, child, pfd[1], stop[0]);
	}
	int e = errno;
	close(pfd[1]);
	close(stop[0]);
	if (log_fd >= 0)
		close(log_fd);
	if (pid < 0) {
		close(pfd[0]);
		close(stop[1]);
		return aj_err(err, e, "cannot start the network helper");
	}
	n->netd = pid;
	n->netd_stop = stop[1];
	int r = await_child_open(pfd[0], "the network helper", err);
	if (r == 0 && aj_net_tls_wanted(p))
		r = read_ca(pfd[0], n, err);
	close(pfd[0]);
	return r;
}

void aj_netd_stop(aj_net *n)
{
	if (n->netd <= 0)
		return;
	/* let it write the last log lines (up to 1 s), then make sure */
	close(n->netd_stop);
	n->netd_stop = -1;
	pid_t r = 0;
	for (int i = 0; i < 100 && (r = waitpid(n->netd, NULL, WNOHANG)) == 0; i++)
		usleep(10000);
	if (r == 0) {
		kill(n->netd, SIGKILL);
		while (waitpid(n->netd, NULL, 0) < 0 && errno == EINTR)
			;
	}
	n->netd = 0;
}
