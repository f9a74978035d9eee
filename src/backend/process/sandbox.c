/* SPDX-License-Identifier: MIT */
/* The pipeline of one sandbox: plan, clone into new namespaces, map ids,
 * join the cgroup, build the root in the child, run init, relay, tear down. */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "box.h"
#include "cgroup.h"
#include "etc.h"
#include "init.h"
#include "mount.h"
#include "net.h"
#include "protect.h"
#include "pty.h"
#include "relay.h"
#include "run_exec.h"
#include "sysfilter.h"
#include "sync.h"
#include "userns.h"
#include "util.h"

#define AJ_CLONE_FLAGS (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS)

/* The network namespace: at clone when the parent sets it up (veth, nft,
 * netd: aj_net_wanted), else made by the child itself after PARENT_GO,
 * while the parent moves it into its cgroups (docs/performance.md). */
static unsigned long clone_flags(const aj_policy *p)
{
	unsigned long f = AJ_CLONE_FLAGS | (aj_net_wanted(p) ? CLONE_NEWNET : 0);
	/* a pod's ipc and uts namespaces, joined by the caller (oci create) */
	return f & ~(p->ipc_inherit ? CLONE_NEWIPC : 0UL) & ~(p->uts_inherit ? CLONE_NEWUTS : 0UL);
}

typedef struct run_ctx {
	const aj_policy *p;
	const aj_run_hooks *hooks;
	aj_idmap idm;
	aj_mount_plan plan;
	aj_cgroup cg;
	bool have_cg;
	aj_cgroup_view cg_view; /* what aj_cgroup_ensure_mounted read, for make_cgroup */
	aj_net net;
	bool want_tty;
	bool background; /* in the background of the caller's terminal */
	char **envp;
	aj_bpf bpf;
	char **argv; /* heap copy: the original argv area is wiped in init */
	int sock[2];
	int master;
	int stdio[3];	   /* parent's ends of the command's stdin/stdout/stderr pipes */
	int child_io[3];   /* the sandbox's ends */
	int tfd;	   /* --timeout timer */
	int timeout_stage; /* 0 running, 1 SIGTERM sent, 2 SIGKILL sent */
	struct rusage ru;
	aj_redactor red[2]; /* stdout, stderr */
	char warnings[4][768];
	size_t n_warnings;
	pid_t pid;
	bool persistent; /* a box: init serves commands on request (box.c) */
	int root_fd;	 /* a box: O_PATH of the sandbox's root, from init */
	int etc_lock;	 /* the /etc cache's manifest, locked while in use */
	/* the workspace's host-run files (protect.h) */
	struct aj_protect *prot;
} run_ctx;

/* Warnings about degraded features are held until the sandbox is set up:
 * a run that fails says one thing only, its error. */
static void warn(run_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(run_ctx *c, const char *fmt, ...)
{
	if (!c->hooks || !c->hooks->warn || c->p->quiet ||
	    c->n_warnings >= AJ_ARRAY_SIZE(c->warnings))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->warnings[c->n_warnings++], sizeof(c->warnings[0]), fmt, ap);
	va_end(ap);
}

static void flush_warnings(run_ctx *c)
{
	for (size_t i = 0; i < c->n_warnings; i++)
		c->hooks->warn(c->hooks->ctx, c->warnings[i]);
	c->n_warnings = 0;
}

static int bring_up_loopback(aj_error *err)
{
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return aj_err(err, errno, "socket in the sandbox network namespace");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return aj_err(err, errno, "cannot read the loopback interface");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return aj_err(err, errno, "cannot bring up the loopback interface");
	return 0;
}

/* Exit when the parent is gone (the socket's other end closed). */
static void die_with_parent(int sock)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	struct pollfd pfd = {.fd = sock, .events = 0};
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR)))
		_exit(AJ_EXIT_INTERNAL);
}

