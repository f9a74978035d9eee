/* SPDX-License-Identifier: MIT */
#include "userns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

static int slot_fd = -1, name_fd = -1;

/* The lock file whose byte S is held (F_OFD_SETLK, a write lock) by the
 * process that maps uid range S. A fixed path, not $AGENTJAIL_STATE_DIR:
 * every agentjail on the host must meet the same file, whatever its
 * network namespace (an abstract socket name is per network namespace),
 * mount namespace (ip netns exec) or state directory. /run when /var/lib
 * cannot be written (a read-only /var). */
static int open_range_lock(aj_error *err)
{
	static const char *const dirs[] = {AJ_UID_LOCK_DIR, AJ_UID_LOCK_DIR_FALLBACK};
	int e = 0;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(dirs); i++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/%s", dirs[i], AJ_UID_LOCK_FILE);
		int r = aj_mkdir_p(dirs[i], 0755);
		int fd =
		    r < 0 ? r
			  : open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
		if (fd < 0) {
			e = e ? e : fd < 0 && r == 0 ? errno : -r;
			continue;
		}
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
		    (st.st_mode & 022)) {
			close(fd);
			return aj_err(err, EPERM,
				      "%s is not a regular file of root's that only root may "
				      "write: it cannot reserve host uid ranges",
				      path);
		}
		return fd;
	}
	aj_err(err, e, "cannot open %s/%s (host uid range reservations)", AJ_UID_LOCK_DIR,
	       AJ_UID_LOCK_FILE);
	aj_err_hint(err, "agentjail needs a writable %s or %s as root", AJ_UID_LOCK_DIR,
		    AJ_UID_LOCK_DIR_FALLBACK);
	return -e;
}

/* Lock byte slot of fd: 0, -EAGAIN when another open file holds it. */
static int lock_slot(int fd, unsigned slot)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = slot, .l_len = 1};
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	return errno == EACCES || errno == EAGAIN ? -EAGAIN : -errno;
}

static void unlock_slot(int fd, unsigned slot)
{
	struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = slot, .l_len = 1};
	(void)fcntl(fd, F_OFD_SETLK, &fl);
}

int aj_userns_reserve(unsigned *slot, aj_error *err)
{
	int fd = open_range_lock(err);
	if (fd < 0)
		return fd;
	unsigned start;
	if (getrandom(&start, sizeof(start), 0) != sizeof(start))
		start = (unsigned)getpid() * 2654435761u;
	/* from a random slot on, every slot once: "none free" means none */
	for (unsigned i = 0; i < AJ_UID_SLOTS; i++) {
		unsigned s = (start + i) % AJ_UID_SLOTS;
		int r = lock_slot(fd, s);
		if (r == -EAGAIN)
			continue;
		if (r < 0) {
			close(fd);
			return aj_err(err, -r, "cannot lock host uid range %u", s);
		}
		/* an older agentjail in this network namespace knows only the
		 * abstract name: hold it too, and skip a slot it holds */
		int n = aj_reserve_name("uid-slot", s);
		if (n == -EADDRINUSE) {
			unlock_slot(fd, s);
			continue;
		}
		if (name_fd >= 0)
			close(name_fd);
		name_fd = n;
		*slot = s;
		return fd;
	}
	close(fd);
	return aj_err(err, EBUSY, "no free host uid range for a new sandbox (all %u in use)",
		      AJ_UID_SLOTS);
}

int aj_userns_plan(aj_idmap *m, uid_t inside_uid, gid_t inside_gid, aj_error *err)
{
	memset(m, 0, sizeof(*m));
	m->inside_uid = inside_uid;
	m->inside_gid = inside_gid;
	m->caller_uid = geteuid();
	m->caller_gid = getegid();
	m->privileged = m->caller_uid == 0;
	if (!m->privileged)
		return 0;
	/* The range is held by a lock on its byte of the host-wide lock file
	 * for this process's lifetime: the kernel drops the lock when the
	 * process dies (also by SIGKILL), so nothing is left behind and two
	 * live sandboxes on the host never share ids. */
	unsigned slot;
	int fd = aj_userns_reserve(&slot, err);
	if (fd < 0)
		return fd;
	if (slot_fd >= 0)
		close(slot_fd);
	slot_fd = fd;
	m->host_base = AJ_UID_BASE + slot * AJ_UID_RANGE;
	return 0;
}

uid_t aj_userns_host_uid(const aj_idmap *m)
{
	return m->privileged ? m->host_base + m->inside_uid : m->caller_uid;
}

gid_t aj_userns_host_gid(const aj_idmap *m)
{
	return m->privileged ? m->host_base + m->inside_gid : m->caller_gid;
}

int aj_userns_format_map(const aj_idmap *m, bool gid, char *buf, size_t len)
{
	int n;
	if (m->privileged)
		n = snprintf(buf, len, "0 %u %u\n", (unsigned)m->host_base, AJ_UID_RANGE);
	else if (gid)
		n = snprintf(buf, len, "%u %u 1\n", (unsigned)m->inside_gid,
			     (unsigned)m->caller_gid);
	else
		n = snprintf(buf, len, "%u %u 1\n", (unsigned)m->inside_uid,
			     (unsigned)m->caller_uid);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

static int write_proc(pid_t pid, const char *file, const char *content, aj_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	int r = aj_write_file(path, content, 0);
	if (r < 0) {
		aj_err(err, -r, "cannot write %s of the sandbox", file);
		aj_err_hint(err, "check that user namespaces are enabled: agentjail doctor");
	}
	return r;
}

int aj_userns_write_maps(const aj_idmap *m, pid_t pid, aj_error *err)
{
	char map[128];
	int r;
	if (aj_userns_format_map(m, false, map, sizeof(map)) < 0)
		return aj_err(err, ENOSPC, "uid map");
	if ((r = write_proc(pid, "uid_map", map, err)) < 0)
		return r;
	if (!m->privileged && (r = write_proc(pid, "setgroups", "deny", err)) < 0)
		return r;
	if (aj_userns_format_map(m, true, map, sizeof(map)) < 0)
		return aj_err(err, ENOSPC, "gid map");
	return write_proc(pid, "gid_map", map, err);
}

int aj_userns_make_fd(const char *uid_map, const char *gid_map, aj_error *err)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return aj_err(err, errno, "pipe");
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid < 0) {
		int e = errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return aj_err(err, e, "cannot create a user namespace for an idmapped mount");
	}
	if (pid == 0) {
		char c;
		close(pipefd[1]);
		while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(pipefd[0]);
	int fd = -1, r = write_proc(pid, "uid_map", uid_map, err);
	if (r == 0)
		r = write_proc(pid, "gid_map", gid_map, err);
	if (r == 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			r = aj_err(err, errno, "cannot open %s", path);
	}
	close(pipefd[1]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return r < 0 ? r : fd;
}
