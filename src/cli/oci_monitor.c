/* SPDX-License-Identifier: MIT */
/* agentjail oci's monitor: the process `create` forks that builds the
 * sandbox on the level-1 core, runs the bundle's sysctls and create hooks,
 * holds the command until `start` and removes everything when it ends;
 * the container's process the pid file names (agentjail-oci-ctr); hooks;
 * the console sent to the engine. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "net_addr.h"
#include "backends.h"
#include "error.h"
#include "oci_bundle.h"
#include "oci_common.h"
#include "run_exec.h"
#include "util.h"

/* ---- hooks (runtime-spec): run by the runtime, as the runtime ---- */

int aj_oci_runtime_netns = -1;
int aj_oci_runtime_ipcns = -1, aj_oci_runtime_utsns = -1;

/* One hook: path with args and env, the container's state as JSON on its
 * stdin; killed after its timeout. 0, or -1 with why in msg. */

static int run_hook(const json_t *h, const char *state, char *msg, size_t len)
{
	const char *path = json_string_value(json_object_get(h, "path"));
	const json_t *args = json_object_get(h, "args"), *env = json_object_get(h, "env");
	json_int_t to = json_integer_value(json_object_get(h, "timeout"));
	size_t na = json_array_size(args), ne = json_array_size(env);
	_cleanup_free_ char **av = calloc(na + 2, sizeof(char *));
	_cleanup_free_ char **ev = calloc(ne + 1, sizeof(char *));
	int in[2];
	if (!av || !ev || pipe2(in, O_CLOEXEC) < 0) {
		snprintf(msg, len, "%s: %s", path, strerror(errno ? errno : ENOMEM));
		return -1;
	}
	av[0] = (char *)path;
	for (size_t i = 0; i < na; i++)
		av[i] = (char *)json_string_value(json_array_get(args, i));
	for (size_t i = 0; i < ne; i++)
		ev[i] = (char *)json_string_value(json_array_get(env, i));
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (dup2(in[0], 0) < 0 ||
		    (aj_oci_runtime_netns >= 0 && setns(aj_oci_runtime_netns, CLONE_NEWNET) < 0) ||
		    (aj_oci_runtime_ipcns >= 0 && setns(aj_oci_runtime_ipcns, CLONE_NEWIPC) < 0) ||
		    (aj_oci_runtime_utsns >= 0 && setns(aj_oci_runtime_utsns, CLONE_NEWUTS) < 0))
			_exit(127);
		int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (nul >= 0)
			(void)dup2(nul, 1); /* stdout is the container's state's (state) */
		execve(path, av, ev);
		_exit(127);
	}
	close(in[0]);
	if (pid < 0) {
		close(in[1]);
		snprintf(msg, len, "%s: cannot fork: %s", path, strerror(errno));
		return -1;
	}
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigaction(SIGPIPE, &ign, &old);
	/* the state goes in while the timeout runs: a hook that never reads
	 * a state bigger than the pipe still ends at its timeout */
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	size_t off = 0, n = strlen(state);
	bool late = false;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pfd < 0 || fcntl(in[1], F_SETFL, O_NONBLOCK) < 0) {
		(void)aj_write_all(in[1], state, n);
		off = n;
	}
	while (pfd >= 0) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long long left = to > 0
				     ? (long long)to * 1000 - ((t.tv_sec - t0.tv_sec) * 1000 +
							       (t.tv_nsec - t0.tv_nsec) / 1000000)
				     : -1;
		if (to > 0 && left <= 0) {
			late = true;
			break;
		}
		struct pollfd pf[2] = {{pfd, POLLIN, 0}, {off < n ? in[1] : -1, POLLOUT, 0}};
		int r = poll(pf, 2, to > 0 ? (int)left : -1);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0 && pf[1].revents) {
			ssize_t w = write(in[1], state + off, n - off);
			if (w > 0)
				off += (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				off = n; /* the hook closed its stdin: it is not read */
			if (off >= n && in[1] >= 0) {
				close(in[1]);
				in[1] = -1;
			}
		}
		if (r > 0 && pf[0].revents)
			break;
	}
	if (in[1] >= 0)
		close(in[1]);
	sigaction(SIGPIPE, &old, NULL);
	if (pfd >= 0)
		close(pfd);
	if (late)
		kill(pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (late)
		snprintf(msg, len, "%s did not end within its timeout (%llds)", path,
			 (long long)to);
	else if (WIFSIGNALED(st))
		snprintf(msg, len, "%s was killed by signal %d", path, WTERMSIG(st));
	else if (WEXITSTATUS(st) == 127)
		snprintf(msg, len, "%s could not be run (exit 127)", path);
	else if (WEXITSTATUS(st))
		snprintf(msg, len, "%s exited with status %d", path, WEXITSTATUS(st));
	return late || !WIFEXITED(st) || WEXITSTATUS(st) ? -1 : 0;
}