static int child_setup(run_ctx *c, int sock, char *pty, size_t ptylen, int *master, aj_error *err)
{
	const aj_policy *p = c->p;
	aj_msg m;
	int ca = -1;
	size_t nca = 0;
	int r = aj_sync_recv(sock, &m, &ca, 1, &nca);
	if (r < 0 || m.type != AJ_MSG_PARENT_GO)
		_exit(AJ_EXIT_INTERNAL);
	/* netd's CA certificate, for the root's CA bundle (mount.c) */
	if (nca == 1) {
		r = aj_read_fd(ca, &c->plan.ca_pem, NULL);
		close(ca);
		if (r < 0)
			return aj_err(err, -r, "cannot read netd's CA certificate");
	}
	/* From now on act as the sandbox's root, not as the caller. */
	if (c->idm.privileged && setgroups(0, NULL) < 0)
		return aj_err(err, errno, "setgroups in the sandbox");
	/* Privileged: ids 0-65535 are mapped, become 0. Unprivileged: only
	 * the caller's ids are mapped (to --user); we keep every capability
	 * of the new namespace either way. */
	uid_t u = c->idm.privileged ? 0 : c->idm.inside_uid;
	gid_t g = c->idm.privileged ? 0 : c->idm.inside_gid;
	if (setresgid(g, g, g) < 0 || setresuid(u, u, u) < 0)
		return aj_err(err, errno, "cannot become uid %u of the sandbox's user namespace",
			      (unsigned)u);
	die_with_parent(sock); /* credential change cleared the death signal */
	/* the parent makes our cgroups meanwhile (parent_start) */
	if (!aj_net_wanted(p) && !p->net_inherit && unshare(CLONE_NEWNET) < 0)
		return aj_err(err, errno, "cannot create the sandbox's network namespace");
	if ((r = aj_mount_setup_root(p, &c->plan, err)) < 0)
		return r;
	const char *host = p->hostname ? p->hostname : AJ_DEFAULT_HOSTNAME;
	if (!p->uts_inherit && sethostname(host, strlen(host)) < 0)
		return aj_err(err, errno, "sethostname");
	if (!p->net_inherit && (r = bring_up_loopback(err)) < 0)
		return r; /* an inherited one: the caller's (aj_net_join_netns) */
	if (c->want_tty) {
		*master = aj_pty_open(pty, ptylen, err);
		if (*master < 0)
			return *master;
	}
	/* before anything of the sandbox runs: in our cgroups (if any), which
	 * become the cgroup namespace's root; v1's through their tasks files
	 * (parent_start) */
	int tasks[AJ_CG_MAX_DIRS];
	size_t nt = 0;
	r = aj_sync_recv(sock, &m, tasks, AJ_CG_MAX_DIRS, &nt);
	if (r < 0 || m.type != AJ_MSG_CGROUP_DONE)
		_exit(AJ_EXIT_INTERNAL);
	if ((r = aj_cgroup_join_self(tasks, nt, err)) < 0)
		return r;
	if (unshare(CLONE_NEWCGROUP) < 0)
		return aj_err(err, errno, "cannot create a cgroup namespace");
	return 0;
}

/* The child is a copy of agentjail's memory: scrub the secret values from
 * it, so not even init holds them. */
static void wipe_secrets(run_ctx *c)
{
	aj_policy *p = (aj_policy *)c->p; /* the child's private copy */
	for (size_t i = 0; i < p->n_secrets; i++)
		explicit_bzero(p->secrets[i].value, strlen(p->secrets[i].value));
	for (size_t i = 0; i < p->n_redact; i++)
		explicit_bzero(p->redact[i], strlen(p->redact[i]));
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < c->red[k].n; i++)
			explicit_bzero(c->red[k].pat[i], c->red[k].plen[i]);
	}
}

