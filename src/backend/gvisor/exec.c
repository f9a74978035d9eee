/* SPDX-License-Identifier: MIT */
/* Commands in a persistent level-2 sandbox: one `runsc exec` of
 * agentjail-agent each, which runs the command in a process group (or on
 * a terminal of gVisor's devpts) and speaks the agent protocol: the host
 * sends its stdin, signals and window size, the agent its output and how
 * it ended. Output is redacted here, with the policy's secrets, as at
 * level 1. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agent_frame.h"
#include "gvbox.h"
#include "redact.h"
#include "util.h"

extern char **environ;

/* runsc exec in runsc's network namespace (--net open, --allow): a fork,
 * which joins it before the exec (posix_spawn cannot). */
static int spawn_in_netns(gv_run *g, char **argv, int in[2], int out[2], int er[2], gv_agent *a,
			  aj_error *err)
{
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(er[1], 2) < 0 ||
		    setns(g->netns_fd, CLONE_NEWNET) < 0)
			_exit(125);
		execv(g->runsc, argv);
		_exit(125);
	}
	int e = errno;
	close(in[0]), close(out[1]), close(er[1]);
	if (pid < 0) {
		close(in[1]), close(out[0]), close(er[0]);
		return aj_err(err, e, "cannot run %s exec", g->runsc);
	}
	a->pid = pid;
	a->to = in[1], a->from = out[0], a->errp = er[0];
	return 0;
}

/* Through the checkpoint's gate (gvbox.h): wait while it saves the
 * sandbox, then count one runsc exec more (until gate_leave). */
static void gate_enter(aj_inst *i)
{
	pthread_mutex_lock(&i->gate_mu);
	while (i->saving)
		pthread_cond_wait(&i->gate_cv, &i->gate_mu);
	i->busy++;
	pthread_mutex_unlock(&i->gate_mu);
}

static void gate_leave(aj_inst *i)
{
	pthread_mutex_lock(&i->gate_mu);
	i->busy--;
	pthread_cond_broadcast(&i->gate_cv);
	pthread_mutex_unlock(&i->gate_mu);
}

int aj_gvbox_agent_spawn(aj_inst *i, bool root, gv_agent *a, aj_error *err)
{
	gate_enter(i);
	int r = aj_gv_agent_spawn(&i->g, root, a, err);
	if (r < 0)
		gate_leave(i);
	else
		a->gate = i;
	return r;
}

int aj_gv_agent_spawn(gv_run *g, bool root, gv_agent *a, aj_error *err)
{
	int in[2], out[2], er[2];
	a->pid = 0;
	a->to = a->from = a->errp = -1;
	a->gate = NULL;
	if (pipe2(in, O_CLOEXEC) < 0)
		return aj_err(err, errno, "pipe");
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]), close(in[1]);
		return aj_err(err, errno, "pipe");
	}
	if (pipe2(er, O_CLOEXEC) < 0) {
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		return aj_err(err, errno, "pipe");
	}
	char rootarg[128], user[64];
	snprintf(rootarg, sizeof(rootarg), "--root=%s", g->state);
	snprintf(user, sizeof(user), "%u:%u", root ? 0 : (unsigned)g->p->uid,
		 root ? 0 : (unsigned)g->p->gid);
	/* files as the sandbox's root user, past file modes; commands as the
	 * policy's user with no capabilities (the container's empty sets) */
	static char *const caps[] = {"CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
				     "CAP_CHOWN"};
	char *argv[16] = {g->runsc, rootarg, "exec", "--user", user};
	size_t n = 5;
	for (size_t k = 0; root && k < AJ_ARRAY_SIZE(caps); k++) {
		argv[n++] = "--cap";
		argv[n++] = caps[k];
	}
	argv[n++] = g->id;
	argv[n++] = AJ_AGENT_PATH;
	argv[n] = NULL;
	if (g->netns_fd >= 0)
		return spawn_in_netns(g, argv, in, out, er, a, err);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	sigemptyset(&none);
	int e = posix_spawn_file_actions_init(&fa);
	if (!e && !(e = posix_spawnattr_init(&at))) {
		posix_spawnattr_setsigmask(&at, &none);
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
		if (!(e = posix_spawn_file_actions_adddup2(&fa, in[0], 0)) &&
		    !(e = posix_spawn_file_actions_adddup2(&fa, out[1], 1)) &&
		    !(e = posix_spawn_file_actions_adddup2(&fa, er[1], 2)))
			e = posix_spawn(&a->pid, g->runsc, &fa, &at, argv, environ);
		posix_spawnattr_destroy(&at);
	}
	if (!e)
		posix_spawn_file_actions_destroy(&fa);
	close(in[0]), close(out[1]), close(er[1]);
	if (e) {
		close(in[1]), close(out[0]), close(er[0]);
		return aj_err(err, e, "cannot run %s exec", g->runsc);
	}
	a->to = in[1], a->from = out[0], a->errp = er[0];
	return 0;
}

