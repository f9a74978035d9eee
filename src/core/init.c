/* SPDX-License-Identifier: MIT */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "landlock.h"
#include "sync.h"
#include "util.h"

extern char **environ;

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

int aj_init_exec_exit(int errnum)
{
	return errnum == ENOENT || errnum == ENOTDIR ? AJ_EXIT_NOTFOUND : AJ_EXIT_NOEXEC;
}

static void noop_handler(int sig)
{
	(void)sig;
}

static int set_rlimits(const aj_policy *p, aj_error *err)
{
	struct rlimit core = {0, 0};
	if (setrlimit(RLIMIT_CORE, &core) < 0)
		return aj_err(err, errno, "setrlimit(RLIMIT_CORE)");
	if (p->nofile) {
		struct rlimit rl = {p->nofile, p->nofile};
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return aj_err(err, errno, "--nofile %llu", p->nofile);
	}
	if (p->fsize) {
		struct rlimit rl = {p->fsize, p->fsize};
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			return aj_err(err, errno, "--fsize %llu", p->fsize);
	}
	return 0;
}

__attribute__((noreturn)) static void command_fail(int errfd, const aj_error *err)
{
	(void)aj_write_all(errfd, err, sizeof(*err));
	_exit(AJ_EXIT_INTERNAL);
}

/* The command process: own session (and terminal), dropped privileges, exec. */
__attribute__((noreturn)) static void command_main(const aj_init_args *a, int errfd)
{
	const aj_policy *p = a->policy;
	aj_error err;
	aj_err_clear(&err);
	sigset_t none;
	sigemptyset(&none);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(forwarded); i++)
		signal(forwarded[i], SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	signal(AJ_SIG_TERM_ALL, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0)
		aj_err(&err, errno, "setsid");
	if (!err.code && a->pty) {
		int fd = open(a->pty, O_RDWR | O_CLOEXEC);
		if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 ||
		    dup2(fd, 2) < 0)
			aj_err(&err, errno, "cannot attach the terminal %s", a->pty);
	}
	for (int i = 0; !err.code && i < 3; i++)
		if (a->stdio[i] >= 0 && dup2(a->stdio[i], i) < 0)
			aj_err(&err, errno, "cannot attach the command's stdio");
	if (err.code)
		command_fail(errfd, &err);
	/* nothing agentjail or the caller had open reaches the command */
	aj_close_all_except(&errfd, 1);
	/* if the sandbox runs out of memory, the kernel takes the command
	 * (or what it started) rather than init; raising is unprivileged */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); /* init's setting; exec resets it anyway */
	(void)aj_write_file("/proc/self/oom_score_adj", "500", 0);
	if (aj_caps_drop_all(p->uid, p->gid, a->drop_groups, &err) < 0)
		command_fail(errfd, &err);
	const char *cwd = p->cwd ? p->cwd : p->workspace ? AJ_WORKSPACE_DIR : AJ_SANDBOX_HOME;
	if (chdir(cwd) < 0) {
		aj_err(&err, errno, "cannot change to directory %s inside the sandbox", cwd);
		aj_err_hint(&err, "--cwd must name an existing directory in the sandbox");
		command_fail(errfd, &err);
	}
	if (set_rlimits(p, &err) < 0 || aj_landlock_apply(p, &err) < 0 ||
	    aj_seccomp_load(a->seccomp, &err) < 0)
		command_fail(errfd, &err);
	environ = a->envp;
	execvp(a->argv[0], a->argv);
	int e = errno;
	aj_err(&err, e, "cannot execute '%s'", a->argv[0]);
	err.exit = aj_init_exec_exit(e);
	if (e == ENOENT)
		aj_err_hint(
		    &err,
		    "the command must exist inside the sandbox (PATH=%s); bind it in with --ro",
		    AJ_DEFAULT_PATH);
	command_fail(errfd, &err);
}

/* Reap everything; returns true when cmd_pid was reaped (status in *st). */
static bool reap_all(pid_t cmd_pid, int *st)
{
	bool got = false;
	for (;;) {
		int s;
		pid_t r = waitpid(-1, &s, WNOHANG);
		if (r <= 0)
			break;
		if (r == cmd_pid) {
			*st = s;
			got = true;
		}
	}
	return got;
}

__attribute__((noreturn)) void aj_init_main(const aj_init_args *a)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	struct sigaction sa = {.sa_handler = noop_handler};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(forwarded); i++) {
		sigaddset(&set, forwarded[i]);
		sigaction(forwarded[i], &sa, NULL);
	}
	sigaction(SIGCHLD, &sa, NULL);
	sigaddset(&set, AJ_SIG_TERM_ALL);
	sigaction(AJ_SIG_TERM_ALL, &sa, NULL);
	sigprocmask(SIG_BLOCK, &set, NULL);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	int errpipe[2];
	aj_msg m;
	memset(&m, 0, sizeof(m));
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		aj_err(&m.err, errno, "pipe");
		aj_sync_send_error(a->sync_fd, &m.err);
		_exit(AJ_EXIT_INTERNAL);
	}
	pid_t cmd = fork();
	if (cmd < 0) {
		aj_err(&m.err, errno, "cannot fork the command");
		aj_sync_send_error(a->sync_fd, &m.err);
		_exit(AJ_EXIT_INTERNAL);
	}
	if (cmd == 0) {
		close(errpipe[0]);
		close(a->sync_fd);
		command_main(a, errpipe[1]);
	}
	close(errpipe[1]);
	/* only the command (and what it starts) holds its stdio now */
	for (int i = 0; i < 3; i++)
		if (a->stdio[i] >= 0)
			close(a->stdio[i]);
	/* EOF: exec succeeded (CLOEXEC); data: the command could not start. */
	aj_error exec_err;
	bool failed = aj_read_all(errpipe[0], &exec_err, sizeof(exec_err)) == 0;
	close(errpipe[0]);
	if (!failed) {
		m.type = AJ_MSG_STARTED;
		(void)aj_sync_send(a->sync_fd, &m, NULL, 0);
	}

	int status = 0;
	bool done = false;
	while (!done) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if (sig < 0)
			continue;
		if (sig == SIGCHLD) {
			done = reap_all(cmd, &status);
			continue;
		}
		if (sig == AJ_SIG_TERM_ALL) {
			kill(-1, SIGTERM); /* everyone in the sandbox but init */
			continue;
		}
		/* Forward to the command's process group (it leads a session). */
		if (kill(-cmd, sig) < 0)
			kill(cmd, sig);
	}
	/* The command is gone: nothing else may outlive it. */
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	if (failed) {
		aj_sync_send_error(a->sync_fd, &exec_err);
		_exit(exec_err.exit);
	}
	m.type = AJ_MSG_EXIT;
	if (WIFSIGNALED(status))
		m.signal = WTERMSIG(status);
	else
		m.status = WEXITSTATUS(status);
	(void)aj_sync_send(a->sync_fd, &m, NULL, 0);
	_exit(0);
}
