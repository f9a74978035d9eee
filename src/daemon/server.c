/* SPDX-License-Identifier: MIT */
/* agentjail serve: options, state directory, the two processes. This
 * process is the supervisor (sup.c): it sweeps what a killed service left,
 * forks the front (front.c), which binds the listeners and drops every
 * privilege, and serves the front's requests until a signal (or the
 * front's end) stops it; then it removes everything. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends.h"
#include "audit.h"
#include "daemon.h"
#include "front.h"
#include "image.h"
#include "pool.h"
#include "registry.h"
#include "sup.h"
#include "threads.h"
#include "tenant.h"
#include "util.h"

static char token[256];
static volatile sig_atomic_t stopping;

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
	explicit_bzero(txt, strlen(txt));
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
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
	if (o->listen && !o->token_file && !o->tokens_file)
		return aj_err(err, EINVAL,
			      "--listen needs --token-file or --tokens: TCP clients must "
			      "authenticate");
	if (o->token_file && read_token(o->token_file, err) < 0)
		return -EINVAL;
	/* the operator policy and the tenants; only token digests are kept */
	int tr = aj_tenancy_load(o->operator_policy, o->tokens_file, token[0] ? token : NULL, err);
	explicit_bzero(token, sizeof(token));
	if (tr < 0)
		return -EINVAL;
	char path[PATH_MAX];
	aj_registry_init(o->state_dir, o->max_sandboxes, o->node);
	aj_registry_set_mint(o->secret_mint);
	for (size_t i = 0; i < o->n_pools; i++)
		if (aj_pool_add(o->pools[i], err) < 0)
			return -EINVAL;
	aj_registry_sweep();
	/* the image store: its quota, and what a killed snapshot left */
	aj_image_set_store_quota(o->store_quota);
	aj_image_sweep(aj_state_dir());
	snprintf(path, sizeof(path), "%s/audit.log", o->state_dir);
	if (aj_audit_open(path, err) < 0)
		return -EIO;
	_cleanup_free_ char *sockdir = strdup(o->socket);
	char *slash = sockdir ? strrchr(sockdir, '/') : NULL;
	if (slash && slash != sockdir) {
		*slash = '\0';
		(void)aj_mkdir_p(sockdir, 0755);
	}
	/* a stale socket of a killed service (never anything else; not
	 * systemd's, which it keeps while serve is down) */
	struct stat st;
	if (o->socket_fd <= 2 && lstat(o->socket, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(o->socket);
	return 0;
}

/* The front, on the other end of sock[1]. Returns its pid. */
static pid_t fork_front(const aj_daemon_opts *o, int sock[2], int lock, aj_error *err)
{
	pid_t pid = fork();
	if (pid < 0)
		return aj_err(err, errno, "cannot fork the front process");
	if (pid == 0) {
		close(sock[0]);
		close(lock);
		aj_audit_close();
		aj_front_main(o, sock[1], NULL); /* tokens: tenant.c's digests */
	}
	close(sock[1]);
	return pid;
}

/* The front's exit status, once it has had SIGTERM: it gets 5 seconds
 * to end, then SIGKILL (a front stuck in a loop must not keep the service,
 * and so its sandboxes, alive). */
static int reap_front(pid_t front)
{
	int status = 0;
	for (int i = 0; i < 100; i++) {
		pid_t p = waitpid(front, &status, WNOHANG);
		if (p == front || (p < 0 && errno != EINTR))
			return status;
		if (p == 0)
			usleep(50 * 1000);
	}
	aj_log("error", "agentjail serve: ", "the front did not end within 5 s: killed");
	kill(front, SIGKILL);
	while (waitpid(front, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

int aj_daemon_run(const aj_daemon_opts *o, aj_error *err)
{
	int lock = lock_state(o->state_dir, err);
	if (lock < 0)
		return lock;
	/* before any thread (backends.h) */
	aj_backends_prepare();
	struct sigaction sa = {.sa_handler = on_signal}, ign = {.sa_handler = SIG_IGN};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	int r = start(o, err);
	int sock[2] = {-1, -1};
	pid_t front = -1;
	if (r == 0 && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) < 0)
		r = aj_err(err, errno, "cannot make the front's socketpair");
	if (r == 0 && (front = fork_front(o, sock, lock, err)) < 0)
		r = front;
	explicit_bzero(token, sizeof(token));
	/* the pool's thread (after the fork: the front has no thread of ours) */
	if (r == 0 && aj_pool_start(err) < 0) {
		r = -EAGAIN;
		kill(front, SIGTERM);
		(void)reap_front(front);
	}
	if (r == 0) {
		aj_audit("start", json_pack("{s:s, s:s?, s:i, s:i}", "socket", o->socket, "listen",
					    o->listen, "pid", (int)getpid(), "front", (int)front));
		/* once what used them is gone (the sweep) and the front is
		 * there: requests are served while the hook revokes */
		aj_registry_revoke_lost_start();
		r = aj_sup_serve(sock[0], front, &stopping);
		int status = reap_front(front);
		if (r == -EPIPE && !stopping) {
			aj_err(err, EPIPE,
			       "the front process ended (%s %d); everything was removed",
			       WIFSIGNALED(status) ? "signal" : "status",
			       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
			aj_err_hint(err, "see the messages above; start agentjail serve again");
		} else {
			r = 0;
		}
		aj_registry_revoke_lost_stop();
		aj_audit("stop", NULL);
	}
	aj_registry_destroy_all();
	aj_pool_stop(); /* after: its thread built some of them */
	aj_exec_shutdown();
	if (sock[0] >= 0)
		close(sock[0]);
	struct stat st;
	if (front > 0 && o->socket_fd <= 2 && lstat(o->socket, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(o->socket);
	aj_audit_close();
	aj_tenancy_free();
	close(lock);
	return r;
}
