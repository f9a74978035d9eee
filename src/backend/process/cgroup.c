/* SPDX-License-Identifier: MIT */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_mount.h"
#include "util.h"

static int write_knob(const aj_cgroup_dir *d, const char *knob, const char *val, aj_error *err)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", d->path, knob);
	int r = aj_write_file(path, val, 0);
	if (r < 0)
		return aj_err(err, -r, "cannot set %s to %s", path, val);
	return 0;
}

/* Freeze or thaw through d: v1's freezer.state, v2's cgroup.freeze. */
static int write_freeze(const aj_cgroup_dir *d, bool frozen, aj_error *err)
{
	return d->version == 1 ? write_knob(d, "freezer.state", frozen ? "FROZEN" : "THAWED", err)
			       : write_knob(d, "cgroup.freeze", frozen ? "1" : "0", err);
}

/* The cpu quota of d (1000 millis: one CPU per 100 ms period): v1's
 * cpu.cfs_quota_us (the period set beside it), v2's cpu.max. */
static int write_cpu_quota(const aj_cgroup_dir *d, unsigned long long millis, aj_error *err)
{
	char v[64];
	if (d->version == 1) {
		snprintf(v, sizeof(v), "%llu", millis * 100);
		return write_knob(d, "cpu.cfs_quota_us", v, err);
	}
	snprintf(v, sizeof(v), "%llu 100000", millis * 100);
	return write_knob(d, "cpu.max", v, err);
}

/* runc's cpu.shares (2-262144) as cgroup v2's cpu.weight (1-10000), the
 * conversion runc and crun make. */
static unsigned long long shares_to_weight(unsigned long long shares)
{
	return 1 + ((shares - 2) * 9999) / 262142;
}

/* A file of d's parent directory, its text without the newline: 0 or -errno. */
static int read_parent(const aj_cgroup_dir *d, const char *knob, char *buf, size_t len)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s", d->path);
	char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		return -ENOENT;
	snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "%s", knob);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n == len - 1)
		return -EFBIG; /* filled up: perhaps cut short */
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A v1 cpuset directory starts empty (no task may join it): the lists
 * asked for, else its parent's (as runc does). */
static int v1_cpuset(const aj_cgroup_dir *d, const aj_policy *p, aj_error *err)
{
	static const char *const knobs[] = {"cpuset.cpus", "cpuset.mems"};
	const char *want[] = {p->cpuset_cpus, p->cpuset_mems};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(knobs); i++) {
		char v[4096];
		int r = want[i] ? 0 : read_parent(d, knobs[i], v, sizeof(v));
		if (r < 0)
			return aj_err(err, -r, "cannot read %s above %s", knobs[i], d->path);
		if ((r = write_knob(d, knobs[i], want[i] ? want[i] : v, err)) < 0)
			return r;
	}
	return 0;
}

static int set_limits(const aj_cgroup_dir *d, const aj_policy *p, aj_error *err)
{
	char v[64];
	int r = 0;
	if (d->version == 1 && strcmp(d->ctrl, "memory") == 0 && p->memory_low) {
		snprintf(v, sizeof(v), "%llu", p->memory_low);
		r = write_knob(d, "memory.soft_limit_in_bytes", v, err);
	}
	if (r < 0)
		return r;
	if (d->version == 1 && strcmp(d->ctrl, "memory") == 0 && p->memory) {
		snprintf(v, sizeof(v), "%llu", p->memory);
		r = write_knob(d, "memory.limit_in_bytes", v, err);
		char sw[PATH_MAX + 32];
		snprintf(sw, sizeof(sw), "%s/memory.memsw.limit_in_bytes", d->path);
		if (r == 0 && access(sw, F_OK) == 0)
			r = write_knob(d, "memory.memsw.limit_in_bytes", v, err);
		/* v1 charges TCP socket buffers to the cgroup only with a tcp
		 * limit set (and to a counter of their own): the same bound */
		if (r == 0)
			r = write_knob(d, "memory.kmem.tcp.limit_in_bytes", v, err);
		if (r == 0)
			r = write_knob(d, "memory.swappiness", "0", NULL) < 0 ? 0 : 0;
	} else if (d->version == 1 && strcmp(d->ctrl, "pids") == 0 && p->pids) {
		snprintf(v, sizeof(v), "%llu", p->pids);
		r = write_knob(d, "pids.max", v, err);
	} else if (d->version == 1 && strcmp(d->ctrl, "cpu") == 0) {
		if (p->cpu_millis && (r = write_knob(d, "cpu.cfs_period_us", "100000", err)) == 0)
			r = write_cpu_quota(d, p->cpu_millis, err);
		snprintf(v, sizeof(v), "%llu", p->cpu_shares);
		if (r == 0 && p->cpu_shares)
			r = write_knob(d, "cpu.shares", v, err);
	} else if (d->version == 1 && strcmp(d->ctrl, "cpuset") == 0) {
		r = v1_cpuset(d, p, err);
	} else if (d->version == 2) {
		if (p->memory) {
			snprintf(v, sizeof(v), "%llu", p->memory);
			if ((r = write_knob(d, "memory.max", v, err)) == 0)
				r = write_knob(d, "memory.swap.max", "0", NULL) < 0 ? 0 : 0;
		}
		if (r == 0 && p->pids) {
			snprintf(v, sizeof(v), "%llu", p->pids);
			r = write_knob(d, "pids.max", v, err);
		}
		if (r == 0 && p->cpu_millis)
			r = write_cpu_quota(d, p->cpu_millis, err);
		if (r == 0 && p->cpu_shares) {
			snprintf(v, sizeof(v), "%llu", shares_to_weight(p->cpu_shares));
			r = write_knob(d, "cpu.weight", v, err);
		}
		if (r == 0 && p->memory_low) {
			snprintf(v, sizeof(v), "%llu", p->memory_low);
			r = write_knob(d, "memory.low", v, err);
		}
		if (r == 0 && p->cpuset_cpus)
			r = write_knob(d, "cpuset.cpus", p->cpuset_cpus, err);
		if (r == 0 && p->cpuset_mems)
			r = write_knob(d, "cpuset.mems", p->cpuset_mems, err);
	}
	return r;
}

