/* SPDX-License-Identifier: MIT */
/* Joining an existing namespace by path, type checked on the fd (nsjoin.h). */
#include "nsjoin.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "util.h"

static const struct {
	int type;
	const char *name, *proc;
} ns_types[] = {
    {CLONE_NEWIPC, "ipc", "ipc"},	   {CLONE_NEWUTS, "uts", "uts"},
    {CLONE_NEWNET, "network", "net"},	   {CLONE_NEWPID, "pid", "pid"},
    {CLONE_NEWNS, "mount", "mnt"},	   {CLONE_NEWUSER, "user", "user"},
    {CLONE_NEWCGROUP, "cgroup", "cgroup"}, {CLONE_NEWTIME, "time", "time"},
};

const char *aj_ns_type_name(int nstype)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(ns_types); i++)
		if (ns_types[i].type == nstype)
			return ns_types[i].name;
	return "?";
}

static const char *proc_name(int nstype)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(ns_types); i++)
		if (ns_types[i].type == nstype)
			return ns_types[i].proc;
	return "?";
}

int aj_ns_enter(int fd, int nstype, const char *path, aj_error *err)
{
	if (setns(fd, nstype) < 0)
		return aj_err(err, errno, "linux.namespaces: cannot join the %s namespace %s",
			      aj_ns_type_name(nstype), path);
	return 0;
}

int aj_ns_open(const char *path, int nstype, aj_error *err)
{
	const char *want = aj_ns_type_name(nstype);
	/* O_NONBLOCK: a FIFO at path would block the open for ever */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return aj_err(err, errno, "linux.namespaces: the %s namespace %s", want, path);
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return aj_err(err, errno, "linux.namespaces: the %s namespace %s", want, path);
	int got = sf.f_type == NSFS_MAGIC ? ioctl(fd, NS_GET_NSTYPE) : -1;
	if (got != nstype) {
		if (got < 0)
			aj_err(err, EINVAL, "linux.namespaces: %s is not a namespace file", path);
		else
			aj_err(err, EINVAL,
			       "linux.namespaces: %s is a %s namespace, not the %s namespace "
			       "asked for",
			       path, aj_ns_type_name(got), want);
		aj_err_hint(err,
			    "give the %s namespace's file (/proc/PID/ns/%s or a bind "
			    "mount of it) as the path of the entry of type %s",
			    want, proc_name(nstype), want);
		return -EINVAL;
	}
	/* never the runtime's own nor pid 1's (the host's): the container
	 * would share the host's shared memory, queues or host name. The
	 * runtime's own must be comparable; pid 1's is compared when the
	 * runtime may see it (a runtime without CAP_SYS_PTRACE may not) */
	struct stat a;
	if (fstat(fd, &a) < 0)
		return aj_err(err, errno, "linux.namespaces: the %s namespace %s", want, path);
	static const char *const owners[] = {"self", "1"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(owners); i++) {
		char own[32];
		snprintf(own, sizeof(own), "/proc/%s/ns/%s", owners[i], proc_name(nstype));
		struct stat b;
		if (stat(own, &b) < 0 && i > 0 && (errno == EACCES || errno == EPERM))
			continue;
		if (stat(own, &b) < 0) {
			int e = errno;
			aj_err(err, e,
			       "linux.namespaces: cannot tell whether %s is the host's %s "
			       "namespace: cannot stat %s",
			       path, want, own);
			aj_err_hint(err,
				    "run the runtime as root with /proc mounted (fully visible)");
			return -e;
		}
		if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
			continue;
		aj_err(err, EINVAL, "linux.namespaces: %s is %s %s namespace (the host's)", path,
		       i ? "pid 1's" : "the runtime's own", want);
		aj_err_hint(err,
			    "a container gets a %s namespace of its own, or its pod's "
			    "(the pause container's)",
			    want);
		return -EINVAL;
	}
	return steal_fd(&fd);
}