__attribute__((noreturn)) static void child_main(run_ctx *c)
{
	int sock = c->sock[1];
	close(c->sock[0]);
	for (int i = 0; i < 3; i++)
		if (c->stdio[i] >= 0)
			close(c->stdio[i]);
	aj_proctitle_set("agentjail-init");
	wipe_secrets(c);
	die_with_parent(sock);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	aj_error err;
	aj_err_clear(&err);
	char pty[64] = "";
	int master = -1;
	if (child_setup(c, sock, pty, sizeof(pty), &master, &err) < 0) {
		aj_sync_send_error(sock, &err);
		_exit(AJ_EXIT_INTERNAL);
	}
	/* init keeps only its socket and the command's stdio */
	/* a box: the service reaches the sandbox's files beneath its root */
	if (c->persistent && (master = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		aj_err(&err, errno, "cannot open the sandbox's root");
		aj_sync_send_error(sock, &err);
		_exit(AJ_EXIT_INTERNAL);
	}
	int keep[] = {sock, master, c->child_io[0], c->child_io[1], c->child_io[2]};
	aj_close_all_except(keep, AJ_ARRAY_SIZE(keep));
	aj_msg m;
	memset(&m, 0, sizeof(m));
	m.type = AJ_MSG_SETUP_DONE;
	if (aj_sync_send(sock, &m, master >= 0 ? &master : NULL, master >= 0 ? 1 : 0) < 0)
		_exit(AJ_EXIT_INTERNAL);
	if (master >= 0)
		close(master);
	/* a ready hook (backend.h): the command waits for its go */
	if (c->hooks && c->hooks->ready &&
	    (aj_sync_recv(sock, &m, NULL, 0, NULL) < 0 || m.type != AJ_MSG_PARENT_GO))
		_exit(AJ_EXIT_INTERNAL);
	aj_init_args a = {.policy = c->p,
			  .sync_fd = sock,
			  .drop_groups = c->idm.privileged,
			  .seccomp = &c->bpf,
			  .cmd = {.argv = c->argv,
				  .envp = c->envp,
				  .pty = c->want_tty ? pty : NULL,
				  .stdio = {c->child_io[0], c->child_io[1], c->child_io[2]}},
			  .serve_execs = c->hooks && c->hooks->exec_listen > 0};
	if (c->persistent)
		aj_init_serve(&a);
	aj_init_main(&a);
}

static int setup_redactors(run_ctx *c, aj_error *err);

static void make_name(char *buf, size_t len)
{
	unsigned r = 0;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (unsigned)getpid();
	snprintf(buf, len, "agentjail-%d-%08x", (int)getpid(), r);
}

/* The sandbox's cgroups, with their limits (and a freezer for a box).
 * Limits fail closed (cgroup.h): a limit that cannot be enforced fails the
 * run, unless --limits best-effort, which names what was not applied. */
static int make_cgroup(run_ctx *c, aj_error *err)
{
	char name[64];
	make_name(name, sizeof(name));
	int r = aj_cgroup_create_in(&c->cg, name, c->p, &c->cg_view, err);
	aj_cgroup_view_free(&c->cg_view);
	if (r < 0)
		return r;
	c->have_cg = c->cg.n > 0;
	if (c->cg.missing) {
		char names[64];
		aj_cgroup_limit_names(c->cg.missing, names, sizeof(names));
		warn(c, "limits NOT enforced (--limits best-effort): %s: %s", names, c->cg.why);
	}
	/* a box can be paused (the service's pause/resume), and an OCI container */
	bool freezer = c->persistent || (c->hooks && c->hooks->freezer);
	return freezer && c->have_cg ? aj_cgroup_add_freezer(&c->cg, err) : 0;
}

static int prepare(run_ctx *c, aj_error *err)
{
	const aj_policy *p = c->p;
	int r = aj_userns_plan(&c->idm, p->uid, p->gid, err);
	if (r < 0)
		return r;
	if ((r = aj_mount_plan_build(p, &c->plan, c->idm.privileged ? &c->etc_lock : NULL, err)) <
	    0)
		return r;
	if ((r = aj_protect_prepare(p, &c->prot, err)) < 0)
		return r;
	c->plan.protect = c->prot; /* the child binds them (mount.c) */
	if ((r = aj_net_prepare(&c->net, p, err)) < 0)
		return r;
	_cleanup_free_ char *host_resolv = NULL;
	if (p->net == AJ_NET_OPEN)
		(void)aj_read_file("/etc/resolv.conf", &host_resolv, NULL);
	if (!(c->plan.resolv_conf = aj_net_resolv_conf(&c->net, p, host_resolv)) ||
	    aj_etc_prepare(p, c->plan.resolv_conf, &c->plan.etc) < 0)
		return aj_err(err, ENOMEM, "cannot prepare the sandbox's /etc");
	if ((r = aj_seccomp_compile(p, &c->bpf, err)) < 0 || (r = setup_redactors(c, err)) < 0)
		return r;
	if (c->idm.privileged) {
		char map[64];
		aj_userns_format_map(&c->idm, false, map, sizeof(map));
		r = aj_mount_plan_open(&c->plan, map, aj_userns_host_uid(&c->idm),
				       aj_userns_host_gid(&c->idm), err);
		if (r < 0)
			return r;
	}
	char **net_env = aj_net_env(&c->net, p);
	c->envp = net_env ? aj_policy_build_env(p, getenv("TERM"), net_env) : NULL;
	aj_strv_free(net_env);
	size_t argc = 0;
	while (p->argv && p->argv[argc])
		argc++;
	c->argv = calloc(argc + 1, sizeof(char *));
	for (size_t i = 0; c->argv && i < argc; i++)
		if (!(c->argv[i] = strdup(p->argv[i])))
			return aj_err(err, ENOMEM, "argv");
	if (!c->envp || !c->argv)
		return aj_err(err, ENOMEM, "environment");
	return 0;
}

static int parent_start(run_ctx *c, aj_error *err)
{
	int r = aj_userns_write_maps(&c->idm, c->pid, err);
	if (r == 0)
		r = aj_net_setup(&c->net, c->p, c->pid, err);
	if (r < 0)
		return r;
	aj_msg m;
	memset(&m, 0, sizeof(m));
	m.type = AJ_MSG_PARENT_GO;
	/* HTTPS interception: netd's CA certificate goes with it (a memfd) */
	_cleanup_close_ int ca = -1;
	if (c->net.ca_pem) {
		ca = memfd_create("ca", MFD_CLOEXEC);
		if (ca < 0 || aj_write_all(ca, c->net.ca_pem, strlen(c->net.ca_pem)) < 0 ||
		    lseek(ca, 0, SEEK_SET) < 0)
			return aj_err(err, errno, "cannot pass netd's CA certificate on");
	}
	if ((r = aj_sync_send(c->sock[0], &m, ca >= 0 ? &ca : NULL, ca >= 0 ? 1 : 0)) < 0)
		return aj_err(err, -r, "cannot reach the sandbox");
	/* The cgroups are made while the child builds its root (and its
	 * network namespace), before which it does not wait for CGROUP_DONE:
	 * ~0.5 ms (mkdir, limits, the hierarchies found in mountinfo) off the
	 * path to the command. The child moves itself into the v1 ones
	 * through their tasks files, which come with CGROUP_DONE (moving it
	 * from here would wait for an RCU grace period, cgroup.h); a v2
	 * cgroup it is moved into from here. It joins before its cgroup
	 * namespace and before init runs anything of the sandbox.
	 * (docs/performance.md, rounds 4 and 9) */
	if ((r = make_cgroup(c, err)) < 0)
		return r;
	int tasks[AJ_CG_MAX_DIRS];
	int nt = 0;
	if (c->have_cg && (nt = aj_cgroup_open_tasks(&c->cg, tasks, err)) < 0)
		return nt;
	if (c->have_cg && (r = aj_cgroup_join(&c->cg, c->pid, false, err)) < 0) {
		while (nt > 0)
			close(tasks[--nt]);
		/* a child that failed and exited meanwhile: its error says why */
		struct pollfd pfd = {.fd = c->sock[0], .events = POLLIN};
		if (poll(&pfd, 1, 0) == 1 && aj_sync_recv(c->sock[0], &m, NULL, 0, NULL) == 0 &&
		    m.type == AJ_MSG_ERROR) {
			*err = m.err;
			aj_err_prefix(err, "sandbox setup failed");
			return -(err->code ? err->code : EINVAL);
		}
		return r;
	}
	m.type = AJ_MSG_CGROUP_DONE;
	/* a dead child: its error comes next */
	(void)aj_sync_send(c->sock[0], &m, nt ? tasks : NULL, (size_t)nt);
	while (nt > 0)
		close(tasks[--nt]);
	int fds[1];
	size_t n = 0;
	r = aj_sync_recv(c->sock[0], &m, fds, 1, &n);
	/* a child that failed and exited with CGROUP_DONE unread: the reset
	 * is reported first (a seqpacket socket's pending error comes before
	 * its queue), its error message is still queued behind it */
	if (r == -ECONNRESET)
		r = aj_sync_recv(c->sock[0], &m, fds, 1, &n);
	if (r < 0)
		return aj_err(err, -r, "the sandbox died during setup");
	if (m.type == AJ_MSG_ERROR) {
		*err = m.err;
		aj_err_prefix(err, "sandbox setup failed");
		return -(err->code ? err->code : EINVAL);
	}
	if (m.type != AJ_MSG_SETUP_DONE)
		return aj_err(err, EPROTO, "unexpected message %d from the sandbox", m.type);
	if (n == 1 && c->persistent)
		c->root_fd = fds[0];
	else if (n == 1)
		c->master = fds[0];
	return 0;
}

static int handle_msg(run_ctx *c, aj_run_result *res, aj_error *err)
{
	aj_msg m;
	int r = aj_sync_recv(c->sock[0], &m, NULL, 0, NULL);
	if (r == -EPIPE &&
	    (c->timeout_stage == 2 || (c->have_cg && aj_cgroup_oom_killed(&c->cg)))) {
		/* we killed init after the grace period, or the OOM killer
		 * took it: either way the sandbox is over */
		res->term_signal = SIGKILL;
		res->exit_code = 128 + SIGKILL;
		return 0;
	}
	if (r == 0 && m.type == AJ_MSG_STARTED) {
		flush_warnings(c);
		return 1; /* still running */
	}
	if (r == 0 && m.type == AJ_MSG_EXIT) {
		res->term_signal = m.signal;
		res->status = m.status;
		res->exit_code = m.signal ? 128 + m.signal : m.status;
		return 0;
	}
	if (r == 0 && m.type == AJ_MSG_ERROR) {
		*err = m.err;
		return -(err->code ? err->code : EINVAL);
	}
	return aj_err(err, r < 0 ? -r : EPROTO, "the sandbox's init died unexpectedly");
}

static void handle_signal(run_ctx *c, int sfd)
{
	struct signalfd_siginfo si;
	if (read(sfd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGWINCH && c->master >= 0)
		aj_pty_copy_winsize(STDIN_FILENO, c->master);
	else if (si.ssi_signo != SIGCHLD && si.ssi_signo != SIGWINCH)
		kill(c->pid, (int)si.ssi_signo); /* init forwards it to the command */
}

/* Secrets' values (and --redact values) never reach the caller's terminal
 * or logs: both output streams get a redactor with the same patterns. */
static int setup_redactors(run_ctx *c, aj_error *err)
{
	for (int k = 0; k < 2; k++)
		if (aj_redactor_init_policy(&c->red[k], c->p) < 0)
			return aj_err(err, ENOMEM, "redaction patterns");
	return 0;
}

static void setup_relay(run_ctx *c, aj_relay *rl, aj_term *term)
{
	aj_relay_init(rl);
	if (c->master >= 0) {
		aj_pty_copy_winsize(STDIN_FILENO, c->master);
		if (!c->background) {
			aj_term_make_raw(term, STDIN_FILENO);
			aj_relay_add(rl, STDIN_FILENO, c->master, true, false);
		}
		aj_relay_add(rl, c->master, STDOUT_FILENO, false, false);
		aj_relay_set_redactor(rl, &c->red[0]);
		return;
	}
	/* pipes: the command's stdio are ours to relay and filter */
	if (c->background) {
		close(c->stdio[0]); /* the command's stdin: EOF */
		c->stdio[0] = -1;
	} else {
		aj_relay_add(rl, STDIN_FILENO, c->stdio[0], true, true);
	}
	aj_relay_add(rl, c->stdio[1], STDOUT_FILENO, false, true);
	aj_relay_set_redactor(rl, &c->red[0]);
	aj_relay_add(rl, c->stdio[2], STDERR_FILENO, false, true);
	aj_relay_set_redactor(rl, &c->red[1]);
	for (int i = 0; i < 3; i++)
		c->stdio[i] = -1; /* the relay owns them now */
}

static int arm_timer(run_ctx *c, unsigned long long ms)
{
	struct itimerspec its = {
	    .it_value = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L}};
	return timerfd_settime(c->tfd, 0, &its, NULL);
}

/* --timeout: SIGTERM to every process of the sandbox (init does it), then
 * SIGKILL to init, which takes the whole pid namespace down. */
static void handle_timer(run_ctx *c)
{
	uint64_t ticks;
	if (read(c->tfd, &ticks, sizeof(ticks)) != sizeof(ticks))
		return;
	if (c->timeout_stage == 0) {
		c->timeout_stage = 1;
		kill(c->pid, AJ_SIG_TERM_ALL);
		arm_timer(c, c->p->kill_after_ms ? c->p->kill_after_ms : 1);
	} else if (c->timeout_stage == 1) {
		c->timeout_stage = 2;
		kill(c->pid, SIGKILL);
	}
}

/* Relay stdio and forward signals until init reports the end and the
 * command's output is drained. */
static int parent_loop(run_ctx *c, int sfd, aj_run_result *res, aj_error *err)
{
	aj_term term = {0};
	/* on the heap: its 192 KiB of buffers would be touched page by page
	 * on the stack (stack clash probes), a page fault each, even when no
	 * output ever flows; malloc maps them untouched */
	_cleanup_free_ aj_relay *rl = malloc(sizeof(*rl));
	if (!rl)
		return aj_err(err, ENOMEM, "relay buffers");
	setup_relay(c, rl, &term);
	int rc = 1; /* 1: still running */
	int drain_ms = 1000;
	if (c->tfd >= 0)
		arm_timer(c, c->p->timeout_ms);
	int xl = c->hooks && c->hooks->exec_listen > 0 ? c->hooks->exec_listen : -1;
	int watch = c->hooks && c->hooks->watch_fd > 0 ? c->hooks->watch_fd : -1;
	while (rc == 1 || aj_relay_outputs_open(rl)) {
		struct pollfd pf[5 + AJ_RELAY_MAX];
		pf[0] = (struct pollfd){rc == 1 ? c->sock[0] : -1, POLLIN, 0};
		pf[1] = (struct pollfd){sfd, POLLIN, 0};
		pf[2] = (struct pollfd){rc == 1 ? c->tfd : -1, POLLIN, 0};
		pf[3] = (struct pollfd){rc == 1 ? xl : -1, POLLIN, 0};
		pf[4] = (struct pollfd){rc == 1 ? watch : -1, POLLIN, 0};
		size_t n = aj_relay_pollfds(rl, pf + 5, AJ_RELAY_MAX);
		int pr = poll(pf, 5 + n, rc == 1 ? -1 : 100);
		if (pr < 0 && errno != EINTR) {
			rc = aj_err(err, errno, "poll");
			break;
		}
		/* After the end: a reader that is slow to take the last output
		 * is waited for (as any writer to a pipe would), unless the run
		 * timed out, which bounds agentjail's own life too. Waiting
		 * for the sandbox's pipes to reach EOF is always bounded. */
		if (pr == 0 && rc != 1 && (c->timeout_stage || !aj_relay_output_pending(rl)) &&
		    (drain_ms -= 100) <= 0)
			break;
		if (pr <= 0)
			continue;
		if (pf[1].revents & POLLIN)
			handle_signal(c, sfd);
		if (pf[2].revents & POLLIN)
			handle_timer(c);
		aj_relay_handle(rl, pf + 5, n);
		if (pf[3].revents & POLLIN) /* oci exec: a command beside the run's */
			aj_run_exec_forward(xl, c->sock[0], c->envp);
		if (pf[4].revents) { /* oci: the engine's process is gone, the run too */
			kill(c->pid, SIGKILL);
			/* a paused container's frozen init would not die */
			if (c->have_cg && c->hooks->freezer)
				(void)aj_cgroup_freeze(&c->cg, false, NULL);
			watch = -1;
		}
		if (rc == 1 && pf[0].revents)
			rc = handle_msg(c, res, err);
	}
	aj_relay_close(rl);
	aj_term_restore(&term);
	return rc;
}

static int make_stdio_pipes(run_ctx *c, aj_error *err)
{
	for (int i = 0; i < 3; i++) {
		int pfd[2];
		if (pipe2(pfd, O_CLOEXEC) < 0)
			return aj_err(err, errno, "cannot create the command's stdio pipes");
		/* stdin: the sandbox reads pfd[0]; stdout/stderr: it writes pfd[1] */
		c->child_io[i] = i == 0 ? pfd[0] : pfd[1];
		c->stdio[i] = i == 0 ? pfd[1] : pfd[0];
		/* a larger output pipe: fewer wake-ups of the relay per MiB
		 * (pages are taken only as it fills; best effort) */
		if (i > 0)
			(void)fcntl(pfd[0], F_SETPIPE_SZ, 1 << 20);
		/* owned by the sandbox user, so /dev/stdout (a reopen through
		 * /proc/self/fd) works inside */
		if (fchown(pfd[0], aj_userns_host_uid(&c->idm), aj_userns_host_gid(&c->idm)) < 0 &&
		    c->idm.privileged)
			return aj_err(err, errno,
				      "cannot hand the stdio pipes to the sandbox user");
	}
	return 0;
}

static void close_child_io(run_ctx *c)
{
	for (int i = 0; i < 3; i++)
		if (c->child_io[i] >= 0) {
			close(c->child_io[i]);
			c->child_io[i] = -1;
		}
}

static void teardown(run_ctx *c)
{
	close_child_io(c);
	for (int i = 0; i < 3; i++)
		if (c->stdio[i] >= 0) {
			close(c->stdio[i]);
			c->stdio[i] = -1;
		}
	/* a paused box or oci container: frozen processes would not die */
	if ((c->persistent || (c->hooks && c->hooks->freezer)) && c->have_cg)
		(void)aj_cgroup_freeze(&c->cg, false, NULL);
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		while (wait4(c->pid, NULL, 0, &c->ru) < 0 && errno == EINTR)
			;
	}
	if (c->tfd >= 0)
		close(c->tfd);
	c->tfd = -1;
	if (c->have_cg)
		aj_cgroup_destroy(&c->cg);
	aj_net_teardown(&c->net);
	aj_mount_plan_free(&c->plan);
	aj_protect_release(c->prot); /* the placeholders, once no mount holds them */
	c->prot = NULL;
	if (c->etc_lock >= 0)
		close(c->etc_lock); /* after the mounts that used the copy are gone */
	c->etc_lock = -1;
	aj_strv_free(c->envp);
	c->envp = NULL;
	aj_strv_free(c->argv);
	c->argv = NULL;
	for (int i = 0; i < 2; i++)
		if (c->sock[i] >= 0)
			close(c->sock[i]);
	if (c->master >= 0)
		close(c->master);
}

