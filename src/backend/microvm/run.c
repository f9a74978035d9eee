/* SPDX-License-Identifier: MIT */
/* `agentjail run --isolation microvm`: one command in a fresh qemu microVM
 * (boot.c), its stdio, signals and exit through the guest's agent on the
 * VM's one agent port (agent_proto.h); the VM goes with the command. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agent_frame.h"
#include "boot.h"
#include "execreq.h"
#include "publish.h"
#include "redact.h"
#include "snap.h"
#include "util.h"

static unsigned long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000;
}

/* Our stdout or stderr, written without blocking, so that a reader that
 * stalls never stops the timeout: a pipe, FIFO or terminal reopened with
 * O_NONBLOCK (the caller's open file description untouched), or where that
 * reopen fails (no /proc, another uid's pipe) a pipe to a writer child
 * that does the blocking writes to the caller's fd and is killed at the
 * end; a socket written with MSG_DONTWAIT, a file as it is (it does not
 * block). What it did not take waits in buf, and the next frame is read
 * from the agent only once buf is empty: one frame at most (the guest's
 * writers block). */
typedef struct mv_out {
	int fd;
	bool owned; /* fd is our reopening, or the pipe to the writer */
	bool sock;
	pid_t writer; /* the writer child, or 0 */
	char *buf;
	size_t len, off;
} mv_out;

typedef struct mv_io {
	aj_redactor red[2];
	bool redact;
	int in;			     /* our stdin, -1 once at its end */
	int sfd;		     /* the signals passed on to the command, or -1 */
	int tty;		     /* --tty: our terminal (its size followed), or -1 */
	struct winsize ws;	     /* the size the guest's terminal has */
	mv_out out[2];		     /* stdout, stderr */
	unsigned long long deadline; /* --timeout's last moment (now_ms), or 0 */
	/* frames for the agent, sent without blocking: the agent stops reading
	 * its port while it holds stdin the command has not read, and a
	 * blocked send() would never see the timeout again */
	aj_agent_queue q;
	int failed; /* a frame or output that could not be kept: -errno */
} mv_io;

/* A frame for the agent queued (front: a signal, ahead of stdin). One
 * that can't be is never lost silently: the run ends with the error. */
static void put(mv_io *io, char type, const void *buf, size_t len, bool front)
{
	int r = aj_agent_queue_put(&io->q, type, buf, len, front);
	if (r < 0 && !io->failed)
		io->failed = r;
}

/* The signals a run passes on to its command (as level 1's init): held
 * in a signalfd by the run, ignored by its writer child. */
static const int fwd_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

/* The writer child: our pipe's bytes to the caller's fd, blocking; it
 * ignores the signals the run passes on (a terminal's ^C is the
 * command's) and SIGPIPE, and dies with us. */
static _Noreturn void writer_main(int from, int to, pid_t parent)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	struct sigaction sa = {.sa_handler = SIG_IGN};
	sigaction(SIGPIPE, &sa, NULL);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(fwd_sigs); i++)
		sigaction(fwd_sigs[i], &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int keep[] = {from};
	close(0);
	close(to == 1 ? 2 : 1);
	aj_close_all_except(keep, 1);
	static char buf[65536];
	for (;;) {
		ssize_t n = read(from, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(to, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				/* the caller's file is non-blocking (its flags are shared) */
				struct pollfd pf = {.fd = to, .events = POLLOUT};
				(void)poll(&pf, 1, -1);
				continue;
			}
			if (w <= 0) /* the reader is gone: our pipe then says EPIPE */
				_exit(0);
			off += w;
		}
	}
}

static int start_writer(mv_out *o, int fd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t self = getpid();
	pid_t pid = fork();
	if (pid == 0)
		writer_main(p[0], fd, self);
	int e = errno;
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return -e;
	}
	(void)fcntl(p[1], F_SETFL, O_NONBLOCK);
	o->fd = p[1], o->owned = true, o->writer = pid;
	return 0;
}