static int add_dir(aj_cgroup *cg, const aj_cgroup_hier *h, const char *ctrl, aj_error *err)
{
	aj_cgroup_dir *d = &cg->dirs[cg->n];
	const char *own = strcmp(h->own, "/") == 0 ? "" : h->own;
	int n = snprintf(d->path, sizeof(d->path), "%s%s/%s", h->mount, own, cg->name);
	if (n < 0 || (size_t)n >= sizeof(d->path))
		return aj_err(err, ENAMETOOLONG, "cgroup path");
	snprintf(d->ctrl, sizeof(d->ctrl), "%s", ctrl);
	d->version = h->version;
	if (mkdir(d->path, 0755) < 0) {
		int e = errno;
		return aj_err(err, e, "cannot create cgroup %s", d->path);
	}
	cg->n++;
	return 0;
}

/* cgroup v2: enable the controllers we need for children of our cgroup. */
static int v2_enable(const aj_cgroup_hier *h, const aj_policy *p, aj_error *err)
{
	char path[PATH_MAX + 32];
	_cleanup_free_ char *avail = NULL;
	snprintf(path, sizeof(path), "%s%s/cgroup.controllers", h->mount,
		 strcmp(h->own, "/") ? h->own : "");
	if (aj_read_file(path, &avail, NULL) < 0 || !strstr(avail, "memory") ||
	    !strstr(avail, "pids"))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s%s/cgroup.subtree_control", h->mount,
		 strcmp(h->own, "/") ? h->own : "");
	/* cpuset only for a sandbox that may use it (an OCI container's) */
	bool cpuset =
	    (p->cpuset_cpus || p->cpuset_mems || p->cgroup_all) && strstr(avail, "cpuset");
	char want[64];
	snprintf(want, sizeof(want), "+memory +pids%s%s",
		 strstr(avail, "cpu ") || strstr(avail, "cpu\n") ? " +cpu" : "",
		 cpuset ? " +cpuset" : "");
	if ((p->cpuset_cpus || p->cpuset_mems) && !cpuset) {
		aj_err(err, ENOENT, "cgroup v2 at %s offers no cpuset controller", h->mount);
		return -ENOTSUP;
	}
	int r = aj_write_file(path, want, 0);
	if (r < 0) {
		aj_err(err, -r, "cannot enable cgroup controllers in %s", path);
		aj_err_hint(err, "start agentjail in a cgroup of its own that has no other "
				 "processes, e.g. systemd-run --scope -p Delegate=yes");
	}
	return r;
}

static void kill_procs(const aj_cgroup_dir *d);

/* Remove cgroups "agentjail-PID-*" left by runs that were SIGKILLed: their
 * process is gone and so is everything that was inside (parent-death signal).
 * only: just the one of that name (NULL: every such one). */
static void sweep_stale(const aj_cgroup_hier *h, const char *only)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s%s", h->mount, strcmp(h->own, "/") ? h->own : "");
	/* a cgroup directory's link count is 2 + its subdirectories: with
	 * none there is nothing to sweep, and one stat is much cheaper than
	 * reading the directory (~0.1-0.3 ms per run, docs/performance.md) */
	struct stat st;
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_nlink == 2)
		return;
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		int pid, end = 0;
		/* agentjail-PID-RANDOM: the '-' after PID too (%n), so that a
		 * directory such as agentjail-1000 (a user's) is not ours */
		if (sscanf(de->d_name, "agentjail-%d-%n", &pid, &end) != 1 || !end || pid <= 0)
			continue;
		if (only && strcmp(de->d_name, only))
			continue;
		if (aj_pid_alive(pid))
			continue; /* its agentjail still runs (a zombie does not) */
		aj_cgroup_dir cd = {.version = h->version};
		snprintf(cd.path, sizeof(cd.path), "%s/%s", dir, de->d_name);
		/* a paused sandbox's processes die only once thawed (a v1
		 * freezer directory has freezer.state, v2 cgroup.freeze) */
		(void)write_freeze(&cd, false, NULL);
		kill_procs(&cd);
		/* the killed take a moment to leave (gVisor's Sentry and its
		 * stubs: tens of ms); a cgroup with tasks is EBUSY until then */
		for (int i = 0; i < 100 && rmdir(cd.path) < 0 && errno == EBUSY; i++) {
			kill_procs(&cd);
			usleep(10000);
		}
	}
	closedir(d);
}

int aj_cgroup_sweep(const char *proc_cgroup)
{
	_cleanup_free_ char *mi = NULL, *pc = NULL;
	/* a recorded text (a state file's) never leads out of its hierarchy */
	if (proc_cgroup && strstr(proc_cgroup, ".."))
		return -EINVAL;
	if (aj_read_file("/proc/self/mountinfo", &mi, NULL) < 0 ||
	    (!proc_cgroup && aj_read_file("/proc/self/cgroup", &pc, NULL) < 0))
		return 0;
	static const char *const ctrls[] = {"memory", "pids", "cpu", "cpuset", "freezer", ""};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(ctrls); i++) {
		aj_cgroup_hier h;
		if (aj_cgroup_find(mi, proc_cgroup ? proc_cgroup : pc, ctrls[i], &h) < 0)
			continue;
		/* a sandbox's own cgroup: the sweep is in the one above, of
		 * that one alone (a recorded one's) */
		char *base = strrchr(h.own, '/');
		char name[256] = "";
		if (base && !strncmp(base + 1, "agentjail-", 10)) {
			snprintf(name, sizeof(name), "%s", base + 1);
			*(base == h.own ? base + 1 : base) = '\0';
		}
		if (proc_cgroup && !*name)
			continue; /* not in one of ours there: nothing to sweep */
		sweep_stale(&h, proc_cgroup ? name : NULL);
	}
	return 0;
}