/* The ready hook, then the command's go (child_main waits for it). */
static int release(run_ctx *c, aj_error *err)
{
	int r = c->hooks->ready(c->hooks->ctx, c->pid, err);
	if (r < 0)
		return r;
	aj_msg m;
	memset(&m, 0, sizeof(m));
	m.type = AJ_MSG_PARENT_GO;
	if ((r = aj_sync_send(c->sock[0], &m, NULL, 0)) < 0)
		return aj_err(err, -r, "the sandbox died before its command started");
	return 0;
}

static void finish_result(const run_ctx *c, aj_run_result *res, const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	res->wall_ms = (unsigned long long)((t1.tv_sec - t0->tv_sec) * 1000 +
					    (t1.tv_nsec - t0->tv_nsec) / 1000000);
	res->cpu_user_ms = (unsigned long long)c->ru.ru_utime.tv_sec * 1000 +
			   (unsigned long long)c->ru.ru_utime.tv_usec / 1000;
	res->cpu_sys_ms = (unsigned long long)c->ru.ru_stime.tv_sec * 1000 +
			  (unsigned long long)c->ru.ru_stime.tv_usec / 1000;
	if (!res->peak_memory_bytes)
		res->peak_memory_bytes = (unsigned long long)c->ru.ru_maxrss * 1024;
	if (c->timeout_stage > 0) {
		res->timed_out = true;
		res->exit_code = AJ_EXIT_TIMEOUT;
	}
}

