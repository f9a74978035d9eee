/* SPDX-License-Identifier: MIT */
#include "init.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <linux/securebits.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sched.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "landlock.h"
#include "sync.h"
#include "sysfilter.h"
#include "util.h"

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

int aj_init_exec_exit(int errnum)
{
	return errnum == ENOENT || errnum == ENOTDIR ? AJ_EXIT_NOTFOUND : AJ_EXIT_NOEXEC;
}

/* The EXIT message for a command's wait status. */
static aj_msg exit_msg(int status)
{
	aj_msg m;
	memset(&m, 0, sizeof(m));
	m.type = AJ_MSG_EXIT;
	if (WIFSIGNALED(status))
		m.signal = WTERMSIG(status);
	else
		m.status = WEXITSTATUS(status);
	return m;
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

/* What a persistent sandbox's init prepared once for all its commands
 * (serve_prepare). ruleset: Landlock's (-1: each command builds its own);
 * filtered: init is under the commands' seccomp filter, which they inherit
 * (else each loads it last before exec); bounded: init's bounding set is
 * empty, which they inherit; landlocked: init is in the sandbox's one
 * Landlock domain, which they inherit (share_domain). */
typedef struct prepared {
	int ruleset;
	bool filtered, bounded, landlocked;
} prepared;

static const prepared nothing_prepared = {.ruleset = -1};

/* The stdin of commands given none (AJ_EXEC_NO_STDIN): a pipe nobody can
 * write to, EOF for every reader; made once (serve_prepare), never closed
 * by init. */
static int empty_stdin = -1;

typedef struct child_arg {
	const aj_init_args *a;
	const aj_init_cmd *cmd;
	int errfd;
	const prepared *pre;
} child_arg;

/* The command process: own session (and terminal), dropped privileges, exec.
 * It runs in init's memory (see start_child): it must not change init's
 * globals (environ; signal handlers are its own). */
__attribute__((noreturn)) static void command_main(const child_arg *c)
{
	const aj_init_args *a = c->a;
	const aj_init_cmd *cmd = c->cmd;
	int errfd = c->errfd, ruleset = c->pre->ruleset;
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
	if (!err.code && cmd->pty) {
		int fd = open(cmd->pty, O_RDWR | O_CLOEXEC);
		if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 ||
		    dup2(fd, 2) < 0)
			aj_err(&err, errno, "cannot attach the terminal %s", cmd->pty);
	}
	for (int i = 0; !err.code && i < 3; i++) {
		int fd = i == 0 && cmd->no_stdin ? empty_stdin : cmd->stdio[i];
		if (fd >= 0 && dup2(fd, i) < 0)
			aj_err(&err, errno, "cannot attach the command's stdio");
	}
	if (!err.code && cmd->ctty && ioctl(0, TIOCSCTTY, 0) < 0)
		aj_err(&err, errno, "cannot attach the terminal");
	if (err.code)
		command_fail(errfd, &err);
	/* nothing agentjail or the caller had open reaches the command */
	int keep[] = {errfd, ruleset};
	aj_close_all_except(keep, ruleset >= 0 ? 2 : 1);
	/* no PR_SET_DUMPABLE here: until exec this process has init's memory,
	 * and that flag belongs to the memory: init would become dumpable
	 * (and its /proc/1/fd readable). exec makes the command dumpable.
	 * oom_score_adj came with the clone (spawn). */
	uid_t uid = cmd->set_user ? cmd->uid : p->uid;
	gid_t gid = cmd->set_user ? cmd->gid : p->gid;
	if ((c->pre->bounded ? aj_caps_drop_rest(uid, gid, a->drop_groups, NULL, 0, &err)
			     : aj_caps_drop_all(uid, gid, a->drop_groups, &err)) < 0)
		command_fail(errfd, &err);
	const char *cwd = cmd->cwd	 ? cmd->cwd
			  : p->cwd	 ? p->cwd
			  : p->workspace ? AJ_WORKSPACE_DIR
					 : AJ_SANDBOX_HOME;
	if (chdir(cwd) < 0) {
		aj_err(&err, errno, "cannot change to directory %s inside the sandbox", cwd);
		aj_err_hint(&err, "--cwd must name an existing directory in the sandbox");
		command_fail(errfd, &err);
	}
	if (set_rlimits(p, &err) < 0 ||
	    (!c->pre->landlocked &&
	     (ruleset >= 0 ? aj_landlock_enforce(ruleset, &err) : aj_landlock_apply(p, &err)) < 0))
		command_fail(errfd, &err);
	if (ruleset >= 0)
		close(ruleset);
	/* before a filter of the command's own (a profile may deny anything,
	 * even exit_group): the warm-up must end */
	if (cmd->warmup)
		_exit(0);
	if ((!c->pre->filtered && aj_seccomp_load(a->seccomp, &err) < 0) ||
	    aj_seccomp_load_stack(a->seccomp, &err) < 0)
		command_fail(errfd, &err);
	execvpe(cmd->argv[0], cmd->argv, cmd->envp);
	int e = errno;
	aj_err(&err, e, "cannot execute '%s'", cmd->argv[0]);
	err.exit = aj_init_exec_exit(e);
	if (e == ENOENT)
		aj_err_hint(
		    &err,
		    "the command must exist inside the sandbox (PATH=%s); bind it in with --ro",
		    AJ_DEFAULT_PATH);
	command_fail(errfd, &err);
}

