/* SPDX-License-Identifier: MIT */
/* The mint hook (mint.h): run the operator's program once per scoped
 * secret, with a deadline, the value on a socket as its stdin (send with
 * MSG_NOSIGNAL: a hook that never reads it raises no SIGPIPE in the
 * service), its stdout read back as the new value. */
#include "mint.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define MINT_TIMEOUT_MS 10000
#define MINT_VALUE_MAX 8192

extern char **environ;

int aj_mint_hook_id(const char *path, struct stat *st, aj_error *err)
{
	/* the file itself (no symbolic link followed): what a sweep compares */
	int fd = path[0] == '/' ? open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;
	int e = path[0] != '/' ? EINVAL : fd < 0 ? errno : fstat(fd, st) < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (!e && (!S_ISREG(st->st_mode) || (st->st_uid != 0 && st->st_uid != geteuid()) ||
		   (st->st_mode & 022) || access(path, X_OK) < 0))
		e = EPERM;
	if (!e)
		return 0;
	aj_err(err, e,
	       "--secret-mint '%s': expected an absolute path to an executable regular file "
	       "(not a symbolic link) owned by root or uid %u, not writable by group or others",
	       path, (unsigned)geteuid());
	aj_err_hint(err, "for example --secret-mint /usr/local/lib/agentjail/mint, chmod go-w "
			 "(docs/network.md, the mint hook)");
	return -e;
}

int aj_policy_set_secret_mint(aj_policy *p, const char *cmd, aj_error *err)
{
	struct stat st;
	if (aj_mint_hook_id(cmd, &st, err) < 0)
		return -EINVAL;
	free(p->secret_mint);
	p->secret_mint = strdup(cmd);
	return p->secret_mint ? 0 : aj_err(err, ENOMEM, "out of memory");
}

bool aj_mint_wanted(const aj_policy *p)
{
	for (size_t i = 0; i < p->n_secrets; i++)
		if (p->secrets[i].n_hosts)
			return true;
	return false;
}

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* environ without our three names, plus them for secret s; scrubbed: only
 * PATH and them (a sweep's hook: no value of this process's environment) */
static char **hook_env(const aj_secret *s, const char *id, bool scrub)
{
	size_t n = 0;
	for (char **e = environ; e && *e; e++)
		n++;
	char **v = calloc(n + 5, sizeof(*v));
	if (!v)
		return NULL;
	size_t k = 0;
	static char def_path[] =
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (char **e = environ; e && *e; e++)
		if (scrub ? aj_startswith(*e, "PATH=")
			  : !aj_startswith(*e, "AGENTJAIL_SECRET") &&
				!aj_startswith(*e, "AGENTJAIL_SANDBOX="))
			v[k++] = *e;
	if (scrub && k == 0)
		v[k++] = def_path;
	size_t len = 1;
	for (size_t h = 0; h < s->n_hosts; h++)
		len += strlen(s->hosts[h]) + 1;
	char *hosts = calloc(1, len);
	for (size_t h = 0; hosts && h < s->n_hosts; h++) {
		if (h)
			strcat(hosts, ",");
		strcat(hosts, s->hosts[h]);
	}
	char *a = aj_asprintf("AGENTJAIL_SECRET=%s", s->name);
	char *b = hosts ? aj_asprintf("AGENTJAIL_SECRET_HOSTS=%s", hosts) : NULL;
	char *c = aj_asprintf("AGENTJAIL_SANDBOX=%s", id);
	free(hosts);
	if (!a || !b || !c) {
		free(a), free(b), free(c), free(v);
		return NULL;
	}
	v[k++] = a, v[k++] = b, v[k++] = c;
	return v;
}

static void hook_env_free(char **v)
{
	size_t n = 0;
	while (v[n])
		n++;
	for (size_t i = n - 3; i < n; i++) /* ours are the last three */
		free(v[i]);
	free(v);
}

/* Run `cmd verb` for secret s with input on stdin; with out, read its
 * stdout (up to MINT_VALUE_MAX bytes) into a malloc'ed string. */
