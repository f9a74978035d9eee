/* SPDX-License-Identifier: MIT */
/* What a level-3 boot needs of the host: qemu, virtiofsd, the guest kernel
 * and modules setup unpacked (scripts/setup.sh), the initramfs agentjail
 * builds from them (cpio), the accelerator (a canary boot decides whether
 * KVM runs a stock guest here: on a PVM host it does not), and the
 * confinement of qemu and virtiofsd (their own namespaces and an
 * unprivileged uid). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <linux/close_range.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_proto.h"
#include "cache.h"
#include "caps.h"
#include "image.h"
#include "mountapi.h"
#include "sysfilter.h"
#include "microvm.h"
#include "userns.h"
#include "util.h"

/* the modules guest/init.c loads, in the kernel's tree */
static const char *const guest_modules[][2] = {
    {"virtio_ring", "drivers/virtio/virtio_ring.ko"},
    {"virtio", "drivers/virtio/virtio.ko"},
    {"virtio_mmio", "drivers/virtio/virtio_mmio.ko"},
    {"virtio_console", "drivers/char/virtio_console.ko"},
    {"fuse", "fs/fuse/fuse.ko"},
    {"virtiofs", "fs/fuse/virtiofs.ko"},
    {"overlay", "fs/overlayfs/overlay.ko"},
    {"virtio-rng", "drivers/char/hw_random/virtio-rng.ko"},
    /* an image's root: a squashfs on virtio-blk (rootimg.c) */
    {"virtio_blk", "drivers/block/virtio_blk.ko"},
    {"squashfs", "fs/squashfs/squashfs.ko"},
    /* a snapshot's machine: the workspace hot-plugged on PCIe (aj.pci=1) */
    {"virtio_pci_legacy_dev", "drivers/virtio/virtio_pci_legacy_dev.ko"},
    {"virtio_pci_modern_dev", "drivers/virtio/virtio_pci_modern_dev.ko"},
    {"virtio_pci", "drivers/virtio/virtio_pci.ko"},
    /* the NIC (--net open, --allow): loaded only with aj.net= */
    {"failover", "net/core/failover.ko"},
    {"net_failover", "drivers/net/net_failover.ko"},
    {"virtio_net", "drivers/net/virtio_net.ko"},
};

static const char *assets_dir(void)
{
	const char *d = getenv("AGENTJAIL_MICROVM_DIR");
	return d && *d ? d : AJ_MV_ASSETS;
}