/* The hooks of one kind, in order. strict: the first that fails stops
 * them (err filled); else each failure is a warning and the rest run. */
int aj_oci_run_hooks(const json_t *hooks, const char *kind, const char *id, const char *status,
		     pid_t pid, const char *bundle, const json_t *ann, bool strict, aj_error *err)
{
	const json_t *list = json_object_get(hooks, kind);
	if (!json_array_size(list))
		return 0;
	json_t *st = json_pack("{s:s, s:s, s:s, s:i, s:s, s:O}", "ociVersion", OCI_VERSION, "id",
			       id, "status", status, "pid", (int)pid, "bundle", bundle,
			       "annotations", json_is_object(ann) ? ann : json_object());
	_cleanup_free_ char *text = st ? json_dumps(st, JSON_COMPACT) : NULL;
	json_decref(st);
	if (!text)
		return aj_err(err, ENOMEM, "hooks");
	size_t i;
	const json_t *h;
	json_array_foreach(list, i, h)
	{
		char msg[512];
		if (run_hook(h, text, msg, sizeof(msg)) == 0)
			continue;
		if (strict) {
			aj_err(err, EIO, "hooks.%s[%zu] failed: %s", kind, i, msg);
			aj_err_hint(err, "fix or remove the hook in the bundle's config.json");
			return -EIO;
		}
		char warn[600];
		snprintf(warn, sizeof(warn), "warning: hooks.%s[%zu] failed: %s", kind, i, msg);
		aj_oci_log_error(warn);
	}
	return 0;
}

/* ---- the monitor: builds and runs the sandbox, holds it until start ---- */

typedef struct monitor {
	const char *id, *bundle;
	json_t *hooks, *ann; /* config.json's (prestart, createRuntime run here) */
	json_t *sysctl;	     /* linux.sysctl's checked ones, or NULL */
	int report;	     /* with create: a report, the pid file's pid back, then closed */
	aj_run_hooks *run;   /* watch_fd: that process's pidfd */
	int fifo;	     /* exec.fifo, read-write: start's byte */
	bool started;
	int signal; /* what ended it while held */
} monitor;

typedef struct report {
	int ok;
	pid_t init;
	aj_error err;
} report;

/* The sysctl file at path holds val already (the same numbers, whatever
 * the blanks between them: kernel.sem's are tabs). */
static bool same_value(const char *path, const char *val)
{
	char cur[256];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, cur, sizeof(cur) - 1) : -1;
	if (n <= 0)
		return false;
	cur[n] = 0;
	const char *a = cur, *b = val;
	for (;;) {
		a += strspn(a, " \t\n");
		b += strspn(b, " \t\n");
		size_t la = strcspn(a, " \t\n"), lb = strcspn(b, " \t\n");
		if (la != lb || strncmp(a, b, la))
			return false;
		if (!la)
			return true;
		a += la;
		b += lb;
	}
}

