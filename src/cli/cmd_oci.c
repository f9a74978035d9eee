/* SPDX-License-Identifier: MIT */
/* agentjail oci: the OCI runtime command line (as runc's) for Podman and
 * other engines: create, start, state, kill, delete, exec, pause, resume,
 * ps, update, features (docs/oci.md). `create` forks a monitor that builds
 * the sandbox on the level-1 core and holds its command before exec until
 * `start` writes to the state directory's exec.fifo; the monitor removes
 * every trace of the sandbox when the command ends. The pid file names a
 * process in the container's namespaces that the engine waits for (it
 * exits with the command's status); `state`'s pid is the command's. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "backends.h"
#include "cgroup.h"
#include "commands.h"
#include "error.h"
#include "net.h"
#include "oci_bundle.h"
#include "run_exec.h"
#include "util.h"

#define OCI_VERSION "1.2.0"
#define OCI_FIFO "exec.fifo"
#define OCI_STATE "state.json"
#define OCI_EXEC_SOCK "exec.sock"

static const char oci_usage[] =
    "Usage: agentjail oci [--root DIR] [--log FILE] [--log-format text|json] COMMAND\n"
    "\n"
    "The OCI runtime command line (runc's), for Podman and other engines:\n"
    "  agentjail oci create [--bundle DIR] [--pid-file FILE] [--console-socket SOCK] ID\n"
    "                     build the container from DIR/config.json, its command held\n"
    "  agentjail oci start ID      run the held command\n"
    "  agentjail oci state ID      the runtime-spec state as JSON\n"
    "  agentjail oci kill [--all] ID [SIGNAL]\n"
    "                     TERM (default), KILL, INT, HUP, QUIT, USR1 or USR2\n"
    "  agentjail oci delete [--force] ID\n"
    "                     remove it (--force: even a running one)\n"
    "  agentjail oci pause ID, resume ID\n"
    "                     freeze or thaw every process of it (its freezer cgroup)\n"
    "  agentjail oci ps [--format table|json] ID\n"
    "                     the host pids of its processes\n"
    "  agentjail oci update --resources FILE|- ID\n"
    "                     new memory, pids and cpu limits (linux.resources JSON)\n"
    "  agentjail oci features    what is supported, as JSON\n"
    "\n"
    "--root DIR: the state directories (default /run/agentjail-oci as root, else\n"
    "$XDG_RUNTIME_DIR/agentjail-oci). --log FILE: errors appended there too, as JSON\n"
    "lines with --log-format json. Errors: exit 125. Docs: docs/oci.md.\n";

/* the global options, for errors */
static struct {
	const char *root;
	FILE *log;
	bool json;
} g;

static void log_error(const char *msg)
{
	fprintf(stderr, "agentjail: %s\n", msg);
	if (!g.log)
		return;
	char ts[64];
	time_t now = time(NULL);
	struct tm tm;
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	if (g.json) {
		json_t *o = json_pack("{s:s, s:s, s:s}", "level", "error", "msg", msg, "time", ts);
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (s)
			fprintf(g.log, "%s\n", s);
		free(s);
		json_decref(o);
	} else {
		fprintf(g.log, "%s agentjail: %s\n", ts, msg);
	}
	fflush(g.log);
}

static int fail(const aj_error *err)
{
	char buf[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
	aj_err_format(err, buf, sizeof(buf));
	log_error(buf);
	return err->exit ? err->exit : AJ_EXIT_INTERNAL;
}

static int failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int failf(const char *fmt, ...)
{
	char buf[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_error(buf);
	return AJ_EXIT_INTERNAL;
}

/* A container id is one safe path component. */
static bool id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > 128 || id[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(id[i] >= 'a' && id[i] <= 'z') && !(id[i] >= 'A' && id[i] <= 'Z') &&
		    !(id[i] >= '0' && id[i] <= '9') && !strchr("_.-", id[i]))
			return false;
	return true;
}

static int open_root(bool make)
{
	char def[PATH_MAX];
	const char *root = g.root;
	if (!root) {
		const char *xdg = getenv("XDG_RUNTIME_DIR");
		if (geteuid() == 0 || !xdg || xdg[0] != '/')
			snprintf(def, sizeof(def), "%s",
				 geteuid() == 0 ? "/run/agentjail-oci" : "/tmp/agentjail-oci");
		else
			snprintf(def, sizeof(def), "%s/agentjail-oci", xdg);
		root = def;
	}
	if (make && aj_mkdir_p(root, 0700) < 0)
		return -errno;
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the state holds hooks this runtime runs: a root someone else owns
	 * or may write (a /tmp made first by another user) is refused */
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* The start time of a process (/proc/PID/stat field 22), 0 when gone or
 * a zombie: with the pid, a process that is still the one recorded. */
static unsigned long long start_time(pid_t pid)
{
	return aj_pid_alive(pid) ? aj_pid_start_time(pid) : 0;
}

typedef struct oci_state {
	json_t *j;
	pid_t pid, init;
	pid_t cpid;	    /* the container's process (runtime-spec's pid), 0 if gone */
	const char *status; /* created, running, paused, stopped */
} oci_state;

/* The command's host pid: the child of the sandbox's init that started
 * first (exec'd commands come later), 0 when there is none. */
static pid_t first_child(pid_t init)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)init, (int)init);
	_cleanup_free_ char *txt = NULL;
	if (aj_read_file(path, &txt, NULL) < 0)
		return 0;
	pid_t best = 0;
	unsigned long long best_t = 0;
	for (char *p = txt, *end; *p; p = end) {
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		unsigned long long t = v > 0 ? aj_pid_start_time((pid_t)v) : 0;
		if (t && (!best || t < best_t)) {
			best = (pid_t)v;
			best_t = t;
		}
	}
	return best;
}

static bool container_frozen(const oci_state *st);