/* Init's own oom_score_adj, opened while init is dumpable (else its
 * /proc/self belongs to the host's root, out of reach in the sandbox's
 * user namespace), and its value; -1 when it could not be. */
static int oom_fd = -1;
static char oom_own[16];

static void oom_open(void)
{
	oom_fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	ssize_t n = oom_fd >= 0 ? pread(oom_fd, oom_own, sizeof(oom_own) - 1, 0) : -1;
	if (n > 0) {
		oom_own[n] = '\0';
	} else if (oom_fd >= 0) {
		close(oom_fd);
		oom_fd = -1;
	}
}

static int child_fn(void *v)
{
	child_arg *c = v;
	close(c->a->sync_fd);
	command_main(c);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AJ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define AJ_ASAN 1
#endif

/* The command's process. clone(CLONE_VM | CLONE_VFORK) on a stack of its
 * own: init's page tables are not copied and no page of init is faulted in
 * copy-on-write, which was most of a command's start. Init is one thread
 * and stays suspended until the child has exec'd or exited, so no lock of
 * libc can be held and the child may use libc freely; what it writes to
 * memory (errno, its stack) is init's, which is why command_main leaves
 * init's globals alone. AddressSanitizer's runtime does not follow a
 * switch to a foreign stack: a sanitized build forks. */
static pid_t start_child(child_arg *c)
{
#ifndef AJ_ASAN
	static char *stack;
	static const size_t size = 1 << 20, guard = 1 << 12;
	if (!stack) {
		char *m = mmap(NULL, size + guard, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
		if (m != MAP_FAILED && mprotect(m, guard, PROT_NONE) == 0)
			stack = m + guard;
	}
	if (stack)
		return clone(child_fn, stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, c);
#endif
	pid_t pid = fork();
	if (pid == 0)
		child_fn(c);
	return pid;
}

static void close_held(int held[2])
{
	for (int i = 0; i < 2; i++)
		if (held[i] >= 0) {
			close(held[i]);
			held[i] = -1;
		}
}

/* Start one command. Returns its pid, or -1 with err filled (and err->exit
 * set) when it could not start; the failed child is reaped. held (when not
 * NULL): init keeps the write ends of the command's stdout and stderr pipes
 * there instead of closing them, and closes them when it reports the end
 * (close_held), so that the reader sees the end of the output and the EXIT
 * message together: one wake-up, not one per pipe and one more for EXIT. */
static pid_t spawn(const aj_init_args *a, const aj_init_cmd *cmd, const prepared *pre, int held[2],
		   aj_error *err)
{
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		aj_err(err, errno, "pipe");
		return -1;
	}
	child_arg c = {.a = a, .cmd = cmd, .errfd = errpipe[1], .pre = pre};
	/* The command's oom_score_adj is 500 (when the sandbox runs out of
	 * memory the kernel takes the command, or what it started, rather than
	 * init), inherited at the clone: init holds 500 just for it, then goes
	 * back to its own value (down to its oom_score_adj_min: no privilege
	 * needed). The child cannot write its own: until exec it has init's
	 * memory, which is not dumpable, so its /proc/self is not its own. */
	bool raised = oom_fd >= 0 && pwrite(oom_fd, "500", 3, 0) == 3;
	pid_t pid = start_child(&c);
	if (raised && pwrite(oom_fd, oom_own, strlen(oom_own), 0) < 0)
		(void)0; /* init stays at 500: the OOM killer may take it sooner */
	if (pid < 0) {
		aj_err(err, errno, "cannot start the command");
		close(errpipe[0]);
		close(errpipe[1]);
		return -1;
	}
	close(errpipe[1]);
	/* only the command (and what it starts) holds its stdio now; init
	 * keeps its output pipes' write ends (not a terminal's) until the end */
	bool hold = held && !cmd->ctty && !cmd->pty;
	for (int i = 0; i < 3; i++) {
		if (hold && i > 0)
			held[i - 1] = cmd->stdio[i];
		else if (cmd->stdio[i] >= 0)
			close(cmd->stdio[i]);
	}
	/* EOF: exec succeeded (CLOEXEC); data: the command could not start. */
	bool failed = aj_read_all(errpipe[0], err, sizeof(*err)) == 0;
	close(errpipe[0]);
	if (!failed)
		return pid;
	if (hold)
		close_held(held);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return -1;
}

static void block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	struct sigaction sa = {.sa_handler = noop_handler};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(forwarded); i++) {
		sigaddset(set, forwarded[i]);
		sigaction(forwarded[i], &sa, NULL);
	}
	sigaction(SIGCHLD, &sa, NULL);
	sigaddset(set, AJ_SIG_TERM_ALL);
	sigaction(AJ_SIG_TERM_ALL, &sa, NULL);
	sigprocmask(SIG_BLOCK, set, NULL);
	/* becoming root of the user namespace left init undumpable, and its
	 * /proc/self files out of its reach: dumpable just for the open, while
	 * nothing else runs in the sandbox yet */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	oom_open();
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
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

