/* SPDX-License-Identifier: MIT */
/* agentjail oci's shared parts: errors (stderr and --log), the state root
 * and a container's state.json, its status (created, running, paused,
 * stopped) found again from its processes, its cgroups and freezer. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "error.h"
#include "oci_common.h"
#include "util.h"

aj_oci_opts aj_oci_g;

void aj_oci_log_error(const char *msg)
{
	fprintf(stderr, "agentjail: %s\n", msg);
	if (!aj_oci_g.log)
		return;
	char ts[64];
	time_t now = time(NULL);
	struct tm tm;
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	if (aj_oci_g.json) {
		json_t *o = json_pack("{s:s, s:s, s:s}", "level", "error", "msg", msg, "time", ts);
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (s)
			fprintf(aj_oci_g.log, "%s\n", s);
		free(s);
		json_decref(o);
	} else {
		fprintf(aj_oci_g.log, "%s agentjail: %s\n", ts, msg);
	}
	fflush(aj_oci_g.log);
}

int aj_oci_fail(const aj_error *err)
{
	char buf[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
	aj_err_format(err, buf, sizeof(buf));
	aj_oci_log_error(buf);
	return err->exit ? err->exit : AJ_EXIT_INTERNAL;
}

int aj_oci_failf(const char *fmt, ...)
{
	char buf[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	aj_oci_log_error(buf);
	return AJ_EXIT_INTERNAL;
}

/* A container id is one safe path component. */
bool aj_oci_id_valid(const char *id)
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

int aj_oci_open_root(bool make)
{
	char def[PATH_MAX];
	const char *root = aj_oci_g.root;
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
unsigned long long aj_oci_start_time(pid_t pid)
{
	return aj_pid_alive(pid) ? aj_pid_start_time(pid) : 0;
}

/* The command's host pid: the child of the sandbox's init that started
 * first (exec'd commands come later), 0 when there is none. */
pid_t aj_oci_first_child(pid_t init)
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

int aj_oci_load_state(int rootfd, const char *id, aj_oci_state *st)
{
	memset(st, 0, sizeof(*st));
	if (!aj_oci_id_valid(id))
		return aj_oci_failf(
		    "container id '%s' is not valid (fix: letters, digits, '_', '.', '-')",
		    id ? id : "");
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/" OCI_STATE, id);
	int fd = openat(rootfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	json_error_t je;
	if (fd < 0 || !(st->j = json_loadfd(fd, 0, &je))) {
		if (fd >= 0)
			close(fd);
		return aj_oci_failf(
		    "container %s does not exist (fix: the same --root as at create)", id);
	}
	close(fd);
	st->pid = (pid_t)json_integer_value(json_object_get(st->j, "pid"));
	st->init = (pid_t)json_integer_value(json_object_get(st->j, "init"));
	/* pid 0 (a state without one) would be "alive" and signal our group */
	bool alive =
	    st->pid > 0 && aj_oci_start_time(st->pid) == (unsigned long long)json_integer_value(
							     json_object_get(st->j, "pid_start"));
	/* the pid file's process gone (the engine's init to it): stopped,
	 * though the monitor may still be tearing the sandbox down */
	pid_t ctr = (pid_t)json_integer_value(json_object_get(st->j, "ctr"));
	st->ending = alive && ctr > 0 &&
		     aj_oci_start_time(ctr) != (unsigned long long)json_integer_value(
						   json_object_get(st->j, "ctr_start"));
	snprintf(path, sizeof(path), "%s/" OCI_FIFO, id);
	bool held = faccessat(rootfd, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	st->status = !alive || st->ending ? "stopped" : held ? "created" : "running";
	/* runtime-spec's pid: the command's process, recorded by start;
	 * while held, the sandbox's init (the same namespaces), which starts it */
	bool init_ok = aj_oci_init_alive(st);
	/* a monitor killed while the container was frozen: its init's
	 * parent-death SIGKILL waits for a thaw (paused, not stopped) */
	st->orphan = !alive && init_ok;
	pid_t cmd = (pid_t)json_integer_value(json_object_get(st->j, "cmd"));
	if (!init_ok)
		st->cpid = 0;
	else if (cmd > 0 && aj_oci_start_time(cmd) == (unsigned long long)json_integer_value(
							  json_object_get(st->j, "cmd_start")))
		st->cpid = cmd;
	else if (held || (st->cpid = aj_oci_first_child(st->init)) == 0)
		st->cpid = st->init;
	if (init_ok && !st->ending && (!held || st->orphan) && aj_oci_container_frozen(st))
		st->status = "paused";
	return 0;
}

bool aj_oci_init_alive(const aj_oci_state *st)
{
	return st->init > 0 &&
	       aj_oci_start_time(st->init) ==
		   (unsigned long long)json_integer_value(json_object_get(st->j, "init_start"));
}

/* ---- the container's cgroups, found again from its init's ---- */

/* The sandbox's cgroup directories (those agentjail made, named
 * agentjail-*) of the controllers asked for; 0, or -1 with why in err. */
int aj_oci_container_cgroup(const aj_oci_state *st, aj_cgroup *cg, aj_error *err)
{
	memset(cg, 0, sizeof(*cg));
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)st->init);
	_cleanup_free_ char *mi = NULL, *pc = NULL;
	if (aj_read_file("/proc/self/mountinfo", &mi, NULL) < 0 ||
	    aj_read_file(path, &pc, NULL) < 0 || !aj_oci_init_alive(st))
		return aj_err(err, ESRCH, "the container's processes are gone");
	static const char *const ctrls[] = {"memory", "pids", "cpu", "cpuset", "freezer", ""};
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

bool aj_oci_container_frozen(const aj_oci_state *st)
{
	aj_cgroup *cg = calloc(1, sizeof(*cg));
	aj_error err;
	char path[PATH_MAX + 32];
	_cleanup_free_ char *txt = NULL;
	bool frozen = cg && aj_oci_container_cgroup(st, cg, &err) == 0 &&
		      freezer_file(cg, path, sizeof(path)) && aj_read_file(path, &txt, NULL) == 0 &&
		      (aj_startswith(txt, "FROZEN") || aj_startswith(txt, "FREEZING") ||
		       aj_startswith(txt, "1"));
	free(cg);
	return frozen;
}

int aj_oci_remove_state(int rootfd, const char *id)
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
int aj_oci_write_file_at(int dfd, const char *name, const char *text)
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
void aj_oci_thaw(const aj_oci_state *st)
{
	aj_cgroup *cg = calloc(1, sizeof(*cg));
	aj_error err;
	if (cg && aj_oci_container_cgroup(st, cg, &err) == 0)
		aj_cgroup_thaw(cg);
	free(cg);
}

void aj_oci_end_orphan(const aj_oci_state *st)
{
	aj_cgroup *cg = calloc(1, sizeof(*cg));
	aj_error err;
	bool have = cg && aj_oci_container_cgroup(st, cg, &err) == 0;
	/* the pidfd, checked to be the recorded init, is what is signalled:
	 * no pid reused between the check and the kill */
	int pfd = (int)syscall(SYS_pidfd_open, st->init, 0);
	if (pfd >= 0 && aj_oci_init_alive(st))
		(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
	if (have)
		aj_cgroup_thaw(cg);
	/* its pid namespace empties before its init's pidfd turns readable */
	struct pollfd pf = {pfd, POLLIN, 0};
	if (pfd >= 0) {
		(void)poll(&pf, 1, 10000);
		close(pfd);
	}
	if (have)
		aj_cgroup_destroy(cg);
	free(cg);
}

int aj_oci_write_pid_file(const char *path, pid_t pid)
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