static int run_hook(const char *cmd, const char *verb, const aj_secret *s, const char *id,
		    const char *input, char **out, int timeout_ms, bool scrub, aj_error *err)
{
	int in[2] = {-1, -1}, o[2] = {-1, -1};
	char **env = hook_env(s, id, scrub);
	if (!env || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0 ||
	    (out && pipe2(o, O_CLOEXEC) < 0)) {
		int e = env ? errno : ENOMEM;
		if (env)
			hook_env_free(env);
		for (int i = 0; i < 2; i++)
			if (in[i] >= 0)
				close(in[i]);
		return aj_err(err, e, "the mint hook: cannot start it");
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[1], 0);
	if (out)
		posix_spawn_file_actions_adddup2(&fa, o[1], 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	char *argv[] = {(char *)cmd, (char *)verb, NULL};
	pid_t pid = -1;
	int e = posix_spawn(&pid, cmd, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	hook_env_free(env);
	close(in[1]);
	if (out)
		close(o[1]);
	if (e) {
		close(in[0]);
		if (out)
			close(o[0]);
		aj_err(err, e, "the mint hook %s: cannot run it", cmd);
		return -e;
	}
	(void)send(in[0], input, strlen(input), MSG_NOSIGNAL);
	close(in[0]); /* its stdin ends */
	long long deadline = now_ms() + timeout_ms;
	char buf[MINT_VALUE_MAX + 1];
	size_t got = 0;
	bool too_long = false, timed_out = false;
	while (out) {
		struct pollfd pf = {.fd = o[0], .events = POLLIN};
		long long left = deadline - now_ms();
		if (left <= 0 || poll(&pf, 1, (int)left) == 0) {
			timed_out = true;
			break;
		}
		ssize_t r = read(o[0], buf + got, sizeof(buf) - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof(buf) - 1) {
			too_long = true;
			break;
		}
	}
	if (out)
		close(o[0]);
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, WNOHANG)) == 0 && !timed_out) {
		if (now_ms() >= deadline)
			timed_out = true;
		else
			usleep(5000);
	}
	if (w == 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	buf[got] = '\0';
	int r = 0;
	if (w < 0 && !timed_out) /* its status is unknown: not a success */
		r = aj_err(err, ECHILD, "the mint hook %s %s for secret %s: cannot wait for it",
			   cmd, verb, s->name);
	else if (timed_out)
		r = aj_err(err, ETIMEDOUT, "the mint hook %s %s for secret %s: no answer in %.1f s",
			   cmd, verb, s->name, timeout_ms / 1000.0);
	else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		r = aj_err(err, EPROTO, "the mint hook %s %s for secret %s failed (%s %d)", cmd,
			   verb, s->name, WIFEXITED(st) ? "exit status" : "signal",
			   WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	else if (too_long)
		r = aj_err(err, E2BIG, "the mint hook %s %s for secret %s: more than %d bytes", cmd,
			   verb, s->name, MINT_VALUE_MAX);
	if (r == 0 && out) {
		if (got && buf[got - 1] == '\n')
			buf[--got] = '\0';
		if (got && buf[got - 1] == '\r')
			buf[--got] = '\0';
		bool ok = got > 0;
		for (size_t i = 0; i < got && ok; i++) /* a header value: no CR, LF, NUL */
			ok = buf[i] >= 0x20 && buf[i] < 0x7f;
		if (ok && got < 4) /* as --secret: shorter ones can't be redacted */
			r = aj_err(err, EPROTO,
				   "the mint hook %s %s for secret %s: a value of at least 4 "
				   "characters is needed",
				   cmd, verb, s->name);
		else if (!ok)
			r = aj_err(err, EPROTO,
				   "the mint hook %s %s for secret %s: its output is not one line "
				   "of printable ASCII",
				   cmd, verb, s->name);
		else if (!(*out = strdup(buf)))
			r = aj_err(err, ENOMEM, "out of memory");
	}
	explicit_bzero(buf, sizeof(buf));
	if (r < 0)
		aj_err_hint(err,
			    "the hook gets the value on stdin and must print the new one on "
			    "stdout and exit 0 within %d s (its stderr says why it did not)",
			    MINT_TIMEOUT_MS / 1000);
	return r;
}

/* ---- run's revoker (aj_mint_guard) ---- */

#define GUARD_DONE UINT32_MAX

/* what run tells its revoker: secret idx was minted (len bytes of value
 * follow), or GUARD_DONE (run revoked them itself) */
typedef struct guard_msg {
	uint32_t idx, len;
} guard_msg;

static int send_all(int fd, const void *buf, size_t n)
{
	const char *b = buf;
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w, n -= (size_t)w;
	}
	return 0;
}