/* 0, or -errno when no writer could be had for a reopen that failed */
static int out_open(mv_out *o, int fd)
{
	struct stat st;
	*o = (mv_out){.fd = fd};
	if (fstat(fd, &st) < 0)
		return 0; /* closed: our writes fail as the caller's would */
	o->sock = S_ISSOCK(st.st_mode);
	if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int nb = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (nb >= 0) {
		o->fd = nb, o->owned = true;
		return 0;
	}
	return start_writer(o, fd);
}

/* The writer's last bytes until deadline_ms (0: none), then it goes:
 * its end waited for on a pidfd. */
static void out_close(mv_out *o, unsigned long long deadline_ms)
{
	if (o->owned)
		close(o->fd);
	if (o->writer > 0) {
		int pfd = (int)syscall(SYS_pidfd_open, o->writer, 0);
		for (;;) {
			unsigned long long now = now_ms();
			int left = !deadline_ms		? -1
				   : now >= deadline_ms ? 0
							: (int)(deadline_ms - now);
			struct pollfd pf = {pfd, POLLIN, 0};
			/* no pidfd: waited for without a deadline, else killed */
			int k = pfd >= 0 ? poll(&pf, 1, left) : deadline_ms ? 0 : 1;
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) /* the deadline (or no pidfd): the writer goes now */
				kill(o->writer, SIGKILL);
			break;
		}
		if (pfd >= 0)
			close(pfd);
		while (waitpid(o->writer, NULL, 0) < 0 && errno == EINTR)
			;
	}
	free(o->buf);
	*o = (mv_out){.fd = -1};
}

static bool out_pending(const mv_out *o)
{
	return o->off < o->len;
}

/* As much of buf as the reader takes now; a reader that is gone (EPIPE)
 * gets nothing more. */
static void out_flush(mv_out *o)
{
	while (out_pending(o)) {
		ssize_t w = o->sock ? send(o->fd, o->buf + o->off, o->len - o->off,
					   MSG_DONTWAIT | MSG_NOSIGNAL)
				    : write(o->fd, o->buf + o->off, o->len - o->off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w <= 0)
			break;
		o->off += (size_t)w;
	}
	o->len = o->off = 0;
}

/* 0, or -ENOMEM: the run ends with it (output never lost silently) */
static int out_put(mv_out *o, const char *b, size_t n)
{
	if (!n)
		return 0;
	char *nb = realloc(o->buf, o->len + n);
	if (!nb)
		return -ENOMEM;
	o->buf = nb;
	memcpy(o->buf + o->len, b, n);
	o->len += n;
	out_flush(o);
	return 0;
}

/* The rest of the output, until deadline_ms (0: none) */
static void out_drain(mv_io *io, unsigned long long deadline_ms)
{
	for (;;) {
		struct pollfd pf[2];
		nfds_t n = 0;
		for (int k = 0; k < 2; k++)
			if (out_pending(&io->out[k]))
				pf[n++] = (struct pollfd){io->out[k].fd, POLLOUT, 0};
		unsigned long long now = now_ms();
		if (!n || (deadline_ms && now >= deadline_ms))
			return;
		if (poll(pf, n, deadline_ms ? (int)(deadline_ms - now) : -1) < 0 && errno != EINTR)
			return;
		out_flush(&io->out[0]);
		out_flush(&io->out[1]);
	}
}

/* --tty: our terminal's new size to the guest's (polled: no SIGWINCH
 * handler in a library call) */
static void follow_size(aj_mv_vm *m, mv_io *io)
{
	struct winsize ws;
	if (io->tty < 0 || ioctl(io->tty, TIOCGWINSZ, &ws) < 0 || !ws.ws_row || !ws.ws_col ||
	    (ws.ws_row == io->ws.ws_row && ws.ws_col == io->ws.ws_col))
		return;
	io->ws = ws;
	unsigned char b[4] = {ws.ws_row & 0xff, ws.ws_row >> 8, ws.ws_col & 0xff, ws.ws_col >> 8};
	put(io, AJ_AG_WINSIZE, b, sizeof(b), false);
	(void)m;
}

