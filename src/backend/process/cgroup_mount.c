/* SPDX-License-Identifier: MIT */
/* The cgroup hierarchies agentjail needs, mounted in a mount namespace of
 * its own when the one it runs in has none where it looks (a fresh /sys:
 * `ip netns exec`, `unshare -m` and a new sysfs). Nothing of it reaches
 * the host: the namespace is a slave of the host's (host mounts still
 * come in, ours never go out) and ends with the process. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cgroup_mount.h"

#include "cgroup_find.h"
#include "util.h"

#define CG_BASE "/sys/fs/cgroup"

/* The controllers agentjail makes cgroups with. */
static const char *const used[] = {"memory", "pids", "cpu", "freezer"};

static char mount_failure[256];

const char *aj_cgroup_mount_failure(void)
{
	return mount_failure;
}

typedef struct subsys {
	char name[32];
	int hier; /* 0: on cgroup v2 (or no hierarchy) */
} subsys;

/* The enabled controllers of /proc/cgroups ("name hierarchy num enabled"). */
static size_t read_subsys(subsys *s, size_t max)
{
	_cleanup_free_ char *txt = NULL;
	if (aj_read_file("/proc/cgroups", &txt, NULL) < 0)
		return 0;
	size_t n = 0;
	char *save = NULL;
	for (char *l = strtok_r(txt, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save)) {
		int hier, num, enabled;
		if (l[0] == '#' ||
		    sscanf(l, "%31s %d %d %d", s[n].name, &hier, &num, &enabled) != 4 || !enabled)
			continue;
		s[n++].hier = hier;
	}
	return n;
}

static int used_hier(const subsys *s, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s[i].name, name) == 0)
			return s[i].hier;
	return -1; /* not in this kernel */
}

static int fail(aj_error *err, int e, const char *what)
{
	snprintf(mount_failure, sizeof(mount_failure), "%s: %s", what, strerror(e));
	return aj_err(err, e, "%s", what);
}

/* Mount v1 hierarchy hier (every controller on it: the kernel wants the
 * same set as its other mounts) at CG_BASE/NAMES. */
static int mount_v1(const subsys *s, size_t n, int hier, aj_error *err)
{
	char names[256] = "", dir[512];
	for (size_t i = 0; i < n; i++)
		if (s[i].hier == hier)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 names[0] ? "," : "", s[i].name);
	snprintf(dir, sizeof(dir), "%s/%s", CG_BASE, names);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return fail(err, errno, "cannot make a directory for the cgroup v1 hierarchies");
	if (mount("cgroup", dir, "cgroup", MS_NOSUID | MS_NODEV | MS_NOEXEC, names) < 0) {
		char what[320];
		snprintf(what, sizeof(what), "cannot mount the cgroup v1 hierarchy %s", names);
		return fail(err, errno, what);
	}
	return 0;
}

/* Is every hierarchy of the used controllers mounted (mountinfo)? The
 * texts read are left in *v (freed by the caller). */
static bool all_mounted(const subsys *s, size_t n, bool *any_v1, bool *any_v2, aj_cgroup_view *v)
{
	if (aj_read_file("/proc/self/mountinfo", &v->mountinfo, NULL) < 0 ||
	    aj_read_file("/proc/self/cgroup", &v->proc_cgroup, NULL) < 0)
		return true; /* nothing to go on: aj_cgroup_create says why */
	const char *mi = v->mountinfo, *pc = v->proc_cgroup;
	bool ok = true;
	aj_cgroup_hier h;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(used); i++) {
		int hier = used_hier(s, n, used[i]);
		if (hier < 0)
			continue;
		*any_v1 |= hier > 0;
		*any_v2 |= hier == 0;
		/* listed, and reachable: not covered by a later mount */
		struct statfs sf;
		if (aj_cgroup_find(mi, pc, hier > 0 ? used[i] : "", &h) < 0 ||
		    statfs(h.mount, &sf) < 0 ||
		    (sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC))
			ok = false;
	}
	return ok;
}

/* cgroup v2 keeps controllers from the children of a cgroup with
 * processes in it ("no internal processes"): agentjail in a cgroup of its
 * own (a systemd scope with Delegate=yes, a delegated directory) moves
 * itself into a leaf agentjail-PID-self below it and enables memory and
 * pids (cpu too, if there) for the children, where its sandboxes' cgroups
 * go (aj_cgroup_find takes the cgroup above the leaf; the next run sweeps
 * the leaf once this process is gone). Only where the cgroup is ours to
 * write; nothing changes otherwise. */
static void v2_leave_own(void)
{
	_cleanup_free_ char *mi = NULL, *pc = NULL, *avail = NULL, *sub = NULL;
	aj_cgroup_hier h;
	if (aj_read_file("/proc/self/mountinfo", &mi, NULL) < 0 ||
	    aj_read_file("/proc/self/cgroup", &pc, NULL) < 0 ||
	    aj_cgroup_find(mi, pc, "memory", &h) == 0 || aj_cgroup_find(mi, pc, "", &h) < 0 ||
	    strcmp(h.own, "/") == 0)
		return; /* v1 memory, no v2, or the root (exempt from the rule) */
	char dir[2 * PATH_MAX], path[2 * PATH_MAX + 64];
	snprintf(dir, sizeof(dir), "%s%s", h.mount, h.own);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
	if (aj_read_file(path, &avail, NULL) < 0 || !strstr(avail, "memory") ||
	    !strstr(avail, "pids"))
		return;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
	if (aj_read_file(path, &sub, NULL) < 0 || (strstr(sub, "memory") && strstr(sub, "pids")) ||
	    access(path, W_OK) < 0)
		return; /* enabled already, or not ours */
	const char *want = strstr(avail, "cpu") ? "+memory +pids +cpu" : "+memory +pids";
	if (aj_write_file(path, want, 0) == 0)
		return; /* no process in it after all */
	char leaf[2 * PATH_MAX + 64];
	snprintf(leaf, sizeof(leaf), "%s/agentjail-%d-self", dir, (int)getpid());
	if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
		return;
	snprintf(path, sizeof(path), "%s/cgroup.procs", leaf);
	if (aj_write_file(path, "0", 0) < 0) {
		(void)rmdir(leaf);
		return;
	}
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
	if (aj_write_file(path, want, 0) < 0) { /* others in it: back where we were */
		snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
		(void)aj_write_file(path, "0", 0);
		(void)rmdir(leaf);
	}
}