/* The limits p asks for (AJ_LIMIT_*). */
static unsigned wanted_limits(const aj_policy *p)
{
	return (p->memory || p->memory_low ? AJ_LIMIT_MEMORY : 0) | (p->pids ? AJ_LIMIT_PIDS : 0) |
	       (p->cpu_millis || p->cpu_shares ? AJ_LIMIT_CPU : 0) |
	       (p->cpuset_cpus || p->cpuset_mems ? AJ_LIMIT_CPUSET : 0);
}

static unsigned ctrl_limit(const char *ctrl)
{
	return !strcmp(ctrl, "memory")	 ? AJ_LIMIT_MEMORY
	       : !strcmp(ctrl, "pids")	 ? AJ_LIMIT_PIDS
	       : !strcmp(ctrl, "cpu")	 ? AJ_LIMIT_CPU
	       : !strcmp(ctrl, "cpuset") ? AJ_LIMIT_CPUSET
					 : 0;
}

void aj_cgroup_limit_names(unsigned missing, char *buf, size_t len)
{
	static const char *const names[] = {"memory", "pids", "cpus", "cpuset"};
	size_t n = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < AJ_ARRAY_SIZE(names) && n < len; i++)
		if (missing & (1u << i))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", names[i]);
}

/* The limits of bits as flags, e.g. "--memory 1024M --pids 256". */
static void limit_flags(const aj_policy *p, unsigned bits, char *buf, size_t len)
{
	int n = 0;
	buf[0] = '\0';
	if (bits & AJ_LIMIT_MEMORY)
		n += snprintf(buf + n, len - (size_t)n, "--memory %lluM", p->memory >> 20);
	if ((bits & AJ_LIMIT_PIDS) && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "%s--pids %llu", n ? " " : "", p->pids);
	if ((bits & AJ_LIMIT_CPU) && p->cpu_millis && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "%s--cpus %.3g", n ? " " : "",
			      (double)p->cpu_millis / 1000.0);
	if ((bits & AJ_LIMIT_CPU) && p->cpu_shares && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "%scpu.shares %llu", n ? " " : "",
			      p->cpu_shares);
	if ((bits & AJ_LIMIT_CPUSET) && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "%scpuset %s/%s", n ? " " : "",
			 p->cpuset_cpus ? p->cpuset_cpus : "-",
			 p->cpuset_mems ? p->cpuset_mems : "-");
}

/* A limit asked for could not be applied (e says why): with best-effort it
 * is noted, else the run fails closed. */
static int limit_failed(aj_cgroup *cg, const aj_policy *p, unsigned bits, const aj_error *e)
{
	if (!p->limits_best_effort)
		return -(e->code ? e->code : EINVAL);
	if (!cg->missing)
		aj_err_format(e, cg->why, sizeof(cg->why));
	cg->missing |= bits;
	return 0;
}

/* The error of a run refused because limits cannot be enforced: what, why,
 * and what to do about it. */
static int fail_closed(const aj_policy *p, const aj_error *e, aj_error *err)
{
	char lim[128], why[AJ_ERR_MSG_MAX];
	limit_flags(p, wanted_limits(p), lim, sizeof(lim));
	snprintf(why, sizeof(why), "%s", e->msg);
	const char *mf = aj_cgroup_mount_failure();
	int r = aj_err(err, e->code, "cannot enforce the sandbox's limits (%s): %s%s%s", lim, why,
		       *mf ? "; " : "", mf);
	err->status = 409; /* the service: Conflict, with this message */
	snprintf(err->api_code, sizeof(err->api_code), "%s", "limits_unenforceable");
	if (geteuid() != 0) {
		char how[AJ_ERR_HINT_MAX];
		aj_cgroup_delegation_howto(how, sizeof(how));
		aj_err_hint(err,
			    "run as root; or from a cgroup delegated to you (%s); or pass --limits "
			    "best-effort (API: \"limits\": \"best-effort\") to run without them",
			    how);
	} else
		aj_err_hint(err, "mount the cgroup controllers at /sys/fs/cgroup (agentjail mounts "
				 "them in a mount namespace of its own when it can), or pass "
				 "--limits best-effort (API: \"limits\": \"best-effort\") to run "
				 "without them");
	return r;
}

/* One cgroup of ctrl in hierarchy h with p's limits; none on failure. */
static int add_limited(aj_cgroup *cg, const aj_cgroup_hier *h, const char *ctrl, const aj_policy *p,
		       aj_error *err)
{
	int r = add_dir(cg, h, ctrl, err);
	if (r == 0 && (r = set_limits(&cg->dirs[cg->n - 1], p, err)) < 0)
		(void)rmdir(cg->dirs[--cg->n].path);
	return r;
}

/* cgroup v2: one directory for every controller. */
static int create_v2(aj_cgroup *cg, const char *mi, const char *pc, const aj_policy *p, aj_error *e)
{
	aj_cgroup_hier h;
	int r;
	if (aj_cgroup_find(mi, pc, "", &h) < 0)
		return aj_err(e, ENOENT,
			      "no cgroup hierarchy with the memory and pids controllers "
			      "is mounted");
	if ((r = v2_enable(&h, p, e)) == -ENOENT)
		return aj_err(e, ENOENT, "cgroup v2 at %s offers no memory/pids controller",
			      h.mount);
	if (r < 0)
		return r;
	sweep_stale(&h, NULL);
	return add_limited(cg, &h, "unified", p, e);
}

/* cpus and mems (either NULL) within what the cgroup directory dir lets
 * its children use: 0, or -EINVAL naming the first id that is not. */