/* ---- persistent sandbox: commands on request ---- */

typedef struct serve_exec {
	pid_t pid;
	int sock;    /* -1 once the requester is gone */
	int held[2]; /* its stdout and stderr pipes' write ends (spawn) */
} serve_exec;

/* Parse the spec memfd: cwd, argc args, envc env entries (NUL-terminated). */
static int parse_spec(char *buf, size_t len, int argc, int envc, aj_init_cmd *cmd)
{
	if (argc < 1 || envc < 0 || argc > 65536 || envc > 65536)
		return -EINVAL;
	char **v = calloc((size_t)argc + (size_t)envc + 2, sizeof(char *));
	if (!v)
		return -ENOMEM;
	size_t off = 0;
	int want = 1 + argc + envc;
	for (int i = 0; i < want; i++) {
		char *end = off < len ? memchr(buf + off, '\0', len - off) : NULL;
		if (!end) {
			free(v);
			return -EINVAL;
		}
		if (i == 0)
			cmd->cwd = buf[off] ? buf + off : NULL;
		else
			v[i <= argc ? i - 1 : i] = buf + off; /* argv, NULL, envp, NULL */
		off = (size_t)(end - buf) + 1;
	}
	cmd->argv = v;
	cmd->envp = v + argc + 1;
	return 0;
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

typedef struct serve_state {
	prepared pre;
	serve_exec ex[AJ_INIT_MAX_EXECS];
	size_t n_ex;
} serve_state;

/* The command ended before init sent STARTED (init resumes after the
 * command's exec, and a short command may be gone by then): STARTED and
 * EXIT go in one call, one wake-up of the requester. */
static bool ended_at_once(pid_t pid, int sock, int held[2])
{
	int status;
	if (waitpid(pid, &status, WNOHANG) != pid)
		return false;
	kill(-pid, SIGKILL); /* what it left in its process group */
	close_held(held);
	aj_msg a, b = exit_msg(status);
	memset(&a, 0, sizeof(a));
	a.type = AJ_MSG_STARTED;
	(void)aj_sync_send_two(sock, &a, &b);
	close(sock);
	return true;
}

/* One AJ_MSG_EXEC: start the command, report on its own socket. fds: the
 * socket, stdin (unless AJ_EXEC_NO_STDIN), stdout, stderr, the spec's
 * memfd (unless AJ_EXEC_SPEC_INLINE: the spec is in text). */
static void serve_start(const aj_init_args *a, serve_state *st, const aj_msg *req, int *fds,
			size_t n, char *text, size_t text_len)
{
	aj_msg m;
	memset(&m, 0, sizeof(m));
	bool no_stdin = req->status & AJ_EXEC_NO_STDIN;
	bool inline_spec = req->status & AJ_EXEC_SPEC_INLINE;
	size_t want = 5 - no_stdin - inline_spec;
	if (n != want || (no_stdin && empty_stdin < 0) || (!inline_spec && text_len) ||
	    st->n_ex >= AJ_INIT_MAX_EXECS) {
		if (n >= 1) {
			aj_err(&m.err, n != want ? EPROTO : EAGAIN, "cannot start the command");
			aj_sync_send_error(fds[0], &m.err);
		}
		close_fds(fds, n);
		return;
	}
	int *io = fds + 1;
	aj_init_cmd cmd = {.stdio = {no_stdin ? -1 : io[0], io[1 - no_stdin], io[2 - no_stdin]},
			   .no_stdin = no_stdin,
			   .ctty = req->status & AJ_EXEC_TTY};
	/* another user of the sandbox: never init's own (AJ_INIT_UID) */
	if (req->status & AJ_EXEC_USER) {
		if (req->uid < 0 || req->uid >= AJ_INIT_UID - 1 || req->gid < 0 ||
		    req->gid >= AJ_INIT_UID - 1) {
			aj_err(&m.err, EINVAL, "user %d:%d is not a user of the sandbox (0-65533)",
			       req->uid, req->gid);
			aj_sync_send_error(fds[0], &m.err);
			close_fds(fds, n);
			return;
		}
		cmd.set_user = true;
		cmd.uid = (uid_t)req->uid;
		cmd.gid = (gid_t)req->gid;
	}
	_cleanup_free_ char *spec = NULL;
	size_t len = text_len;
	int r = 0;
	if (!inline_spec) {
		r = aj_read_fd(fds[n - 1], &spec, &len);
		close(fds[n - 1]);
		text = spec;
	}
	if (r == 0)
		r = parse_spec(text, len, req->argc, req->envc, &cmd);
	pid_t pid = -1;
	int held[2] = {-1, -1};
	if (r < 0) {
		aj_err(&m.err, -r, "bad command request");
		close_fds(io, 3 - no_stdin);
	} else {
		pid = spawn(a, &cmd, &st->pre, held, &m.err);
		free(cmd.argv);
	}
	if (pid < 0) {
		aj_sync_send_error(fds[0], &m.err);
		close(fds[0]);
		return;
	}
	if (ended_at_once(pid, fds[0], held))
		return;
	m.type = AJ_MSG_STARTED;
	(void)aj_sync_send(fds[0], &m, NULL, 0);
	st->ex[st->n_ex++] = (serve_exec){.pid = pid, .sock = fds[0], .held = {held[0], held[1]}};
}

/* A command ended: its whole process group goes, its requester learns. */
static void serve_reaped(serve_exec *e, int status)
{
	kill(-e->pid, SIGKILL);
	close_held(e->held); /* EOF for the reader, with EXIT right behind */
	aj_msg m = exit_msg(status);
	if (e->sock >= 0) {
		(void)aj_sync_send(e->sock, &m, NULL, 0);
		close(e->sock);
	}
	e->pid = 0;
}

static void serve_reap(serve_exec *ex, size_t n_ex)
{
	for (;;) {
		int st;
		pid_t r = waitpid(-1, &st, WNOHANG);
		if (r <= 0)
			return;
		for (size_t i = 0; i < n_ex; i++)
			if (ex[i].pid == r)
				serve_reaped(&ex[i], st);
	}
}

static void serve_request(serve_exec *e)
{
	aj_msg m;
	int r = aj_sync_recv(e->sock, &m, NULL, 0, NULL);
	if (r == 0 && m.type == AJ_MSG_SIGNAL && m.signal > 0 && m.signal < 65) {
		kill(-e->pid, m.signal);
		return;
	}
	/* the requester went away (or spoke nonsense): the command goes */
	kill(-e->pid, SIGKILL);
	close(e->sock);
	e->sock = -1;
}

/* A request: the message, then an inline spec; one page. */
static struct {
	aj_msg m;
	char text[AJ_EXEC_INLINE_MAX];
} in __attribute__((aligned(4096)));

/* One message on sync_fd: a command to start. false: agentjail is gone. */
static bool serve_recv(const aj_init_args *a, serve_state *st)
{
	int fds[AJ_SYNC_MAX_FDS];
	size_t n = 0, got = 0;
	int r = aj_sync_recv_upto(a->sync_fd, &in, sizeof(in.m), sizeof(in), &got, fds,
				  AJ_ARRAY_SIZE(fds), &n);
	if (r == -EPIPE || (r < 0 && r != -EBADMSG && r != -EINTR))
		return false;
	if (r == 0 && in.m.type == AJ_MSG_EXEC)
		serve_start(a, st, &in.m, fds, n, in.text, got - sizeof(in.m));
	else
		close_fds(fds, n);
	return true;
}

/* One Landlock domain for all the commands of a persistent sandbox (issue
 * 20): with a command per domain, as before, Landlock's scopes (ABI 6:
 * abstract unix sockets, signals) kept one command of a sandbox from
 * connecting to another's abstract socket or signalling it, which processes
 * of one machine can do. Init enforces the ruleset on itself, once: every
 * command it starts is in that domain (and what they start, in nested ones
 * without scopes); other sandboxes and the host are outside it, as before.
 * A process in the domain may signal init, which Landlock no longer
 * prevents; so init first takes a uid of its own in the sandbox's user
 * namespace, none of its commands' (they run as the policy's uid and
 * cannot change it): kill(2) then needs CAP_KILL, which no command has
 * (EPERM), and ptrace CAP_SYS_PTRACE. Its capabilities stay
 * (SECBIT_NO_SETUID_FIXUP); it owns no file and opens nothing but what
 * the ruleset allows its commands. When the uid is not mapped (a user
 * namespace of one id) or anything fails, each command enforces the
 * ruleset itself, as before. */
static bool share_domain(const aj_policy *p, int ruleset)
{
	if (ruleset < 0 || aj_landlock_abi() < 6)
		return false; /* no scopes: one domain per command walls nothing off */
	uid_t own = p->uid == AJ_INIT_UID ? AJ_INIT_UID - 1 : AJ_INIT_UID;
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (bits < 0 || prctl(PR_SET_SECUREBITS, bits | SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0)
		return false;
	bool ok = setresuid(own, own, own) == 0;
	aj_error ignored;
	if (ok && aj_landlock_enforce(ruleset, &ignored) < 0) {
		ok = false;
		if (setresuid(0, 0, 0) < 0)
			_exit(AJ_EXIT_INTERNAL); /* cannot happen: CAP_SETUID is kept */
	}
	(void)prctl(PR_SET_SECUREBITS, bits, 0, 0, 0);
	/* a change of uid clears the parent-death signal: arm it again, so
	 * that init still dies with its keeper */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	return ok;
}

/* What every command of this sandbox starts with, prepared once: the
 * Landlock ruleset (its rules name the sandbox's own paths, set up by
 * now), an empty bounding set (init never execs; its own capabilities stay)
 * and the default seccomp filter loaded into init itself, so that each
 * command inherits it instead of loading (and the kernel compiling) its
 * own. Init needs nothing the default filter denies from here on: poll,
 * sockets it has, clone without namespace flags, wait, kill. A
 * --seccomp-profile may deny anything: each command loads that one. On
 * any failure the commands do it themselves, as aj_init_main's does. */
static void serve_prepare(const aj_init_args *a, prepared *pre)
{
	aj_error ignored;
	if (aj_landlock_prepare(a->policy, &pre->ruleset, &ignored) < 0)
		pre->ruleset = -1;
	pre->landlocked = share_domain(a->policy, pre->ruleset);
	if (pre->landlocked) {
		close(pre->ruleset);
		pre->ruleset = -1;
	}
	pre->bounded = aj_caps_drop_bounding(NULL, 0, &ignored) == 0;
	pre->filtered = !a->seccomp->replaced && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
			aj_seccomp_load(a->seccomp, &ignored) == 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC) == 0) {
		close(p[1]);
		empty_stdin = p[0];
	}
}