int aj_sandbox_run(const aj_policy *p, const aj_run_hooks *hooks, aj_run_result *res, aj_error *err)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(res, 0, sizeof(*res));
	int r = aj_policy_validate(p, err);
	if (r < 0)
		return r;
	/* a fresh /sys without cgroups: mount them (as root) in a mount
	 * namespace of our own, while we have one thread; a failure is told
	 * by make_cgroup, if a limit needs them */
	aj_cgroup_view view = {NULL, NULL};
	(void)aj_cgroup_ensure_mounted_view(&view, NULL);
	/* ~50 KiB (the cgroup paths alone are 32 KiB), mostly unused: fresh
	 * zero pages from mmap are touched only where written, where a
	 * zeroed stack frame or calloc from the heap (memset) costs a page
	 * fault per 4 KiB (docs/performance.md) */
	run_ctx *c =
	    mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED) {
		aj_cgroup_view_free(&view);
		return aj_err(err, errno, "cannot allocate the sandbox's state");
	}
	c->cg_view = view; /* read once: make_cgroup's too (docs/performance.md) */
	c->p = p;
	c->hooks = hooks;
	c->sock[0] = c->sock[1] = c->master = c->tfd = c->net.slot_fd = c->etc_lock = -1;
	for (int i = 0; i < 3; i++)
		c->stdio[i] = c->child_io[i] = -1;
	_cleanup_close_ int sfd = -1;
	/* In the background of a terminal (cmd &), reading it or changing its
	 * modes would stop us (SIGTTIN/SIGTTOU): no pty, and stdin at EOF. */
	c->background = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) != getpgrp();
	c->want_tty = p->tty == AJ_TTY_ALWAYS || (p->tty == AJ_TTY_AUTO && !c->background &&
						  isatty(STDIN_FILENO) && isatty(STDOUT_FILENO));
	if ((r = prepare(c, err)) < 0)
		goto out;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->sock) < 0) {
		r = aj_err(err, errno, "socketpair");
		goto out;
	}
	if (!c->want_tty && (r = make_stdio_pipes(c, err)) < 0)
		goto out;
	if (p->timeout_ms && (c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC)) < 0) {
		r = aj_err(err, errno, "timerfd_create");
		goto out;
	}
	sigset_t set, old;
	sigemptyset(&set);
	int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(sigs); i++)
		sigaddset(&set, sigs[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	/* a caller that stops reading our output must not kill us */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe;
	sigaction(SIGPIPE, &ign, &old_pipe);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	c->pid = (pid_t)syscall(SYS_clone, clone_flags(p) | SIGCHLD, NULL, NULL, NULL, NULL);
	if (c->pid == 0)
		child_main(c);
	if (c->pid < 0) {
		r = aj_err(err, errno, "cannot create the sandbox's namespaces");
		aj_err_hint(err, "check user namespace support with: agentjail doctor");
	} else if (sfd < 0) {
		r = aj_err(err, errno, "signalfd");
	} else {
		close(c->sock[1]);
		c->sock[1] = -1;
		close_child_io(c);
		r = parent_start(c, err);
		/* the child has its copies of the detached mounts: ours are closed
		 * while it builds its root, not after the command (33 closes on
		 * the path to the exit status, docs/performance.md) */
		aj_mount_plan_free(&c->plan);
		if (r == 0 && hooks && hooks->ready)
			r = release(c, err);
		if (r == 0)
			r = parent_loop(c, sfd, res, err);
	}
	res->limits_missing = c->cg.missing;
	if (c->have_cg) {
		res->oom_killed = aj_cgroup_oom_killed(&c->cg);
		res->peak_memory_bytes = aj_cgroup_peak_memory(&c->cg);
	}
	teardown(c);
	finish_result(c, res, &t0);
	c->pid = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
out:
	if (c->pid == 0 && c->have_cg)
		aj_cgroup_destroy(&c->cg);
	aj_net_teardown(&c->net);
	aj_mount_plan_free(&c->plan);
	aj_protect_release(c->prot);
	c->prot = NULL;
	if (c->etc_lock >= 0)
		close(c->etc_lock);
	aj_strv_free(c->envp);
	aj_strv_free(c->argv);
	aj_bpf_free(&c->bpf);
	aj_redactor_free(&c->red[0]);
	aj_redactor_free(&c->red[1]);
	aj_cgroup_view_free(&c->cg_view);
	munmap(c, sizeof(*c));
	return r;
}

/* ---- a persistent sandbox, held by a keeper process (box.h) ---- */

static int hold_start(run_ctx *c, aj_error *err)
{
	int r = prepare(c, err);
	if (r < 0)
		return r;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->sock) < 0)
		return aj_err(err, errno, "socketpair");
	c->pid = (pid_t)syscall(SYS_clone, clone_flags(c->p) | SIGCHLD, NULL, NULL, NULL, NULL);
	if (c->pid == 0)
		child_main(c);
	if (c->pid < 0) {
		r = aj_err(err, errno, "cannot create the sandbox's namespaces");
		aj_err_hint(err, "check user namespace support with: agentjail doctor");
		return r;
	}
	close(c->sock[1]);
	c->sock[1] = -1;
	r = parent_start(c, err);
	aj_mount_plan_free(&c->plan); /* the child has its copies (and the keeper ~30 fds less) */
	return r;
}