static int request(aj_mv_vm *m, int tty, aj_error *err)
{
	char **env = aj_policy_build_env(m->p, NULL, aj_mv_net_env(m->net));
	json_t *argv = aj_mv_json_strv(m->p->argv), *envj = env ? aj_mv_json_strv(env) : NULL;
	aj_strv_free(env);
	const char *cwd = m->p->cwd	    ? m->p->cwd
			  : m->p->workspace ? AJ_WORKSPACE_DIR
			  : m->p->uid	    ? AJ_SANDBOX_HOME
					    : "/root";
	/* "started": the agent says when the command started ('B'), where
	 * --timeout begins; a piece that can't be added fails the run (out of
	 * memory: never the command as guest root instead of --user) */
	json_t *q = argv && envj ? json_pack("{s:s,s:o,s:o,s:s,s:b}", "op", "exec", "argv", argv,
					     "env", envj, "cwd", cwd, "started", 1)
				 : (json_decref(argv), json_decref(envj), NULL);
	q = aj_mv_exec_profile(m, aj_mv_exec_rlimits(m->p, q));
	q = aj_mv_exec_user(q, m->p->uid, m->p->gid);
	if (tty != -1) { /* --tty: a terminal of the guest's devpts, ours's size */
		struct winsize ws = {0};
		(void)ioctl(tty, TIOCGWINSZ, &ws);
		q = aj_mv_json_set(q, "tty", json_true());
		q = aj_mv_json_set(q, "rows", json_integer(ws.ws_row ? ws.ws_row : 24));
		q = aj_mv_json_set(q, "cols", json_integer(ws.ws_col ? ws.ws_col : 80));
	}
	char *s = q ? json_dumps(q, JSON_COMPACT) : NULL;
	json_decref(q);
	if (!s)
		return aj_err(err, ENOMEM, "microvm: out of memory for the command's request");
	int r = aj_agent_send(m->ports[0], AJ_AG_REQUEST, s, strlen(s));
	free(s);
	return r < 0 ? aj_err(err, -r, "microvm: cannot reach the guest's agent") : 0;
}

static void output(mv_io *io, int stream, const char *buf, size_t len, bool final)
{
	int r = 0;
	if (!io->redact) {
		r = out_put(&io->out[stream - 1], buf, len);
	} else {
		char *out = NULL;
		size_t n = 0;
		r = aj_redactor_feed(&io->red[stream - 1], buf, len, final, &out, &n);
		if (r == 0 && n)
			r = out_put(&io->out[stream - 1], out, n);
		free(out);
	}
	if (r < 0 && !io->failed)
		io->failed = r;
}

/* The agent's last frame: how the command ended. */
static int ended(aj_mv_vm *m, const char *js, size_t len, aj_run_result *res, aj_error *err)
{
	aj_agent_exit x;
	aj_agent_exit_parse(js, len, &x);
	if (x.err) {
		int no = x.err;
		int r = aj_err(err, no, "%s: %s", m->p->argv[0],
			       no == ENOENT ? "command not found in the microVM"
			       : x.valid    ? strerror(no)
					    : x.error);
		err->exit = no == ENOENT ? AJ_EXIT_NOTFOUND : no == EACCES ? AJ_EXIT_NOEXEC : 125;
		return r;
	}
	res->exit_code = x.exit_code;
	res->term_signal = x.term_signal;
	res->cpu_user_ms = x.cpu_user_us / 1000;
	res->cpu_sys_ms = x.cpu_sys_us / 1000;
	res->status = res->term_signal ? 0 : res->exit_code;
	res->oom_killed = x.oom && res->term_signal == SIGKILL; /* the agent's count */
	return 0;
}

/* How long the guest's agent may take to start the command after qemu
 * started (the guest's boot: 2-7 s on TCG): past it the run fails, never
 * waits on a VM that does not become ready (a test may shorten it:
 * AGENTJAIL_MICROVM_TEST_START_MS). */
#define START_MS 60000ULL