/* A command's path once, up to its exec, before the first command comes:
 * its spec read and parsed as serve_start does, the child's setup, then
 * _exit. Init is a fork of the keeper: until then each page of init's
 * heap and libraries' data that a command's start writes (in init, and in
 * the child, which runs in init's memory) is still shared with the
 * keeper, and its first write is a copy-on-write fault, as is the first
 * touch of the child's stack. On a paravirtualized VM that was 6-7 faults
 * of 15-80 us each in the first command of every sandbox
 * (docs/performance.md, round 8); copying all of init's writable pages
 * instead would cost ~200 KiB per sandbox, this a few pages. */
static void serve_warmup(const aj_init_args *a, const prepared *pre)
{
	static const char text[] = "\0/"; /* cwd "", argv {"/"} */
	aj_init_cmd cmd = {.stdio = {-1, -1, -1}, .warmup = true};
	_cleanup_free_ char *spec = NULL;
	size_t len = 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	bool ok = write(p[1], text, sizeof(text)) == (ssize_t)sizeof(text);
	close(p[1]);
	ok = ok && aj_read_fd(p[0], &spec, &len) == 0 && parse_spec(spec, len, 1, 0, &cmd) == 0;
	close(p[0]);
	if (!ok)
		return;
	aj_error ignored;
	pid_t pid = spawn(a, &cmd, pre, NULL, &ignored);
	while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(cmd.argv);
}