/* linux.sysctl (checked by aj_oci_config_parse: namespaced, numbers):
 * written by a child of ours in the container's network and ipc
 * namespaces, whose /proc/sys/net and kernel's ipc files are theirs. */
static int set_sysctls(const json_t *sc, pid_t init, aj_error *err)
{
	if (!json_object_size(sc))
		return 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return aj_err(err, errno, "linux.sysctl");
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		char path[PATH_MAX], msg[256] = "";
		static const char *const ns[] = {"net", "ipc"};
		for (size_t i = 0; i < AJ_ARRAY_SIZE(ns) && !*msg; i++) {
			snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)init, ns[i]);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || setns(fd, 0) < 0)
				snprintf(msg, sizeof(msg),
					 "cannot join the container's %s namespace: %s", ns[i],
					 strerror(errno));
		}
		/* the ipc namespace's files are writable by its root only: net's
		 * first (they need CAP_NET_ADMIN over it), then as that uid */
		long in = -1, out = -1;
		snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)init);
		FILE *f = fopen(path, "re");
		while (f && fscanf(f, "%ld %ld %*d", &in, &out) == 2 && in != 0)
			;
		if (f)
			fclose(f);
		const char *key;
		const json_t *v;
		bool ipc = false;
		json_object_foreach((json_t *)sc, key, v) ipc = ipc || !aj_startswith(key, "net.");
		for (int pass = 0; pass < 1 + ipc && !*msg; pass++) {
			if (pass == 1 &&
			    (in != 0 || setresgid((gid_t)out, (gid_t)out, (gid_t)out) < 0 ||
			     setresuid((uid_t)out, (uid_t)out, (uid_t)out) < 0))
				snprintf(msg, sizeof(msg),
					 "cannot take the uid of the container's root: %s",
					 in != 0 ? "not mapped" : strerror(errno));
			json_object_foreach((json_t *)sc, key, v)
			{
				if (*msg)
					break;
				if (aj_startswith(key, "net.") != (pass == 0))
					continue;
				int n = snprintf(path, sizeof(path), "/proc/sys/%s", key);
				for (int i = 10; i < n; i++)
					if (path[i] == '.')
						path[i] = '/';
				const char *val = json_string_value(v);
				/* a value the namespace has already is not written: a
				 * pod's joined ipc namespace (its pause container's set
				 * it) is not the container's root's to write */
				if (same_value(path, val))
					continue;
				int fd = open(path, O_WRONLY | O_CLOEXEC);
				if (fd < 0 || aj_write_all(fd, val, strlen(val)) < 0)
					snprintf(msg, sizeof(msg), "cannot set %s to '%s': %s", key,
						 val, strerror(errno));
				if (fd >= 0)
					close(fd);
			}
		}
		(void)aj_write_all(p[1], msg, strlen(msg));
		_exit(*msg ? 1 : 0);
	}
	close(p[1]);
	char msg[256] = "";
	ssize_t n = pid > 0 ? read(p[0], msg, sizeof(msg) - 1) : -1;
	close(p[0]);
	int st = 1;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (pid < 0 || st != 0) {
		msg[n > 0 ? n : 0] = 0;
		aj_err(err, EINVAL, "linux.sysctl: %s", *msg ? msg : "cannot be set");
		aj_err_hint(err, "remove it from the bundle's config.json (docs/oci.md)");
		return -EINVAL;
	}
	return 0;
}