static int not_started(aj_mv_vm *m, aj_error *err)
{
	char tail[512];
	aj_mv_console_tail(m, tail, sizeof(tail));
	int r = aj_err(err, ETIMEDOUT,
		       "microvm: the guest did not start the command within %llu ms of the VM's "
		       "start (its boot or its agent hung)%s%s",
		       aj_mv_test_ms("AGENTJAIL_MICROVM_TEST_START_MS", START_MS),
		       *tail ? ": " : "", tail);
	aj_err_hint(err,
		    "run `agentjail doctor`; AGENTJAIL_MICROVM_DEBUG=1 keeps the VM's console");
	return r;
}

/* A frame for the agent or output for the caller that could not be kept:
 * the run ends (exit 125, the VM killed), never goes on without it. */
static int lost(const mv_io *io, aj_error *err)
{
	return aj_err(err, -io->failed,
		      "microvm: %s: the run was stopped and its VM killed, rather than lose the "
		      "command's stdin, a signal for it or its output",
		      io->failed == -ENOMEM
			  ? "out of memory for the frames to and from the guest's agent"
			  : "a frame for the guest's agent or the command's output could not be "
			    "kept");
}

/* How long the agent's answer may take after the timeout's SIGKILL (its
 * command's CPU time), before the VM goes without it */
#define KILL_ANSWER_MS 2000ULL
#define KILL_STALLED_MS 200ULL

/* Relay until the agent's exit frame (or the timeout, or the VM's end).
 * --timeout counts from the command's start (the agent's 'B' frame), as
 * level 1's counts from its command's; the boot before it has START_MS. */