/* The one command's loop with commands on request beside it
 * (a->serve_execs): signals through a signalfd, the requests on sync_fd
 * and each command's socket as aj_init_serve's. Returns when the command
 * has ended (*status), false when init could not watch (then as before). */
static bool run_serving(const aj_init_args *a, sigset_t *set, pid_t cmd, int *status)
{
	static serve_state st;
	int sfd = signalfd(-1, set, SFD_CLOEXEC);
	int p[2];
	if (sfd < 0 || pipe2(p, O_CLOEXEC) < 0) {
		if (sfd >= 0)
			close(sfd);
		return false;
	}
	close(p[1]);
	empty_stdin = p[0];
	st.pre = nothing_prepared; /* each command drops, confines and filters itself */
	serve_exec *ex = st.ex;
	bool sync_open = true;
	for (;;) {
		struct pollfd pf[2 + AJ_INIT_MAX_EXECS];
		pf[0] = (struct pollfd){sync_open ? a->sync_fd : -1, POLLIN, 0};
		pf[1] = (struct pollfd){sfd, POLLIN, 0};
		for (size_t i = 0; i < st.n_ex; i++)
			pf[2 + i] = (struct pollfd){ex[i].sock, POLLIN, 0};
		if (poll(pf, 2 + st.n_ex, -1) < 0)
			continue;
		for (size_t i = 0; i < st.n_ex; i++)
			if (pf[2 + i].revents && ex[i].sock >= 0)
				serve_request(&ex[i]);
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			int sig = read(sfd, &si, sizeof(si)) == sizeof(si) ? (int)si.ssi_signo : 0;
			if (sig == SIGCHLD) {
				for (;;) {
					int s;
					pid_t r = waitpid(-1, &s, WNOHANG);
					if (r <= 0)
						break;
					if (r == cmd) {
						*status = s;
						close(sfd);
						return true;
					}
					for (size_t i = 0; i < st.n_ex; i++)
						if (ex[i].pid == r)
							serve_reaped(&ex[i], s);
				}
			} else if (sig == AJ_SIG_TERM_ALL) {
				kill(-1, SIGTERM);
			} else if (sig > 0 && kill(-cmd, sig) < 0) {
				kill(cmd, sig);
			}
		}
		size_t k = 0; /* drop the reaped */
		for (size_t i = 0; i < st.n_ex; i++)
			if (ex[i].pid > 0)
				ex[k++] = ex[i];
		st.n_ex = k;
		if (pf[0].revents)
			sync_open = serve_recv(a, &st);
	}
}

