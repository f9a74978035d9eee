/* SPDX-License-Identifier: MIT */
/* A persistent sandbox: create (through a keeper process), run commands in
 * it with streamed, redacted output, destroy. */
#include "box.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "init.h"
#include "mount.h"
#include "net.h"
#include "redact.h"
#include "util.h"

/* NUL-separated strings of an fd (from its start) as a strv. */
static char **read_env(int fd)
{
	_cleanup_free_ char *txt = NULL;
	size_t len = 0;
	if (lseek(fd, 0, SEEK_SET) < 0 || aj_read_fd(fd, &txt, &len) < 0)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += txt[i] == '\0';
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0, k = 0; v && k < n; k++) {
		if (!(v[k] = strdup(txt + i))) {
			aj_strv_free(v);
			return NULL;
		}
		i += strlen(txt + i) + 1;
	}
	return v;
}

extern char **environ;

/* The keeper as a program of its own: the light `agentjail` (or
 * agentjail-net for a network) rebuilds the policy from source and holds
 * the sandbox (cmd_keeper.c). posix_spawn, not fork: a fork of the service
 * would copy its page tables and leave every page it writes afterwards to
 * fault once (copy-on-write), which on a paravirtualized VM cost the first
 * command of the next sandbox ~20 faults of 15-80 us each in the
 * service's threads (docs/performance.md, round 8). The keeper closes
 * every other descriptor, sets its parent-death signal and checks its
 * parent itself. */
static pid_t spawn_keeper(const aj_policy *p, const char *source, int ctl, aj_error *err)
{
	const char *prog = aj_net_wanted(p) ? "agentjail-net" : "agentjail";
	char path[PATH_MAX], ctl_s[16], src_s[16];
	if (aj_program_path(prog, path, sizeof(path)) < 0)
		return aj_err(err, ENAMETOOLONG, "cannot start the sandbox's keeper %s", prog);
	size_t n = 0;
	while (environ[n])
		n++;
	_cleanup_free_ char **envp = calloc(n + 1, sizeof(*envp));
	_cleanup_close_ int src = memfd_create("policy", MFD_CLOEXEC);
	if (!envp || src < 0 || aj_write_all(src, source, strlen(source)) < 0)
		return aj_err(err, envp ? errno : ENOMEM, "cannot start the sandbox's keeper");
	n = 0;
	for (char **e = environ; *e; e++)
		if (!aj_startswith(*e, "TERM=")) /* commands get TERM=dumb */
			envp[n++] = *e; /* with the rest: AGENTJAIL_STATE_DIR names the images */
	snprintf(ctl_s, sizeof(ctl_s), "%d", ctl);
	snprintf(src_s, sizeof(src_s), "%d", src);
	/* the service's audit log for netd's secret_* lines, the id, tenant */
	bool audit = p->audit_fd > 2 && p->audit_sandbox && p->audit_tenant;
	char audit_s[16];
	snprintf(audit_s, sizeof(audit_s), "%d", p->audit_fd);
	char *argv[] = {"agentjail-box",
			AJ_KEEPER_COMMAND,
			ctl_s,
			src_s,
			audit ? audit_s : NULL,
			audit ? p->audit_sandbox : NULL,
			audit ? p->audit_tenant : NULL,
			NULL};
	posix_spawn_file_actions_t fa;
	pid_t pid = -1;
	int e = posix_spawn_file_actions_init(&fa);
	if (e == 0) {
		/* a dup2 onto itself clears FD_CLOEXEC: the two are inherited */
		if (!(e = posix_spawn_file_actions_adddup2(&fa, ctl, ctl)) &&
		    !(e = posix_spawn_file_actions_adddup2(&fa, src, src)) &&
		    (!audit ||
		     !(e = posix_spawn_file_actions_adddup2(&fa, p->audit_fd, p->audit_fd))))
			e = posix_spawn(&pid, path, &fa, NULL, argv, envp);
		posix_spawn_file_actions_destroy(&fa);
	}
	if (e) {
		aj_err(err, e, "cannot start the sandbox's keeper %s", path);
		aj_err_hint(err, "agentjail's programs are installed next to each other");
		return -e;
	}
	return pid;
}