static int relay(aj_mv_vm *m, mv_io *io, aj_run_result *res, aj_error *err)
{
	const aj_policy *p = m->p;
	unsigned long long boot_end =
	    now_ms() + aj_mv_test_ms("AGENTJAIL_MICROVM_TEST_START_MS", START_MS);
	/* start: the command's (0: not yet); term_at, kill_at: the timeout's */
	unsigned long long start = 0, term_at = 0, kill_at = 0;
	for (;;) {
		if (io->failed)
			return lost(io, err);
		unsigned long long now = now_ms();
		if (!start && now >= boot_end)
			return not_started(m, err);
		if (start && p->timeout_ms && !res->timed_out && now - start >= p->timeout_ms) {
			res->timed_out = true;
			term_at = now;
			unsigned char sig = SIGTERM;
			put(io, AJ_AG_SIGNAL, &sig, 1, true);
			(void)aj_agent_queue_flush(&io->q, m->ports[0]);
		}
		if (res->timed_out && !kill_at && now - term_at >= p->kill_after_ms) {
			/* SIGKILL, and KILL_ANSWER_MS for the agent's answer: the
			 * command's CPU time for --result */
			kill_at = now;
			unsigned char sig = SIGKILL;
			put(io, AJ_AG_SIGNAL, &sig, 1, true);
			(void)aj_agent_queue_flush(&io->q, m->ports[0]);
		}
		/* a reader that holds our output back (the answer is read only
		 * after it) gets KILL_STALLED_MS of it: the run never waits long
		 * on a stalled reader */
		bool stalled = out_pending(&io->out[0]) || out_pending(&io->out[1]);
		if (kill_at && now - kill_at >= (stalled ? KILL_STALLED_MS : KILL_ANSWER_MS)) {
			res->exit_code = AJ_EXIT_TIMEOUT;
			return 0; /* the VM goes with everything in it */
		}
		int wait = -1;
		if (!start)
			wait = (int)(boot_end - now);
		else if (p->timeout_ms && !res->timed_out)
			wait = (int)(p->timeout_ms - (now - start));
		else if (kill_at)
			wait =
			    (int)((stalled ? KILL_STALLED_MS : KILL_ANSWER_MS) - (now - kill_at));
		else if (res->timed_out)
			wait = (int)(p->kill_after_ms - (now - term_at));
		follow_size(m, io);
		if (io->tty >= 0 && (wait < 0 || wait > 100))
			wait = 99;
		/* the agent's next frame once our reader took the last one */
		bool held = out_pending(&io->out[0]) || out_pending(&io->out[1]);
		size_t queued = aj_agent_queue_pending(&io->q);
		short ev = (held ? 0 : POLLIN) | (queued ? POLLOUT : 0);
		struct pollfd pf[5] = {{ev ? m->ports[0] : -1, ev, 0},
				       {aj_agent_queue_full(&io->q) ? -1 : io->in, POLLIN, 0},
				       {out_pending(&io->out[0]) ? io->out[0].fd : -1, POLLOUT, 0},
				       {out_pending(&io->out[1]) ? io->out[1].fd : -1, POLLOUT, 0},
				       {io->sfd, POLLIN, 0}};
		if (poll(pf, 5, wait < 0 ? 1000 : wait + 1) < 0 && errno != EINTR)
			return aj_err(err, errno, "poll");
		struct signalfd_siginfo si;
		if (pf[4].revents && read(io->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			/* as level 1's init: the caller's signal is the command's */
			unsigned char sig = (unsigned char)si.ssi_signo;
			put(io, AJ_AG_SIGNAL, &sig, 1, true);
		}
		for (int k = 0; k < 2; k++)
			if (pf[2 + k].revents)
				out_flush(&io->out[k]);
		if (pf[1].revents) {
			char buf[65536];
			ssize_t n = read(io->in, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				io->in = -1;
			put(io, AJ_AG_STDIN, buf, n > 0 ? (size_t)n : 0, false);
		}
		/* a broken port: the VM is gone, its end is read from the port */
		(void)aj_agent_queue_flush(&io->q, m->ports[0]);
		if (!(pf[0].revents & ~POLLOUT) || held) {
			if (waitpid(m->pids[0], NULL, WNOHANG) == m->pids[0]) {
				m->pids[0] = 0;
				break;
			}
			continue;
		}
		char type, *buf = NULL;
		uint32_t len;
		if (aj_agent_recv(m->ports[0], &type, &buf, &len) <= 0)
			break;
		if (!start && type != AJ_AG_EXIT) { /* 'B', or output before it */
			start = now_ms();
			if (p->timeout_ms)
				io->deadline = start + p->timeout_ms + p->kill_after_ms;
		}
		if (type == AJ_AG_STDOUT || type == AJ_AG_STDERR)
			output(io, type == AJ_AG_STDOUT ? 1 : 2, buf, len, false);
		int r = type == AJ_AG_EXIT ? ended(m, buf, len, res, err) : 1;
		free(buf);
		if (r <= 0) {
			if (res->timed_out)
				res->exit_code = AJ_EXIT_TIMEOUT;
			return r;
		}
	}
	char tail[512];
	aj_mv_console_tail(m, tail, sizeof(tail));
	return aj_err(err, EPIPE, "microvm: the VM ended before the command%s%s", *tail ? ": " : "",
		      tail);
}

int aj_microvm_run(const aj_policy *p, const aj_run_hooks *hooks, aj_run_result *res, aj_error *err)
{
	memset(res, 0, sizeof(*res));
	aj_mv_vm m;
	/* --publish: an agent port per connection beside the command's */
	aj_mv_vm_init(&m, p, hooks, 1 + (p->n_publish ? AJ_MV_PUBLISH_PORTS : 0));
	int r = aj_policy_validate(p, err);
	if (r < 0)
		return r;
	aj_mv_publish *pb = NULL;
	if ((r = aj_mv_publish_listen(&pb, p, err)) < 0) {
		aj_mv_publish_stop(&pb);
		return r;
	}
	mv_io io = {.in = 0, .tty = -1, .sfd = -1};
	aj_redactor_init(&io.red[0]);
	aj_redactor_init(&io.red[1]);
	if (aj_redactor_init_policy(&io.red[0], p) < 0 ||
	    aj_redactor_init_policy(&io.red[1], p) < 0) {
		aj_redactor_free(&io.red[0]);
		aj_redactor_free(&io.red[1]);
		aj_mv_publish_stop(&pb);
		return aj_err(err, ENOMEM, "redactor");
	}
	io.redact = aj_redactor_active(&io.red[0]);
	if ((r = out_open(&io.out[0], 1)) < 0 || (r = out_open(&io.out[1], 2)) < 0) {
		aj_err(err, -r,
		       "microvm: cannot start the writer of our output (its reopen failed)");
		out_close(&io.out[0], 1);
		out_close(&io.out[1], 1);
		aj_redactor_free(&io.red[0]);
		aj_redactor_free(&io.red[1]);
		aj_mv_publish_stop(&pb);
		return r;
	}
	/* a caller that stops reading our output must not kill us (the VM's
	 * directory and cgroup would stay) */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
	sigaction(SIGPIPE, &ign, &old_pipe);
	/* SIGINT, SIGTERM ... go to the command, as at level 1, and the run
	 * ends with it: never a VM directory or cgroup left by them (held
	 * while the VM boots) */
	sigset_t fwd, old_mask;
	sigemptyset(&fwd);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(fwd_sigs); i++)
		sigaddset(&fwd, fwd_sigs[i]);
	sigprocmask(SIG_BLOCK, &fwd, &old_mask);
	io.sfd = signalfd(-1, &fwd, SFD_CLOEXEC | SFD_NONBLOCK);
	if (io.sfd < 0) /* not passed on then, but never lost */
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
	unsigned long long t0 = now_ms();
	/* --tty: the command on a terminal of the guest (its output all on
	 * stdout), ours raw meanwhile; its size is ours (24x80 without one) */
	int tty = p->tty != AJ_TTY_ALWAYS ? -1 : isatty(0) ? 0 : isatty(1) ? 1 : -2;
	struct termios saved;
	bool raw = tty == 0 && tcgetattr(0, &saved) == 0;
	io.tty = tty;
	if (tty >= 0)
		(void)ioctl(tty, TIOCGWINSZ, &io.ws);
	if ((r = aj_mv_boot(&m, true, err)) == 0 && (r = aj_mv_publish_start(pb, &m, err)) == 0 &&
	    (r = request(&m, tty, err)) == 0) {
		if (raw) {
			struct termios t = saved;
			cfmakeraw(&t);
			(void)tcsetattr(0, TCSANOW, &t);
		}
		r = relay(&m, &io, res, err);
		if (raw)
			(void)tcsetattr(0, TCSANOW, &saved);
	}
	if (r == 0) {
		output(&io, 1, "", 0, true);
		output(&io, 2, "", 0, true);
		if (io.failed) /* the redactor's last bytes could not be kept */
			r = lost(&io, err);
	}
	if (r == 0) {
		res->wall_ms = now_ms() - t0;
		if (res->timed_out) /* our kill, whatever the guest's OOM killer did */
			res->oom_killed = false;
		if (res->oom_killed) {
			aj_mv_warn(&m,
				   "microvm: the guest's OOM killer ended the command (--memory is "
				   "the VM's RAM)");
		}
	} else if (m.have_cg && aj_cgroup_oom_killed(&m.cg)) {
		/* the host's OOM killer took the VMM: the run ends as an OOM */
		aj_err_clear(err);
		res->exit_code = 137;
		res->term_signal = SIGKILL;
		res->oom_killed = true;
		res->wall_ms = now_ms() - t0;
		r = 0;
		aj_mv_warn(&m,
			   "microvm: the VMM went past its host memory limit (the guest's RAM and "
			   "256 MiB for qemu and virtiofsd) and was killed");
	}
	if (m.have_cg) {
		res->peak_memory_bytes = aj_cgroup_peak_memory(&m.cg);
		res->limits_missing = m.cg.missing;
	}
	aj_redactor_free(&io.red[0]);
	aj_redactor_free(&io.red[1]);
	aj_mv_publish_stop(&pb);
	aj_mv_teardown(&m);
	/* after an error the writers go at once; else until the timeout's end */
	unsigned long long until = r < 0 ? now_ms() : io.deadline;
	out_drain(&io, until);
	out_close(&io.out[0], until);
	out_close(&io.out[1], until);
	aj_agent_queue_free(&io.q);
	if (io.sfd >= 0)
		close(io.sfd);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	return r;
}