/* A text kept for later in as little of the heap as it needs (read into
 * 4 KiB: what is allocated meanwhile would take new pages, a fault each). */
static char *shrink(char *t)
{
	char *s = realloc(t, strlen(t) + 1);
	return s ? s : t;
}

void aj_cgroup_view_free(aj_cgroup_view *v)
{
	free(v->mountinfo);
	free(v->proc_cgroup);
	v->mountinfo = v->proc_cgroup = NULL;
}

int aj_cgroup_ensure_mounted(aj_error *err)
{
	return aj_cgroup_ensure_mounted_view(NULL, err);
}

int aj_cgroup_ensure_mounted_view(aj_cgroup_view *keep, aj_error *err)
{
	subsys s[32];
	size_t n = read_subsys(s, AJ_ARRAY_SIZE(s));
	bool any_v1 = false, any_v2 = false;
	aj_cgroup_view v = {NULL, NULL};
	mount_failure[0] = '\0';
	if (n == 0 || all_mounted(s, n, &any_v1, &any_v2, &v) || geteuid() != 0) {
		if (any_v2 && !any_v1)
			v2_leave_own(); /* may move us: the texts are not kept */
		else if (keep && v.mountinfo && v.proc_cgroup)
			*keep = (aj_cgroup_view){shrink(v.mountinfo), shrink(v.proc_cgroup)},
			v = (aj_cgroup_view){NULL, NULL};
		aj_cgroup_view_free(&v);
		return 0;
	}
	aj_cgroup_view_free(&v); /* what we mount below makes them stale */
	if (unshare(CLONE_NEWNS) < 0)
		return fail(err, errno, "cannot make a mount namespace for the cgroup hierarchies");
	/* from here on nothing we mount propagates to the host */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return fail(err, errno, "cannot make our mount namespace a slave of the host's");
	struct stat st;
	if (stat(CG_BASE, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail(err, ENOENT, "no directory " CG_BASE " to mount cgroups at");
	if (!any_v1) /* cgroup v2 only */
		return mount("cgroup2", CG_BASE, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			     NULL) < 0
			   ? fail(err, errno, "cannot mount cgroup2 at " CG_BASE)
			   : 0;
	if (mount("tmpfs", CG_BASE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=64k") < 0)
		return fail(err, errno, "cannot mount a tmpfs at " CG_BASE);
	int done[AJ_ARRAY_SIZE(used)];
	size_t nd = 0;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(used); i++) {
		int hier = used_hier(s, n, used[i]), r;
		bool seen = false;
		for (size_t j = 0; j < nd; j++)
			seen |= done[j] == hier;
		if (hier <= 0 || seen)
			continue;
		if ((r = mount_v1(s, n, hier, err)) < 0)
			return r;
		done[nd++] = hier;
	}
	if (any_v2 && (mkdir(CG_BASE "/unified", 0755) < 0 ||
		       mount("cgroup2", CG_BASE "/unified", "cgroup2",
			     MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0))
		return fail(err, errno, "cannot mount cgroup2 at " CG_BASE "/unified");
	return 0;
}

void aj_cgroup_delegation_howto(char *buf, size_t len)
{
	_cleanup_free_ char *mi = NULL, *pc = NULL;
	char user[64], dirs[3 * PATH_MAX] = "";
	snprintf(user, sizeof(user), "%u", (unsigned)geteuid()); /* chown takes a uid */
	static const char *const ctrls[] = {"memory", "pids", "cpu"};
	aj_cgroup_hier h;
	bool v1 = false;
	if (aj_read_file("/proc/self/mountinfo", &mi, NULL) == 0 &&
	    aj_read_file("/proc/self/cgroup", &pc, NULL) == 0)
		for (size_t i = 0; i < AJ_ARRAY_SIZE(ctrls); i++)
			if (aj_cgroup_find(mi, pc, ctrls[i], &h) == 0) {
				v1 = true;
				snprintf(dirs + strlen(dirs), sizeof(dirs) - strlen(dirs), " %s",
					 h.mount);
			}
	if (v1)
		snprintf(
		    buf, len,
		    "cgroup v1: as root, for d in%s; do mkdir -p $d/delegated-uid-%s && chown -R "
		    "%s $d/delegated-uid-%s; done; then as uid %s, in the shell that runs "
		    "agentjail: "
		    "for d in%s; do echo $$ > $d/delegated-uid-%s/cgroup.procs; done",
		    dirs, user, user, user, user, dirs, user);
	else
		snprintf(
		    buf, len,
		    "cgroup v2: systemd-run --user --scope -p Delegate=yes agentjail ... "
		    "(a systemd user session); or as root: mkdir %s/delegated-uid-%s && chown -R "
		    "%s %s/delegated-uid-%s, then move your shell into a child of it",
		    CG_BASE, user, user, CG_BASE, user);
}