__attribute__((noreturn)) void aj_init_main(const aj_init_args *a)
{
	sigset_t set;
	block_signals(&set);
	aj_msg m;
	memset(&m, 0, sizeof(m));
	aj_error exec_err;
	aj_err_clear(&exec_err);
	int held[2] = {-1, -1};
	pid_t cmd = spawn(a, &a->cmd, &nothing_prepared, held, &exec_err);
	bool failed = cmd < 0;
	if (!failed) {
		m.type = AJ_MSG_STARTED;
		(void)aj_sync_send(a->sync_fd, &m, NULL, 0);
	}

	int status = 0;
	bool done = !failed && a->serve_execs && run_serving(a, &set, cmd, &status);
	while (!done && !failed) {
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
	m = exit_msg(status);
	close_held(held); /* every other writer is gone: EOF, then EXIT */
	(void)aj_sync_send(a->sync_fd, &m, NULL, 0);
	_exit(0);
}

__attribute__((noreturn)) void aj_init_serve(const aj_init_args *a)
{
	sigset_t set;
	block_signals(&set);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	static serve_state st;
	memset(&in, 0, sizeof(in)); /* written now, not at the first command's */
	serve_prepare(a, &st.pre);
	serve_warmup(a, &st.pre);
	serve_exec *ex = st.ex;
	while (sfd >= 0) {
		struct pollfd pf[2 + AJ_INIT_MAX_EXECS];
		pf[0] = (struct pollfd){a->sync_fd, POLLIN, 0};
		pf[1] = (struct pollfd){sfd, POLLIN, 0};
		for (size_t i = 0; i < st.n_ex; i++)
			pf[2 + i] = (struct pollfd){ex[i].sock, POLLIN, 0};
		if (poll(pf, 2 + st.n_ex, -1) < 0)
			continue;
		for (size_t i = 0; i < st.n_ex; i++)
			if (pf[2 + i].revents && ex[i].sock >= 0)
				serve_request(&ex[i]);
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si) &&
			    (int)si.ssi_signo == AJ_SIG_TERM_ALL)
				kill(-1, SIGTERM);
			serve_reap(ex, st.n_ex);
		}
		size_t k = 0; /* drop the reaped */
		for (size_t i = 0; i < st.n_ex; i++)
			if (ex[i].pid > 0)
				ex[k++] = ex[i];
		st.n_ex = k;
		if (pf[0].revents && !serve_recv(a, &st))
			break; /* agentjail is gone: so is the sandbox */
	}
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	_exit(0);
}