int aj_sandbox_hold(const aj_policy *p, int ctl)
{
	/* a box has no command of its own: its init starts them on request */
	static char *no_argv[] = {"agentjail-box", NULL};
	aj_policy *copy = malloc(sizeof(*copy));
	if (!copy)
		return AJ_EXIT_INTERNAL;
	*copy = *p; /* shallow: p's strings stay p's */
	copy->argv = no_argv;
	copy->tty = AJ_TTY_NEVER;
	run_ctx c = {.p = copy,
		     .sock = {-1, -1},
		     .master = -1,
		     .net = {.slot_fd = -1},
		     .stdio = {-1, -1, -1},
		     .child_io = {-1, -1, -1},
		     .tfd = -1,
		     .persistent = true,
		     .root_fd = -1,
		     .etc_lock = -1};
	aj_box_info info;
	memset(&info, 0, sizeof(info));
	int r = aj_policy_validate(copy, &info.m.err);
	/* no aj_cgroup_ensure_mounted here: the service did it at start
	 * (server.c), and cgroups mounted in a namespace of the keeper's
	 * own would be out of the service's reach (pause, limits, OOM) */
	if (r == 0)
		r = hold_start(&c, &info.m.err);
	if (r < 0) {
		info.m.type = AJ_MSG_ERROR;
		(void)aj_sync_send_buf(ctl, &info, sizeof(info), NULL, 0);
	} else {
		info.m.type = AJ_MSG_SETUP_DONE;
		info.init = c.pid;
		info.uid = aj_userns_host_uid(&c.idm);
		info.gid = aj_userns_host_gid(&c.idm);
		info.have_cg = c.have_cg;
		info.cg = c.cg;
		/* the commands' base environment (with --allow's proxy variables) */
		int fds[3] = {c.sock[0], c.root_fd, memfd_create("environment", MFD_CLOEXEC)};
		for (char **e = c.envp; fds[2] >= 0 && e && *e; e++)
			if (aj_write_all(fds[2], *e, strlen(*e) + 1) < 0)
				break;
		(void)aj_sync_send_buf(ctl, &info, sizeof(info), fds, fds[2] >= 0 ? 3 : 2);
		if (fds[2] >= 0)
			close(fds[2]);
		char b;
		ssize_t n;
		do /* until our creator closes it (or dies) */
			n = read(ctl, &b, 1);
		while (n > 0 || (n < 0 && errno == EINTR));
	}
	if (c.root_fd >= 0)
		close(c.root_fd);
	teardown(&c); /* kills init, removes the cgroup, network, mounts */
	aj_bpf_free(&c.bpf);
	aj_redactor_free(&c.red[0]);
	aj_redactor_free(&c.red[1]);
	free(copy);
	return r < 0 ? AJ_EXIT_INTERNAL : 0;
}