static int load_state(int rootfd, const char *id, oci_state *st)
{
	memset(st, 0, sizeof(*st));
	if (!id_valid(id))
		return failf("container id '%s' is not valid (fix: letters, digits, '_', '.', '-')",
			     id ? id : "");
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/" OCI_STATE, id);
	int fd = openat(rootfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	json_error_t je;
	if (fd < 0 || !(st->j = json_loadfd(fd, 0, &je))) {
		if (fd >= 0)
			close(fd);
		return failf("container %s does not exist (fix: the same --root as at create)", id);
	}
	close(fd);
	st->pid = (pid_t)json_integer_value(json_object_get(st->j, "pid"));
	st->init = (pid_t)json_integer_value(json_object_get(st->j, "init"));
	bool alive = start_time(st->pid) ==
		     (unsigned long long)json_integer_value(json_object_get(st->j, "pid_start"));
	snprintf(path, sizeof(path), "%s/" OCI_FIFO, id);
	bool held = faccessat(rootfd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	st->status = !alive ? "stopped" : held ? "created" : "running";
	/* runtime-spec's pid: the command's process, recorded by start;
	 * while held, the sandbox's init (the same namespaces), which starts it */
	bool init_ok = alive && start_time(st->init) == (unsigned long long)json_integer_value(
							    json_object_get(st->j, "init_start"));
	pid_t cmd = (pid_t)json_integer_value(json_object_get(st->j, "cmd"));
	if (!init_ok)
		st->cpid = 0;
	else if (cmd > 0 && start_time(cmd) == (unsigned long long)json_integer_value(
						   json_object_get(st->j, "cmd_start")))
		st->cpid = cmd;
	else if (held || (st->cpid = first_child(st->init)) == 0)
		st->cpid = st->init;
	if (init_ok && !held && container_frozen(st))
		st->status = "paused";
	return 0;
}

static bool init_alive(const oci_state *st)
{
	return start_time(st->init) ==
	       (unsigned long long)json_integer_value(json_object_get(st->j, "init_start"));
}

/* ---- the container's cgroups, found again from its init's ---- */

/* The sandbox's cgroup directories (those agentjail made, named
 * agentjail-*) of the controllers asked for; 0, or -1 with why in err. */
static int container_cgroup(const oci_state *st, aj_cgroup *cg, aj_error *err)
{
	memset(cg, 0, sizeof(*cg));
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)st->init);
	_cleanup_free_ char *mi = NULL, *pc = NULL;
	if (aj_read_file("/proc/self/mountinfo", &mi, NULL) < 0 ||
	    aj_read_file(path, &pc, NULL) < 0 || !init_alive(st))
		return aj_err(err, ESRCH, "the container's processes are gone");
	static const char *const ctrls[] = {"memory", "pids", "cpu", "freezer", ""};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(ctrls) && cg->n < AJ_CG_MAX_DIRS; i++) {
		aj_cgroup_hier h;
		if (aj_cgroup_find(mi, pc, ctrls[i], &h) < 0)
			continue;
		/* only the sandbox's own directory: never a parent's (a freezer
		 * the sandbox has not would be agentjail's or the host's) */
		const char *base = strrchr(h.own, '/');
		if (!base || strncmp(base + 1, "agentjail-", 10))
			continue;
		if (cg->name[0] && strcmp(cg->name, base + 1))
			continue;
		snprintf(cg->name, sizeof(cg->name), "%s", base + 1);
		aj_cgroup_dir *d = &cg->dirs[cg->n];
		int n = snprintf(d->path, sizeof(d->path), "%s%s", h.mount, h.own);
		if (n < 0 || (size_t)n >= sizeof(d->path))
			continue;
		snprintf(d->ctrl, sizeof(d->ctrl), "%s", h.version == 2 ? "unified" : ctrls[i]);
		d->version = h.version;
		for (int k = 0; k < cg->n; k++)
			if (!strcmp(cg->dirs[k].path, d->path))
				n = -1; /* the same v2 directory twice */
		if (n > 0)
			cg->n++;
	}
	if (cg->n == 0)
		return aj_err(err, ENOENT, "the container has no cgroup of its own");
	return 0;
}

/* The freezer of the container: its v1 freezer.state or v2 cgroup.freeze
 * file's path, or false. */
static bool freezer_file(const aj_cgroup *cg, char *path, size_t len)
{
	for (int i = 0; i < cg->n; i++)
		if (!strcmp(cg->dirs[i].ctrl, "freezer")) {
			snprintf(path, len, "%s/freezer.state", cg->dirs[i].path);
			return true;
		}
	for (int i = 0; i < cg->n; i++)
		if (cg->dirs[i].version == 2) {
			snprintf(path, len, "%s/cgroup.freeze", cg->dirs[i].path);
			return true;
		}
	return false;
}

static bool container_frozen(const oci_state *st)
{
	aj_cgroup *cg = calloc(1, sizeof(*cg));
	aj_error err;
	char path[PATH_MAX + 32];
	_cleanup_free_ char *txt = NULL;
	bool frozen = cg && container_cgroup(st, cg, &err) == 0 &&
		      freezer_file(cg, path, sizeof(path)) && aj_read_file(path, &txt, NULL) == 0 &&
		      (aj_startswith(txt, "FROZEN") || aj_startswith(txt, "FREEZING") ||
		       aj_startswith(txt, "1"));
	free(cg);
	return frozen;
}

static int remove_state(int rootfd, const char *id)
{
	int dfd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	static const char *const files[] = {OCI_FIFO, OCI_STATE, OCI_STATE ".tmp", OCI_EXEC_SOCK};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(files); i++)
		(void)unlinkat(dfd, files[i], 0);
	close(dfd);
	return unlinkat(rootfd, id, AT_REMOVEDIR) < 0 ? -errno : 0;
}

/* Write a file atomically: TMP then rename. */
static int write_file_at(int dfd, const char *name, const char *text)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	int r = aj_write_all(fd, text, strlen(text));
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(dfd, tmp, 0);
	return r;
}

/* ---- hooks (runtime-spec): run by the runtime, as the runtime ---- */

/* One hook: path with args and env, the container's state as JSON on its
 * stdin; killed after its timeout. 0, or -1 with why in msg. */
/* The runtime's own network namespace, when create joined an engine's:
 * hooks run in it, as the runtime-spec says (-1: never left). */
static int runtime_netns = -1;

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
		    (runtime_netns >= 0 && setns(runtime_netns, CLONE_NEWNET) < 0))
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
static int run_hooks(const json_t *hooks, const char *kind, const char *id, const char *status,
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
		log_error(warn);
	}
	return 0;
}

/* ---- the monitor: builds and runs the sandbox, holds it until start ---- */