static int monitor_ready(void *ctx, pid_t init, aj_error *err)
{
	monitor *m = ctx;
	/* the sandbox is built: its sysctls, the runtime's create hooks, then
	 * create returns */
	int r = set_sysctls(m->sysctl, init, err);
	if (r == 0)
		r = aj_oci_run_hooks(m->hooks, "prestart", m->id, "creating", init, m->bundle,
				     m->ann, true, err);
	if (r == 0)
		r = aj_oci_run_hooks(m->hooks, "createRuntime", m->id, "creating", init, m->bundle,
				     m->ann, true, err);
	if (r < 0)
		return r;
	report rep = {.ok = 1, .init = init};
	r = aj_write_all(m->report, &rep, sizeof(rep));
	/* create's answer: the pid file's process, which the engine waits for
	 * as runc's init; its end (a SIGKILL) ends the container too */
	pid_t ctr = 0;
	if (r == 0)
		r = aj_read_all(m->report, &ctr, sizeof(ctr));
	close(m->report);
	m->report = -1;
	if (r < 0 || ctr <= 0)
		return aj_err(err, r < 0 ? -r : ECHILD, "create went away");
	/* at fd 3 or above: fd 0 (an engine that closed our stdin) would
	 * read as "no watch" (aj_run_hooks.watch_fd > 0) */
	int wfd = (int)syscall(SYS_pidfd_open, ctr, 0);
	m->run->watch_fd = wfd >= 0 ? fcntl(wfd, F_DUPFD_CLOEXEC, 3) : -1;
	if (m->run->watch_fd < 0) {
		int e = errno;
		if (wfd >= 0)
			close(wfd);
		return aj_err(err, e, "cannot watch the container's process");
	}
	close(wfd);
	/* run's caller blocked these: a signal sent while held ends it */
	sigset_t set;
	sigemptyset(&set);
	int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(sigs); i++)
		sigaddset(&set, sigs[i]);
	_cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	_cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, init, 0);
	if (sfd < 0 || pfd < 0)
		return aj_err(err, errno, "cannot watch the held container");
	for (;;) {
		struct pollfd pf[4] = {{m->fifo, POLLIN, 0},
				       {sfd, POLLIN, 0},
				       {pfd, POLLIN, 0},
				       {m->run->watch_fd, POLLIN, 0}};
		if (poll(pf, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			return aj_err(err, errno, "poll");
		}
		if (pf[0].revents & POLLIN) {
			char b;
			if (read(m->fifo, &b, 1) == 1) {
				close(m->fifo);
				m->fifo = -1;
				m->started = true;
				return 0;
			}
		}
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				m->signal = (int)si.ssi_signo;
				return aj_err(err, EINTR, "killed (signal %d) before start",
					      m->signal);
			}
		}
		if ((pf[2].revents | pf[3].revents) & POLLIN) {
			m->signal = SIGKILL;
			return aj_err(err, ECHILD, "killed before start");
		}
	}
}

static void quiet_warn(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg; /* a degraded feature fails closed (limits strict) */
}

__attribute__((noreturn)) static void monitor_main(aj_oci_config *cfg, int report_fd, int fifo_fd,
						   int tty, int exec_listen, int exit_fd,
						   const char *id, const char *bundle, json_t *ann)
{
	(void)setsid();
	/* a terminal: the engine holds its master; the sandbox's own pty is
	 * relayed to it, and its size follows (SIGWINCH: our controlling tty) */
	if (tty >= 0) {
		for (int fd = 0; fd < 3; fd++)
			(void)dup2(tty, fd);
		close(tty);
		(void)ioctl(STDIN_FILENO, TIOCSCTTY, 0);
	}
	char title[64], own_id[160];
	snprintf(own_id, sizeof(own_id), "%s", id); /* id is in argv, which the title takes */
	id = own_id;
	snprintf(title, sizeof(title), "agentjail-oci %.40s", id);
	aj_proctitle_set(title);
	monitor m = {.report = report_fd,
		     .fifo = fifo_fd,
		     .id = id,
		     .bundle = bundle,
		     .hooks = cfg->hooks ? json_loads(cfg->hooks, 0, NULL) : NULL,
		     .sysctl = cfg->sysctl ? json_loads(cfg->sysctl, 0, NULL) : NULL,
		     .ann = ann};
	aj_run_hooks hooks = {.warn = quiet_warn,
			      .ctx = &m,
			      .ready = monitor_ready,
			      .exec_listen = exec_listen,
			      .freezer = true};
	m.run = &hooks;
	aj_run_result res;
	aj_error err;
	aj_err_clear(&err);
	int r = aj_backend_of(AJ_ISO_PROCESS)->run(&cfg->policy, &hooks, &res, &err);
	if (m.report >= 0) { /* never ready: create reports why */
		report rep = {.ok = 0, .err = err};
		(void)aj_write_all(m.report, &rep, sizeof(rep));
		_exit(AJ_EXIT_INTERNAL);
	}
	int code;
	if (r == 0)
		code = res.exit_code;
	else if (m.signal)
		code = 128 + m.signal;
	else if (strstr(err.msg, "init died")) /* the sandbox's init killed by `kill ID KILL` */
		code = 128 + SIGKILL;
	else
		code = aj_oci_fail(&err); /* e.g. a cwd or command not in the root: 125-127 */
	/* everything is removed: the container's process exits with it too */
	unsigned char b = (unsigned char)code;
	signal(SIGPIPE, SIG_IGN); /* the container's process may be gone (killed) */
	(void)aj_write_all(exit_fd, &b, 1);
	_exit(code);
}