/* Close the keeper's socket (it tears everything down and exits) and
 * reap it: its wait status, 0 when there was none. */
static int end_keeper(aj_box *b)
{
	int st = 0;
	if (b->ctl >= 0)
		close(b->ctl);
	if (b->keeper > 0)
		while (waitpid(b->keeper, &st, 0) < 0 && errno == EINTR)
			;
	b->ctl = -1;
	b->keeper = 0;
	return st;
}

void aj_box_init(aj_box *b)
{
	memset(b, 0, sizeof(*b));
	b->ctl = b->sock = b->root = b->oom = -1;
}

int aj_box_create(aj_box *b, const aj_policy *p, const char *source, aj_error *err)
{
	aj_box_init(b);
	b->policy = p;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return aj_err(err, errno, "socketpair");
	b->keeper = spawn_keeper(p, source, sv[1], err);
	if (b->keeper < 0) {
		close(sv[0]);
		close(sv[1]);
		return (int)b->keeper;
	}
	close(sv[1]);
	b->ctl = sv[0];
	int fds[3] = {-1, -1, -1};
	size_t n = 0;
	int r = aj_sync_recv_buf(b->ctl, &b->info, sizeof(b->info), fds, 3, &n);
	if (r == 0 && b->info.m.type == AJ_MSG_SETUP_DONE && n == 3) {
		b->sock = steal_fd(&fds[0]);
		b->root = steal_fd(&fds[1]);
		if (b->info.have_cg && (b->oom = aj_cgroup_oom_fd(&b->info.cg)) < 0)
			b->oom = -1;
		if ((b->envp = read_env(fds[2])))
			r = 0;
		else
			r = aj_err(err, ENOMEM, "environment");
	} else if (r == 0 && b->info.m.type == AJ_MSG_ERROR) {
		*err = b->info.m.err;
		aj_err_prefix(err, "sandbox setup failed");
		r = -(err->code ? err->code : EINVAL);
	} else {
		/* how it ended says why: killed by a signal, or an exit of its
		 * own (its message went to the service's stderr) */
		int st = end_keeper(b), code = r < 0 ? -r : EPROTO;
		if (WIFSIGNALED(st))
			r = aj_err(err, code,
				   "the sandbox's keeper died during setup: killed by signal %d",
				   WTERMSIG(st));
		else
			r = aj_err(err, code,
				   "the sandbox's keeper ended during setup with status %d",
				   WEXITSTATUS(st));
		aj_err_hint(err, "the service's log has the keeper's own message, if any");
	}
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (r < 0)
		aj_box_destroy(b);
	return r;
}