typedef struct monitor {
	const char *id, *bundle;
	json_t *hooks, *ann; /* config.json's (prestart, createRuntime run here) */
	json_t *sysctl;	     /* linux.sysctl's checked ones, or NULL */
	int report;	     /* to create: a report, then closed */
	int fifo;	     /* exec.fifo, read-write: start's byte */
	bool started;
	int signal; /* what ended it while held */
} monitor;

typedef struct report {
	int ok;
	pid_t init;
	aj_error err;
} report;

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
		r = run_hooks(m->hooks, "prestart", m->id, "creating", init, m->bundle, m->ann,
			      true, err);
	if (r == 0)
		r = run_hooks(m->hooks, "createRuntime", m->id, "creating", init, m->bundle, m->ann,
			      true, err);
	if (r < 0)
		return r;
	report rep = {.ok = 1, .init = init};
	r = aj_write_all(m->report, &rep, sizeof(rep));
	close(m->report);
	m->report = -1;
	if (r < 0)
		return aj_err(err, -r, "create went away");
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
		struct pollfd pf[3] = {{m->fifo, POLLIN, 0}, {sfd, POLLIN, 0}, {pfd, POLLIN, 0}};
		if (poll(pf, 3, -1) < 0) {
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
		if (pf[2].revents & POLLIN) {
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
		code = fail(&err); /* e.g. a cwd or command not in the root: 125, 126, 127 */
	/* everything is removed: the container's process exits with it too */
	unsigned char b = (unsigned char)code;
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

/* ---- create ---- */

static int write_state(int dfd, const char *id, const char *bundle, pid_t pid, pid_t init,
		       const char *config_text)
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
			       created, "pid_start", (json_int_t)start_time(pid), "init", (int)init,
			       "init_start", (json_int_t)start_time(init));
	json_t *hooks = json_object_get(cfg, "hooks");
	if (st && json_is_object(hooks))
		json_object_set(st, "hooks", hooks); /* poststart, poststop: start, delete */
	json_decref(cfg);
	char *s = st ? json_dumps(st, JSON_COMPACT) : NULL;
	json_decref(st);
	int r = s ? write_file_at(dfd, OCI_STATE, s) : -ENOMEM;
	free(s);
	return r;
}