/* 1 when all n bytes came, 0 at EOF or on an error */
static int read_all(int fd, void *buf, size_t n)
{
	char *b = buf;
	while (n) {
		ssize_t r = read(fd, b, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0;
		b += r, n -= (size_t)r;
	}
	return 1;
}

/* The revoker: holds the values run minted as run tells them, and revokes
 * them when its socket ends without GUARD_DONE (run was killed). Its own
 * session and /dev/null for stdio: no terminal, no caller's pipe held. */
static _Noreturn void guard_main(int fd, const char *cmd, aj_policy *p, const char *id,
				 const aj_mint_guard *g)
{
	(void)prctl(PR_SET_NAME, "aj-revoke", 0, 0, 0);
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* it holds minted values */
	(void)setsid();
	if (fd < 3) /* run's stdio was closed: keep it clear of 0-2 */
		fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int i = 0; nul >= 0 && i < 3; i++)
		(void)dup2(nul, i);
	aj_close_all_except(&fd, 1);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (size_t i = 0; i < p->n_secrets; i++) { /* only what run tells it */
		explicit_bzero(p->secrets[i].value, strlen(p->secrets[i].value));
		p->secrets[i].minted = false;
	}
	guard_msg m;
	while (read_all(fd, &m, sizeof(m))) {
		if (m.idx == GUARD_DONE)
			_exit(0);
		char *v =
		    m.idx < p->n_secrets && m.len <= MINT_VALUE_MAX ? calloc(1, m.len + 1) : NULL;
		if (!v || !read_all(fd, v, m.len)) {
			free(v);
			break;
		}
		aj_secret *s = &p->secrets[m.idx];
		free(s->value);
		s->value = v;
		s->minted = true;
	}
	bool told[AJ_MAX_SECRETS] = {false}, failed_i[AJ_MAX_SECRETS] = {false};
	for (size_t i = 0; i < p->n_secrets && i < AJ_MAX_SECRETS; i++)
		told[i] = p->secrets[i].minted;
	aj_error e;
	aj_err_clear(&e);
	int failed = aj_mint_revoke(cmd, p, id, &e), left = 0;
	/* left for a later start: what failed, and what run may have been
	 * minting when it was killed (never told) */
	for (size_t i = 0; i < p->n_secrets && i < AJ_MAX_SECRETS; i++) {
		failed_i[i] = p->secrets[i].minted;
		p->secrets[i].minted = p->secrets[i].n_hosts && (!told[i] || failed_i[i]);
		left += p->secrets[i].minted;
	}
	bool kept = g->revoked && g->revoked(g->ctx, p, left);
	if (failed > 0) {
		/* no one else hears of it (stdio is /dev/null, run is gone): the
		 * system log, naming each secret still live, never a value */
		openlog("agentjail", LOG_PID, LOG_AUTHPRIV);
		for (size_t i = 0; i < p->n_secrets && i < AJ_MAX_SECRETS; i++)
			if (failed_i[i])
				syslog(LOG_AUTHPRIV | LOG_ERR,
				       "run %s: the minted secret %s was not revoked after the run "
				       "was killed (%s): %s",
				       id, p->secrets[i].name, e.msg,
				       kept ? "its record is kept, the next agentjail run or serve "
					      "that starts tries again"
					    : "revoke it by hand");
		closelog();
	}
	_exit(0);
}