static void agent_close_fds(gv_agent *a)
{
	int *fds[] = {&a->to, &a->from, &a->errp};
	for (size_t k = 0; k < AJ_ARRAY_SIZE(fds); k++)
		if (*fds[k] >= 0) {
			close(*fds[k]);
			*fds[k] = -1;
		}
}

void aj_gvbox_agent_settle(gv_agent *a, bool kill_it, int grace_ms)
{
	agent_close_fds(a);
	if (a->pid <= 0)
		return;
	if (kill_it)
		kill(a->pid, SIGKILL);
	/* the pid stays unreaped (WNOWAIT), so a kill by pid can't hit another */
	int pfd = (int)syscall(SYS_pidfd_open, a->pid, 0);
	if (pfd >= 0) {
		struct pollfd pf = {.fd = pfd, .events = POLLIN};
		int r;
		while ((r = poll(&pf, 1, grace_ms)) < 0 && errno == EINTR)
			;
		if (r == 0) /* stopped or stuck in the sandbox (its user can) */
			(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
		close(pfd);
	} else {
		kill(a->pid, SIGKILL); /* no pidfd: no bounded wait either */
	}
	siginfo_t si;
	while (waitid(P_PID, (id_t)a->pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
}

void aj_gvbox_agent_end(gv_agent *a, bool kill_it)
{
	agent_close_fds(a);
	if (a->pid > 0) {
		if (kill_it)
			kill(a->pid, SIGKILL);
		while (waitpid(a->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	a->pid = 0;
	if (a->gate)
		gate_leave(a->gate);
	a->gate = NULL;
}

void aj_gvbox_runsc_error(gv_agent *a, char *out, size_t len)
{
	size_t n = 0;
	ssize_t k;
	out[0] = '\0';
	if (a->errp < 0)
		return;
	(void)fcntl(a->errp, F_SETFL, O_NONBLOCK);
	while (n + 1 < len && (k = read(a->errp, out + n, len - n - 1)) > 0)
		n += (size_t)k;
	out[n] = '\0';
	while (n > 0 && out[n - 1] == '\n')
		out[--n] = '\0';
	char *last = strrchr(out, '\n');
	if (last)
		memmove(out, last + 1, strlen(last + 1) + 1);
}

/* ---- one command ---- */

#define OUT_HIGH (256u << 10)

struct aj_job {
	aj_inst *i;
	gv_agent a;
	aj_exec_io io;
	aj_redactor red[2];
	int stdin_fd, tty; /* where its stdin comes from (ours), or -1 */
	char *obuf;	   /* frames not yet sent to the agent */
	size_t olen, ooff, ocap;
	char *ibuf; /* bytes from the agent not yet a whole frame */
	size_t ilen, icap;
	unsigned long long timeout_ms, start_ms, oom_before;
	struct winsize ws;
	bool cancelled, done, have_exit, timed_out;
	aj_agent_exit ax; /* the agent's answer, when have_exit */
	aj_error err;	  /* an error to start it, for exec_wait */
	int failed;
};

static unsigned long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000;
}

static int queue(aj_job *j, char type, const void *buf, size_t len)
{
	if (j->olen + AJ_AGENT_HDR + len > j->ocap) {
		if (j->ooff) {
			memmove(j->obuf, j->obuf + j->ooff, j->olen - j->ooff);
			j->olen -= j->ooff;
			j->ooff = 0;
		}
		size_t cap = j->ocap ? j->ocap : 4096;
		while (cap < j->olen + AJ_AGENT_HDR + len)
			cap *= 2;
		char *nb = realloc(j->obuf, cap);
		if (!nb)
			return -ENOMEM;
		j->obuf = nb;
		j->ocap = cap;
	}
	aj_agent_hdr((unsigned char *)j->obuf + j->olen, type, (uint32_t)len);
	if (len)
		memcpy(j->obuf + j->olen + AJ_AGENT_HDR, buf, len);
	j->olen += AJ_AGENT_HDR + len;
	return 0;
}

static void send_signal(aj_job *j, int sig)
{
	unsigned char s = (unsigned char)sig;
	(void)queue(j, AJ_AG_SIGNAL, &s, 1);
}

static void cancel(aj_job *j)
{
	j->cancelled = true;
	send_signal(j, SIGKILL);
}

/* NAME=VALUE lists merged, a later NAME replacing an earlier one. */
static json_t *merged_env(char **base, char **more)
{
	json_t *a = json_array();
	char **lists[2] = {base, more};
	for (int l = 0; l < 2; l++)
		for (char **e = lists[l]; e && *e; e++) {
			size_t n = strcspn(*e, "=");
			size_t k;
			json_t *v;
			json_array_foreach(a, k, v)
			{
				const char *s = json_string_value(v);
				if (!strncmp(s, *e, n) && s[n] == '=') {
					json_array_remove(a, k);
					break;
				}
			}
			json_array_append_new(a, json_string(*e));
		}
	return a;
}

/* config.json's rlimits (bundle.c), which runsc exec does not give the
 * commands it starts: the agent sets them (agent.c, set_rlimits). */
static json_t *rlimits(const aj_policy *p)
{
	json_t *o = json_pack("{s:[i,i]}", "core", 0, 0);
	const struct {
		const char *name;
		unsigned long long v;
	} lim[] = {{"nofile", p->nofile}, {"nproc", p->pids}, {"fsize", p->fsize}};
	for (size_t k = 0; o && k < AJ_ARRAY_SIZE(lim); k++)
		if (lim[k].v)
			json_object_set_new(
			    o, lim[k].name,
			    json_pack("[I,I]", (json_int_t)lim[k].v, (json_int_t)lim[k].v));
	return o;
}

static int request(aj_job *j, const aj_exec_spec *s)
{
	const aj_policy *p = j->i->g.p;
	json_t *argv = json_array();
	for (char **a = s->argv; a && *a; a++)
		json_array_append_new(argv, json_string(*a));
	const char *cwd = s->cwd	 ? s->cwd
			  : p->cwd	 ? p->cwd
			  : p->workspace ? AJ_WORKSPACE_DIR
					 : AJ_SANDBOX_HOME;
	json_t *q = json_pack("{s:s,s:o,s:o,s:s,s:b,s:o}", "op", "exec", "argv", argv, "env",
			      merged_env(j->i->envp, s->env), "cwd", cwd, "tty", s->tty_slave > 0,
			      "rlimits", rlimits(p));
	if (s->tty_slave > 0) {
		json_object_set_new(q, "rows", json_integer(j->ws.ws_row));
		json_object_set_new(q, "cols", json_integer(j->ws.ws_col));
	}
	char *txt = q ? json_dumps(q, JSON_COMPACT) : NULL;
	json_decref(q);
	int r = txt ? queue(j, AJ_AG_REQUEST, txt, strlen(txt)) : -ENOMEM;
	free(txt);
	return r;
}

aj_job *aj_gvbox_exec_start(aj_inst *i, const aj_exec_spec *spec, const aj_exec_io *io)
{
	aj_job *j = calloc(1, sizeof(*j));
	if (!j) {
		if (spec->tty_slave > 0)
			close(spec->tty_slave);
		return NULL;
	}
	j->i = i;
	j->io = *io;
	j->stdin_fd = j->tty = -1;
	j->a.to = j->a.from = j->a.errp = -1;
	j->timeout_ms = spec->timeout_ms;
	j->start_ms = now_ms();
	j->oom_before = i->g.have_cg ? aj_cgroup_oom_kills(&i->g.cg) : 0;
	aj_err_clear(&j->err);
	aj_redactor_init(&j->red[0]);
	aj_redactor_init(&j->red[1]);
	if (spec->tty_slave > 0) {
		/* the host terminal passes bytes through: the line discipline
		 * is the one inside */
		j->tty = spec->tty_slave;
		struct termios t;
		if (tcgetattr(j->tty, &t) == 0) {
			cfmakeraw(&t);
			(void)tcsetattr(j->tty, TCSANOW, &t);
		}
		if (ioctl(j->tty, TIOCGWINSZ, &j->ws) < 0)
			j->ws = (struct winsize){.ws_row = 24, .ws_col = 80};
		(void)fcntl(j->tty, F_SETFL, O_NONBLOCK);
	} else if (spec->stdin_fd > 0) {
		j->stdin_fd = fcntl(spec->stdin_fd, F_DUPFD_CLOEXEC, 3);
	}
	int r = 0;
	if (aj_redactor_init_policy(&j->red[0], i->g.p) < 0 ||
	    aj_redactor_init_policy(&j->red[1], i->g.p) < 0)
		r = aj_err(&j->err, ENOMEM, "redactor");
	if (r == 0 && (!spec->argv || !spec->argv[0]))
		r = aj_err(&j->err, EINVAL, "no command given");
	if (r == 0 && (r = request(j, spec)) < 0)
		aj_err(&j->err, -r, "command");
	if (r == 0 && spec->tty_slave <= 0 && spec->stdin_fd <= 0) {
		if (spec->stdin_len)
			for (size_t off = 0; r == 0 && off < spec->stdin_len; off += 65536) {
				size_t n =
				    spec->stdin_len - off < 65536 ? spec->stdin_len - off : 65536;
				r = queue(j, AJ_AG_STDIN, spec->stdin_data + off, n);
			}
		if (r == 0)
			r = queue(j, AJ_AG_STDIN, NULL, 0);
		if (r < 0)
			aj_err(&j->err, -r, "stdin");
	}
	if (r == 0)
		r = aj_gvbox_agent_spawn(i, false, &j->a, &j->err);
	if (r == 0) {
		(void)fcntl(j->a.to, F_SETFL, O_NONBLOCK);
		(void)fcntl(j->a.from, F_SETFL, O_NONBLOCK);
	}
	j->failed = r;
	return j;
}

static void emit(aj_job *j, int k, const char *buf, size_t len, bool final)
{
	_cleanup_free_ char *out = NULL;
	size_t olen = len;
	const char *o = buf;
	if (aj_redactor_active(&j->red[k])) {
		if (aj_redactor_feed(&j->red[k], buf, len, final, &out, &olen) < 0)
			return;
		o = out;
	}
	if (olen && !j->cancelled && j->io.output(j->io.ctx, k + 1, o, olen) < 0)
		cancel(j);
}

static bool agent_frame(void *ctx, char type, const char *buf, size_t len)
{
	aj_job *j = ctx;
	if (type == AJ_AG_STDOUT || type == AJ_AG_STDERR) {
		emit(j, type == AJ_AG_STDOUT ? 0 : 1, buf, len, false);
	} else if (type == AJ_AG_EXIT) {
		aj_agent_exit_parse(buf, len, &j->ax);
		j->have_exit = true;
	}
	return true;
}

/* What the agent sent: whole frames handled, false at its end. */
static bool read_agent(aj_job *j)
{
	if (j->icap - j->ilen < 65536) {
		size_t cap = j->icap ? j->icap * 2 : 131072;
		char *nb = realloc(j->ibuf, cap);
		if (!nb)
			return false;
		j->ibuf = nb, j->icap = cap;
	}
	ssize_t n = read(j->a.from, j->ibuf + j->ilen, j->icap - j->ilen);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	j->ilen += (size_t)n;
	ssize_t off = aj_agent_split(j->ibuf, j->ilen, agent_frame, j);
	if (off < 0)
		return false;
	memmove(j->ibuf, j->ibuf + off, j->ilen - (size_t)off);
	j->ilen -= (size_t)off;
	return true;
}

/* The caller's stdin (a pipe, the terminal) into STDIN frames. */
static void read_input(aj_job *j, int *fd)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n > 0) {
		(void)queue(j, AJ_AG_STDIN, buf, (size_t)n);
		return;
	}
	if (*fd != j->tty) {
		(void)queue(j, AJ_AG_STDIN, NULL, 0);
		close(*fd);
		*fd = -1;
	} else {
		j->tty = -1 - j->tty; /* keep it (closed at the end), stop polling */
	}
}

static void check_winsize(aj_job *j)
{
	struct winsize ws;
	if (j->tty < 0 || ioctl(j->tty, TIOCGWINSZ, &ws) < 0 ||
	    (ws.ws_row == j->ws.ws_row && ws.ws_col == j->ws.ws_col))
		return;
	j->ws = ws;
	unsigned char b[4] = {(unsigned char)(ws.ws_row & 0xff), (unsigned char)(ws.ws_row >> 8),
			      (unsigned char)(ws.ws_col & 0xff), (unsigned char)(ws.ws_col >> 8)};
	(void)queue(j, AJ_AG_WINSIZE, b, 4);
}

static void flush_out(aj_job *j)
{
	while (j->ooff < j->olen) {
		ssize_t n = write(j->a.to, j->obuf + j->ooff, j->olen - j->ooff);
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				j->ooff = j->olen = 0; /* the agent is gone */
			return;
		}
		j->ooff += (size_t)n;
	}
	j->ooff = j->olen = 0;
}

static void control(aj_job *j)
{
	char c[64];
	ssize_t n = read(j->io.signal_fd, c, sizeof(c));
	if (n == 0)
		j->io.signal_fd = -1;
	for (ssize_t k = 0; k < n; k++) {
		if (c[k] == 0)
			cancel(j);
		else
			send_signal(j, (unsigned char)c[k]);
	}
}

/* The relay until the agent's stream ends; timeouts as level 1. */
static void relay(aj_job *j)
{
	const aj_policy *p = j->i->g.p;
	unsigned long long deadline = j->timeout_ms ? j->start_ms + j->timeout_ms : 0;
	int stage = 0;
	bool timed_out = false;
	for (;;) {
		struct pollfd pf[6] = {
		    {j->a.from, POLLIN, 0},
		    {j->olen > j->ooff ? j->a.to : -1, POLLOUT, 0},
		    {j->olen < OUT_HIGH ? (j->tty >= 0 ? j->tty : j->stdin_fd) : -1, POLLIN, 0},
		    {j->io.signal_fd, POLLIN, 0},
		    {j->io.cancel_fd > 0 && !j->cancelled ? j->io.cancel_fd : -1, POLLIN, 0},
		    {-1, 0, 0},
		};
		int tmo = j->tty >= 0 ? 100 : -1;
		unsigned long long t = now_ms();
		if (deadline) {
			int d = t >= deadline ? 0 : (int)(deadline - t);
			tmo = tmo < 0 || d < tmo ? d : tmo;
		}
		int k = poll(pf, 5, tmo);
		if (k < 0 && errno != EINTR)
			break;
		if (pf[0].revents && !read_agent(j))
			break;
		if (pf[1].revents)
			flush_out(j);
		if (pf[2].revents)
			read_input(j, j->tty >= 0 ? &j->tty : &j->stdin_fd);
		if (pf[3].revents)
			control(j);
		if (pf[4].revents)
			cancel(j);
		check_winsize(j);
		if (deadline && now_ms() >= deadline) {
			if (stage == 0) {
				timed_out = true;
				send_signal(j, SIGTERM);
				deadline = now_ms() + (p->kill_after_ms ? p->kill_after_ms : 1);
			} else if (stage == 1) {
				send_signal(j, SIGKILL);
				deadline = now_ms() + 2000;
			} else {
				/* the agent does not answer: its stdin closed, it kills
				 * the command's group and ends */
				kill(j->a.pid, SIGKILL);
				break;
			}
			stage++;
		}
		if (j->olen > j->ooff)
			flush_out(j);
	}
	emit(j, 0, NULL, 0, true);
	emit(j, 1, NULL, 0, true);
	j->timed_out = timed_out;
}

static void free_job(aj_job *j)
{
	aj_gvbox_agent_end(&j->a, true);
	if (j->stdin_fd >= 0)
		close(j->stdin_fd);
	int tty = j->tty >= 0 ? j->tty : j->tty < -1 ? -1 - j->tty : -1;
	if (tty >= 0)
		close(tty);
	aj_redactor_free(&j->red[0]);
	aj_redactor_free(&j->red[1]);
	free(j->obuf);
	free(j->ibuf);
	free(j);
}

int aj_gvbox_exec_wait(aj_job *j, aj_run_result *res, aj_error *err)
{
	memset(res, 0, sizeof(*res));
	if (j->failed < 0) {
		*err = j->err;
		int r = j->failed;
		free_job(j);
		return r;
	}
	relay(j);
	bool timed_out = j->timed_out;
	char runsc_msg[512];
	aj_gvbox_runsc_error(&j->a, runsc_msg, sizeof(runsc_msg));
	close(j->a.to);
	j->a.to = -1;
	/* the agent has answered or been killed; one the sandbox stopped
	 * before it could exit is killed after the grace, not waited for */
	aj_gvbox_agent_settle(&j->a, false, AJ_GV_AGENT_GRACE_MS);
	aj_gvbox_agent_end(&j->a, false);
	res->wall_ms = now_ms() - j->start_ms;
	gv_run *g = &j->i->g;
	res->oom_killed = g->have_cg && aj_cgroup_oom_kills(&g->cg) > j->oom_before;
	int r = 0;
	if (timed_out) {
		res->timed_out = true;
		res->exit_code = AJ_EXIT_TIMEOUT;
		res->term_signal = j->have_exit ? j->ax.term_signal : SIGKILL;
		res->status = j->have_exit ? j->ax.exit_code : 128 + SIGKILL;
	} else if (j->have_exit && j->ax.err) {
		int e = j->ax.err;
		const char *cmd = "command";
		if (j->ax.confine[0]) { /* not run without its walls */
			aj_err(err, e,
			       "the command was not started: the sandbox's agent could not set its "
			       "%s (%s)",
			       j->ax.confine, j->ax.error);
			aj_err_hint(err, "the level-2 agent (agentjail-agent) must be this "
					 "agentjail's, built with libseccomp");
		} else if (e == ENOENT) {
			aj_err(err, e, "%s: command not found in the sandbox", cmd);
			err->exit = AJ_EXIT_NOTFOUND;
		} else if (e == EACCES || e == ENOEXEC || e == EISDIR || e == EPERM) {
			aj_err(err, e, "%s: not executable in the sandbox (%s)", cmd, j->ax.error);
			err->exit = AJ_EXIT_NOEXEC;
		} else {
			aj_err(err, e, "the command could not start in the sandbox: %s",
			       j->ax.error);
		}
		r = -e;
	} else if (j->have_exit) {
		res->status = j->ax.exit_code;
		res->exit_code = j->ax.exit_code;
		res->term_signal = j->ax.term_signal;
	} else if (res->oom_killed) {
		/* the OOM killer took the Sentry: the sandbox is gone */
		res->exit_code = 137;
		res->term_signal = SIGKILL;
	} else {
		r = aj_err(err, EIO, "the sandbox did not run the command: %s",
			   *runsc_msg ? runsc_msg : "runsc exec failed");
	}
	if (r == 0 && res->oom_killed && res->term_signal == SIGKILL)
		res->exit_code = 137;
	free_job(j);
	return r;
}

void aj_gvbox_exec_abandon(aj_job *j)
{
	if (j->a.to >= 0) {
		unsigned char h[AJ_AGENT_HDR + 1];
		aj_agent_hdr(h, AJ_AG_SIGNAL, 1);
		h[AJ_AGENT_HDR] = SIGKILL;
		(void)!write(j->a.to, h, sizeof(h));
	}
	free_job(j);
}