/* ---- the container's process: what the pid file names ---- */

/* The engine's monitor (conmon, containerd's shim) waits for the pid
 * file's process as a subreaper, and reads its namespaces (podman top,
 * inspect): a process of create's, so that it is the engine's child once
 * create exits, in the container's mount, network, ipc and uts namespaces
 * (not its pid namespace: its init's end would SIGKILL it). It exits with
 * the status the monitor sends once everything is removed (EOF: 137) and
 * passes the signals it gets to the monitor. Reports on ready: 1 or 0. */
__attribute__((noreturn)) static void container_proc(pid_t init, pid_t mon_pid, int exit_fd,
						     int ready, const char *id)
{
	static const char *const ns[] = {"net", "ipc", "uts", "mnt"}; /* mnt last: the root */
	int fds[AJ_ARRAY_SIZE(ns)];
	char path[64], title[64];
	bool ok = true;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(ns); i++) {
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)init, ns[i]);
		fds[i] = open(path, O_RDONLY | O_CLOEXEC);
		ok = ok && fds[i] >= 0;
	}
	for (size_t i = 0; ok && i < AJ_ARRAY_SIZE(ns); i++)
		ok = setns(fds[i], 0) == 0;
	int mon = (int)syscall(SYS_pidfd_open, mon_pid, 0);
	sigset_t set;
	sigemptyset(&set);
	int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(sigs); i++)
		sigaddset(&set, sigs[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	ok = ok && mon >= 0 && sfd >= 0;
	(void)aj_write_all(ready, ok ? "1" : "0", 1);
	if (!ok)
		_exit(AJ_EXIT_INTERNAL);
	int keep[] = {exit_fd, mon, sfd};
	aj_close_all_except(keep, AJ_ARRAY_SIZE(keep));
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && nul >= 0; fd++)
		(void)dup2(nul, fd); /* the engine's pipes are the monitor's to hold */
	snprintf(title, sizeof(title), "agentjail-oci-ctr %.40s", id);
	aj_proctitle_set(title);
	for (;;) {
		struct pollfd pf[2] = {{exit_fd, POLLIN, 0}, {sfd, POLLIN, 0}};
		if (poll(pf, 2, -1) < 0)
			continue;
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				(void)syscall(SYS_pidfd_send_signal, mon, (int)si.ssi_signo, NULL,
					      0);
		}
		if (pf[0].revents) {
			unsigned char b;
			int code = read(exit_fd, &b, 1) == 1 ? b : 128 + SIGKILL;
			/* after the monitor: the engine reaps it first, nothing is left
			 * once it has this one's status */
			struct pollfd pm = {mon, POLLIN, 0};
			(void)poll(&pm, 1, 10000);
			_exit(code);
		}
	}
}