void aj_box_destroy(aj_box *b)
{
	if (b->sock >= 0)
		close(b->sock);
	if (b->root >= 0)
		close(b->root);
	if (b->oom >= 0)
		close(b->oom);
	int st = end_keeper(b);
	/* a keeper that did not end by itself (SIGKILL) left its cgroups */
	if (b->info.have_cg && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		aj_cgroup_destroy(&b->info.cg);
	b->info.have_cg = false;
	if (b->warm) /* the zygote's command ended with the sandbox */
		b->warm->free(b);
	aj_strv_free(b->envp);
	b->envp = NULL;
	b->sock = b->root = b->oom = -1;
}

int aj_box_root_fd(const aj_box *b, aj_error *err)
{
	int fd = fcntl(b->root, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return aj_err(err, errno, "cannot open the sandbox's root");
	return fd;
}

int aj_box_set_disk(const aj_box *b, unsigned long long bytes, aj_error *err)
{
	/* the sandbox's /tmp is a bind of its scratch tmpfs, which holds every
	 * writable area: reconfiguring that superblock resizes them all. The
	 * service is root in the sandbox's user namespace's parent. */
	_cleanup_close_ int tmp =
	    openat(b->root, "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct statfs sf;
	if (tmp < 0 || fstatfs(tmp, &sf) < 0 || sf.f_type != TMPFS_MAGIC)
		return aj_err(err, tmp < 0 ? errno : EINVAL,
			      "the sandbox's /tmp is not its scratch tmpfs");
	_cleanup_close_ int fs = fspick(tmp, "", FSPICK_EMPTY_PATH | FSPICK_CLOEXEC);
	char size[32], inodes[32];
	snprintf(size, sizeof(size), "%llu", bytes);
	snprintf(inodes, sizeof(inodes), "%llu", aj_scratch_inodes(bytes));
	if (fs < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", inodes, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0) < 0)
		return aj_err(err, errno, "cannot resize the sandbox's disk to %llu bytes", bytes);
	return 0;
}

/* ---- one command ---- */

struct aj_box_job {
	aj_box *box;
	aj_exec_io io;
	int ctl;    /* our end of the command's socket to init */
	int out[2]; /* read ends of stdout, stderr; -1 at EOF */
	aj_redactor red[2];
	int stage;	/* timeout: 0 running, 1 SIGTERM sent, 2 SIGKILL sent */
	bool ended;	/* init reported the end */
	bool cancelled; /* the consumer went away */
	bool sig_eof;	/* io.signal_fd ended */
	aj_msg end;
	char *buf; /* for reads of the output: on the heap, a worker thread's
		      stack is not faulted in page by page for it */
	long long t0;
	unsigned long long timeout_ms, oom0;
	int r; /* what sending the command gave (0, or a negative errno and err) */
	aj_error err;
};
typedef struct aj_box_job exec_ctx;

/* One read of the output: a 1 MiB stdout pipe (below) lets a fast
 * producer run ahead, and each read takes up to this much of it, so a
 * stream costs a quarter of the reads, events and writes it did with
 * 64 KiB (docs/performance.md). */
#define EXEC_READ_MAX (256 * 1024)
#define EXEC_PIPE_SIZE (1024 * 1024)

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A memfd with the given bytes, read from its start. */
static int memfd_with(const char *name, const char *data, size_t len, aj_error *err)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return aj_err(err, errno, "memfd_create");
	/* pwrite: the offset stays at 0 for the reader, no lseek */
	for (size_t done = 0; done < len;) {
		ssize_t w = pwrite(fd, data + done, len - done, (off_t)done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;
			close(fd);
			return aj_err(err, e, "cannot write the command's %s", name);
		}
		done += (size_t)w;
	}
	return fd;
}

/* cwd, argv, environment (the policy's, then spec->env: later wins), as
 * NUL-terminated strings in *out (*len bytes); counts in m. */
static int build_spec(const aj_box *b, const aj_exec_spec *s, aj_msg *m, char **out, size_t *olen,
		      aj_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;
	int n_env = 0;
	for (char **v = s->env; v && *v; v++)
		n_env++;
	int envc = 0;
	for (char **v = b->envp; *v; v++)
		envc++;
	_cleanup_free_ const char **env = calloc((size_t)(envc + n_env + 1), sizeof(char *));
	if (!env)
		return aj_err(err, ENOMEM, "environment");
	for (int i = 0; i < envc; i++)
		env[i] = b->envp[i];
	for (int i = 0; i < n_env; i++) { /* replace NAME= or append */
		const char *e = s->env[i];
		size_t nl = strcspn(e, "=");
		int k = 0;
		while (k < envc && !(strncmp(env[k], e, nl) == 0 && env[k][nl] == '='))
			k++;
		env[k] = e;
		if (k == envc)
			envc++;
	}
	m->argc = 0;
	for (char **v = s->argv; *v; v++)
		m->argc++;
	m->envc = envc;
	const char *cwd = s->cwd ? s->cwd : "";
	for (int i = -1; i < m->argc + envc; i++) {
		const char *str = i < 0 ? cwd : i < m->argc ? s->argv[i] : env[i - m->argc];
		size_t l = strlen(str) + 1;
		if (len + l > cap) {
			cap = (len + l) * 2;
			char *nb = realloc(buf, cap);
			if (!nb)
				return aj_err(err, ENOMEM, "command line");
			buf = nb;
		}
		memcpy(buf + len, str, l);
		len += l;
	}
	*out = buf;
	*olen = len;
	buf = NULL;
	return 0;
}

/* The command's stdin, stdout, stderr (io) and our ends of its output
 * (mine): a pty's slave and master, or pipes (and stdin's memfd or fd). */
static int make_stdio(exec_ctx *c, const aj_exec_spec *s, int io[3], int mine[2], aj_error *err)
{
	if (s->tty_slave > 0) {
		for (int i = 0; i < 3; i++)
			if ((io[i] = fcntl(s->tty_slave, F_DUPFD_CLOEXEC, 3)) < 0)
				return aj_err(err, errno, "dup");
		if ((mine[0] = fcntl(s->tty_master, F_DUPFD_CLOEXEC, 3)) < 0)
			return aj_err(err, errno, "dup");
		return 0;
	}
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0)
		return aj_err(err, errno, "cannot create the command's pipes");
	mine[0] = po[0], io[1] = po[1];
	(void)fcntl(po[0], F_SETPIPE_SZ, EXEC_PIPE_SIZE); /* best effort: the user's pipe quota */
	if (pipe2(pe, O_CLOEXEC) < 0)
		return aj_err(err, errno, "cannot create the command's pipes");
	mine[1] = pe[0], io[2] = pe[1];
	/* owned by the sandbox user, so /dev/stdout works inside */
	if ((fchown(po[0], c->box->info.uid, c->box->info.gid) < 0 ||
	     fchown(pe[0], c->box->info.uid, c->box->info.gid) < 0) &&
	    getuid() == 0)
		return aj_err(err, errno, "cannot hand the pipes to the sandbox user");
	if (s->stdin_fd > 0 && (io[0] = fcntl(s->stdin_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return aj_err(err, errno, "dup");
	/* no stdin at all: init's own empty one (AJ_EXEC_NO_STDIN) */
	if (s->stdin_fd <= 0 && s->stdin_len &&
	    (io[0] = memfd_with("stdin", s->stdin_data, s->stdin_len, err)) < 0)
		return io[0];
	return 0;
}

/* Send the request to init; our ends of stdout/stderr/control in c. The
 * spec goes in the message when it fits, else in a memfd. */
static int start(exec_ctx *c, const aj_exec_spec *s, aj_error *err)
{
	aj_msg m;
	memset(&m, 0, sizeof(m));
	m.type = AJ_MSG_EXEC;
	m.status = s->tty_slave > 0 ? AJ_EXEC_TTY : 0;
	int io[3] = {-1, -1, -1}, sv[2] = {-1, -1}, spec = -1;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = make_stdio(c, s, io, c->out, err);
	if (r == 0 && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		r = aj_err(err, errno, "socketpair");
	if (r == 0)
		r = build_spec(c->box, s, &m, &text, &len, err);
	bool inline_spec = len <= AJ_EXEC_INLINE_MAX;
	if (r == 0 && !inline_spec && (spec = memfd_with("command", text, len, err)) < 0)
		r = spec;
	if (r == 0) {
		int fds[5], n = 0;
		fds[n++] = sv[1];
		if (io[0] >= 0)
			fds[n++] = io[0];
		else
			m.status |= AJ_EXEC_NO_STDIN;
		fds[n++] = io[1];
		fds[n++] = io[2];
		if (spec >= 0)
			fds[n++] = spec;
		else
			m.status |= AJ_EXEC_SPEC_INLINE;
		/* never waits: the service's own thread sends this, and an init
		 * that does not read (frozen) must not hold it */
		int e = aj_sync_send_more(c->box->sock, &m, inline_spec ? text : NULL,
					  inline_spec ? len : 0, fds, (size_t)n);
		if (e == -EAGAIN)
			r = aj_err(err, EAGAIN, "the sandbox takes no more commands now");
		else if (e < 0)
			r = aj_err(err, -e, "the sandbox is gone");
	}
	if (s->tty_slave > 0)
		close(s->tty_slave); /* taken: the command holds it now (EOF when it ends) */
	int close_now[] = {sv[1], io[0], io[1], io[2], spec};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(close_now); i++)
		if (close_now[i] >= 0)
			close(close_now[i]);
	c->ctl = sv[0];
	return r;
}

/* init answers at once: STARTED, or why the command could not start */
static int started(exec_ctx *c, aj_error *err)
{
	aj_msg m;
	struct pollfd pf = {c->ctl, POLLIN, 0};
	if (poll(&pf, 1, 30000) != 1)
		return aj_err(err, ETIMEDOUT, "the sandbox did not start the command");
	int e = aj_sync_recv(c->ctl, &m, NULL, 0, NULL);
	if (e == 0 && m.type == AJ_MSG_STARTED)
		return 0;
	if (e == 0 && m.type == AJ_MSG_ERROR) {
		*err = m.err;
		return -(err->code ? err->code : EINVAL);
	}
	return aj_err(err, e < 0 ? -e : EPROTO, "the sandbox is gone");
}

static void send_signal(exec_ctx *c, int sig)
{
	aj_msg m;
	memset(&m, 0, sizeof(m));
	m.type = AJ_MSG_SIGNAL;
	m.signal = sig;
	(void)aj_sync_send(c->ctl, &m, NULL, 0);
}

static void emit(exec_ctx *c, int k, const char *buf, size_t len, bool final)
{
	_cleanup_free_ char *out = NULL;
	size_t olen = len;
	const char *o = buf; /* nothing to redact: the bytes as read, no copy */
	if (aj_redactor_active(&c->red[k])) {
		if (aj_redactor_feed(&c->red[k], buf, len, final, &out, &olen) < 0)
			return;
		o = out;
	}
	if (olen && !c->cancelled && c->io.output(c->io.ctx, k + 1, o, olen) < 0) {
		c->cancelled = true;
		send_signal(c, SIGKILL);
	}
}

static void read_output(exec_ctx *c, int k)
{
	ssize_t n = read(c->out[k], c->buf, EXEC_READ_MAX);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n > 0) {
		emit(c, k, c->buf, (size_t)n, false);
		return;
	}
	emit(c, k, NULL, 0, true);
	close(c->out[k]);
	c->out[k] = -1;
}

static void on_control(exec_ctx *c)
{
	int r = aj_sync_recv(c->ctl, &c->end, NULL, 0, NULL);
	if (r == 0 && c->end.type != AJ_MSG_EXIT)
		return;
	if (r < 0) { /* init died: the sandbox is gone (OOM, destroyed) */
		memset(&c->end, 0, sizeof(c->end));
		c->end.signal = SIGKILL;
	}
	c->ended = true;
}

/* Bytes on io->signal_fd: signals for the command; 0: cancel. */
static void on_signal_fd(exec_ctx *c)
{
	unsigned char sigs[16];
	ssize_t n = read(c->io.signal_fd, sigs, sizeof(sigs));
	if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
		c->sig_eof = true;
	for (ssize_t i = 0; i < n; i++) {
		if (sigs[i] == 0)
			c->cancelled = true;
		send_signal(c, sigs[i] ? sigs[i] : SIGKILL);
	}
}

/* Poll until the end is reported and the output drained (bounded). */
static void exec_loop(exec_ctx *c)
{
	long long t0 = now_ms(), deadline = c->timeout_ms ? t0 + (long long)c->timeout_ms : 0;
	long long drain_until = 0;
	unsigned long long grace = c->box->policy->kill_after_ms;
	while (!c->ended || c->out[0] >= 0 || c->out[1] >= 0) {
		if (c->ended && !drain_until)
			drain_until = now_ms() + 1000;
		struct pollfd pf[5] = {
		    {c->ended ? -1 : c->ctl, POLLIN, 0},
		    {c->out[0], POLLIN, 0},
		    {c->out[1], POLLIN, 0},
		    {c->cancelled || c->sig_eof ? -1 : c->io.signal_fd, POLLIN, 0},
		    {c->cancelled || c->io.cancel_fd <= 0 ? -1 : c->io.cancel_fd, POLLIN, 0}};
		long long now = now_ms(), wait = -1;
		if (deadline && !c->ended)
			wait = deadline > now ? deadline - now : 0;
		if (drain_until)
			wait = drain_until > now ? drain_until - now : 0;
		int pr = poll(pf, 5, wait > 60000 ? 60000 : (int)wait);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr == 0 && drain_until && now_ms() >= drain_until)
			break;
		if (pr == 0 && deadline && !c->ended && now_ms() >= deadline) {
			c->stage++;
			send_signal(c, c->stage == 1 ? SIGTERM : SIGKILL);
			deadline = c->stage == 1 ? now_ms() + (long long)(grace ? grace : 1) : 0;
			continue;
		}
		for (int k = 0; k < 2; k++)
			if (pf[1 + k].revents)
				read_output(c, k);
		if (pf[3].revents)
			on_signal_fd(c);
		if (pf[4].revents) { /* the consumer went away */
			c->cancelled = true;
			send_signal(c, SIGKILL);
		}
		if (pf[0].revents)
			on_control(c);
	}
}

static unsigned long long oom_kills(const aj_box *b)
{
	if (b->oom >= 0)
		return aj_cgroup_oom_kills_fd(b->oom);
	return b->info.have_cg ? aj_cgroup_oom_kills(&b->info.cg) : 0;
}

static aj_box_job *job_start(aj_box *b, const aj_exec_spec *spec, const aj_exec_io *io)
{
	exec_ctx *c = calloc(1, sizeof(*c));
	if (!c) {
		if (spec->tty_slave > 0)
			close(spec->tty_slave); /* taken, as start() would have */
		return NULL;
	}
	*c = (exec_ctx){.box = b,
			.io = *io,
			.ctl = -1,
			.out = {-1, -1},
			.t0 = now_ms(),
			.timeout_ms = spec->timeout_ms};
	aj_err_clear(&c->err);
	c->oom0 = oom_kills(b);
	int r = (c->buf = malloc(EXEC_READ_MAX)) ? 0 : aj_err(&c->err, ENOMEM, "output buffer");
	for (int k = 0; k < 2 && r == 0; k++)
		if (aj_redactor_init_policy(&c->red[k], b->policy) < 0)
			r = aj_err(&c->err, ENOMEM, "redaction patterns");
	if (r == 0)
		r = start(c, spec, &c->err);
	else if (spec->tty_slave > 0)
		close(spec->tty_slave); /* taken, as start() would have */
	c->r = r;
	return c;
}

aj_box_job *aj_box_exec_start(aj_box *b, const aj_exec_spec *spec, const aj_exec_io *io)
{
	char **warm = spec->tty_slave > 0 || !b->warm ? NULL : b->warm->argv(b, spec->argv);
	if (!warm)
		return job_start(b, spec, io);
	aj_exec_spec s = *spec;
	s.argv = warm;
	aj_box_job *c = job_start(b, &s, io);
	aj_strv_free(warm);
	return c;
}

void aj_box_exec_abandon(aj_box_job *c)
{
	if (!c)
		return;
	for (int k = 0; k < 2; k++) {
		if (c->out[k] >= 0)
			close(c->out[k]);
		aj_redactor_free(&c->red[k]);
	}
	if (c->ctl >= 0)
		close(c->ctl); /* should the command still run, init kills it */
	free(c->buf);
	free(c);
}

int aj_box_exec_wait(aj_box_job *c, aj_run_result *res, aj_error *err)
{
	memset(res, 0, sizeof(*res));
	if (!c)
		return aj_err(err, ENOMEM, "cannot start the command: out of memory");
	int r = c->r;
	if (r == 0)
		r = started(c, &c->err);
	if (r == 0) {
		aj_box *b = c->box;
		exec_loop(c);
		res->term_signal = c->end.signal;
		res->status = c->end.status;
		res->exit_code = c->end.signal ? 128 + c->end.signal : c->end.status;
		res->oom_killed = oom_kills(b) > c->oom0;
		if (c->stage > 0) {
			res->timed_out = true;
			res->exit_code = AJ_EXIT_TIMEOUT;
		}
	} else {
		*err = c->err;
	}
	res->wall_ms = (unsigned long long)(now_ms() - c->t0);
	aj_box_exec_abandon(c);
	return r;
}

int aj_box_exec(aj_box *b, const aj_exec_spec *spec, const aj_exec_io *io, aj_run_result *res,
		aj_error *err)
{
	return aj_box_exec_wait(aj_box_exec_start(b, spec, io), res, err);
}

int aj_box_exec_direct(aj_box *b, const aj_exec_spec *spec, const aj_exec_io *io,
		       aj_run_result *res, aj_error *err)
{
	return aj_box_exec_wait(job_start(b, spec, io), res, err);
}