static int check_lists(const char *dir, int version, const char *cpus, const char *mems,
		       aj_error *err)
{
	const char *want[] = {cpus, mems}, *field[] = {"cpus", "mems"},
		   *what[] = {"cpu", "memory node"},
		   *file[2][2] = {{"cpuset.effective_cpus", "cpuset.effective_mems"},
				  {"cpuset.cpus.effective", "cpuset.mems.effective"}};
	for (int i = 0; i < 2; i++) {
		if (!want[i])
			continue;
		char path[PATH_MAX + 64];
		snprintf(path, sizeof(path), "%s/%s", dir, file[version == 2][i]);
		_cleanup_free_ char *txt = NULL;
		aj_cpulist asked, allowed;
		int r = aj_read_file(path, &txt, NULL);
		if (r < 0)
			return aj_err(err, -r,
				      "linux.resources.cpu.%s cannot be applied: cannot read %s",
				      field[i], path);
		if (aj_cpulist_parse(want[i], false, &asked) < 0 ||
		    aj_cpulist_parse(txt, true, &allowed) < 0)
			return aj_err(err, EINVAL,
				      "linux.resources.cpu.%s \"%s\" or %s is not a list", field[i],
				      want[i], path);
		int id = aj_cpulist_first_missing(&asked, &allowed);
		if (id >= 0) {
			txt[strcspn(txt, "\n")] = '\0';
			aj_err(err, EINVAL,
			       "linux.resources.cpu.%s \"%s\": %s %d is not one this container may "
			       "use (%s)",
			       field[i], want[i], what[i], id, *txt ? txt : "none");
			aj_err_hint(err, "ask only for the %ss listed in %s", what[i], path);
			return -EINVAL;
		}
	}
	return 0;
}

/* The cpuset asked for against the host's (the cgroup we make it below):
 * before anything is made. v1: the cpuset hierarchy h, else v2's. */
static int cpuset_check(const char *mi, const char *pc, bool v1, const aj_cgroup_hier *h,
			const aj_policy *p, aj_error *err)
{
	if (!p->cpuset_cpus && !p->cpuset_mems)
		return 0;
	aj_cgroup_hier v2;
	if (v1 && !h)
		return aj_err(err, ENOENT,
			      "linux.resources.cpu.cpus/mems cannot be applied: no "
			      "cgroup v1 hierarchy with the cpuset controller is mounted");
	if (!v1 && aj_cgroup_find(mi, pc, "", &v2) < 0)
		return aj_err(err, ENOENT,
			      "linux.resources.cpu.cpus/mems cannot be applied: no "
			      "cgroup is mounted");
	h = v1 ? h : &v2;
	char dir[PATH_MAX * 2];
	snprintf(dir, sizeof(dir), "%s%s", h->mount, strcmp(h->own, "/") ? h->own : "");
	return check_lists(dir, h->version, p->cpuset_cpus, p->cpuset_mems, err);
}

int aj_cgroup_create(aj_cgroup *cg, const char *name, const aj_policy *p, aj_error *err)
{
	return aj_cgroup_create_in(cg, name, p, NULL, err);
}

int aj_cgroup_create_in(aj_cgroup *cg, const char *name, const aj_policy *p,
			const aj_cgroup_view *view, aj_error *err)
{
	cg->n = 0; /* not a memset: 32 KiB of paths, a page fault per 4 KiB touched */
	cg->missing = 0;
	cg->why[0] = '\0';
	snprintf(cg->name, sizeof(cg->name), "%s", name);
	_cleanup_free_ char *mi_read = NULL, *pc_read = NULL;
	const char *mi = view ? view->mountinfo : NULL, *pc = view ? view->proc_cgroup : NULL;
	aj_error e;
	aj_err_clear(&e);
	if ((!mi || !pc) && (aj_read_file("/proc/self/mountinfo", &mi_read, NULL) < 0 ||
			     aj_read_file("/proc/self/cgroup", &pc_read, NULL) < 0)) {
		aj_err(&e, errno, "cannot read /proc/self/mountinfo or /proc/self/cgroup");
		int r = limit_failed(cg, p, wanted_limits(p), &e);
		return r < 0 ? fail_closed(p, &e, err) : 0;
	}
	if (!mi || !pc)
		mi = mi_read, pc = pc_read;
	static const char *const ctrls[] = {"memory", "pids", "cpu", "cpuset"};
	aj_cgroup_hier hs[4];
	bool found[4], v1_any = false;
	/* cpuset: looked for only when it may be used (an OCI container's) */
	bool cpuset = p->cpuset_cpus || p->cpuset_mems || p->cgroup_all;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(ctrls) - !cpuset; i++)
		v1_any |= found[i] = aj_cgroup_find(mi, pc, ctrls[i], &hs[i]) == 0;
	if (!cpuset)
		found[3] = false;
	int r = cpuset_check(mi, pc, v1_any, found[3] ? &hs[3] : NULL, p, err);
	if (r < 0)
		return r; /* bad input, not a limit the host cannot have */
	for (size_t i = 0; v1_any && i < AJ_ARRAY_SIZE(ctrls) && r == 0; i++) {
		unsigned bit = ctrl_limit(ctrls[i]) & wanted_limits(p);
		if (!found[i] && !bit)
			continue;
		if (!found[i]) {
			if (bit)
				aj_err(&e, ENOENT,
				       "no cgroup v1 hierarchy with the %s controller is "
				       "mounted",
				       ctrls[i]);
			r = bit ? limit_failed(cg, p, bit, &e) : 0;
			continue;
		}
		sweep_stale(&hs[i], NULL);
		/* a v1 controller with no limit to set needs no cgroup of its own
		 * (each costs a mkdir, a move and an rmdir per run); memory is
		 * always made: its accounting reports OOM kills and peak use */
		if (!bit && strcmp(ctrls[i], "memory") != 0 && !p->cgroup_all)
			continue;
		if (add_limited(cg, &hs[i], ctrls[i], p, &e) < 0)
			r = bit ? limit_failed(cg, p, bit, &e) : 0;
	}
	if (!v1_any && create_v2(cg, mi, pc, p, &e) < 0)
		r = wanted_limits(p) ? limit_failed(cg, p, wanted_limits(p), &e) : 0;
	if (r < 0) {
		aj_cgroup_destroy(cg);
		return fail_closed(p, &e, err);
	}
	return 0;
}