static int find_in_path(const char *name, char *out, size_t len)
{
	static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(dirs); i++) {
		snprintf(out, len, "%s/%s", dirs[i], name);
		if (access(out, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

static unsigned long host_tsc_khz(void)
{
	_cleanup_free_ char *info = NULL;
	if (aj_read_file("/proc/cpuinfo", &info, NULL) < 0)
		return 0;
	const char *m = strstr(info, "cpu MHz");
	m = m ? strchr(m, ':') : NULL;
	return m ? (unsigned long)(strtod(m + 1, NULL) * 1000.0) : 0;
}

static int missing(aj_error *err, const char *what, const char *fix)
{
	aj_err(err, ENOENT, "isolation level microvm: %s is missing", what);
	aj_err_hint(err, "%s", fix);
	return -ENOENT;
}

/* The level's cache: root's in the state directory; a non-root caller's
 * its own, $AGENTJAIL_STATE_DIR/microvm, else $XDG_STATE_HOME/agentjail/
 * microvm or ~/.local/state/agentjail/microvm (made 0700, the caller's,
 * closed to others, or not used). */
static const char *mv_cache(void)
{
	static char dir[PATH_MAX];
	if (dir[0])
		return dir;
	if (geteuid() == 0) {
		snprintf(dir, sizeof(dir), "%s/microvm", aj_state_dir());
		return dir;
	}
	const char *s = getenv("AGENTJAIL_STATE_DIR"), *x = getenv("XDG_STATE_HOME"),
		   *home = getenv("HOME");
	if (s && s[0] == '/')
		snprintf(dir, sizeof(dir), "%s/microvm", s);
	else if (x && x[0] == '/')
		snprintf(dir, sizeof(dir), "%s/agentjail/microvm", x);
	else if (home && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.local/state/agentjail/microvm", home);
	return dir;
}

/* The cache, there and the caller's own (0 or -errno). */
static int mv_cache_ready(void)
{
	const char *d = mv_cache();
	if (!d[0])
		return -ENOENT;
	if (geteuid() == 0) {
		_cleanup_close_ int fd = aj_cache_dir("microvm", true);
		return fd < 0 ? -EACCES : 0;
	}
	int r = aj_mkdir_p(d, 0700);
	struct stat st;
	if (r < 0)
		return r;
	if (lstat(d, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022) ? 0 : -EACCES;
}

/* ---- the initramfs ---- */

static int copy_file(const char *src, const char *dst, mode_t mode)
{
	_cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	_cleanup_close_ int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (out < 0)
		return -errno;
	return aj_copy_fd(in, out);
}

/* `cpio -o -H newc` of dir's files (names on its stdin) into out. */
int aj_mv_cpio(const char *dir, const char *list, int out)
{
	char cpio[PATH_MAX];
	if (find_in_path("cpio", cpio, sizeof(cpio)) < 0)
		return -ENOENT;
	int in[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid == 0) {
		int dn = open("/dev/null", O_WRONLY);
		if (dup2(in[0], 0) < 0 || dup2(out, 1) < 0 || dup2(dn, 2) < 0 || chdir(dir) < 0)
			_exit(127);
		execl(cpio, "cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	int r = pid < 0 ? -errno : aj_write_all(in[1], list, strlen(list));
	close(in[1]);
	int st = 0;
	if (pid > 0 && waitpid(pid, &st, 0) == pid && r == 0)
		r = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
	return r;
}

static int build_initramfs(const char *path, const char *init, const char *agent)
{
	char tmp[] = "/tmp/agentjail-initramfs-XXXXXX", p[PATH_MAX], out[PATH_MAX + 8];
	if (!mkdtemp(tmp))
		return -errno;
	static const char list_head[] =
	    ".\ninit\nagentjail-agent\ndev\nproc\nsys\nlib\nlib/modules\n";
	char list[2048];
	snprintf(list, sizeof(list), "%s", list_head);
	int r = 0;
	snprintf(p, sizeof(p), "%s/lib/modules", tmp);
	static const char *const dirs[] = {"dev", "proc", "sys"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(dirs) && r == 0; i++) {
		char d[PATH_MAX];
		snprintf(d, sizeof(d), "%s/%s", tmp, dirs[i]);
		r = mkdir(d, 0755) < 0 ? -errno : 0;
	}
	if (r == 0)
		r = aj_mkdir_p(p, 0755);
	snprintf(p, sizeof(p), "%s/init", tmp);
	if (r == 0)
		r = copy_file(init, p, 0755);
	snprintf(p, sizeof(p), "%s/agentjail-agent", tmp);
	if (r == 0)
		r = copy_file(agent, p, 0755);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(guest_modules) && r == 0; i++) {
		char src[PATH_MAX];
		snprintf(src, sizeof(src), "%s/modules/%s", assets_dir(), guest_modules[i][1]);
		snprintf(p, sizeof(p), "%s/lib/modules/%s.ko", tmp, guest_modules[i][0]);
		r = copy_file(src, p, 0644);
		size_t n = strlen(list);
		snprintf(list + n, sizeof(list) - n, "lib/modules/%s.ko\n", guest_modules[i][0]);
	}
	snprintf(out, sizeof(out), "%s.%d", path, getpid());
	if (r == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		r = fd < 0 ? -errno : aj_mv_cpio(tmp, list, fd);
		if (fd >= 0)
			close(fd);
		if (r == 0 && rename(out, path) < 0)
			r = -errno;
		if (r < 0)
			unlink(out);
	}
	(void)aj_rm_tree_at(AT_FDCWD, tmp, 8);
	return r;
}

/* Does the agent program at path speak this host's protocol revision (its
 * mark in the binary)? An older agent would ignore what it does not know,
 * e.g. a --seccomp-profile, and run the command without it. */
static bool agent_speaks(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > (64 << 20))
		return false;
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return false;
	/* with its NUL: revision 2 is not a prefix of 20 */
	bool ok = memmem(m, (size_t)st.st_size, AJ_AGENT_MARK, sizeof(AJ_AGENT_MARK)) != NULL;
	munmap(m, (size_t)st.st_size);
	return ok;
}

/* The initramfs for these programs and modules, cached in the state
 * directory under a name of their identities (size, mtime, inode). */
static int find_initramfs(aj_mv_host *h, aj_error *err)
{
	char init[PATH_MAX], agent[PATH_MAX], mod[PATH_MAX];
	if (aj_program_path("agentjail-guest-init", init, sizeof(init)) < 0 ||
	    aj_program_path("agentjail-agent", agent, sizeof(agent)) < 0 ||
	    access(init, R_OK) < 0 || access(agent, R_OK) < 0)
		return missing(err, "agentjail-guest-init or agentjail-agent",
			       "agentjail's programs are installed next to each other (meson "
			       "builds them with libjansson's static library, libjansson-dev)");
	snprintf(mod, sizeof(mod), "%s/modules/%s", assets_dir(), guest_modules[0][1]);
	struct stat a, b, c;
	if (stat(init, &a) < 0 || stat(agent, &b) < 0 || stat(mod, &c) < 0)
		return missing(err, "the guest kernel's modules",
			       "run scripts/setup.sh (it unpacks Debian's linux-image into "
			       "/var/cache/agentjail/microvm)");
	char name[160];
	snprintf(name, sizeof(name), "initramfs-r" AJ_AGENT_PROTO_REV "-%llx-%llx-%llx-%llx.cpio",
		 (unsigned long long)(a.st_size ^ a.st_mtim.tv_sec ^ a.st_mtim.tv_nsec ^ a.st_ino),
		 (unsigned long long)(b.st_size ^ b.st_mtim.tv_sec ^ b.st_mtim.tv_nsec ^ b.st_ino),
		 (unsigned long long)(c.st_mtim.tv_sec ^ c.st_ino), (unsigned long long)c.st_size);
	/* a non-root caller: root's shared one when it may read it (root's,
	 * written by no other), read-only; else its own */
	struct stat sh;
	snprintf(h->initramfs, sizeof(h->initramfs), "%s/microvm/%s", aj_state_dir(), name);
	if (geteuid() != 0 && access(h->initramfs, R_OK) == 0 && stat(h->initramfs, &sh) == 0 &&
	    sh.st_uid == 0 && !(sh.st_mode & 022))
		return 0;
	int dr = mv_cache_ready();
	if (dr < 0) {
		aj_err(err, -dr, "microvm: the cache directory %s is not usable",
		       mv_cache()[0] ? mv_cache() : "(no HOME)");
		aj_err_hint(err, geteuid() ? "set HOME (or XDG_STATE_HOME) to a directory of yours"
					   : "check the state directory's owner and mode");
		return dr;
	}
	snprintf(h->initramfs, sizeof(h->initramfs), "%s/%s", mv_cache(), name);
	if (access(h->initramfs, R_OK) == 0)
		return 0; /* built from an agent checked below (the name has its revision) */
	if (!agent_speaks(agent))
		return missing(
		    err, "an agentjail-agent of this agentjail's protocol (" AJ_AGENT_MARK ")",
		    "install agentjail's programs together (ninja -C build, or the "
		    "package): the agent found is another version's");
	int r = build_initramfs(h->initramfs, init, agent);
	if (r == -ENOENT)
		return missing(err, "cpio (or a guest module)",
			       "apt-get install cpio; run scripts/setup.sh");
	if (r < 0)
		return aj_err(err, -r, "microvm: cannot build the initramfs %s", h->initramfs);
	return 0;
}

/* ---- confinement ---- */

static _Noreturn void child_fail(int fd, int e)
{
	(void)!write(fd, &e, sizeof(e));
	_exit(127);
}

int aj_mv_share_open(const char *path)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC | O_DIRECTORY,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* A read-write bind's source as a detached tree: the directory the parent
 * decided on (s->rw_dev/rw_ino), reopened with no symlink followed, so a
 * path swapped since cannot redirect the bind (-EXDEV: it changed). */
static int rw_tree(const aj_mv_spawn *s, const char *path, unsigned flags)
{
	if (!s->rw_ino)
		return aj_open_tree(AT_FDCWD, path, flags);
	int pfd = aj_mv_share_open(path);
	if (pfd < 0)
		return pfd;
	struct stat st;
	int t = -EXDEV;
	if (fstat(pfd, &st) == 0 && st.st_dev == s->rw_dev && st.st_ino == s->rw_ino)
		t = aj_open_tree(pfd, "", flags | AT_EMPTY_PATH);
	int e = errno;
	close(pfd);
	errno = t == -EXDEV ? EXDEV : e;
	return t < 0 ? -1 : t;
}

static _Noreturn void exec_child(const aj_mv_spawn *s, const aj_bpf *setid, int report);

static void spawn_child(const aj_mv_spawn *s, const aj_bpf *setid, int go, int report)
{
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* a source given as an fd, cloned while it is of our mount namespace
	 * (open_tree clones no mount of another) */
	int tree[AJ_ARRAY_SIZE(s->src_fd)] = {0};
	for (size_t i = 0; i < s->n; i++)
		if (s->src_fd[i] > 0 &&
		    (tree[i] = aj_open_tree(s->src_fd[i], "",
					    AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
						AT_RECURSIVE)) < 0)
			child_fail(report, errno);
	/* the binds, as host root in a mount namespace of its own ... */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		child_fail(report, errno);
	for (size_t i = 0; i < s->n; i++) {
		if (tree[i] > 0) { /* as level 1's --ro: no idmap, recursive, private */
			if (aj_mount_setattr(tree[i], "", AT_EMPTY_PATH | AT_RECURSIVE,
					     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
						 MOUNT_ATTR_NODEV,
					     0, -1) < 0 ||
			    aj_move_mount(tree[i], "", AT_FDCWD, s->onto[i],
					  MOVE_MOUNT_F_EMPTY_PATH) < 0 ||
			    mount(NULL, s->onto[i], NULL, MS_REC | MS_PRIVATE, NULL) < 0)
				child_fail(report, errno);
			close(tree[i]);
			continue;
		}
		if (s->ro[i] && s->idmap >= 0) {
			int t = aj_open_tree(AT_FDCWD, s->bind[i],
					     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
			if (t < 0 ||
			    aj_mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE,
					     MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY |
						 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
					     0, s->idmap) < 0 ||
			    aj_move_mount(t, "", AT_FDCWD, s->onto[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
				child_fail(report, errno);
			close(t);
			continue;
		}
		if (!s->ro[i] && s->rw_idmap > 0) { /* not recursive, as level 1's */
			int t = rw_tree(s, s->bind[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
			if (t < 0 ||
			    aj_mount_setattr(t, "", AT_EMPTY_PATH,
					     MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID |
						 MOUNT_ATTR_NODEV,
					     0, s->rw_idmap) < 0 ||
			    aj_move_mount(t, "", AT_FDCWD, s->onto[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
				child_fail(report, errno);
			close(t);
			continue;
		}
		if (!s->ro[i] && s->rw_ino) { /* as MS_BIND | MS_REC, no symlink followed */
			int t = rw_tree(s, s->bind[i],
					OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
			if (t < 0 ||
			    aj_move_mount(t, "", AT_FDCWD, s->onto[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
				child_fail(report, errno);
			close(t);
			continue;
		}
		if (mount(s->bind[i], s->onto[i], NULL, MS_BIND | MS_REC, NULL) < 0)
			child_fail(report, errno);
		if (s->ro[i] &&
		    mount(NULL, s->onto[i], NULL,
			  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
			child_fail(report, errno);
	}
	int e = s->prepare ? s->prepare(s->ctx) : 0;
	if (e)
		child_fail(report, e);
	/* the host's /run hidden; virtiofsd keeps its lock files there */
	char opts[64];
	snprintf(opts, sizeof(opts), "mode=0755,size=1m,uid=%u,gid=%u", (unsigned)s->uid,
		 (unsigned)s->gid);
	if (mount("run", "/run", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
		child_fail(report, errno);
	/* ... then a user namespace where uid 0 is s->uid (the parent writes
	 * the maps), and namespaces of its own for the rest */
	if (s->netns > 0 && setns(s->netns, CLONE_NEWNET) < 0)
		child_fail(report, errno);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | (s->netns > 0 ? 0 : CLONE_NEWNET) |
		    CLONE_NEWIPC) < 0)
		child_fail(report, errno);
	char c;
	(void)!write(report, "", 0);
	if (write(go, "u", 1) != 1 || read(go, &c, 1) != 1)
		_exit(127);
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		child_fail(report, errno);
	/* the credential changes cleared the death signal: again, and a parent
	 * already gone ends it here */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		child_fail(report, ESRCH);
	exec_child(s, setid, report);
}

/* The confined process's fds, umask and filter, then its program. */
static _Noreturn void exec_child(const aj_mv_spawn *s, const aj_bpf *setid, int report)
{
	/* the report pipe moved above fds 3 and 4, which qemu's fds take */
	if (report < 5 && (report = fcntl(report, F_DUPFD_CLOEXEC, 5)) < 0)
		_exit(127);
	int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
	int log = s->log >= 0 ? s->log : dn;
	if (dup2(dn, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
		child_fail(report, errno);
	/* fd 4 kept out of the way of fd 3's dup2 first */
	int fd4 = s->pass_fd4 == 3 ? fcntl(3, F_DUPFD_CLOEXEC, 5) : s->pass_fd4;
	if (s->pass_fd > 0 && (dup2(s->pass_fd, 3) < 0 || fcntl(3, F_SETFD, 0) < 0))
		child_fail(report, errno);
	if (fd4 > 0 && (dup2(fd4, 4) < 0 || fcntl(4, F_SETFD, 0) < 0))
		child_fail(report, errno);
	/* nothing else of the caller's crosses the exec (an fd passed to
	 * agentjail, e.g. a directory, would reach outside the jail) */
	if (s->pass_fd <= 0)
		close(3);
	if (fd4 <= 0)
		close(4);
	if (syscall(SYS_close_range, 5, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(report, errno);
	umask(s->umask);
	/* a session keyring of its own: the caller's keys are not possessed */
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS)
		child_fail(report, errno);
	/* a non-root caller's jailed process keeps no capability of its user
	 * namespace (its binds' flags are not locked there: an escaped qemu
	 * could clear them) */
	aj_error ce;
	if (s->jail && aj_caps_drop_all(0, 0, 0, &ce) < 0)
		child_fail(report, ce.code ? ce.code : EPERM);
	/* uid 0 of its own user namespace may load it (no no_new_privs) */
	if (setid &&
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
		  &(struct sock_fprog){.len = (unsigned short)setid->len, .filter = setid->insns},
		  0, 0) < 0)
		child_fail(report, errno);
	execv(s->argv[0], s->argv);
	child_fail(report, errno);
}

/* ---- a non-root caller's confinement ---- */

#define RO_ATTR (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

/* A bind in the caller's own user namespace, as a detached tree, with the
 * attributes attr (MOUNT_ATTR_*) added to the source's own (locked there). */
static int user_bind(const char *src, const char *onto, unsigned long long attr)
{
	int t = aj_open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (t < 0)
		return -1;
	int r = attr ? aj_mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, attr, 0, -1) : 0;
	if (r == 0)
		r = aj_move_mount(t, "", AT_FDCWD, onto, MOVE_MOUNT_F_EMPTY_PATH);
	int e = errno;
	close(t);
	errno = e;
	return r;
}

/* The VMM's root (s->jail): a tmpfs with the host's programs and libraries
 * read-only, a few devices, /proc (its own pid namespace's) and the VM's
 * directory at its own path; nothing else of the caller's is there. */
#define JAIL "/run/aj-root"
static int jail_make(const aj_mv_spawn *s)
{
	char p[PATH_MAX];
	if (mkdir(JAIL, 0755) < 0 ||
	    mount("aj-root", JAIL, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
		return errno;
	static const char *const sys[] = {"/usr",   "/bin",   "/sbin",	"/lib",
					  "/lib32", "/lib64", "/libx32"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(sys); i++) {
		struct stat st;
		if (lstat(sys[i], &st) < 0)
			continue;
		snprintf(p, sizeof(p), JAIL "%s", sys[i]);
		if (S_ISLNK(st.st_mode)) {
			char t[PATH_MAX];
			ssize_t n = readlink(sys[i], t, sizeof(t) - 1);
			if (n < 0)
				return errno;
			t[n] = '\0';
			if (symlink(t, p) < 0)
				return errno;
		} else if (S_ISDIR(st.st_mode) &&
			   (mkdir(p, 0755) < 0 || user_bind(sys[i], p, RO_ATTR) < 0))
			return errno;
	}
	/* the loader's cache and the devices qemu opens */
	static const char *const files[] = {"/etc/ld.so.cache", "/dev/null",   "/dev/zero",
					    "/dev/urandom",	"/dev/random", "/dev/kvm"};
	if (mkdir(JAIL "/etc", 0755) < 0 || mkdir(JAIL "/dev", 0755) < 0 ||
	    mkdir(JAIL "/proc", 0555) < 0 || mkdir(JAIL "/tmp", 01777) < 0)
		return errno;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(files); i++) {
		if (access(files[i], F_OK) < 0)
			continue;
		snprintf(p, sizeof(p), JAIL "%s", files[i]);
		/* the devices read-write (/dev/kvm), the loader's cache not */
		bool dev = aj_startswith(files[i], "/dev/");
		if (aj_write_file(p, "", 0644) < 0 ||
		    user_bind(files[i], p, dev ? MOUNT_ATTR_NOSUID : RO_ATTR) < 0)
			return errno ? errno : EIO;
	}
	/* the VM's directory: its sockets and console, nothing to run */
	snprintf(p, sizeof(p), JAIL "%s", s->jail);
	if (aj_mkdir_p(p, 0700) < 0 ||
	    user_bind(s->jail, p, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC) < 0)
		return errno ? errno : EIO;
	return 0;
}

/* In the VMM's pid namespace (its pid 1): /proc of it, then the jail as
 * its root, the tmpfs read-only. */
static int jail_enter(void)
{
	if (mount("proc", JAIL "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
	    mount(NULL, JAIL, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0755") <
		0 ||
	    chdir(JAIL) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return errno;
	return 0;
}

/* A non-root caller's: no host root to bind as and no unused uid to run
 * as, so the user namespace comes first (uid 0 inside is the caller: the
 * parent writes the maps), the binds are made in it; with s->jail the
 * process gets a root of only what it needs (jail_make) in a pid
 * namespace of its own, whose pid 1 it is (this child waits for it and
 * ends as it ends). */
static void spawn_child_user(const aj_mv_spawn *s, const aj_bpf *setid, int go, int report)
{
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
		    (s->jail ? CLONE_NEWPID : 0)) < 0)
		child_fail(report, errno);
	char c;
	if (write(go, "u", 1) != 1 || read(go, &c, 1) != 1)
		_exit(127);
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		child_fail(report, errno);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		child_fail(report, ESRCH);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		child_fail(report, errno);
	for (size_t i = 0; i < s->n; i++)
		if (user_bind(s->bind[i], s->onto[i],
			      s->ro[i] ? RO_ATTR : MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0)
			child_fail(report, errno);
	if (s->prepare) /* the workspace's masks: refused before (aj_mv_nonroot_refuse) */
		child_fail(report, EPERM);
	if (mount("run", "/run", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=1m") <
	    0)
		child_fail(report, errno);
	if (!s->jail)
		exec_child(s, setid, report);
	int e = jail_make(s);
	if (e)
		child_fail(report, e);
	int alive[2];
	if (pipe2(alive, O_CLOEXEC) < 0)
		child_fail(report, errno);
	pid_t holder = getpid();
	pid_t pid = fork();
	if (pid < 0)
		child_fail(report, errno);
	if (pid == 0) {
		/* gone already if the holder died before its death signal was set */
		close(alive[1]);
		struct pollfd pf = {.fd = alive[0], .events = POLLIN};
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || poll(&pf, 1, 0) != 0)
			_exit(127);
		close(alive[0]);
		(void)holder;
		if ((e = jail_enter()))
			child_fail(report, e);
		exec_child(s, setid, report);
	}
	close(alive[0]);
	close(report);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st)) {
		signal(WTERMSIG(st), SIG_DFL);
		kill(getpid(), WTERMSIG(st));
	}
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 127);
}

pid_t aj_mv_spawn_confined(const aj_mv_spawn *s, aj_error *err)
{
	int go[2], report[2];
	/* compiled here: the child of a threaded service only loads it */
	aj_bpf setid = {0};
	if (s->no_setid && aj_seccomp_compile_setid(&setid, err) < 0)
		return -EINVAL;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0) {
		aj_bpf_free(&setid);
		return aj_err(err, errno, "socketpair");
	}
	if (pipe2(report, O_CLOEXEC) < 0) {
		aj_bpf_free(&setid);
		close(go[0]), close(go[1]);
		return aj_err(err, errno, "pipe");
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(go[0]), close(report[0]);
		if (geteuid() != 0)
			spawn_child_user(s, s->no_setid ? &setid : NULL, go[1], report[1]);
		spawn_child(s, s->no_setid ? &setid : NULL, go[1], report[1]);
	}
	aj_bpf_free(&setid);
	close(go[1]), close(report[1]);
	int e = pid < 0 ? errno : 0;
	char c, map[96], path[64];
	if (!e && read(go[0], &c, 1) != 1)
		e = ECHILD;
	/* uid 0 inside is s->uid outside: an id of an unused range or the
	 * workspace's owner, never host root */
	static const char *const files[] = {"uid_map", "setgroups", "gid_map"};
	for (size_t i = 0; !e && i < AJ_ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "/proc/%d/%s", pid, files[i]);
		unsigned out = i == 0 ? (unsigned)s->uid : (unsigned)s->gid;
		if (geteuid() != 0) /* the one id a non-root caller can map: its own */
			out = i == 0 ? (unsigned)geteuid() : (unsigned)getegid();
		if (i == 1)
			snprintf(map, sizeof(map), "deny");
		else if (s->in_uid > 0)
			snprintf(map, sizeof(map), "0 %u 1\n%u %u 1", out,
				 i == 0 ? (unsigned)s->in_uid : (unsigned)s->in_gid,
				 i == 0 ? (unsigned)s->out_uid : (unsigned)s->out_gid);
		else
			snprintf(map, sizeof(map), "0 %u 1", out);
		if (aj_write_file(path, map, 0) < 0)
			e = errno ? errno : EIO;
	}
	/* into the VMM's cgroups while it waits: what it allocates is counted */
	aj_error cerr;
	if (!e && s->cg && aj_cgroup_join(s->cg, pid, true, &cerr) < 0)
		e = cerr.code ? cerr.code : EIO;
	if (!e && write(go[0], "g", 1) != 1)
		e = ECHILD;
	close(go[0]);
	int ce = 0;
	/* the child's own errno, also when it died before its "u" (ECHILD) */
	if (read(report[0], &ce, sizeof(ce)) == sizeof(ce) && (!e || e == ECHILD))
		e = ce;
	close(report[0]);
	if (e) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return aj_err(err, e, "microvm: cannot start %s", s->argv[0]);
	}
	return pid;
}

/* ---- the accelerator ---- */

static bool kvm_verdict_cached(aj_mv_host *h)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/accel", mv_cache());
	_cleanup_free_ char *v = NULL;
	if (aj_read_file(path, &v, NULL) < 0)
		return false;
	v[strcspn(v, "\n")] = '\0';
	h->kvm = !strcmp(v, "kvm");
	if (!h->kvm)
		snprintf(h->accel_why, sizeof(h->accel_why), "%s",
			 aj_startswith(v, "tcg ") ? v + 4 : v);
	return true;
}

/* A boot of the guest to its first line with -accel kvm (guest init with
 * aj.canary=1 prints it and powers off), ~3 s at most: a PVM host creates
 * VMs but a stock guest dies there ("KVM internal error"). */
static int kvm_canary(aj_mv_host *h, char *why, size_t len)
{
	if (access("/dev/kvm", F_OK) < 0)
		return snprintf(why, len, "no /dev/kvm"), -1;
	char dir[] = "/tmp/agentjail-microvm-canary-XXXXXX", log[PATH_MAX], kern[PATH_MAX],
	     initrd[PATH_MAX], append[128];
	if (!mkdtemp(dir))
		return snprintf(why, len, "mkdtemp: %s", strerror(errno)), -1;
	snprintf(log, sizeof(log), "%s/console", dir);
	snprintf(kern, sizeof(kern), "%s/vmlinux", dir);
	snprintf(initrd, sizeof(initrd), "%s/initrd", dir);
	snprintf(append, sizeof(append), "console=ttyS0 aj.canary=1 panic=-1 tsc_early_khz=%lu",
		 h->tsc_khz);
	int fd = open(log, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	aj_write_file(kern, "", 0644), aj_write_file(initrd, "", 0644);
	char *argv[] = {h->qemu,
			"-M",
			"microvm",
			"-accel",
			"kvm",
			"-cpu",
			"max",
			"-m",
			"256M",
			"-nodefaults",
			"-no-user-config",
			"-nographic",
			"-no-reboot",
			"-serial",
			"stdio",
			"-kernel",
			kern,
			"-initrd",
			initrd,
			"-append",
			append,
			NULL};
	aj_mv_spawn s = {.argv = argv, .uid = 0, .gid = 0, .log = fd, .idmap = -1};
	/* KVM needs /dev/kvm, which an unprivileged uid cannot open here: the
	 * canary runs as the VMM would, so its verdict holds for real boots */
	aj_idmap m = {0}; /* non-root: the VMM as the caller, jailed (s.jail) */
	int r = -1;
	if (geteuid() != 0 || aj_userns_plan(&m, 0, 0, NULL) == 0) {
		s.uid = m.host_base, s.gid = m.host_base;
		s.jail = geteuid() != 0 ? dir : NULL;
		s.bind[0] = h->kernel, s.onto[0] = kern, s.ro[0] = true;
		s.bind[1] = h->initramfs, s.onto[1] = initrd, s.ro[1] = true;
		s.n = 2;
		pid_t pid = aj_mv_spawn_confined(&s, NULL);
		for (int i = 0; pid > 0 && i < 300; i++) {
			struct timespec ts = {0, 10000000};
			nanosleep(&ts, NULL);
			if (waitpid(pid, NULL, WNOHANG) == pid) {
				pid = 0;
				break;
			}
		}
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		_cleanup_free_ char *out = NULL;
		(void)aj_read_file(log, &out, NULL);
		if (out && strstr(out, "agentjail-guest: canary ok"))
			r = 0;
		else if (out && strstr(out, "KVM internal error"))
			snprintf(why, len,
				 "/dev/kvm creates VMs but a stock guest dies there (KVM "
				 "internal error: a nested hypervisor such as PVM)");
		else if (out && (strstr(out, "Permission denied") || strstr(out, "kvm")))
			snprintf(why, len,
				 "the confined VMM (an unprivileged uid, or a non-root "
				 "caller's) cannot use /dev/kvm");
		else
			snprintf(why, len, "a canary boot with KVM did not reach the guest in 3 s");
	} else {
		snprintf(why, len, "no unused uid range for the VMM");
	}
	if (fd >= 0)
		close(fd);
	(void)aj_rm_tree_at(AT_FDCWD, dir, 2);
	return r;
}

static void find_accel(aj_mv_host *h)
{
	const char *f = getenv("AGENTJAIL_MICROVM_ACCEL");
	if (f && (!strcmp(f, "tcg") || !strcmp(f, "kvm"))) {
		h->kvm = !strcmp(f, "kvm");
		snprintf(h->accel_why, sizeof(h->accel_why), "forced by AGENTJAIL_MICROVM_ACCEL");
		return;
	}
	if (kvm_verdict_cached(h))
		return;
	char why[256] = "";
	h->kvm = kvm_canary(h, why, sizeof(why)) == 0;
	snprintf(h->accel_why, sizeof(h->accel_why), "%s", why);
	char path[PATH_MAX], v[300];
	snprintf(path, sizeof(path), "%s/accel", mv_cache());
	snprintf(v, sizeof(v), "%s%s\n", h->kvm ? "kvm" : "tcg ", h->kvm ? "" : why);
	(void)aj_write_file(path, v, 0600);
}

int aj_mv_host_find(aj_mv_host *h, aj_error *err)
{
	memset(h, 0, sizeof(*h));
	if (find_in_path(AJ_MV_QEMU, h->qemu, sizeof(h->qemu)) < 0)
		return missing(err, AJ_MV_QEMU, "apt-get install qemu-system-x86");
	snprintf(h->virtiofsd, sizeof(h->virtiofsd), "%s", AJ_MV_VIRTIOFSD);
	if (access(h->virtiofsd, X_OK) < 0)
		return missing(err, AJ_MV_VIRTIOFSD,
			       "apt-get install qemu-system-common (Debian 12's virtiofsd)");
	snprintf(h->kernel, sizeof(h->kernel), "%s/vmlinux", assets_dir());
	if (access(h->kernel, R_OK) < 0)
		return missing(
		    err, "the guest kernel (vmlinux)",
		    "run scripts/setup.sh: it unpacks Debian's linux-image into "
		    "/var/cache/agentjail/microvm (AGENTJAIL_MICROVM_DIR names another)");
	int r = find_initramfs(h, err);
	if (r < 0)
		return r;
	h->tsc_khz = host_tsc_khz();
	find_accel(h);
	return 0;
}

int aj_mv_nonroot_refuse(const aj_policy *p, bool run, aj_error *err)
{
	if (geteuid() == 0)
		return 0;
	const char *what = !run			   ? "the service's sandboxes"
			   : p->workspace	   ? "--workspace (its virtiofsd maps the guest's "
						     "users to the workspace's owner)"
			   : p->net != AJ_NET_NONE ? "a network (--net open, --allow: the VM's tap "
						     "and netd need root)"
			   : p->n_binds		   ? "--ro/--rw binds"
			   : p->rootfs		   ? "--image/--rootfs"
			   : p->n_publish	   ? "--publish"
						   : NULL;
	if (!what)
		return 0;
	aj_err(err, EPERM, "isolation level microvm: %s: not for a non-root caller yet", what);
	aj_err_hint(err, "run it as root, or without it (a non-root caller's VM has no workspace, "
			 "network, binds or image), or use --isolation process");
	return -EPERM;
}

void aj_microvm_doctor(aj_check *c)
{
	memset(c, 0, sizeof(*c));
	c->name = "level 3: microvm";
	aj_mv_host h;
	aj_error err;
	aj_err_clear(&err);
	if (aj_mv_host_find(&h, &err) < 0) {
		c->status = AJ_CHECK_WARN;
		snprintf(c->detail, sizeof(c->detail), "not usable: %s", err.msg);
		snprintf(c->fix, sizeof(c->fix), "%s", err.hint);
		return;
	}
	snprintf(c->detail, sizeof(c->detail),
		 "usable: %s -M microvm, accelerator %s%s%s; one-shot runs (agentjail run)", h.qemu,
		 h.kvm ? "KVM" : "TCG (emulated, slow)", h.kvm ? "" : ": ", h.accel_why);
}