int aj_mint_guard_start(aj_mint_guard *g, const char *cmd, aj_policy *p, const char *id,
			aj_error *err)
{
	int sv[2];
	g->fd = g->pid = -1; /* g->revoked and g->ctx are the caller's */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return aj_err(err, errno, "--secret-mint: cannot start the revoker of this run");
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		guard_main(sv[1], cmd, p, id, g);
	}
	int e = errno;
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return aj_err(err, e, "--secret-mint: cannot start the revoker of this run");
	}
	g->fd = sv[0];
	g->pid = pid;
	return 0;
}

static int guard_tell(aj_mint_guard *g, size_t i, const char *v, aj_error *err)
{
	guard_msg m = {(uint32_t)i, (uint32_t)strlen(v)};
	if (send_all(g->fd, &m, sizeof(m)) < 0 || send_all(g->fd, v, m.len) < 0)
		return aj_err(err, EPIPE,
			      "--secret-mint: the revoker of this run is gone: what was minted "
			      "would outlive a killed run");
	return 0;
}

void aj_mint_guard_end(aj_mint_guard *g)
{
	if (g->fd >= 0) {
		guard_msg m = {GUARD_DONE, 0};
		(void)send_all(g->fd, &m, sizeof(m));
		close(g->fd);
		g->fd = -1;
	}
	while (g->pid > 0 && waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
		;
	g->pid = -1;
}

int aj_mint_secrets(const char *cmd, aj_policy *p, const char *id, aj_mint_guard *g, aj_error *err)
{
	for (size_t i = 0; i < p->n_secrets; i++) {
		aj_secret *s = &p->secrets[i];
		if (!s->n_hosts || s->minted)
			continue;
		char *v = NULL;
		int r = run_hook(cmd, "mint", s, id, s->value, &v, MINT_TIMEOUT_MS, false, err);
		if (r < 0) {
			/* the ones minted before stay marked: the caller revokes them;
			 * this one too (the issuer may have issued before the hook
			 * failed), with an empty stdin as a sweep does */
			explicit_bzero(s->value, strlen(s->value));
			s->value[0] = '\0';
			s->minted = true;
			return r;
		}
		explicit_bzero(s->value, strlen(s->value));
		free(s->value);
		s->value = v;
		s->minted = true;
		if (g && (r = guard_tell(g, i, v, err)) < 0)
			return r;
	}
	return 0;
}

int aj_mint_revoke(const char *cmd, aj_policy *p, const char *id, aj_error *err)
{
	int failed = 0;
	for (size_t i = 0; i < p->n_secrets; i++) {
		aj_secret *s = &p->secrets[i];
		if (!s->minted)
			continue;
		aj_error e;
		aj_err_clear(&e);
		if (run_hook(cmd, "revoke", s, id, s->value, NULL, MINT_TIMEOUT_MS, false, &e) <
		    0) {
			if (failed++ == 0)
				*err = e;
			continue; /* still minted: the caller keeps its record */
		}
		s->minted = false;
	}
	return failed;
}

int aj_mint_revoke_lost(const char *cmd, const char *name, char *const *hosts, size_t n_hosts,
			const char *id, int timeout_ms, aj_error *err)
{
	aj_secret s = {.name = (char *)name, .n_hosts = n_hosts};
	for (size_t h = 0; h < n_hosts && h < AJ_MAX_SECRET_HOSTS; h++)
		s.hosts[h] = hosts[h];
	s.n_hosts = n_hosts < AJ_MAX_SECRET_HOSTS ? n_hosts : AJ_MAX_SECRET_HOSTS;
	if (timeout_ms > MINT_TIMEOUT_MS)
		timeout_ms = MINT_TIMEOUT_MS;
	return run_hook(cmd, "revoke", &s, id, "", NULL, timeout_ms, true, err);
}