int aj_cgroup_open_tasks(const aj_cgroup *cg, int *fds, aj_error *err)
{
	int n = 0;
	for (int i = 0; i < cg->n; i++) {
		if (cg->dirs[i].version != 1)
			continue;
		char path[PATH_MAX + 16];
		snprintf(path, sizeof(path), "%s/tasks", cg->dirs[i].path);
		if ((fds[n] = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
			int e = errno;
			while (n > 0)
				close(fds[--n]);
			return aj_err(err, e, "cannot open %s", path);
		}
		n++;
	}
	return n;
}

int aj_cgroup_join_self(int *fds, size_t n, aj_error *err)
{
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		if (r == 0 && write(fds[i], "0", 1) != 1)
			r = aj_err(err, errno, "cannot join the sandbox's cgroups");
		close(fds[i]);
	}
	return r;
}

int aj_cgroup_join(const aj_cgroup *cg, pid_t pid, bool v1_too, aj_error *err)
{
	char v[32];
	snprintf(v, sizeof(v), "%d", (int)pid);
	for (int i = 0; i < cg->n; i++) {
		if (cg->dirs[i].version == 1 && !v1_too)
			continue;
		int r = write_knob(&cg->dirs[i], "cgroup.procs", v, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The memory controller's file of cg: v1 or v2's name. An fd or -errno. */
static int open_memory_file(const aj_cgroup *cg, const char *v1, const char *v2)
{
	for (int i = 0; i < cg->n; i++) {
		const aj_cgroup_dir *d = &cg->dirs[i];
		char path[PATH_MAX + 32];
		if (d->version == 1 && strcmp(d->ctrl, "memory") == 0)
			snprintf(path, sizeof(path), "%s/%s", d->path, v1);
		else if (d->version == 2)
			snprintf(path, sizeof(path), "%s/%s", d->path, v2);
		else
			continue;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	return -ENOENT;
}

/* The file's text from its start (pread: an fd kept open reads anew). A
 * cgroup file's text comes whole in one read that is not filled up. */
static int read_text(int fd, char *buf, size_t len)
{
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t r = pread(fd, buf + n, len - n - 1, (off_t)n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		n += (size_t)r;
		if (r == 0 || n + 1 < len)
			break;
	}
	buf[n] = '\0';
	return 0;
}

/* Read the memory controller's file (v1 name or v2 name) into buf (a few
 * hundred bytes): on the stack, as the run's end is timed; a fresh heap
 * page there is one more page fault (docs/performance.md). */
static int read_memory_file(const aj_cgroup *cg, const char *v1, const char *v2, char *buf,
			    size_t len)
{
	_cleanup_close_ int fd = open_memory_file(cg, v1, v2);
	return fd < 0 ? fd : read_text(fd, buf, len);
}

bool aj_cgroup_oom_killed(const aj_cgroup *cg)
{
	return aj_cgroup_oom_kills(cg) > 0;
}

static unsigned long long oom_kills_in(const char *txt)
{
	const char *k = strstr(txt, "oom_kill ");
	return k ? strtoull(k + 9, NULL, 10) : 0;
}

unsigned long long aj_cgroup_oom_kills(const aj_cgroup *cg)
{
	char txt[1024];
	return read_memory_file(cg, "memory.oom_control", "memory.events", txt, sizeof(txt)) < 0
		   ? 0
		   : oom_kills_in(txt);
}

int aj_cgroup_oom_fd(const aj_cgroup *cg)
{
	return open_memory_file(cg, "memory.oom_control", "memory.events");
}

unsigned long long aj_cgroup_oom_kills_fd(int fd)
{
	char txt[1024];
	return read_text(fd, txt, sizeof(txt)) < 0 ? 0 : oom_kills_in(txt);
}

unsigned long long aj_cgroup_peak_memory(const aj_cgroup *cg)
{
	char txt[64];
	if (read_memory_file(cg, "memory.max_usage_in_bytes", "memory.peak", txt, sizeof(txt)) < 0)
		return 0;
	return strtoull(txt, NULL, 10);
}

/* A number from ctrl's file (returns the cgroup version it came from) (v1: v1 in the controller's
 * directory, v2: v2 in the unified one), after key on v2 when given ("usage_usec 12\n"). */
static int read_number(const aj_cgroup *cg, const char *ctrl, const char *v1, const char *v2,
		       const char *key, unsigned long long *out)
{
	*out = 0;
	for (int i = 0; i < cg->n; i++) {
		const aj_cgroup_dir *d = &cg->dirs[i];
		char path[PATH_MAX + 32], txt[2048];
		if (d->version == 1 && strcmp(d->ctrl, ctrl) == 0)
			snprintf(path, sizeof(path), "%s/%s", d->path, v1);
		else if (d->version == 2 && v2)
			snprintf(path, sizeof(path), "%s/%s", d->path, v2);
		else
			continue;
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || read_text(fd, txt, sizeof(txt)) < 0)
			continue;
		const char *at = txt;
		if (key && d->version == 2 && !(at = strstr(txt, key)))
			continue;
		if (key && d->version == 2)
			at += strlen(key);
		*out = strtoull(at, NULL, 10);
		return d->version;
	}
	return -ENOENT;
}

int aj_cgroup_stats(const aj_cgroup *cg, unsigned long long *mem, unsigned long long *peak,
		    unsigned long long *cpu_usec, unsigned long long *pids)
{
	*mem = *peak = *cpu_usec = *pids = 0;
	int found = read_number(cg, "memory", "memory.usage_in_bytes", "memory.current", NULL, mem);
	*peak = aj_cgroup_peak_memory(cg);
	(void)read_number(cg, "pids", "pids.current", "pids.current", NULL, pids);
	if (read_number(cg, "cpu", "cpuacct.usage", "cpu.stat", "usage_usec ", cpu_usec) == 1)
		*cpu_usec /= 1000; /* v1 cpuacct.usage is in ns */
	return found < 0 ? found : 0;
}

static void kill_procs(const aj_cgroup_dir *d)
{
	char path[PATH_MAX + 32];
	_cleanup_free_ char *txt = NULL;
	snprintf(path, sizeof(path), "%s/cgroup.procs", d->path);
	if (aj_read_file(path, &txt, NULL) < 0)
		return;
	for (char *s = txt; *s;) {
		long pid = strtol(s, &s, 10);
		if (pid > 1)
			kill((pid_t)pid, SIGKILL);
		while (*s == '\n')
			s++;
		if (pid <= 0)
			break;
	}
}

/* v1 memory: the limit and the memory+swap limit, in the order the kernel
 * takes (memsw never below the limit). */
static int v1_memory(const aj_cgroup_dir *d, unsigned long long bytes, aj_error *err)
{
	char v[32], sw[PATH_MAX + 32];
	snprintf(v, sizeof(v), "%llu", bytes);
	snprintf(sw, sizeof(sw), "%s/memory.memsw.limit_in_bytes", d->path);
	int r = write_knob(d, "memory.kmem.tcp.limit_in_bytes", v, err);
	if (r < 0)
		return r;
	if (access(sw, F_OK) < 0)
		return write_knob(d, "memory.limit_in_bytes", v, err);
	if (write_knob(d, "memory.limit_in_bytes", v, NULL) == 0) /* lower */
		return write_knob(d, "memory.memsw.limit_in_bytes", v, err);
	r = write_knob(d, "memory.memsw.limit_in_bytes", v, err); /* higher */
	return r < 0 ? r : write_knob(d, "memory.limit_in_bytes", v, err);
}

int aj_cgroup_update_limits(const aj_cgroup *cg, const aj_policy *p, aj_error *err)
{
	const aj_cgroup_dir *mem = NULL, *pids = NULL;
	for (int i = 0; i < cg->n; i++) {
		const aj_cgroup_dir *d = &cg->dirs[i];
		if (d->version == 2)
			mem = pids = d;
		else if (strcmp(d->ctrl, "memory") == 0)
			mem = d;
		else if (strcmp(d->ctrl, "pids") == 0)
			pids = d;
	}
	if (!p->memory || !p->pids || !mem || !pids)
		return aj_err(err, ENOENT, "no cgroup to change the limits in");
	char v[32];
	int r = mem->version == 1 ? v1_memory(mem, p->memory, err) : 0;
	if (mem->version == 2) {
		snprintf(v, sizeof(v), "%llu", p->memory);
		r = write_knob(mem, "memory.max", v, err);
	}
	snprintf(v, sizeof(v), "%llu", p->pids);
	return r < 0 ? r : write_knob(pids, "pids.max", v, err);
}

/* The directory of cg that holds the cpu controller's knobs, or NULL. */
static const aj_cgroup_dir *cpu_dir(const aj_cgroup *cg)
{
	for (int i = 0; i < cg->n; i++)
		if (cg->dirs[i].version == 1 && strcmp(cg->dirs[i].ctrl, "cpu") == 0)
			return &cg->dirs[i];
	for (int i = 0; i < cg->n; i++) {
		char path[PATH_MAX + 32];
		snprintf(path, sizeof(path), "%s/cpu.max", cg->dirs[i].path);
		if (cg->dirs[i].version == 2 && access(path, F_OK) == 0)
			return &cg->dirs[i];
	}
	return NULL;
}

bool aj_cgroup_has_cpu(const aj_cgroup *cg)
{
	return cpu_dir(cg) != NULL;
}

bool aj_cgroup_cpu_available(void)
{
	_cleanup_free_ char *mi = NULL, *pc = NULL, *avail = NULL;
	aj_cgroup_hier h;
	if (aj_read_file("/proc/self/mountinfo", &mi, NULL) < 0 ||
	    aj_read_file("/proc/self/cgroup", &pc, NULL) < 0)
		return false;
	if (aj_cgroup_find(mi, pc, "cpu", &h) == 0)
		return true;
	if (aj_cgroup_find(mi, pc, "memory", &h) == 0 || aj_cgroup_find(mi, pc, "", &h) < 0)
		return false; /* v1 without cpu; or no cgroup at all */
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s%s/cgroup.controllers", h.mount,
		 strcmp(h.own, "/") ? h.own : "");
	if (aj_read_file(path, &avail, NULL) < 0)
		return false;
	char *save = NULL;
	for (char *w = strtok_r(avail, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (strcmp(w, "cpu") == 0)
			return true;
	return false;
}

int aj_cgroup_update_cpu(const aj_cgroup *cg, unsigned long long cpu_millis, aj_error *err)
{
	const aj_cgroup_dir *d = cpu_dir(cg);
	if (!d || !cpu_millis)
		return aj_err(err, ENOENT, "no cpu cgroup to change the limit in");
	return write_cpu_quota(d, cpu_millis, err);
}

/* ---- oci update: every knob checked and its old value read, then written ---- */

typedef struct knob_op {
	char path[PATH_MAX + 64];
	char val[1024];
	char old[1024];
	const char *field; /* for errors: "memory.limit", "cpu.shares", ... */
} knob_op;

#define UPDATE_OPS 12

/* A knob's text to write: an empty value (v2's unset cpuset.cpus) as
 * "\n", as a write of no bytes never reaches the kernel. */
static const char *knob_text(const char *v)
{
	return *v ? v : "\n";
}

/* The directory of cg with ctrl's knobs: its v1 one, or the v2 one. */
static const aj_cgroup_dir *ctrl_dir(const aj_cgroup *cg, const char *ctrl)
{
	for (int i = 0; i < cg->n; i++)
		if (cg->dirs[i].version == 1 && !strcmp(cg->dirs[i].ctrl, ctrl))
			return &cg->dirs[i];
	for (int i = 0; i < cg->n; i++)
		if (cg->dirs[i].version == 2)
			return &cg->dirs[i];
	return NULL;
}

/* One more write, its file's present value read now (it must be there). */
static int plan_op(knob_op *ops, int *n, const aj_cgroup *cg, const char *ctrl, const char *knob,
		   const char *val, const char *field, aj_error *err)
{
	const aj_cgroup_dir *d = ctrl_dir(cg, ctrl);
	if (!d)
		return aj_err(err, ENOENT,
			      "the container has no %s cgroup: linux.resources.%s cannot change",
			      ctrl, field);
	if (*n >= UPDATE_OPS || strlen(val) >= sizeof(ops->val))
		return aj_err(err, E2BIG, "linux.resources.%s: too long", field);
	knob_op *o = &ops[(*n)++];
	snprintf(o->path, sizeof(o->path), "%s/%s", d->path, knob);
	snprintf(o->val, sizeof(o->val), "%s", val);
	o->field = field;
	_cleanup_close_ int fd = open(o->path, O_RDONLY | O_CLOEXEC);
	int r = fd < 0 ? -errno : read_text(fd, o->old, sizeof(o->old));
	/* a filled buffer may hold only part of the value to put back */
	if (r == 0 && strlen(o->old) + 1 >= sizeof(o->old))
		r = -EFBIG;
	if (r == 0 && access(o->path, W_OK) < 0)
		r = -errno;
	if (r < 0)
		return aj_err(err, -r,
			      "the container's %s cgroup cannot take linux.resources.%s (%s)", ctrl,
			      field, o->path);
	o->old[strcspn(o->old, "\n")] = '\0';
	return 0;
}

/* The writes of p's memory limit, in the order the kernel takes (v1: the
 * memory+swap limit never below the limit). */
static int plan_memory(knob_op *ops, int *n, const aj_cgroup *cg, unsigned long long bytes,
		       aj_error *err)
{
	char v[32];
	snprintf(v, sizeof(v), "%llu", bytes);
	const aj_cgroup_dir *d = ctrl_dir(cg, "memory");
	if (d && d->version == 2)
		return plan_op(ops, n, cg, "memory", "memory.max", v, "memory.limit", err);
	int r =
	    plan_op(ops, n, cg, "memory", "memory.kmem.tcp.limit_in_bytes", v, "memory.limit", err);
	if (r < 0)
		return r;
	char sw[PATH_MAX + 64];
	snprintf(sw, sizeof(sw), "%s/memory.memsw.limit_in_bytes", d->path);
	bool memsw = access(sw, F_OK) == 0;
	if (!memsw)
		return plan_op(ops, n, cg, "memory", "memory.limit_in_bytes", v, "memory.limit",
			       err);
	if ((r = plan_op(ops, n, cg, "memory", "memory.limit_in_bytes", v, "memory.limit", err)) <
		0 ||
	    (r = plan_op(ops, n, cg, "memory", "memory.memsw.limit_in_bytes", v, "memory.limit",
			 err)) < 0)
		return r;
	/* higher than now: memory+swap first */
	if (bytes > strtoull(ops[*n - 2].old, NULL, 10)) {
		knob_op t = ops[*n - 2];
		ops[*n - 2] = ops[*n - 1];
		ops[*n - 1] = t;
	}
	return 0;
}

int aj_cgroup_update_all(const aj_cgroup *cg, const aj_policy *p, aj_error *err)
{
	knob_op *ops = calloc(UPDATE_OPS, sizeof(*ops));
	if (!ops)
		return aj_err(err, ENOMEM, "update");
	const aj_cgroup_dir *cpu = ctrl_dir(cg, "cpu"), *cs = ctrl_dir(cg, "cpuset");
	int n = 0, r = 0;
	char v[64];
	if (p->memory)
		r = plan_memory(ops, &n, cg, p->memory, err);
	if (r == 0 && p->memory_low) {
		const aj_cgroup_dir *d = ctrl_dir(cg, "memory");
		snprintf(v, sizeof(v), "%llu", p->memory_low);
		r = plan_op(ops, &n, cg, "memory",
			    d && d->version == 2 ? "memory.low" : "memory.soft_limit_in_bytes", v,
			    "memory.reservation", err);
	}
	if (r == 0 && p->pids) {
		snprintf(v, sizeof(v), "%llu", p->pids);
		r = plan_op(ops, &n, cg, "pids", "pids.max", v, "pids.limit", err);
	}
	if (r == 0 && p->cpu_millis && cpu && cpu->version == 1 &&
	    (r = plan_op(ops, &n, cg, "cpu", "cpu.cfs_period_us", "100000", "cpu.period", err)) ==
		0) {
		snprintf(v, sizeof(v), "%llu", p->cpu_millis * 100);
		r = plan_op(ops, &n, cg, "cpu", "cpu.cfs_quota_us", v, "cpu.quota", err);
	} else if (r == 0 && p->cpu_millis) {
		snprintf(v, sizeof(v), "%llu 100000", p->cpu_millis * 100);
		r = plan_op(ops, &n, cg, "cpu", "cpu.max", v, "cpu.quota", err);
	}
	if (r == 0 && p->cpu_shares) {
		bool v2 = cpu && cpu->version == 2;
		snprintf(v, sizeof(v), "%llu",
			 v2 ? shares_to_weight(p->cpu_shares) : p->cpu_shares);
		r = plan_op(ops, &n, cg, "cpu", v2 ? "cpu.weight" : "cpu.shares", v, "cpu.shares",
			    err);
	}
	/* a cpuset within what the container's parent cgroup allows */
	if (r == 0 && (p->cpuset_cpus || p->cpuset_mems)) {
		char dir[PATH_MAX];
		int len = snprintf(dir, sizeof(dir), "%s", cs ? cs->path : "");
		char *slash = strrchr(dir, '/');
		if (len < 0 || (size_t)len >= sizeof(dir))
			r = aj_err(err, ENAMETOOLONG,
				   "the container's cpuset cgroup path is too long");
		else if (!cs || !slash)
			r = aj_err(err, ENOENT,
				   "the container has no cpuset cgroup: "
				   "linux.resources.cpu.cpus/mems cannot change");
		else
			*slash = '\0';
		if (r == 0)
			r = check_lists(dir, cs->version, p->cpuset_cpus, p->cpuset_mems, err);
	}
	if (r == 0 && p->cpuset_cpus)
		r = plan_op(ops, &n, cg, "cpuset", "cpuset.cpus", p->cpuset_cpus, "cpu.cpus", err);
	if (r == 0 && p->cpuset_mems)
		r = plan_op(ops, &n, cg, "cpuset", "cpuset.mems", p->cpuset_mems, "cpu.mems", err);
	/* every check passed: the writes; one the kernel refuses puts the
	 * earlier ones back (newest first), so nothing is half changed */
	for (int i = 0; r == 0 && i < n; i++) {
		int w = aj_write_file(ops[i].path, knob_text(ops[i].val), 0);
		if (w == 0)
			continue;
		r = aj_err(err, -w, "linux.resources.%s: the kernel refused %s for %s",
			   ops[i].field, ops[i].val, ops[i].path);
		char left[AJ_ERR_HINT_MAX] = "";
		size_t used = 0;
		while (--i >= 0) {
			int b = aj_write_file(ops[i].path, knob_text(ops[i].old), 0);
			if (b < 0 && used < sizeof(left))
				used += (size_t)snprintf(left + used, sizeof(left) - used,
							 "%s%s (was \"%s\": %s)", used ? ", " : "",
							 ops[i].path, ops[i].old, strerror(-b));
		}
		if (used)
			aj_err_hint(err,
				    "NOT all put back: %s; write those values back by hand or "
				    "delete the container",
				    left);
		else
			aj_err_hint(err,
				    "nothing was changed: the values written before it were put "
				    "back (the kernel refuses e.g. a memory limit below what the "
				    "container uses now, or on cgroup v1 a cpu quota above its "
				    "parent cgroup's)");
		break;
	}
	free(ops);
	return r;
}

int aj_cgroup_add_freezer(aj_cgroup *cg, aj_error *err)
{
	for (int i = 0; i < cg->n; i++)
		if (cg->dirs[i].version == 2 || strcmp(cg->dirs[i].ctrl, "freezer") == 0)
			return 0; /* v2: cgroup.freeze is there */
	_cleanup_free_ char *mi = NULL, *pc = NULL;
	aj_cgroup_hier h;
	if (aj_read_file("/proc/self/mountinfo", &mi, NULL) < 0 ||
	    aj_read_file("/proc/self/cgroup", &pc, NULL) < 0 ||
	    aj_cgroup_find(mi, pc, "freezer", &h) < 0)
		return 0;
	if (cg->n >= AJ_CG_MAX_DIRS)
		return aj_err(err, ENOSPC, "too many cgroup directories");
	sweep_stale(&h, NULL);
	return add_dir(cg, &h, "freezer", err);
}

/* The directory and knob that freeze cg, or NULL. */
static const aj_cgroup_dir *freezer_dir(const aj_cgroup *cg)
{
	for (int i = 0; i < cg->n; i++)
		if (strcmp(cg->dirs[i].ctrl, "freezer") == 0)
			return &cg->dirs[i];
	for (int i = 0; i < cg->n; i++)
		if (cg->dirs[i].version == 2)
			return &cg->dirs[i];
	return NULL;
}

/* Has the kernel finished freezing/thawing d? */
static bool freeze_done(const aj_cgroup_dir *d, bool frozen)
{
	char path[PATH_MAX + 32];
	_cleanup_free_ char *txt = NULL;
	snprintf(path, sizeof(path), "%s/%s", d->path,
		 d->version == 1 ? "freezer.state" : "cgroup.events");
	if (aj_read_file(path, &txt, NULL) < 0)
		return false;
	if (d->version == 1)
		return aj_startswith(txt, frozen ? "FROZEN" : "THAWED");
	const char *f = strstr(txt, "frozen ");
	return f && f[7] == (frozen ? '1' : '0');
}

int aj_cgroup_freeze(const aj_cgroup *cg, bool frozen, aj_error *err)
{
	const aj_cgroup_dir *d = freezer_dir(cg);
	if (!d) {
		int r = aj_err(err, ENOTSUP, "the sandbox has no freezer cgroup");
		aj_err_hint(err, "pause needs the cgroup v1 freezer controller or cgroup v2 (see "
				 "agentjail doctor)");
		return r;
	}
	int r = write_freeze(d, frozen, err);
	if (r < 0)
		return r;
	/* v1 passes through FREEZING; a task in an uninterruptible sleep can
	 * hold it there a while (bounded: 5 s) */
	for (int i = 0; i < 1000; i++) {
		if (freeze_done(d, frozen))
			return 0;
		if (d->version == 1 && frozen && i % 20 == 19)
			(void)write_knob(d, "freezer.state", "FROZEN", NULL); /* retry */
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (frozen)
		(void)aj_cgroup_freeze(cg, false, NULL);
	return aj_err(err, ETIMEDOUT, "the sandbox's processes did not %s within 5 s",
		      frozen ? "freeze" : "thaw");
}

void aj_cgroup_thaw(const aj_cgroup *cg)
{
	const aj_cgroup_dir *fd = freezer_dir(cg);
	if (fd)
		(void)write_freeze(fd, false, NULL);
}

void aj_cgroup_destroy(aj_cgroup *cg)
{
	aj_cgroup_thaw(cg); /* frozen processes would not die */
	for (int i = cg->n - 1; i >= 0; i--) {
		for (int attempt = 0; attempt < 200; attempt++) {
			if (rmdir(cg->dirs[i].path) == 0 || errno == ENOENT)
				break;
			if (errno != EBUSY)
				break;
			kill_procs(&cg->dirs[i]);
			struct timespec ts = {0, 5 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	cg->n = 0;
}