static int write_state(int dfd, const char *id, const char *bundle, pid_t pid, pid_t init,
		       pid_t ctr, bool net, const char *config_text)
{
	json_t *cfg = json_loads(config_text, 0, NULL);
	json_t *ann = json_object_get(cfg, "annotations");
	char ts[64];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct tm tm;
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", gmtime_r(&now.tv_sec, &tm));
	char created[96];
	snprintf(created, sizeof(created), "%s.%09ldZ", ts, now.tv_nsec);
	json_t *st = json_pack("{s:s, s:s, s:i, s:s, s:O, s:s, s:I, s:i, s:I}", "ociVersion",
			       OCI_VERSION, "id", id, "pid", (int)pid, "bundle", bundle,
			       "annotations", json_is_object(ann) ? ann : json_object(), "created",
			       created, "pid_start", (json_int_t)aj_oci_start_time(pid), "init",
			       (int)init, "init_start", (json_int_t)aj_oci_start_time(init));
	/* the pid file's process: once it is gone the container is stopped,
	 * even while its monitor still cleans up */
	if (st && (json_object_set_new(st, "ctr", json_integer(ctr)) < 0 ||
		   json_object_set_new(st, "ctr_start",
				       json_integer((json_int_t)aj_oci_start_time(ctr))) < 0)) {
		json_decref(st);
		st = NULL;
	}
	/* agentjail's own network (a veth, an nft table): a killed monitor's
	 * are swept by delete (agentjail-net's) */
	if (st && net)
		json_object_set_new(st, "net", json_true());
	/* and its cgroups, found from init's (gone by then) */
	char path[64];
	_cleanup_free_ char *pc = NULL;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)init);
	if (st && aj_read_file(path, &pc, NULL) == 0)
		json_object_set_new(st, "cgroups", json_string(pc));
	json_t *hooks = json_object_get(cfg, "hooks");
	if (st && json_is_object(hooks))
		json_object_set(st, "hooks", hooks); /* poststart, poststop: start, delete */
	json_decref(cfg);
	char *s = st ? json_dumps(st, JSON_COMPACT) : NULL;
	json_decref(st);
	int r = s ? aj_oci_write_file_at(dfd, OCI_STATE, s) : -ENOMEM;
	free(s);
	return r;
}
/* A new pty; *slave its terminal. The master, or a negative errno. */
int aj_oci_open_pty(int *slave)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	char name[64];
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0 ||
	    (*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		int e = errno;
		if (m >= 0)
			close(m);
		return -e;
	}
	return m;
}

/* The pty's master to the engine, over its --console-socket (runc's way:
 * one SCM_RIGHTS message). */