static int write_pid_file(const char *path, pid_t pid)
{
	char buf[32], tmp[PATH_MAX];
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	int r = aj_write_all(fd, buf, strlen(buf));
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* A new pty; *slave its terminal. The master, or a negative errno. */
static int open_pty(int *slave)
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
static int send_console(const char *path, int master)
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
static int spawn_monitor(aj_oci_config *cfg, int rootfd, const char *id, const char *bundle,
			 const char *pid_file, const char *console, const char *text)
{
	_cleanup_close_ int dfd = openat(rootfd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char fifo[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/" OCI_FIFO, id);
	if (dfd < 0 || mkfifoat(rootfd, fifo, 0600) < 0)
		return failf("cannot make the state of %s: %s", id, strerror(errno));
	int ffd = openat(rootfd, fifo, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	int p[2], xp[2]; /* the report; the exit status to the container's process */
	if (ffd < 0 || pipe2(p, O_CLOEXEC) < 0 || pipe2(xp, O_CLOEXEC) < 0)
		return failf("cannot make the state of %s: %s", id, strerror(errno));
	_cleanup_close_ int master = -1, slave = -1;
	if (cfg->terminal && (master = open_pty(&slave)) < 0)
		return failf("cannot make a terminal for %s: %s", id, strerror(-master));
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
		return failf("cannot make the exec socket of %s: %s", id, strerror(errno));
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
		return failf("cannot fork the monitor: %s", strerror(errno));
	}
	report rep;
	memset(&rep, 0, sizeof(rep));
	ssize_t n;
	size_t got = 0;
	while (got < sizeof(rep) && ((n = read(p[0], (char *)&rep + got, sizeof(rep) - got)) > 0 ||
				     (n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	close(p[0]);
	if (got != sizeof(rep) || !rep.ok) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (got == sizeof(rep))
			return fail(&rep.err);
		return failf("the monitor of %s died while building the sandbox", id);
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
	int r = ok == '1' ? 0 : -ECHILD;
	if (r < 0)
		failf("cannot start the process of %s in its namespaces (fix: run as root; "
		      "agentjail doctor)",
		      id);
	else if ((r = console ? send_console(console, master) : 0) < 0)
		failf("--console-socket %s: %s", console, strerror(-r));
	else if ((r = write_state(dfd, id, bundle, pid, rep.init, text)) < 0)
		failf("cannot write the state of %s: %s", id, strerror(-r));
	if (r == 0 && pid_file && (r = write_pid_file(pid_file, ctr)) < 0)
		failf("cannot write the pid file %s: %s", pid_file, strerror(-r));
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

static int cmd_create(int argc, char **argv, char **main_argv)
{
	static const struct option opts[] = {
	    {"bundle", required_argument, NULL, 'b'},
	    {"pid-file", required_argument, NULL, 'p'},
	    {"console-socket", required_argument, NULL, 'c'},
	    {"no-pivot", no_argument, NULL, 'n'},
	    {"no-new-keyring", no_argument, NULL, 'k'},
	    {"preserve-fds", required_argument, NULL, 'f'},
	    {NULL, 0, NULL, 0},
	};
	const char *bundle = ".", *pid_file = NULL, *console = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+b:", opts, NULL)) != -1) {
		if (c == 'b')
			bundle = optarg;
		else if (c == 'p')
			pid_file = optarg;
		else if (c == 'c')
			console = optarg;
		else if (c == 'f' && strcmp(optarg, "0"))
			return failf("--preserve-fds %s is not supported (fix: pass no extra "
				     "descriptors; docs/oci.md)",
				     optarg);
		else if (c == '?' || c == ':')
			return failf("create: unknown or incomplete option '%s' (fix: see "
				     "agentjail oci --help)",
				     argv[optind - 1]);
	}
	if (optind + 1 != argc)
		return failf("create needs one container id (fix: agentjail oci create --bundle "
			     "DIR ID)");
	const char *id = argv[optind];
	if (!id_valid(id))
		return failf("container id '%s' is not valid (fix: letters, digits, '_', '.', '-')",
			     id);
	char dir[PATH_MAX], cfgpath[PATH_MAX + 16];
	if (!realpath(bundle, dir))
		return failf("bundle %s: %s (fix: --bundle DIR with a config.json)", bundle,
			     strerror(errno));
	snprintf(cfgpath, sizeof(cfgpath), "%s/config.json", dir);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (aj_read_file(cfgpath, &text, &len) < 0)
		return failf("cannot read %s: %s (fix: a bundle is a directory with a "
			     "config.json, runtime-spec 1.x)",
			     cfgpath, strerror(errno));
	aj_oci_config cfg;
	aj_error err;
	aj_err_clear(&err);
	if (aj_oci_config_parse(text, len, dir, &cfg, &err) < 0)
		return fail(&err);
	if (cfg.terminal != (console != NULL)) {
		aj_oci_config_free(&cfg);
		return failf("process.terminal %s --console-socket (fix: both or neither; "
			     "docs/oci.md)",
			     cfg.terminal ? "needs" : "is false: no");
	}
	if (cfg.terminal)
		cfg.policy.tty = AJ_TTY_ALWAYS;
#ifdef AJ_RUN_NET_HELPER
	/* this program has no network stack: agentjail-net takes the command */
	if (aj_net_wanted(&cfg.policy) || cfg.netns) {
		aj_oci_config_free(&cfg);
		return aj_cli_exec_helper("agentjail-net", main_argv);
	}
#else
	(void)main_argv;
#endif
	/* an engine's network namespace: this process joins it (the monitor
	 * and the sandbox inherit it), walled unless the annotations open it */
	if (cfg.netns && (runtime_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0) {
		aj_oci_config_free(&cfg);
		return failf("cannot open this process's network namespace: %s", strerror(errno));
	}
	if (cfg.netns && aj_net_join_netns(cfg.netns, cfg.netns_open, &err) < 0) {
		aj_oci_config_free(&cfg);
		return fail(&err);
	}
	_cleanup_close_ int rootfd = open_root(true);
	if (rootfd == -EPERM) {
		aj_oci_config_free(&cfg);
		return failf(
		    "the state root is another user's or writable by others: refused "
		    "(fix: --root DIR, a directory of yours, not group- or other-writable)");
	}
	if (rootfd < 0) {
		aj_oci_config_free(&cfg);
		return failf("cannot make the state root: %s (fix: --root DIR, writable)",
			     strerror(-rootfd));
	}
	if (mkdirat(rootfd, id, 0700) < 0) {
		aj_oci_config_free(&cfg);
		return failf("container %s: %s (fix: another id, or agentjail oci delete %s)", id,
			     errno == EEXIST ? "already exists" : strerror(errno), id);
	}
	int rc = spawn_monitor(&cfg, rootfd, id, dir, pid_file, console, text);
	if (rc != 0)
		(void)remove_state(rootfd, id);
	aj_oci_config_free(&cfg);
	return rc;
}

/* ---- start, state, kill, delete, features ---- */

static int one_id(int argc, char **argv, const char *what)
{
	if (argc != 2)
		return failf("%s needs one container id (fix: agentjail oci %s ID)", what, what);
	return 0;
}

/* After start: the command's host pid into the state (runtime-spec's
 * pid, what engines read for top, nsenter and inspect), once init has
 * started it (2 s at most; a command that ended at once leaves init's). */
static void record_command(int rootfd, const char *id)
{
	oci_state st;
	if (load_state(rootfd, id, &st))
		return;
	pid_t cmd = 0;
	for (int i = 0; i < 400 && init_alive(&st) && !(cmd = first_child(st.init)); i++) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	unsigned long long t = cmd > 0 ? start_time(cmd) : 0;
	_cleanup_close_ int dfd = openat(rootfd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char *text = NULL;
	if (t && dfd >= 0 && json_object_set_new(st.j, "cmd", json_integer(cmd)) == 0 &&
	    json_object_set_new(st.j, "cmd_start", json_integer((json_int_t)t)) == 0 &&
	    (text = json_dumps(st.j, JSON_COMPACT)))
		(void)write_file_at(dfd, OCI_STATE, text);
	free(text);
	json_decref(st.j);
}

static int cmd_start(int rootfd, const char *id)
{
	oci_state st;
	if (load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	bool created = !strcmp(st.status, "created");
	const char *status = st.status;
	json_decref(st.j);
	if (!created)
		return failf("container %s is %s, not created (fix: only a created container "
			     "starts)",
			     id, status);
	char fifo[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/" OCI_FIFO, id);
	int fd = openat(rootfd, fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return failf("cannot start %s: %s (its monitor is gone)", id, strerror(e));
	}
	close(fd);
	(void)unlinkat(rootfd, fifo, 0);
	record_command(rootfd, id);
	if (load_state(rootfd, id, &st) == 0) {
		aj_error err;
		(void)run_hooks(json_object_get(st.j, "hooks"), "poststart", id, "running", st.init,
				json_string_value(json_object_get(st.j, "bundle")),
				json_object_get(st.j, "annotations"), false, &err);
		json_decref(st.j);
	}
	return 0;
}

static int cmd_state(int rootfd, const char *id)
{
	oci_state st;
	if (load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	json_t *out = json_pack(
	    "{s:O, s:O, s:s, s:i, s:O, s:O, s:O}", "ociVersion",
	    json_object_get(st.j, "ociVersion"), "id", json_object_get(st.j, "id"), "status",
	    st.status, "pid", strcmp(st.status, "stopped") ? (int)st.cpid : 0, "bundle",
	    json_object_get(st.j, "bundle"), "annotations", json_object_get(st.j, "annotations"),
	    "created", json_object_get(st.j, "created"));
	json_decref(st.j);
	if (!out)
		return failf("the state of %s is damaged (fix: agentjail oci delete --force %s)",
			     id, id);
	json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(out);
	putchar('\n');
	return fflush(stdout) == 0 ? 0 : AJ_EXIT_INTERNAL;
}

static void thaw(const oci_state *st)
{
	aj_cgroup *cg = calloc(1, sizeof(*cg));
	aj_error err;
	if (cg && container_cgroup(st, cg, &err) == 0)
		aj_cgroup_thaw(cg);
	free(cg);
}

/* pause, resume: the container's freezer cgroup (v1's freezer or v2's
 * cgroup.freeze), every process of it stopped where it is. */
static int cmd_pause(int rootfd, const char *id, bool frozen)
{
	oci_state st;
	if (load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	const char *want = frozen ? "running" : "paused";
	int r = 0;
	aj_cgroup *cg = NULL;
	aj_error err;
	aj_err_clear(&err);
	if (strcmp(st.status, want))
		r = failf("container %s is %s, not %s (fix: %s)", id, st.status, want,
			  frozen ? "only a running container pauses"
				 : "only a paused container resumes");
	else if (!(cg = calloc(1, sizeof(*cg))))
		r = failf("%s: out of memory", frozen ? "pause" : "resume");
	else if (container_cgroup(&st, cg, &err) < 0 || aj_cgroup_freeze(cg, frozen, &err) < 0) {
		aj_err_hint(&err, "pause needs the cgroup v1 freezer controller or cgroup v2 "
				  "(agentjail doctor)");
		r = fail(&err);
	}
	free(cg);
	json_decref(st.j);
	return r;
}

/* ps [--format table|json] ID: the host pids of the container's processes
 * (those in its pid namespace, init included), as runc's `ps`. */
static int cmd_ps(int rootfd, int argc, char **argv)
{
	bool json = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *f = NULL;
		if (!strcmp(argv[i], "--format") || !strcmp(argv[i], "-f"))
			f = i + 1 < argc ? argv[++i] : "";
		else if (!strncmp(argv[i], "--format=", 9))
			f = argv[i] + 9;
		if (!f || (strcmp(f, "json") && strcmp(f, "table")))
			return failf("ps: unknown option or format '%s' (fix: agentjail oci ps "
				     "[--format table|json] ID)",
				     f ? f : argv[i]);
		json = !strcmp(f, "json");
	}
	if (argc - i != 1)
		return failf("ps needs one container id (fix: agentjail oci ps [--format "
			     "table|json] ID; ps options after the id are not supported)");
	const char *id = argv[i];
	oci_state st;
	if (load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)st.init);
	struct stat ns, o;
	bool alive = strcmp(st.status, "stopped") && init_alive(&st) && stat(path, &ns) == 0;
	json_decref(st.j);
	if (!alive)
		return failf("container %s is not running (fix: ps lists a created, running or "
			     "paused container's processes)",
			     id);
	DIR *d = opendir("/proc");
	json_t *pids = json_array();
	if (!d || !pids) {
		if (d)
			closedir(d);
		json_decref(pids);
		return failf("ps: cannot read /proc: %s", strerror(errno));
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
		if (stat(path, &o) == 0 && o.st_ino == ns.st_ino && o.st_dev == ns.st_dev)
			json_array_append_new(pids, json_integer(pid));
	}
	closedir(d);
	if (json) {
		json_dumpf(pids, stdout, JSON_COMPACT);
		putchar('\n');
	} else {
		printf("PID\n");
		size_t k;
		json_t *v;
		json_array_foreach(pids, k, v) printf("%lld\n", (long long)json_integer_value(v));
	}
	json_decref(pids);
	return fflush(stdout) == 0 ? 0 : AJ_EXIT_INTERNAL;
}

/* A cgroup knob's number ("max": 0), or 0. */
static unsigned long long knob_value(const aj_cgroup *cg, const char *ctrl, const char *v1,
				     const char *v2)
{
	for (int i = 0; i < cg->n; i++) {
		const aj_cgroup_dir *d = &cg->dirs[i];
		if (d->version == 1 && strcmp(d->ctrl, ctrl))
			continue;
		char path[PATH_MAX + 32];
		snprintf(path, sizeof(path), "%s/%s", d->path, d->version == 1 ? v1 : v2);
		_cleanup_free_ char *txt = NULL;
		if (aj_read_file(path, &txt, NULL) == 0)
			return strtoull(txt, NULL, 10);
	}
	return 0;
}

/* update --resources FILE|- ID: new memory, pids and cpu limits on the
 * live cgroup (runtime-spec linux.resources, as runc's); all checked before
 * any is written. */
static int cmd_update(int rootfd, int argc, char **argv)
{
	const char *file = NULL;
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if ((!strcmp(argv[i], "--resources") || !strcmp(argv[i], "-r")) && i + 1 < argc)
			file = argv[++i];
		else if (!strncmp(argv[i], "--resources=", 12))
			file = argv[i] + 12;
		else
			return failf("update: option '%s' is not supported (fix: agentjail oci "
				     "update --resources FILE|- ID, a linux.resources object)",
				     argv[i]);
	}
	if (argc - i != 1 || !file)
		return failf("update needs --resources FILE (or - for stdin) and one container id "
			     "(fix: agentjail oci update --resources FILE ID)");
	const char *id = argv[i];
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = !strcmp(file, "-") ? aj_read_fd(STDIN_FILENO, &text, &len)
				   : aj_read_file(file, &text, &len);
	if (r < 0)
		return failf("update: cannot read %s: %s", strcmp(file, "-") ? file : "stdin",
			     strerror(errno));
	aj_policy p;
	aj_policy_init(&p);
	aj_error err;
	aj_err_clear(&err);
	if (aj_oci_resources_parse(text, len, &p, &err) < 0) {
		aj_policy_free(&p);
		return fail(&err);
	}
	oci_state st;
	if (load_state(rootfd, id, &st)) {
		aj_policy_free(&p);
		return AJ_EXIT_INTERNAL;
	}
	aj_cgroup *cg = calloc(1, sizeof(*cg));
	r = 0;
	if (!strcmp(st.status, "stopped"))
		r = failf("container %s is stopped (fix: update a created, running or paused one)",
			  id);
	else if (!cg)
		r = failf("update: out of memory");
	else if (container_cgroup(&st, cg, &err) < 0)
		r = fail(&err);
	else if (p.cpu_millis && !aj_cgroup_has_cpu(cg))
		r = failf("update: the container has no cpu cgroup: its cpu limit cannot change "
			  "(fix: agentjail doctor)");
	if (r == 0 && (p.memory || p.pids)) {
		/* the one not given stays as it is */
		if (!p.memory)
			p.memory = knob_value(cg, "memory", "memory.limit_in_bytes", "memory.max");
		if (!p.pids)
			p.pids = knob_value(cg, "pids", "pids.max", "pids.max");
		if (aj_cgroup_update_limits(cg, &p, &err) < 0)
			r = fail(&err);
	}
	if (r == 0 && p.cpu_millis && aj_cgroup_update_cpu(cg, p.cpu_millis, &err) < 0)
		r = fail(&err);
	free(cg);
	json_decref(st.j);
	aj_policy_free(&p);
	return r;
}

static int parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = {{"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT},  {"HUP", SIGHUP},
		    {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
	if (!strncmp(s, "SIG", 3))
		s += 3;
	char *end;
	long n = strtol(s, &end, 10);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(sigs); i++)
		if (!strcmp(s, sigs[i].name) || (*s && !*end && n == sigs[i].sig))
			return sigs[i].sig;
	return -1;
}

static int cmd_kill(int rootfd, int argc, char **argv)
{
	int i = 1;
	if (i < argc && (!strcmp(argv[i], "--all") || !strcmp(argv[i], "-a")))
		i++; /* one signal reaches the whole sandbox either way (docs/oci.md) */
	if (argc - i < 1 || argc - i > 2)
		return failf("kill needs a container id and a signal (fix: agentjail oci kill ID "
			     "[SIGNAL])");
	const char *id = argv[i];
	int sig = argc - i == 2 ? parse_signal(argv[i + 1]) : SIGTERM;
	if (sig < 0)
		return failf("kill: signal %s is not supported (fix: TERM, KILL, INT, HUP, QUIT, "
			     "USR1 or USR2)",
			     argv[i + 1]);
	oci_state st;
	if (load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	int r = 0;
	if (!strcmp(st.status, "stopped"))
		r = failf("container %s is not running", id);
	/* KILL: the sandbox's init, and with it every process in it; the
	 * others: the monitor, which forwards them to the command */
	else if (sig == SIGKILL && init_alive(&st))
		r = kill(st.init, SIGKILL) < 0 ? failf("kill %s: %s", id, strerror(errno)) : 0;
	else if (kill(st.pid, sig) < 0)
		r = failf("kill %s: %s", id, strerror(errno));
	if (r == 0 && sig == SIGKILL && !strcmp(st.status, "paused"))
		thaw(&st); /* a frozen process dies only once thawed */
	json_decref(st.j);
	return r;
}

/* Wait for the monitor to finish its teardown (10 s at most). */
static int wait_gone(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return errno == ESRCH ? 0 : -errno;
	struct pollfd pf = {fd, POLLIN, 0};
	int n = poll(&pf, 1, 10000);
	close(fd);
	return n == 1 ? 0 : -ETIMEDOUT;
}

static int cmd_delete(int rootfd, int argc, char **argv)
{
	bool force = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f"))
			force = true;
		else
			return failf("delete: unknown option '%s' (fix: agentjail oci delete "
				     "[--force] ID)",
				     argv[i]);
	}
	if (argc - i != 1)
		return failf(
		    "delete needs one container id (fix: agentjail oci delete [--force] ID)");
	const char *id = argv[i];
	oci_state st;
	if (load_state(rootfd, id, &st))
		return AJ_EXIT_INTERNAL;
	int r = 0;
	if (!strcmp(st.status, "running") && !force) {
		r = failf("container %s is running (fix: agentjail oci kill %s KILL, or delete "
			  "--force)",
			  id, id);
	} else if (strcmp(st.status, "stopped")) {
		if (init_alive(&st))
			kill(st.init, SIGKILL);
		else
			kill(st.pid, SIGTERM);
		if (!strcmp(st.status, "paused"))
			thaw(&st);
		if (wait_gone(st.pid) < 0)
			r = failf("container %s: its monitor (pid %d) did not end", id,
				  (int)st.pid);
	}
	if (r == 0 && remove_state(rootfd, id) < 0)
		r = failf("cannot remove the state of %s: %s", id, strerror(errno));
	aj_error err;
	if (r == 0)
		(void)run_hooks(json_object_get(st.j, "hooks"), "poststop", id, "stopped", 0,
				json_string_value(json_object_get(st.j, "bundle")),
				json_object_get(st.j, "annotations"), false, &err);
	json_decref(st.j);
	return r;
}

/* ---- exec: one more command in a running container ---- */

typedef struct exec_opts {
	const char *process, *console, *pid_file, *cwd, *user;
	bool tty, detach;
	aj_policy extra; /* --env entries, checked */
} exec_opts;

static int exec_parse(int argc, char **argv, exec_opts *o)
{
	static const struct option opts[] = {
	    {"process", required_argument, NULL, 'p'},
	    {"tty", no_argument, NULL, 't'},
	    {"console-socket", required_argument, NULL, 'c'},
	    {"pid-file", required_argument, NULL, 'P'},
	    {"detach", no_argument, NULL, 'd'},
	    {"cwd", required_argument, NULL, 'w'},
	    {"env", required_argument, NULL, 'e'},
	    {"user", required_argument, NULL, 'u'},
	    {"no-new-privs", no_argument, NULL, 'n'},
	    {"cap", required_argument, NULL, 'C'},
	    {"additional-gids", required_argument, NULL, 'g'},
	    {"preserve-fds", required_argument, NULL, 'f'},
	    {"process-label", required_argument, NULL, 'l'},
	    {"apparmor", required_argument, NULL, 'a'},
	    {"cgroup", required_argument, NULL, 'G'},
	    {"ignore-paused", no_argument, NULL, 'i'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	aj_error err;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:tde:u:g:c:", opts, NULL)) != -1) {
		switch (c) {
		case 'p': o->process = optarg; break;
		case 't': o->tty = true; break;
		case 'c': o->console = optarg; break;
		case 'P': o->pid_file = optarg; break;
		case 'd': o->detach = true; break;
		case 'w': o->cwd = optarg; break;
		case 'u': o->user = optarg; break;
		case 'n':
		case 'i': break; /* no_new_privs: always; never paused */
		case 'C':
		case 'g': break; /* agentjail's own capabilities and groups */
		case 'e':
			aj_err_clear(&err);
			if (aj_policy_add_env(&o->extra, optarg, &err) < 0)
				return fail(&err);
			break;
		case 'f':
			if (strcmp(optarg, "0"))
				return failf(
				    "exec --preserve-fds %s is not supported (fix: pass no "
				    "extra descriptors; docs/oci.md)",
				    optarg);
			break;
		case 'l':
		case 'a':
			if (*optarg)
				return failf("exec --%s is not supported (agentjail applies no LSM "
					     "profile; docs/oci.md)",
					     c == 'l' ? "process-label" : "apparmor");
			break;
		case 'G':
			return failf("exec --cgroup is not supported (fix: the container's "
				     "cgroup is the only one; docs/oci.md)");
		default:
			return failf("exec: unknown or incomplete option '%s' (fix: see agentjail "
				     "oci --help)",
				     argv[optind - 1]);
		}
	}
	return 0;
}

/* The command: --process FILE, else the arguments and options. */
static int exec_command(exec_opts *o, int argc, char **argv, aj_oci_config *cmd)
{
	aj_error err;
	aj_err_clear(&err);
	if (o->process) {
		if (argc > 0)
			return failf("exec: --process FILE or a command, not both (fix: the "
				     "command goes in the file's args)");
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		if (aj_read_file(o->process, &text, &len) < 0)
			return failf("cannot read the process file %s: %s", o->process,
				     strerror(errno));
		if (aj_oci_process_parse(text, len, cmd, &err) < 0)
			return fail(&err);
		if (o->tty)
			cmd->terminal = true;
	} else {
		memset(cmd, 0, sizeof(*cmd));
		aj_policy_init(&cmd->policy);
		if (argc < 1)
			return failf("exec needs a container id and a command (fix: agentjail oci "
				     "exec ID COMMAND [ARGS], or --process FILE)");
		if (!(cmd->argv = calloc((size_t)argc + 1, sizeof(char *))))
			return failf("exec: out of memory");
		for (int i = 0; i < argc; i++)
			if (!(cmd->argv[i] = strdup(argv[i])))
				return failf("exec: out of memory");
		cmd->terminal = o->tty;
	}
	if ((o->cwd && aj_policy_set_cwd(&cmd->policy, o->cwd, &err) < 0) ||
	    (o->user && aj_policy_set_user(&cmd->policy, o->user, &err) < 0))
		return fail(&err);
	if (o->user)
		cmd->user = true;
	for (size_t i = 0; i < o->extra.n_env; i++)
		if (aj_policy_add_env(&cmd->policy, o->extra.env[i], &err) < 0)
			return fail(&err);
	if (cmd->terminal != (o->console != NULL))
		return failf("exec: a terminal %s --console-socket (fix: --tty and "
			     "--console-socket together, or neither; docs/oci.md)",
			     cmd->terminal ? "needs" : "is not asked for: no");
	return 0;
}

/* Waits for the command with the caller's signals forwarded to it. */
static int exec_wait(int conn)
{
	sigset_t set;
	sigemptyset(&set);
	int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(sigs); i++)
		sigaddset(&set, sigs[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	_cleanup_close_ int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	return aj_run_exec_wait(conn, sfd);
}

static int cmd_exec(int rootfd, int argc, char **argv)
{
	exec_opts o;
	memset(&o, 0, sizeof(o));
	aj_policy_init(&o.extra);
	int rc = exec_parse(argc, argv, &o);
	aj_oci_config cmd;
	memset(&cmd, 0, sizeof(cmd));
	aj_policy_init(&cmd.policy);
	if (rc == 0 && optind >= argc)
		rc = failf("exec needs a container id (fix: agentjail oci exec ID COMMAND)");
	const char *id = rc == 0 ? argv[optind] : NULL;
	if (rc == 0)
		rc = exec_command(&o, argc - optind - 1, argv + optind + 1, &cmd);
	aj_policy_free(&o.extra);
	oci_state st = {0};
	if (rc == 0 && load_state(rootfd, id, &st))
		rc = AJ_EXIT_INTERNAL;
	else if (rc == 0 && (strcmp(st.status, "running") || !init_alive(&st)))
		rc = failf("container %s is %s, not running (fix: exec runs in a started "
			   "container)",
			   id, st.status);
	json_decref(st.j);
	int master = -1, slave = -1;
	if (rc == 0 && cmd.terminal && (master = open_pty(&slave)) < 0)
		rc = failf("cannot make a terminal for exec in %s: %s", id, strerror(-master));
	if (rc == 0 && master >= 0 && cmd.rows && cmd.cols) {
		struct winsize ws = {.ws_row = (unsigned short)cmd.rows,
				     .ws_col = (unsigned short)cmd.cols};
		(void)ioctl(master, TIOCSWINSZ, &ws);
	}
	int r;
	if (rc == 0 && master >= 0 && (r = send_console(o.console, master)) < 0)
		rc = failf("--console-socket %s: %s", o.console, strerror(-r));
	if (master >= 0)
		close(master); /* the engine's now */
	/* the caller's stdio, or the new terminal; a terminal of the caller's
	 * never goes in (TIOCSTI would type into it): /dev/null instead */
	int io[3] = {-1, -1, -1}, conn = -1;
	for (int i = 0; rc == 0 && i < 3; i++) {
		if (slave >= 0)
			io[i] = slave;
		else if (isatty(i) || fcntl(i, F_GETFD) < 0)
			io[i] = open("/dev/null", i ? O_WRONLY | O_CLOEXEC : O_RDONLY | O_CLOEXEC);
		else
			io[i] = i;
	}
	char sock[64]; /* through an fd on its directory: sun_path is short */
	_cleanup_close_ int dfd =
	    rc == 0 ? openat(rootfd, id, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	snprintf(sock, sizeof(sock), "/proc/self/fd/%d/" OCI_EXEC_SOCK, dfd);
	char *envv[AJ_MAX_ENV + 1] = {NULL};
	memcpy(envv, cmd.policy.env, cmd.policy.n_env * sizeof(char *));
	aj_run_exec_req req = {.argv = cmd.argv,
			       .env = envv,
			       .cwd = cmd.policy.cwd,
			       .stdio = {io[0], io[1], io[2]},
			       .tty = slave >= 0,
			       .set_user = cmd.user,
			       .uid = cmd.policy.uid,
			       .gid = cmd.policy.gid};
	aj_error err;
	aj_err_clear(&err);
	if (rc == 0 && dfd < 0)
		rc = failf("container %s does not exist", id);
	else if (rc == 0 && (conn = aj_run_exec_start(sock, &req, &err)) < 0)
		rc = fail(&err);
	for (int i = 0; i < 3; i++)
		if (io[i] > 2 && io[i] != slave)
			close(io[i]);
	if (slave >= 0)
		close(slave);
	aj_oci_config_free(&cmd);
	if (rc != 0)
		return rc;
	/* --detach: a process of ours waits for it (the engine's subreaper
	 * waits for the pid file's pid); else this one */
	pid_t pid = o.detach ? fork() : getpid();
	if (pid < 0) {
		close(conn);
		return failf("exec: cannot fork: %s", strerror(errno));
	}
	if (pid == 0) {
		char title[64];
		snprintf(title, sizeof(title), "agentjail-oci-exec %.40s", id);
		aj_proctitle_set(title);
		_exit(exec_wait(conn));
	}
	if (o.pid_file && (r = write_pid_file(o.pid_file, pid)) < 0) {
		close(conn); /* init kills the command */
		return failf("cannot write the pid file %s: %s", o.pid_file, strerror(-r));
	}
	if (o.detach) {
		close(conn);
		return 0;
	}
	return exec_wait(conn);
}

static int cmd_features(void)
{
	json_t *f = json_pack(
	    "{s:s, s:s, s:[], s:[s,s,s,s], s:{s:[s,s,s,s,s,s,s], s:[], s:{s:b, s:b, s:b, s:b},"
	    " s:{s:b}, s:{s:b}, s:{s:b}}, s:{s:s, s:s}}",
	    "ociVersionMin", "1.0.0", "ociVersionMax", OCI_VERSION, "hooks", "mountOptions", "bind",
	    "rbind", "ro", "rw", "linux", "namespaces", "pid", "network", "ipc", "uts", "mount",
	    "user", "cgroup", "capabilities", "cgroup", "v1", 1, "v2", 1, "systemd", 0,
	    "systemdUser", 0, "seccomp", "enabled", 0, "apparmor", "enabled", 0, "selinux",
	    "enabled", 0, "annotations", "run.agentjail.net", "none|open", "run.agentjail.allow",
	    "HOST[:PORT],...");
	if (!f)
		return failf("features: out of memory");
	json_dumpf(f, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(f);
	putchar('\n');
	return fflush(stdout) == 0 ? 0 : AJ_EXIT_INTERNAL;
}

static int global_opts(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"root", required_argument, NULL, 'r'},
	    {"log", required_argument, NULL, 'l'},
	    {"log-format", required_argument, NULL, 'F'},
	    {"systemd-cgroup", no_argument, NULL, 's'},
	    {"debug", no_argument, NULL, 'd'},
	    {"rootless", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(oci_usage, stdout);
			return -1;
		}
		if (c == 'r')
			g.root = optarg;
		else if (c == 'l' && !(g.log = fopen(optarg, "ae")))
			return failf("--log %s: %s", optarg, strerror(errno));
		else if (c == 'F' && strcmp(optarg, "json") && strcmp(optarg, "text"))
			return failf("--log-format %s: expected text or json", optarg);
		else if (c == 'F')
			g.json = !strcmp(optarg, "json");
		else if (c == 's')
			return failf(
			    "--systemd-cgroup is not supported: agentjail makes its cgroups "
			    "below its own (fix: podman --cgroup-manager cgroupfs; "
			    "docs/oci.md)");
		else if (c == '?' || c == ':')
			return failf(
			    "oci: unknown or incomplete option '%s' (fix: see agentjail oci "
			    "--help)",
			    argv[optind - 1]);
	}
	return 0;
}

int aj_cmd_oci(int argc, char **argv)
{
	memset(&g, 0, sizeof(g));
	char **main_argv = argv - 1; /* main's (agentjail-net takes the same) */
	int r = global_opts(argc, argv);
	if (r != 0)
		return r == -1 ? 0 : r;
	argc -= optind;
	argv += optind;
	const char *cmd = argc > 0 ? argv[0] : "";
	for (int i = 1; i < argc && strcmp(cmd, "exec"); i++) /* exec: the command's */
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(oci_usage, stdout);
			return 0;
		}
	int rc;
	if (!strcmp(cmd, "create"))
		rc = cmd_create(argc, argv, main_argv);
	else if (!strcmp(cmd, "features"))
		rc = cmd_features();
	else if (!strcmp(cmd, "start") || !strcmp(cmd, "state") || !strcmp(cmd, "kill") ||
		 !strcmp(cmd, "delete") || !strcmp(cmd, "exec") || !strcmp(cmd, "pause") ||
		 !strcmp(cmd, "resume") || !strcmp(cmd, "ps") || !strcmp(cmd, "update")) {
		int rootfd = open_root(false);
		if (rootfd == -EPERM)
			rc = failf("the state root is another user's or writable by others: "
				   "refused (fix: --root DIR, a directory of yours)");
		else if (rootfd < 0 && cmd[0] != 'k' && cmd[0] != 'e' && argc >= 2)
			rc = failf("container %s does not exist", argv[argc - 1]);
		else if (rootfd < 0)
			rc = failf("no containers at the state root (fix: --root DIR)");
		else if (!strcmp(cmd, "kill"))
			rc = cmd_kill(rootfd, argc, argv);
		else if (!strcmp(cmd, "delete"))
			rc = cmd_delete(rootfd, argc, argv);
		else if (!strcmp(cmd, "exec"))
			rc = cmd_exec(rootfd, argc, argv);
		else if (!strcmp(cmd, "ps"))
			rc = cmd_ps(rootfd, argc, argv);
		else if (!strcmp(cmd, "update"))
			rc = cmd_update(rootfd, argc, argv);
		else if ((rc = one_id(argc, argv, cmd)) != 0)
			;
		else if (!strcmp(cmd, "pause") || !strcmp(cmd, "resume"))
			rc = cmd_pause(rootfd, argv[1], cmd[0] == 'p');
		else
			rc =
			    cmd[3] == 'r' ? cmd_start(rootfd, argv[1]) : cmd_state(rootfd, argv[1]);
		if (rootfd >= 0)
			close(rootfd);
	} else if (!*cmd)
		rc = failf("oci needs a command (fix: see agentjail oci --help)");
	else
		rc =
		    failf("oci %s is not supported (fix: create, start, state, kill, delete, exec, "
			  "pause, resume, ps, update or features; docs/oci.md)",
			  cmd);
	if (g.log)
		fclose(g.log);
	return rc;
}