int aj_oci_send_console(const char *path, int master)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path));
	_cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	char name[] = "/dev/ptmx";
	struct iovec iov = {.iov_base = name, .iov_len = sizeof(name) - 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &master, sizeof(int));
	return sendmsg(s, &msg, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* Fork the monitor and wait for its report: the sandbox built and held. */
int aj_oci_spawn_monitor(aj_oci_config *cfg, int rootfd, const char *id, const char *bundle,
			 const char *pid_file, const char *console, const char *text)
{
	_cleanup_close_ int dfd = openat(rootfd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char fifo[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/" OCI_FIFO, id);
	if (dfd < 0 || mkfifoat(rootfd, fifo, 0600) < 0)
		return aj_oci_failf("cannot make the state of %s: %s", id, strerror(errno));
	int ffd = openat(rootfd, fifo, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	int p[2], xp[2]; /* the report (and the pid file's pid back); the exit status */
	if (ffd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0 ||
	    pipe2(xp, O_CLOEXEC) < 0)
		return aj_oci_failf("cannot make the state of %s: %s", id, strerror(errno));
	_cleanup_close_ int master = -1, slave = -1;
	if (cfg->terminal && (master = aj_oci_open_pty(&slave)) < 0)
		return aj_oci_failf("cannot make a terminal for %s: %s", id, strerror(-master));
	/* exec.sock: `oci exec` asks the monitor for more commands there (a
	 * path through our fd on the directory: sun_path is short) */
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/" OCI_EXEC_SOCK, dfd);
	_cleanup_close_ int xl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	int xfd = xl >= 0 ? fcntl(xl, F_DUPFD_CLOEXEC, 3) : -1; /* never fd 0 (exec_listen > 0) */
	if (xfd >= 0) {
		close(xl);
		xl = xfd;
	}
	if (xfd < 0 || bind(xl, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(xl, 16) < 0)
		return aj_oci_failf("cannot make the exec socket of %s: %s", id, strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		close(xp[0]);
		if (master >= 0)
			close(master); /* the engine's */
		json_t *all = json_loads(text, 0, NULL);
		monitor_main(cfg, p[1], ffd, slave, xl, xp[1], id, bundle,
			     json_object_get(all, "annotations"));
	}
	close(p[1]);
	close(xp[1]);
	close(ffd);
	_cleanup_close_ int exit_rd = xp[0];
	if (pid < 0) {
		close(p[0]);
		return aj_oci_failf("cannot fork the monitor: %s", strerror(errno));
	}
	report rep;
	memset(&rep, 0, sizeof(rep));
	ssize_t n;
	size_t got = 0;
	while (got < sizeof(rep) && ((n = read(p[0], (char *)&rep + got, sizeof(rep) - got)) > 0 ||
				     (n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	if (got != sizeof(rep) || !rep.ok) {
		close(p[0]);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (got == sizeof(rep))
			return aj_oci_fail(&rep.err);
		return aj_oci_failf("the monitor of %s died while building the sandbox", id);
	}
	/* the container's process (the pid file's), ready once in its namespaces */
	int rp[2];
	char ok = 0;
	pid_t ctr = pipe2(rp, O_CLOEXEC) == 0 ? fork() : -1;
	if (ctr == 0) {
		close(rp[0]);
		container_proc(rep.init, pid, exit_rd, rp[1], id);
	}
	if (ctr > 0) {
		close(rp[1]);
		while (read(rp[0], &ok, 1) < 0 && errno == EINTR)
			;
		close(rp[0]);
	}
	/* the monitor watches it from now on (0: it ends) */
	pid_t answer = ok == '1' ? ctr : 0;
	/* MSG_NOSIGNAL: a monitor gone meanwhile is an error, not our death */
	ssize_t sent = send(p[0], &answer, sizeof(answer), MSG_NOSIGNAL);
	int sent_errno = errno;
	close(p[0]);
	int r = ok == '1' ? 0 : -ECHILD;
	if (r < 0)
		aj_oci_failf("cannot start the process of %s in its namespaces (fix: run as root; "
			     "agentjail doctor)",
			     id);
	else if (sent != (ssize_t)sizeof(answer) && (r = -EPIPE) < 0)
		aj_oci_failf("the monitor of %s went away while create answered it: %s", id,
			     sent < 0 ? strerror(sent_errno) : "short write");
	else if ((r = console ? aj_oci_send_console(console, master) : 0) < 0)
		aj_oci_failf("--console-socket %s: %s", console, strerror(-r));
	else if ((r = write_state(dfd, id, bundle, pid, rep.init, ctr, aj_net_wanted(&cfg->policy),
				  text)) < 0)
		aj_oci_failf("cannot write the state of %s: %s", id, strerror(-r));
	if (r == 0 && pid_file && (r = aj_oci_write_pid_file(pid_file, ctr)) < 0)
		aj_oci_failf("cannot write the pid file %s: %s", pid_file, strerror(-r));
	if (r < 0) {
		kill(rep.init, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		while (ctr > 0 && waitpid(ctr, NULL, 0) < 0 && errno == EINTR)
			; /* the monitor's end: EOF, it exits */
		return AJ_EXIT_INTERNAL;
	}
	return 0;
}
