/* SPDX-License-Identifier: MIT */
/*
 * ajattack: the attacks of agentjail's public security suite.
 *
 * One static program (libc only), bound into the sandbox read-only at
 * /attack.  Each subcommand tries to climb one wall.  Every single attempt
 * prints one line
 *
 *     NAME=blocked errno=EPERM          the attempt failed (with that errno)
 *     NAME=ESCAPED <what happened>      the attempt worked: a hole
 *
 * and the subcommand ends with a summary line
 *
 *     result=blocked [errno=E]          (exit 0) every attempt failed; errno=
 *                                       is given when there was one attempt
 *     result=ESCAPED n=N                (exit 1) N attempts worked
 *
 * Lines starting with "info " are facts for the test to check or print.
 * Subcommands that expect the kernel to kill them (int80, x32, membomb) print
 * "attempt=..." first and ESCAPED only if they survive.  A few helpers run on
 * the host side of a test (listen_abstract) or set things up (spawn, orphan).
 *
 * Build: gcc -std=c17 -D_GNU_SOURCE -static -O2 -Wall -Wextra -Werror \
 *            -o ajattack tests/security/attack.c
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <linux/securebits.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/quota.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#define X32_SYSCALL_BIT 0x40000000UL

/* ------------------------------------------------------------ reporting */

static int n_attempts;
static int n_escaped;
static int last_errno;

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	static char buf[32];
	if (n)
		return n;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

static void out(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* An attempt that failed with errno e. */
static void blocked(const char *name, int e)
{
	n_attempts++;
	last_errno = e;
	out("%s=blocked errno=%s\n", name, ename(e));
}

/* A check (not a system call) that found the wall in place. */
static void held(const char *name)
{
	n_attempts++;
	last_errno = 0;
	out("%s=blocked\n", name);
}

/* An attempt that worked. */
static void escaped(const char *name, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n_attempts++;
	n_escaped++;
	out("%s=ESCAPED %s\n", name, buf);
}

/* Judge a syscall-like return: < 0 (errno set) is blocked. */
static void expect_fail(const char *name, long ret)
{
	int e = errno;
	if (ret < 0)
		blocked(name, e);
	else
		escaped(name, "returned %ld", ret);
}

/* Judge a path-returning open: closes the fd if it worked. */
static void expect_open_fail(const char *name, int fd)
{
	int e = errno;
	if (fd < 0) {
		blocked(name, e);
	} else {
		close(fd);
		escaped(name, "opened");
	}
}

static void info(const char *fmt, ...)
{
	va_list ap;
	printf("info ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static int finish(void)
{
	if (n_escaped) {
		out("result=ESCAPED n=%d\n", n_escaped);
		return 1;
	}
	if (n_attempts == 1 && last_errno)
		out("result=blocked errno=%s\n", ename(last_errno));
	else
		out("result=blocked\n");
	return 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static long read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n + 1 < size) {
		ssize_t r = read(fd, buf + n, size - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	close(fd);
	return (long)n;
}

static bool is_num(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* ------------------------------------------------------------ fds and cwd */

/* Only 0, 1, 2 and the directory fd of this very listing may be open. */
static int a_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		escaped("fds", "cannot list /proc/self/fd: %s", ename(errno));
		return finish();
	}
	int own = dirfd(d), extra = 0;
	char list[1024] = "";
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!is_num(e->d_name))
			continue;
		int fd = atoi(e->d_name);
		char p[64], target[PATH_MAX] = "?";
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(p, target, sizeof(target) - 1);
		if (n >= 0)
			target[n] = 0;
		size_t l = strlen(list);
		snprintf(list + l, sizeof(list) - l, "%s%d", l ? "," : "", fd);
		if (fd == own)
			continue;
		info("fd %d -> %s", fd, target);
		if (fd > 2) {
			extra++;
			/* a leaked directory is a way out: can it be listed? */
			struct stat st;
			char how[160] = "";
			if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
				int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				DIR *ld = dfd >= 0 ? fdopendir(dfd) : NULL;
				int entries = 0;
				while (ld && readdir(ld))
					entries++;
				snprintf(how, sizeof(how), " (a directory: %s)",
					 ld ? "listed its entries" : ename(errno));
				if (ld)
					closedir(ld);
				else if (dfd >= 0)
					close(dfd);
				(void)entries;
			}
			escaped("fd", "%d -> %s%s", fd, target, how);
		}
	}
	closedir(d);
	info("fds %s", list);
	if (!extra)
		held("fds");
	return finish();
}

/* Write TEXT to inherited descriptor FD (one the test itself opened). */
static int a_fd_write(int fd, const char *text)
{
	ssize_t w = write(fd, text, strlen(text));
	if (w < 0)
		blocked("fd_write", errno);
	else
		escaped("fd_write", "wrote %zd bytes to inherited fd %d", w, fd);
	return finish();
}

/* The fds init (pid 1) holds must not hand out a host file or directory. */
static int a_init_fds(void)
{
	DIR *d = opendir("/proc/1/fd");
	if (!d) {
		blocked("init_fds_list", errno);
	} else {
		struct dirent *e;
		int n = 0;
		while ((e = readdir(d))) {
			if (!is_num(e->d_name))
				continue;
			n++;
			char p[300];
			snprintf(p, sizeof(p), "/proc/1/fd/%s", e->d_name);
			int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
			if (fd < 0) {
				info("init fd %s: %s", e->d_name, ename(errno));
				continue;
			}
			struct stat st;
			fstat(fd, &st);
			if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
				escaped("init_fd", "%s is a %s", e->d_name,
					S_ISDIR(st.st_mode) ? "directory" : "regular file");
			else
				info("init fd %s opened (not a file: mode %o)", e->d_name,
				     st.st_mode & S_IFMT);
			close(fd);
		}
		closedir(d);
		info("init fds listed: %d", n);
	}
	if (!n_escaped)
		held("init_fds");
	return finish();
}

/* Walking up from the working directory must end at our own root. */
static int a_cwd(void)
{
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "(getcwd: %s)", ename(errno));
	info("cwd %s", cwd);
	if (cwd[0] != '/')
		escaped("cwd_path", "getcwd says %s", cwd);
	struct stat root, cur, up;
	stat("/", &root);
	int fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool at_root = false;
	for (int i = 0; i < 256 && fd >= 0; i++) {
		fstat(fd, &cur);
		int ufd = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		fstat(ufd, &up);
		close(fd);
		fd = ufd;
		if (same_file(&cur, &up)) {
			at_root = same_file(&cur, &root);
			break;
		}
	}
	if (fd >= 0)
		close(fd);
	if (!at_root)
		escaped("cwd", "walking .. from %s ends outside the sandbox's root", cwd);
	else
		held("cwd");
	return finish();
}

/* ------------------------------------------------------------ files */

static int a_exe_write(void)
{
	expect_open_fail("self_exe_wronly", open("/proc/self/exe", O_WRONLY | O_CLOEXEC));
	expect_open_fail("self_exe_trunc", open("/proc/self/exe", O_WRONLY | O_TRUNC | O_CLOEXEC));
	expect_open_fail("attack_wronly", open("/attack", O_WRONLY | O_CLOEXEC));
	expect_open_fail("attack_rdwr", open("/attack", O_RDWR | O_CLOEXEC));
	/* pid 1 runs agentjail's own binary (CVE-2019-5736 style) */
	expect_open_fail("init_exe_wronly", open("/proc/1/exe", O_WRONLY | O_CLOEXEC));
	int pfd = open("/proc/1/exe", O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		blocked("init_exe_path", errno);
	} else {
		char p[64];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", pfd);
		expect_open_fail("init_exe_reopen", open(p, O_WRONLY | O_CLOEXEC));
		close(pfd);
	}
	return finish();
}

static int a_proc_write(void)
{
	static const struct {
		const char *name, *path;
	} t[] = {
	    {"core_pattern", "/proc/sys/kernel/core_pattern"},
	    {"modprobe", "/proc/sys/kernel/modprobe"},
	    {"sysrq_trigger", "/proc/sysrq-trigger"},
	    {"sysrq", "/proc/sys/kernel/sysrq"},
	    {"drop_caches", "/proc/sys/vm/drop_caches"},
	    {"panic", "/proc/sys/kernel/panic"},
	    {"hostname", "/proc/sys/kernel/hostname"},
	    {"ip_forward", "/proc/sys/net/ipv4/ip_forward"},
	    {"self_oom_adj", "/proc/self/oom_score_adj"},
	    {"init_oom_adj", "/proc/1/oom_score_adj"},
	};
	/* opening for write is the escape: never write anything */
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		expect_open_fail(t[i].name, open(t[i].path, O_WRONLY | O_CLOEXEC));
	return finish();
}

static int a_sys(void)
{
	struct stat st;
	expect_fail("sys_stat", stat("/sys", &st));
	expect_fail("sys_cgroup_procs", open("/sys/fs/cgroup/cgroup.procs", O_WRONLY | O_CLOEXEC));
	mkdir("/tmp/ajsys", 0755);
	expect_fail("sysfs_mount", mount("sysfs", "/tmp/ajsys", "sysfs", 0, NULL));
	rmdir("/tmp/ajsys");
	return finish();
}

static int a_remount(void)
{
	expect_fail("remount_usr_rw", mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL));
	expect_fail("remount_root_rw", mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL));
	expect_fail("bind_over_usr", mount("/tmp", "/usr", NULL, MS_BIND, NULL));
	expect_fail("umount_workspace", umount2("/workspace", MNT_DETACH));
	expect_fail("umount_proc", umount2("/proc", MNT_DETACH));
	expect_fail("tmpfs_mount", mount("tmpfs", "/tmp", "tmpfs", 0, NULL));
	expect_fail("make_shared", mount(NULL, "/", NULL, MS_SHARED | MS_REC, NULL));
	int fd = open("/usr/ajescape", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		close(fd);
		unlink("/usr/ajescape");
	}
	expect_open_fail("write_usr", fd);
	return finish();
}

static int a_newmount(void)
{
	expect_fail("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
	expect_fail("fspick", syscall(SYS_fspick, AT_FDCWD, "/usr", 0));
	expect_fail("open_tree", syscall(SYS_open_tree, AT_FDCWD, "/usr", OPEN_TREE_CLONE));
	expect_fail("move_mount", syscall(SYS_move_mount, AT_FDCWD, "/tmp", AT_FDCWD, "/usr", 0));
	expect_fail("fsconfig", syscall(SYS_fsconfig, 0, FSCONFIG_CMD_CREATE, NULL, NULL, 0));
	expect_fail("fsmount", syscall(SYS_fsmount, 0, 0, 0));
	struct mount_attr attr = {.attr_clr = MOUNT_ATTR_RDONLY};
	expect_fail("mount_setattr_usr",
		    syscall(SYS_mount_setattr, AT_FDCWD, "/usr", 0, &attr, sizeof(attr)));
	struct mount_attr attr2 = {.attr_clr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	expect_fail("mount_setattr_tmp",
		    syscall(SYS_mount_setattr, AT_FDCWD, "/tmp", 0, &attr2, sizeof(attr2)));
	return finish();
}

static int a_chroot(void)
{
	mkdir("/tmp/ajjail", 0755);
	expect_fail("chroot", chroot("/tmp/ajjail"));
	/* the classic breakout: chroot deeper, then climb with chdir("..") */
	if (chdir("/tmp/ajjail") < 0)
		info("chdir /tmp/ajjail: %s", ename(errno));
	for (int i = 0; i < 64; i++)
		if (chdir("..") < 0)
			break;
	struct stat root, here;
	stat("/", &root);
	stat(".", &here);
	if (!same_file(&root, &here))
		escaped("chdir_dotdot", "climbed above the root");
	else
		held("chdir_dotdot");
	expect_fail("fchdir_chroot_dot", chroot("."));
	rmdir("/tmp/ajjail");
	return finish();
}

static int a_pivot_root(void)
{
	mkdir("/tmp/ajnew", 0755);
	mkdir("/tmp/ajnew/old", 0755);
	expect_fail("pivot_root_dot", syscall(SYS_pivot_root, ".", "."));
	expect_fail("pivot_root_tmp", syscall(SYS_pivot_root, "/tmp/ajnew", "/tmp/ajnew/old"));
	rmdir("/tmp/ajnew/old");
	rmdir("/tmp/ajnew");
	return finish();
}

/* Plant /workspace/NAME -> TARGET and write through it. */
static int a_symlink_write(const char *name, const char *target)
{
	char link[PATH_MAX];
	snprintf(link, sizeof(link), "/workspace/%s", name);
	unlink(link);
	if (symlink(target, link) < 0) {
		escaped("symlink_setup", "cannot create %s: %s", link, ename(errno));
		return finish();
	}
	expect_open_fail("write_through_link", open(link, O_WRONLY | O_APPEND | O_CLOEXEC));
	expect_open_fail("trunc_through_link", open(link, O_WRONLY | O_TRUNC | O_CLOEXEC));
	/* a directory link: create a file beneath what it points at */
	char dlink[PATH_MAX], f[PATH_MAX + 16];
	snprintf(dlink, sizeof(dlink), "/workspace/%s.dir", name);
	unlink(dlink);
	if (symlink("/etc", dlink) < 0)
		info("symlink %s: %s", dlink, ename(errno));
	snprintf(f, sizeof(f), "%s/ajescape", dlink);
	int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		unlink(f);
	expect_open_fail("create_through_dirlink", fd);
	return finish();
}

/* Read a path (a link the host planted): must not give the host's file. */
static int a_read_planted(const char *path, const char *secret_marker)
{
	char buf[8192];
	long n = read_small(path, buf, sizeof(buf));
	if (n < 0)
		blocked("read_planted", errno);
	else if (secret_marker && strstr(buf, secret_marker))
		escaped("read_planted", "read the host file (%ld bytes, marker found)", n);
	else
		escaped("read_planted", "read %ld bytes (not the host file?)", n);
	return finish();
}

static int a_handle(void)
{
	struct {
		struct file_handle fh;
		unsigned char data[128];
	} h;
	memset(&h, 0, sizeof(h));
	h.fh.handle_bytes = 128;
	int mnt = -1;
	expect_fail("name_to_handle_at",
		    syscall(SYS_name_to_handle_at, AT_FDCWD, "/usr", &h.fh, &mnt, 0));
	/* shocker: guess the handle of the host filesystem's root (ino 2) */
	memset(&h, 0, sizeof(h));
	h.fh.handle_bytes = 8;
	h.fh.handle_type = 1; /* FILEID_INO32_GEN */
	uint32_t ino = 2, gen = 0;
	memcpy(h.fh.f_handle, &ino, 4);
	memcpy(h.fh.f_handle + 4, &gen, 4);
	int dirfd = open("/usr", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long fd = syscall(SYS_open_by_handle_at, dirfd, &h.fh, O_RDONLY | O_DIRECTORY);
	int e = errno;
	if (fd >= 0)
		close((int)fd);
	errno = e;
	expect_fail("open_by_handle_at", fd);
	close(dirfd);
	return finish();
}

/* /proc/1/root and /proc/1/cwd: must be (or lead to) our own root. */
static int a_proc1root(void)
{
	static const char *const paths[] = {"/proc/1/root", "/proc/1/cwd", "/proc/self/root",
					    "/proc/2/root"};
	struct stat root, st;
	stat("/", &root);
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		char name[64], target[PATH_MAX] = "";
		snprintf(name, sizeof(name), "%s", paths[i] + 6); /* "1/root" */
		for (char *c = name; *c; c++)
			if (*c == '/')
				*c = '_';
		ssize_t n = readlink(paths[i], target, sizeof(target) - 1);
		if (n >= 0)
			target[n] = 0;
		if (stat(paths[i], &st) < 0) {
			blocked(name, errno);
			continue;
		}
		info("%s -> %s", paths[i], n >= 0 ? target : "?");
		if (same_file(&st, &root)) {
			held(name); /* reachable, but it is our own root */
			continue;
		}
		/* Not our root: does it at least stay inside (e.g. a cwd)? */
		char up[PATH_MAX];
		snprintf(up, sizeof(up), "%s/..", paths[i]);
		int fd = open(paths[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		bool inside = false;
		for (int k = 0; k < 256 && fd >= 0; k++) {
			struct stat a, b;
			fstat(fd, &a);
			int u = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
			fstat(u, &b);
			close(fd);
			fd = u;
			if (same_file(&a, &b)) {
				inside = same_file(&a, &root);
				break;
			}
		}
		if (fd >= 0)
			close(fd);
		if (inside)
			held(name);
		else
			escaped(name, "leads outside the root (-> %s)", target);
	}
	struct stat sh;
	if (stat("/proc/1/root/etc/shadow", &sh) == 0)
		escaped("proc1_shadow", "/proc/1/root/etc/shadow exists");
	else
		blocked("proc1_shadow", errno);
	return finish();
}

static int a_mknod(void)
{
	expect_fail("mknod_chr_mem", mknod("/tmp/ajmem", S_IFCHR | 0666, makedev(1, 1)));
	expect_fail("mknod_chr_null", mknod("/tmp/ajnull", S_IFCHR | 0666, makedev(1, 3)));
	expect_fail("mknod_blk_tmp", mknod("/tmp/ajvda", S_IFBLK | 0666, makedev(254, 0)));
	expect_fail("mknod_blk_ws", mknod("/workspace/ajvda", S_IFBLK | 0666, makedev(254, 0)));
	expect_fail("mknod_chr_dev", mknod("/dev/ajkmsg", S_IFCHR | 0666, makedev(1, 11)));
	unlink("/tmp/ajmem");
	unlink("/tmp/ajnull");
	unlink("/tmp/ajvda");
	unlink("/workspace/ajvda");
	unlink("/dev/ajkmsg");
	return finish();
}

/* No device node beyond the harmless ones anywhere under /dev. */
static void scan_dev(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d || depth > 4) {
		if (d)
			closedir(d);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			scan_dev(p, depth + 1);
		} else if (S_ISBLK(st.st_mode)) {
			escaped("dev_block", "%s (%u:%u)", p, major(st.st_rdev), minor(st.st_rdev));
		} else if (S_ISCHR(st.st_mode)) {
			unsigned ma = major(st.st_rdev), mi = minor(st.st_rdev);
			bool ok =
			    (ma == 1 && (mi == 3 || mi == 5 || mi == 7 || mi == 8 || mi == 9)) ||
			    (ma == 5 && (mi == 0 || mi == 2)) || ma == 136;
			if (!ok)
				escaped("dev_char", "%s (%u:%u)", p, ma, mi);
			else
				info("dev %s %u:%u", p, ma, mi);
		}
	}
	closedir(d);
}

static int a_devscan(void)
{
	scan_dev("/dev", 0);
	static const char *const gone[] = {
	    "/dev/mem",	    "/dev/kmem",	"/dev/port", "/dev/kmsg",  "/dev/vda",
	    "/dev/sda",	    "/dev/console",	"/dev/tty0", "/dev/vsock", "/dev/fuse",
	    "/dev/net/tun", "/dev/userfaultfd", "/dev/kvm",  "/dev/hwrng"};
	for (size_t i = 0; i < ARRAY_SIZE(gone); i++) {
		struct stat st;
		char name[64];
		snprintf(name, sizeof(name), "%s", gone[i] + 5);
		for (char *c = name; *c; c++)
			if (*c == '/')
				*c = '_';
		if (stat(gone[i], &st) == 0)
			escaped(name, "%s exists", gone[i]);
		else
			blocked(name, errno);
	}
	return finish();
}

/* ------------------------------------------------------------ privilege */

static int a_privstate(void)
{
	char buf[8192];
	if (read_small("/proc/self/status", buf, sizeof(buf)) < 0) {
		escaped("status", "cannot read /proc/self/status");
		return finish();
	}
	static const struct {
		const char *key, *want;
	} k[] = {{"CapInh:", "0000000000000000"},
		 {"CapPrm:", "0000000000000000"},
		 {"CapEff:", "0000000000000000"},
		 {"CapBnd:", "0000000000000000"},
		 {"CapAmb:", "0000000000000000"},
		 {"NoNewPrivs:", "1"},
		 {"Seccomp:", "2"}};
	for (size_t i = 0; i < ARRAY_SIZE(k); i++) {
		char *p = strstr(buf, k[i].key);
		char val[64] = "missing";
		if (p)
			sscanf(p + strlen(k[i].key), " %63s", val);
		char name[32];
		snprintf(name, sizeof(name), "%.*s", (int)strlen(k[i].key) - 1, k[i].key);
		info("%s %s", name, val);
		if (strcmp(val, k[i].want))
			escaped(name, "is %s (want %s)", val, k[i].want);
		else
			held(name);
	}
	int sb = prctl(PR_GET_SECUREBITS);
	int want = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		   SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED;
	info("securebits 0x%x", sb);
	if (sb < 0 || (sb & want) != want)
		escaped("securebits", "0x%x lacks 0x%x", sb, want);
	else
		held("securebits");
	return finish();
}

static int a_setuid(void)
{
	info("uid %u euid %u", getuid(), geteuid());
	if (getuid() == 0) {
		out("setuid: run me as a non-root user (--user 1000)\n");
		return 2;
	}
	expect_fail("setuid0", setuid(0));
	expect_fail("setresuid0", setresuid(0, 0, 0));
	expect_fail("setreuid0", setreuid(0, 0));
	expect_fail("setgid0", setgid(0));
	expect_fail("setgroups", setgroups(0, NULL));
	setfsuid(0);
	if ((int)setfsuid((uid_t)-1) == 0)
		escaped("setfsuid0", "fsuid is now 0");
	else
		held("setfsuid0");
	if (geteuid() == 0 || getuid() == 0)
		escaped("uid_now", "uid %u euid %u", getuid(), geteuid());
	return finish();
}

static int a_caps_raise(void)
{
	struct {
		uint32_t version;
		int pid;
	} hdr = {0x20080522, 0};
	struct {
		uint32_t eff, prm, inh;
	} data[2] = {{~0u, ~0u, ~0u}, {~0u, ~0u, ~0u}};
	expect_fail("capset_all", syscall(SYS_capset, &hdr, data));
	expect_fail("ambient_raise",
		    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, 21 /* CAP_SYS_ADMIN */, 0, 0));
	expect_fail("securebits_clear", prctl(PR_SET_SECUREBITS, 0, 0, 0, 0));
	expect_fail("no_new_privs_clear", prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0));
	expect_fail("keepcaps", prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
	return finish();
}

/* Print identity: used as the payload of setuid/file-capability copies. */
static int a_ids(void)
{
	char buf[8192] = "", eff[32] = "?";
	read_small("/proc/self/status", buf, sizeof(buf));
	char *p = strstr(buf, "CapEff:");
	if (p)
		sscanf(p + 7, " %31s", eff);
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	out("ids uid=%u euid=%u suid=%u capeff=%s\n", r, e, s, eff);
	return 0;
}

/* Exec PATH ids as this (non-root) user: must gain no uid and no capability. */
static int a_suid_exec(int argc, char **argv)
{
	static const char *const mnts[] = {"/tmp",	 "/home/agent", "/dev/shm",
					   "/workspace", "/usr",	"/"};
	for (size_t i = 0; i < ARRAY_SIZE(mnts); i++) {
		struct statvfs sv;
		char name[64];
		snprintf(name, sizeof(name), "nosuid_%s", mnts[i][1] ? mnts[i] + 1 : "root");
		for (char *c = name; *c; c++)
			if (*c == '/')
				*c = '_';
		if (statvfs(mnts[i], &sv) < 0)
			continue;
		if (!(sv.f_flag & ST_NOSUID))
			escaped(name, "%s is mounted without nosuid", mnts[i]);
		else
			held(name);
	}
	uid_t me = getuid();
	for (int i = 0; i < argc; i++) {
		int pfd[2];
		if (pipe(pfd) < 0)
			return 2;
		pid_t pid = fork();
		if (pid == 0) {
			dup2(pfd[1], 1);
			execl(argv[i], argv[i], "ids", (char *)NULL);
			printf("exec-failed %s\n", ename(errno));
			_exit(127);
		}
		close(pfd[1]);
		char buf[512] = "";
		ssize_t n = read(pfd[0], buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = 0;
		buf[strcspn(buf, "\n")] = 0;
		close(pfd[0]);
		waitpid(pid, NULL, 0);
		unsigned u = 0, e = 0, s = 0;
		char eff[32] = "";
		char name[64];
		snprintf(name, sizeof(name), "exec_%d", i);
		struct stat st;
		stat(argv[i], &st);
		info("%s %s mode %o owner %u: %s", name, argv[i], st.st_mode & 07777, st.st_uid,
		     buf);
		if (sscanf(buf, "ids uid=%u euid=%u suid=%u capeff=%31s", &u, &e, &s, eff) != 4) {
			held(name); /* could not even run it */
		} else if (e != me || s != me || strcmp(eff, "0000000000000000")) {
			escaped(name, "%s gave euid=%u suid=%u capeff=%s (we are %u)", argv[i], e,
				s, eff, me);
		} else {
			held(name);
		}
	}
	return finish();
}

/* Make a setuid-root copy of /attack in DIR (needs to be root inside). */
static int a_suid_copy(const char *dst)
{
	int in = open("/attack", O_RDONLY | O_CLOEXEC);
	int o = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (in < 0 || o < 0) {
		out("copy failed: %s\n", ename(errno));
		return 2;
	}
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(o, buf, (size_t)n) != n)
			return 2;
	close(in);
	close(o);
	if (chmod(dst, 04755) < 0) {
		out("chmod failed: %s\n", ename(errno));
		return 2;
	}
	out("copied %s\n", dst);
	return 0;
}

/* ------------------------------------------------------------ processes */

static int a_ptrace1(void)
{
	expect_fail("ptrace_attach_1", syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, 1, 0, 0));
	expect_fail("ptrace_seize_1", syscall(SYS_ptrace, 0x4206 /* PTRACE_SEIZE */, 1, 0, 0));
	char buf[16];
	struct iovec l = {buf, sizeof(buf)}, r = {(void *)0x400000, sizeof(buf)};
	expect_fail("process_vm_readv_1", syscall(SYS_process_vm_readv, 1, &l, 1, &r, 1, 0));
	expect_fail("process_vm_writev_1", syscall(SYS_process_vm_writev, 1, &l, 1, &r, 1, 0));
	expect_open_fail("proc1_mem_rdwr", open("/proc/1/mem", O_RDWR | O_CLOEXEC));
	expect_fail("kcmp_1", syscall(SYS_kcmp, getpid(), 1, 0 /* KCMP_FILE */, 0, 0));
	long pfd = syscall(SYS_pidfd_open, 1, 0);
	if (pfd < 0) {
		blocked("pidfd_open_1", errno);
	} else {
		info("pidfd_open(1) works (fd %ld)", pfd);
		expect_fail("pidfd_getfd_1", syscall(SYS_pidfd_getfd, pfd, 0, 0));
		close((int)pfd);
	}
	return finish();
}

static bool init_alive(void)
{
	char buf[512];
	if (read_small("/proc/1/stat", buf, sizeof(buf)) <= 0)
		return false;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static int a_kill1(void)
{
	expect_fail("kill_1_SIGKILL", kill(1, SIGKILL));
	expect_fail("kill_1_SIGTERM", kill(1, SIGTERM));
	expect_fail("kill_1_SIGSTOP", kill(1, SIGSTOP));
	expect_fail("tgkill_1_SIGKILL", syscall(SYS_tgkill, 1, 1, SIGKILL));
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGKILL;
	si.si_code = SI_QUEUE;
	expect_fail("rt_sigqueueinfo_1", syscall(SYS_rt_sigqueueinfo, 1, SIGKILL, &si));
	long pfd = syscall(SYS_pidfd_open, 1, 0);
	if (pfd >= 0) {
		expect_fail("pidfd_send_signal_1",
			    syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0));
		close((int)pfd);
	} else {
		blocked("pidfd_send_signal_1", errno);
	}
	struct timespec ts = {0, 200 * 1000 * 1000};
	nanosleep(&ts, NULL);
	if (!init_alive())
		escaped("init_alive", "pid 1 is gone or a zombie");
	else
		held("init_alive");
	return finish();
}

/* TIOCSTI / TIOCLINUX on every terminal-ish fd, also with high bits set. */
static int a_tty_ioctl(bool linux_req)
{
	unsigned long base = linux_req ? TIOCLINUX : TIOCSTI;
	const char *nm = linux_req ? "tioclinux" : "tiocsti";
	static const struct {
		const char *suffix;
		unsigned long hi;
	} v[] = {{"", 0}, {"_hi32", 0x100000000UL}, {"_hiall", 0xffffffff00000000UL}};
	int fds[4] = {0, 1, 2, -1};
	fds[3] = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fds[3] < 0)
		info("/dev/tty: %s", ename(errno));
	info("isatty 0:%d 1:%d 2:%d", isatty(0), isatty(1), isatty(2));
	for (int i = 0; i < 4; i++) {
		if (fds[i] < 0)
			continue;
		for (size_t k = 0; k < ARRAY_SIZE(v); k++) {
			char name[64];
			snprintf(name, sizeof(name), "%s_%s%s", nm,
				 i < 3 ? (const char *[]){"fd0", "fd1", "fd2"}[i] : "devtty",
				 v[k].suffix);
			/* TIOCSTI: push "#" (harmless); TIOCLINUX: subcode 3 = paste selection */
			char arg = linux_req ? 3 : '#';
			expect_fail(name, syscall(SYS_ioctl, fds[i], v[k].hi | base, &arg));
		}
	}
	if (fds[3] >= 0)
		close(fds[3]);
	return finish();
}

static int connect_unix(const char *name, bool abstract)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	if (n + 2 > sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path + (abstract ? 1 : 0), name, n);
	socklen_t len =
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (abstract ? 1 : 0));
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	int r = connect(s, (struct sockaddr *)&sa, len);
	int e = errno;
	close(s);
	errno = e;
	return r;
}

/* Host unix sockets: no /run, abstract sockets of the host unreachable. */
static int a_hostsock(int argc, char **argv)
{
	static const char *const paths[] = {"/run",
					    "/var/run",
					    "/run/systemd/private",
					    "/run/dbus/system_bus_socket",
					    "/var/run/docker.sock",
					    "/run/containerd/containerd.sock",
					    "/tmp/.X11-unix/X0",
					    "/run/user"};
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		struct stat st;
		char name[80];
		snprintf(name, sizeof(name), "stat%s", paths[i]);
		for (char *c = name; *c; c++)
			if (*c == '/' || *c == '.' || *c == '-')
				*c = '_';
		expect_fail(name, stat(paths[i], &st));
	}
	expect_fail("connect_dbus", connect_unix("/run/dbus/system_bus_socket", true) < 0 ? -1 : 0);
	expect_fail("connect_systemd_private", connect_unix("/run/systemd/private", false));
	/* agentjail's own uid-slot sockets live in the host's network namespace */
	for (int i = 0; i < 4; i++) {
		char n[64], name[64];
		snprintf(n, sizeof(n), "agentjail/uid-slot/%d", i);
		snprintf(name, sizeof(name), "abstract_uid_slot_%d", i);
		expect_fail(name, connect_unix(n, true));
	}
	for (int i = 0; i < argc; i++) {
		char name[64];
		snprintf(name, sizeof(name), "abstract_arg%d", i);
		expect_fail(name, connect_unix(argv[i], true));
	}
	char buf[65536];
	if (read_small("/proc/net/unix", buf, sizeof(buf)) >= 0) {
		if (strstr(buf, "agentjail/"))
			escaped("proc_net_unix", "host abstract sockets listed");
		else
			held("proc_net_unix");
	}
	return finish();
}

/* Host side: listen on an abstract socket for SECS seconds. */
static int a_listen_abstract(const char *name, int secs)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	if (n + 2 > sizeof(sa.sun_path))
		return 2;
	memcpy(sa.sun_path + 1, name, n);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 ||
	    bind(s, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1)) < 0 ||
	    listen(s, 8) < 0) {
		out("listen failed: %s\n", ename(errno));
		return 2;
	}
	out("listening\n");
	alarm((unsigned)secs);
	for (;;) {
		int c = accept(s, NULL, NULL);
		if (c >= 0) {
			out("accepted\n");
			close(c);
		} else if (errno != EINTR) {
			break;
		}
	}
	return 0;
}

static int a_userns(void)
{
	static const struct {
		const char *name;
		int flag;
	} f[] = {{"unshare_user", CLONE_NEWUSER},     {"unshare_mnt", CLONE_NEWNS},
		 {"unshare_pid", CLONE_NEWPID},	      {"unshare_net", CLONE_NEWNET},
		 {"unshare_ipc", CLONE_NEWIPC},	      {"unshare_uts", CLONE_NEWUTS},
		 {"unshare_cgroup", CLONE_NEWCGROUP}, {"unshare_time", CLONE_NEWTIME}};
	for (size_t i = 0; i < ARRAY_SIZE(f); i++)
		expect_fail(f[i].name, unshare(f[i].flag));
	static const struct {
		const char *name;
		unsigned long flags;
	} c[] = {{"clone_newuser", CLONE_NEWUSER | SIGCHLD},
		 {"clone_newuser_hi32", 0x100000000UL | CLONE_NEWUSER | SIGCHLD},
		 {"clone_newns", CLONE_NEWNS | SIGCHLD},
		 {"clone_newpid", CLONE_NEWPID | SIGCHLD},
		 {"clone_newnet", CLONE_NEWNET | SIGCHLD}};
	for (size_t i = 0; i < ARRAY_SIZE(c); i++) {
		long r = syscall(SYS_clone, c[i].flags, 0, NULL, NULL, 0);
		if (r == 0)
			_exit(0);
		int e = errno;
		if (r > 0)
			waitpid((pid_t)r, NULL, 0);
		errno = e;
		expect_fail(c[i].name, r);
	}
	static const char *const ns[] = {"user", "mnt", "net", "pid", "cgroup"};
	for (size_t i = 0; i < ARRAY_SIZE(ns); i++) {
		char p[64], name[64];
		snprintf(p, sizeof(p), "/proc/1/ns/%s", ns[i]);
		snprintf(name, sizeof(name), "setns_init_%s", ns[i]);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			blocked(name, errno);
			continue;
		}
		expect_fail(name, setns(fd, 0));
		close(fd);
	}
	int self = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	expect_fail("setns_self_user", setns(self, CLONE_NEWUSER));
	close(self);
	self = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	expect_fail("setns_self_mnt", setns(self, CLONE_NEWNS));
	close(self);
	char buf[64] = "";
	read_small("/proc/sys/user/max_user_namespaces", buf, sizeof(buf));
	info("max_user_namespaces %s", strtok(buf, "\n") ? buf : "?");
	return finish();
}

static int a_cgroup(void)
{
	mkdir("/tmp/ajcg", 0755);
	expect_fail("mount_cgroup_v1_memory", mount("cgroup", "/tmp/ajcg", "cgroup", 0, "memory"));
	expect_fail("mount_cgroup_v1_named",
		    mount("cgroup", "/tmp/ajcg", "cgroup", 0, "none,name=ajescape"));
	expect_fail("mount_cgroup_v1_rdma", mount("cgroup", "/tmp/ajcg", "cgroup", 0, "rdma"));
	expect_fail("mount_cgroup2", mount("cgroup2", "/tmp/ajcg", "cgroup2", 0, NULL));
	rmdir("/tmp/ajcg");
	struct stat st;
	expect_fail("stat_sys_fs_cgroup", stat("/sys/fs/cgroup", &st));
	expect_open_fail("release_agent",
			 open("/sys/fs/cgroup/memory/release_agent", O_WRONLY | O_CLOEXEC));
	char pid[32];
	snprintf(pid, sizeof(pid), "%d", getpid());
	int fd = open("/sys/fs/cgroup/cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, pid, strlen(pid)) > 0)
		escaped("cgroup_procs_write", "moved self");
	else
		blocked("cgroup_procs_write", errno);
	if (fd >= 0)
		close(fd);
	/* every line of /proc/self/cgroup must be the namespace's root */
	char buf[4096];
	if (read_small("/proc/self/cgroup", buf, sizeof(buf)) < 0) {
		blocked("proc_self_cgroup", errno);
	} else {
		int bad = 0;
		for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
			size_t n = strlen(l);
			info("cgroup %s", l);
			if (n < 2 || strcmp(l + n - 2, ":/"))
				bad++;
		}
		if (bad)
			escaped("proc_self_cgroup",
				"%d line(s) show a path above the namespace root", bad);
		else
			held("proc_self_cgroup");
	}
	return finish();
}

struct clone_args_v0 {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static void *thread_fn(void *arg)
{
	return arg;
}

static int a_clone3(void)
{
	struct clone_args_v0 a = {.exit_signal = SIGCHLD};
	long r = syscall(SYS_clone3, &a, sizeof(a));
	if (r == 0)
		_exit(0);
	int e = errno;
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	errno = e;
	expect_fail("clone3", r);
	struct clone_args_v0 b = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
	r = syscall(SYS_clone3, &b, sizeof(b));
	if (r == 0)
		_exit(0);
	e = errno;
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	errno = e;
	expect_fail("clone3_newuser", r);
	/* libc must still work: fork and threads fall back to clone */
	pid_t p = fork();
	if (p == 0)
		_exit(7);
	int st = 0;
	if (p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 7)
		info("fork ok");
	else
		info("fork broken: %s", ename(errno));
	pthread_t t;
	void *ret = NULL;
	int pr = pthread_create(&t, NULL, thread_fn, (void *)0x5a);
	if (pr == 0 && pthread_join(t, &ret) == 0 && ret == (void *)0x5a)
		info("pthread ok");
	else
		info("pthread broken: %s", ename(pr));
	return finish();
}

static int a_int80(void)
{
	out("attempt=int80\n");
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) /* i386 getpid */ : "memory", "cc");
	escaped("int80", "i386 getpid returned %ld", ret);
	return finish();
}

static int a_x32(void)
{
	out("attempt=x32\n");
	long r = syscall(X32_SYSCALL_BIT | SYS_getpid);
	int e = errno;
	if (r >= 0)
		escaped("x32", "x32 getpid returned %ld", r);
	else
		escaped("x32", "survived an x32 syscall (errno %s)", ename(e));
	return finish();
}

/* ------------------------------------------------------------ kernel surface */

static int a_io_uring(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	long fd = syscall(SYS_io_uring_setup, 8, &p);
	if (fd >= 0)
		close((int)fd);
	expect_fail("io_uring_setup", fd);
	expect_fail("io_uring_enter", syscall(SYS_io_uring_enter, 0, 1, 0, 0, NULL, 0));
	expect_fail("io_uring_register", syscall(SYS_io_uring_register, 0, 0, NULL, 0));
	return finish();
}

static int a_keyring(void)
{
	expect_fail("add_key",
		    syscall(SYS_add_key, "user", "ajkey", "x", 1, KEY_SPEC_SESSION_KEYRING));
	expect_fail("keyctl_get_id",
		    syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0));
	expect_fail("keyctl_join", syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "ajring"));
	expect_fail("request_key",
		    syscall(SYS_request_key, "user", "ajkey", NULL, KEY_SPEC_SESSION_KEYRING));
	return finish();
}

static int a_bpf(void)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = 1;
	long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a));
	if (fd >= 0)
		close((int)fd);
	expect_fail("bpf_map_create", fd);
	struct bpf_insn prog[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insn_cnt = 2;
	a.insns = (uint64_t)(uintptr_t)prog;
	a.license = (uint64_t)(uintptr_t) "GPL";
	fd = syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
	if (fd >= 0)
		close((int)fd);
	expect_fail("bpf_prog_load", fd);
	return finish();
}

static int a_perf(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.disabled = 1;
	a.exclude_kernel = 1;
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0)
		close((int)fd);
	expect_fail("perf_self", fd);
	a.exclude_kernel = 0;
	fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, 0); /* system-wide, cpu 0 */
	if (fd >= 0)
		close((int)fd);
	expect_fail("perf_cpu0", fd);
	return finish();
}

static int a_userfaultfd(void)
{
	long fd = syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
	if (fd >= 0)
		close((int)fd);
	expect_fail("userfaultfd_user", fd);
	fd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (fd >= 0)
		close((int)fd);
	expect_fail("userfaultfd", fd);
	expect_open_fail("dev_userfaultfd", open("/dev/userfaultfd", O_RDWR | O_CLOEXEC));
	return finish();
}

/* Calls that need host privilege: every one must fail. Arguments are chosen
 * so that even a call that got through would do no harm. */
static int a_privsweep(void)
{
	expect_fail("reboot", syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2,
				      0x0badc0deU, NULL));
	expect_fail("swapon", swapon("/nonexistent-ajswap", 0));
	expect_fail("swapoff", swapoff("/nonexistent-ajswap"));
	expect_fail("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0xdead0000UL));
	expect_fail("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, "", 0));
	expect_fail("init_module", syscall(SYS_init_module, NULL, 0, ""));
	expect_fail("finit_module", syscall(SYS_finit_module, -1, "", 0));
	expect_fail("delete_module", syscall(SYS_delete_module, "ajnonexistent", O_NONBLOCK));
	struct timeval tv;
	gettimeofday(&tv, NULL);
	expect_fail("settimeofday", settimeofday(&tv, NULL));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	expect_fail("clock_settime", clock_settime(CLOCK_REALTIME, &ts));
	expect_fail("acct", acct("/nonexistent-ajacct"));
	expect_fail("syslog_size", syscall(SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0));
	expect_fail("syslog_read_all", syscall(SYS_syslog, 3 /* READ_ALL */, (char[64]){0}, 64));
	expect_fail("quotactl_sync", quotactl(QCMD(Q_SYNC, USRQUOTA), NULL, 0, NULL));
	expect_fail("iopl", syscall(SYS_iopl, 3));
	expect_fail("ioperm", syscall(SYS_ioperm, 0x80, 1, 1));
	expect_fail("personality_rie", syscall(SYS_personality, READ_IMPLIES_EXEC));
	expect_fail("personality_addr_no_randomize", syscall(SYS_personality, ADDR_NO_RANDOMIZE));
	long per = syscall(SYS_personality, 0xffffffffUL);
	info("personality now 0x%lx", per);
	if (per != 0)
		escaped("personality_state", "personality is 0x%lx", per);
	expect_fail("sethostname", sethostname("ajescape", 8));
	expect_fail("vhangup", vhangup());
	expect_fail("fanotify_init", syscall(SYS_fanotify_init, FAN_CLASS_NOTIF, O_RDONLY));
	unsigned long mask = 1;
	expect_fail("migrate_pages_1", syscall(SYS_migrate_pages, 1, 64, &mask, &mask));
	struct sched_param sp = {.sched_priority = 50};
	expect_fail("sched_fifo", sched_setscheduler(0, SCHED_FIFO, &sp));
	expect_fail("nice_minus_20", setpriority(PRIO_PROCESS, 0, -20));
	return finish();
}

static int sock3(const char *name, unsigned long fam, int type, unsigned long proto)
{
	long s = syscall(SYS_socket, fam, type | SOCK_CLOEXEC, proto);
	int e = errno;
	if (s >= 0)
		close((int)s);
	errno = e;
	expect_fail(name, s);
	return 0;
}

static int a_rawsock(void)
{
	sock3("packet_raw", AF_PACKET, SOCK_RAW, 0x0300 /* htons(ETH_P_ALL) */);
	sock3("packet_dgram", AF_PACKET, SOCK_DGRAM, 0x0300);
	sock3("packet_raw_hi32", 0x100000000UL | AF_PACKET, SOCK_RAW, 0x0300);
	sock3("inet_sock_packet", AF_INET, SOCK_PACKET, 0x0300);
	sock3("inet_raw_icmp", AF_INET, SOCK_RAW, IPPROTO_ICMP);
	sock3("inet_raw_raw", AF_INET, SOCK_RAW, IPPROTO_RAW);
	sock3("inet6_raw_icmpv6", AF_INET6, SOCK_RAW, IPPROTO_ICMPV6);
	return finish();
}

static int a_vsock(void)
{
	sock3("vsock_stream", AF_VSOCK, SOCK_STREAM, 0);
	sock3("vsock_dgram", AF_VSOCK, SOCK_DGRAM, 0);
	sock3("vsock_seqpacket", AF_VSOCK, SOCK_SEQPACKET, 0);
	sock3("vsock_stream_hi32", 0x100000000UL | AF_VSOCK, SOCK_STREAM, 0);
	return finish();
}

static int a_netlink(void)
{
	static const struct {
		const char *name;
		unsigned long proto;
	} p[] = {{"netlink_sock_diag", NETLINK_SOCK_DIAG},
		 {"netlink_audit", NETLINK_AUDIT},
		 {"netlink_kobject_uevent", NETLINK_KOBJECT_UEVENT},
		 {"netlink_netfilter", NETLINK_NETFILTER},
		 {"netlink_generic", NETLINK_GENERIC},
		 {"netlink_xfrm", NETLINK_XFRM},
		 {"netlink_connector", NETLINK_CONNECTOR},
		 {"netlink_selinux", NETLINK_SELINUX},
		 {"netlink_crypto", NETLINK_CRYPTO},
		 {"netlink_rdma", NETLINK_RDMA},
		 {"netlink_audit_hi32", 0x100000000UL | NETLINK_AUDIT}};
	for (size_t i = 0; i < ARRAY_SIZE(p); i++)
		sock3(p[i].name, AF_NETLINK, SOCK_RAW, p[i].proto);
	sock3("netlink_audit_fam_hi32", 0x100000000UL | AF_NETLINK, SOCK_RAW, NETLINK_AUDIT);
	sock3("netlink_audit_dgram", AF_NETLINK, SOCK_DGRAM, NETLINK_AUDIT);
	int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	info("netlink_route %s", s >= 0 ? "allowed" : ename(errno));
	if (s >= 0)
		close(s);
	return finish();
}

/* ------------------------------------------------------------ resources */

/* Fork until the kernel refuses; children wait to be killed by teardown. */
static int a_forkbomb(int max)
{
	int n = 0, e = 0;
	for (int i = 0; i < max; i++) {
		pid_t p = fork();
		if (p == 0) {
			for (;;)
				pause();
		}
		if (p < 0) {
			e = errno;
			break;
		}
		n++;
	}
	info("forks %d", n);
	if (e)
		blocked("fork", e);
	else
		escaped("fork", "%d processes forked without a limit", n);
	return finish();
}

/* The real thing: every process forks forever (and burns CPU). */
static _Noreturn void a_forkbomb_wild(void)
{
	out("attempt=forkbomb\n");
	for (;;)
		fork();
}

/* Touch MAX_MB MiB, one MiB at a time; then hold it HOLD seconds. */
static int a_membomb(long max_mb, int hold)
{
	out("attempt=membomb\n");
	long mb = 0;
	for (; mb < max_mb; mb++) {
		char *p =
		    mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			blocked("mmap", errno);
			return finish();
		}
		memset(p, 0x5a, 1 << 20);
	}
	if (hold > 0)
		sleep((unsigned)hold);
	escaped("membomb", "touched %ld MiB", mb);
	return finish();
}

/* Write 1 MiB blocks into DIR/ajfill until the filesystem says no. */
static int a_fill(const char *dir, long max_mb)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/ajfill", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		blocked("open", errno);
		return finish();
	}
	static char block[1 << 20];
	memset(block, 'x', sizeof(block));
	long long total = 0;
	int e = 0;
	while (total < (long long)max_mb << 20) {
		ssize_t w = write(fd, block, sizeof(block));
		if (w < 0) {
			e = errno;
			break;
		}
		total += w;
		if (w == 0)
			break;
	}
	close(fd);
	info("written %lld", total);
	if (e)
		blocked("fill", e);
	else
		escaped("fill", "wrote %lld bytes into %s", total, dir);
	return finish();
}

static int a_inodefill(const char *dir, long max)
{
	long n = 0;
	int e = 0;
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/ajinodes", dir);
	if (mkdir(p, 0755) < 0) {
		blocked("mkdir", errno);
		return finish();
	}
	for (; n < max; n++) {
		snprintf(p, sizeof(p), "%s/ajinodes/%ld", dir, n);
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			e = errno;
			break;
		}
		close(fd);
	}
	info("files %ld", n);
	if (e)
		blocked("inodefill", e);
	else
		escaped("inodefill", "created %ld files in %s", n, dir);
	return finish();
}

/* N processes burning CPU; with "ignore_term" they also ignore SIGTERM. */
static _Noreturn void a_spin(int n, bool ignore_term)
{
	if (ignore_term)
		signal(SIGTERM, SIG_IGN);
	for (int i = 1; i < n; i++)
		if (fork() == 0)
			break;
	out("attempt=spin\n");
	volatile unsigned long x = 0;
	for (;;)
		x++;
}

/* Write to stdout as fast as possible, forever (named TAG). */
static _Noreturn void a_flood(const char *tag)
{
	prctl(PR_SET_NAME, tag, 0, 0, 0);
	static char buf[1 << 16];
	memset(buf, 'y', sizeof(buf));
	for (;;)
		if (write(1, buf, sizeof(buf)) < 0 && errno != EINTR)
			_exit(errno == EPIPE ? 0 : 1);
}

/* kill(-1, SIGKILL): everything this process may signal.  In the sandbox
 * that is its own processes only: agentjail and the host are out of reach. */
static int a_killall(void)
{
	signal(SIGTERM, SIG_IGN);
	long r = kill(-1, SIGKILL);
	info("kill(-1, SIGKILL) = %ld (%s)", r, r < 0 ? ename(errno) : "ok");
	r = kill(-1, SIGTERM);
	info("kill(-1, SIGTERM) = %ld (%s)", r, r < 0 ? ename(errno) : "ok");
	out("alive\n");
	return 0;
}

static void raise_limit(const char *name, int res)
{
	struct rlimit r;
	getrlimit(res, &r);
	if (r.rlim_max == RLIM_INFINITY) {
		/* lower it first (allowed), then try to get it back */
		struct rlimit low = {r.rlim_cur == RLIM_INFINITY ? 4096 : r.rlim_cur,
				     r.rlim_cur == RLIM_INFINITY ? 4096 : r.rlim_cur};
		if (setrlimit(res, &low) < 0) {
			escaped(name, "cannot even lower it: %s", ename(errno));
			return;
		}
		r = low;
	}
	info("%s cur=%llu max=%llu", name, (unsigned long long)r.rlim_cur,
	     (unsigned long long)r.rlim_max);
	struct rlimit up = {r.rlim_max + 1, r.rlim_max + 1};
	expect_fail(name, setrlimit(res, &up));
}

static int a_rlimit(void)
{
	raise_limit("raise_nofile", RLIMIT_NOFILE);
	raise_limit("raise_nproc", RLIMIT_NPROC);
	raise_limit("raise_fsize", RLIMIT_FSIZE);
	raise_limit("raise_memlock", RLIMIT_MEMLOCK);
	struct rlimit r;
	getrlimit(RLIMIT_NOFILE, &r);
	struct rlimit up = {r.rlim_max + 1, r.rlim_max + 1};
	expect_fail("prlimit_self_nofile", prlimit(0, RLIMIT_NOFILE, &up, NULL));
	struct rlimit big = {RLIM_INFINITY, RLIM_INFINITY};
	expect_fail("prlimit_init_nofile", prlimit(1, RLIMIT_NOFILE, &big, NULL));
	/* open files until the soft limit bites */
	getrlimit(RLIMIT_NOFILE, &r);
	long n = 0;
	int e = 0;
	for (; n < 1 << 20; n++)
		if (open("/dev/null", O_RDONLY) < 0) {
			e = errno;
			break;
		}
	info("opened %ld (limit %llu)", n, (unsigned long long)r.rlim_cur);
	if (e && (unsigned long long)n < r.rlim_cur)
		blocked("open_many", e);
	else
		escaped("open_many", "opened %ld files, limit %llu", n,
			(unsigned long long)r.rlim_cur);
	return finish();
}

static int a_fsize(const char *path, long mb)
{
	signal(SIGXFSZ, SIG_IGN);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		blocked("open", errno);
		return finish();
	}
	static char block[1 << 16];
	long long total = 0;
	int e = 0;
	while (total < (long long)mb << 20) {
		ssize_t w = write(fd, block, sizeof(block));
		if (w <= 0) {
			e = w < 0 ? errno : ENOSPC;
			break;
		}
		total += w;
	}
	close(fd);
	unlink(path);
	info("written %lld", total);
	if (e)
		blocked("fsize", e);
	else
		escaped("fsize", "wrote %lld bytes", total);
	return finish();
}

/* Double fork + setsid: a daemon named TAG that tries to outlive the run.
 * With "keepfds" it also keeps stdout/stderr open (the relay's pipes). */
static int a_orphan(const char *tag, bool keepfds)
{
	int ready[2];
	if (pipe(ready) < 0)
		return 2;
	pid_t c = fork();
	if (c == 0) {
		setsid();
		pid_t g = fork();
		if (g == 0) {
			prctl(PR_SET_NAME, tag, 0, 0, 0);
			signal(SIGHUP, SIG_IGN);
			signal(SIGTERM, SIG_IGN);
			if (write(ready[1], "r", 1) < 0)
				_exit(1);
			close(ready[0]);
			close(ready[1]);
			if (!keepfds) {
				int n = open("/dev/null", O_RDWR);
				dup2(n, 0);
				dup2(n, 1);
				dup2(n, 2);
			}
			for (int i = 0; i < 600; i++)
				sleep(1);
			_exit(0);
		}
		char b;
		close(ready[1]);
		if (g > 0 && read(ready[0], &b, 1) == 1)
			out("orphan pid=%d\n", g);
		_exit(0);
	}
	close(ready[0]);
	close(ready[1]);
	waitpid(c, NULL, 0);
	return 0;
}

/* N children and self, all named TAG, waiting forever. */
static int a_spawn(const char *tag, int n)
{
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0) {
			prctl(PR_SET_NAME, tag, 0, 0, 0);
			for (int k = 0; k < 600; k++)
				sleep(1);
			_exit(0);
		}
	}
	prctl(PR_SET_NAME, tag, 0, 0, 0);
	out("spawned %d\n", n);
	for (int k = 0; k < 600; k++)
		sleep(1);
	return 0;
}

/* ------------------------------------------------------------ secrets */

static void scan_file(const char *path, const char *needle, int *unreadable)
{
	static char buf[1 << 20];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		(*unreadable)++;
		return;
	}
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(buf) && (r = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)r;
	if (r < 0 && n == 0)
		(*unreadable)++;
	close(fd);
	if (memmem(buf, n, needle, strlen(needle)))
		escaped("secret", "found in %s", path);
}

/* Look for needle in every file below dir (bounded, no symlinks). */
static void scan_tree(const char *dir, const char *needle, int depth, int *files)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && *files < 50000) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[PATH_MAX];
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= sizeof(p))
			continue;
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 16) {
			scan_tree(p, needle, depth + 1, files);
		} else if (S_ISREG(st.st_mode)) {
			int unreadable = 0;
			(*files)++;
			scan_file(p, needle, &unreadable);
		}
	}
	closedir(d);
}

/* The canary is given reversed so that our own cmdline does not hold it. */
static int a_scan_secret(const char *reversed, bool pid1_only)
{
	size_t n = strlen(reversed);
	char *needle = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		needle[i] = reversed[n - 1 - i];
	needle[n] = 0;
	int unreadable = 0, scanned = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!is_num(e->d_name) || (pid1_only && strcmp(e->d_name, "1")))
			continue;
		static const char *const files[] = {"environ", "cmdline", "comm"};
		for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
			char p[PATH_MAX];
			snprintf(p, sizeof(p), "/proc/%s/%s", e->d_name, files[i]);
			scan_file(p, needle, &unreadable);
			scanned++;
		}
	}
	if (d)
		closedir(d);
	info("scanned %d unreadable %d", scanned, unreadable);
	if (!pid1_only) {
		/* and every file the sandbox can read outside the host's system dirs */
		static const char *const dirs[] = {"/etc",	 "/tmp",     "/home",
						   "/workspace", "/dev/shm", "/run",
						   "/var",	 "/root",    "/"};
		int files = 0;
		for (size_t i = 0; i < ARRAY_SIZE(dirs) - 1; i++)
			scan_tree(dirs[i], needle, 0, &files);
		/* files right in / (not the system trees) */
		DIR *r = opendir("/");
		while (r && (e = readdir(r))) {
			char p[PATH_MAX];
			struct stat st;
			snprintf(p, sizeof(p), "/%s", e->d_name);
			if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) {
				int u = 0;
				files++;
				scan_file(p, needle, &u);
			}
		}
		if (r)
			closedir(r);
		info("files %d", files);
	}
	if (!n_escaped)
		held("secret");
	free(needle);
	return finish();
}

static void b64(const unsigned char *in, size_t n, char *outb)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		outb[o++] = t[(v >> 18) & 63];
		outb[o++] = t[(v >> 12) & 63];
		outb[o++] = i + 1 < n ? t[(v >> 6) & 63] : '=';
		outb[o++] = i + 2 < n ? t[v & 63] : '=';
	}
	outb[o] = 0;
}

static void pause_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

static void wr(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Leak a value (read from FILE, e.g. one the user left in the workspace)
 * through the output in every way the redactor claims to cover. */
static int a_leak(const char *file)
{
	char v[256];
	if (read_small(file, v, sizeof(v)) <= 0) {
		out("cannot read %s\n", file);
		return 2;
	}
	v[strcspn(v, "\r\n")] = 0;
	size_t n = strlen(v);
	char line[1024];
	snprintf(line, sizeof(line), "raw %s\n", v);
	wr(1, line, strlen(line));
	/* split across three writes, with pauses in between */
	wr(1, "split ", 6);
	wr(1, v, n / 3);
	pause_ms(60);
	wr(1, v + n / 3, n / 3);
	pause_ms(60);
	wr(1, v + 2 * (n / 3), n - 2 * (n / 3));
	wr(1, "\n", 1);
	/* one byte per write */
	wr(1, "bytes ", 6);
	for (size_t i = 0; i < n; i++) {
		wr(1, v + i, 1);
		pause_ms(2);
	}
	wr(1, "\n", 1);
	/* base64 at the three alignments */
	for (int a = 0; a < 3; a++) {
		unsigned char buf[300];
		memcpy(buf, "xy", (size_t)a);
		memcpy(buf + a, v, n);
		char enc[512];
		b64(buf, n + (size_t)a, enc);
		snprintf(line, sizeof(line), "b64_%d %s\n", a, enc);
		wr(1, line, strlen(line));
	}
	snprintf(line, sizeof(line), "stderr %s\n", v);
	wr(2, line, strlen(line));
	/* half on stdout, half on stderr (each stream alone never holds it) */
	snprintf(line, sizeof(line), "cross_out %.*s\n", (int)(n / 2), v);
	wr(1, line, strlen(line));
	snprintf(line, sizeof(line), "cross_err %s\n", v + n / 2);
	wr(2, line, strlen(line));
	return 0;
}

static int a_creds(int argc, char **argv)
{
	static const char *const paths[] = {"/root",
					    "/root/.ssh",
					    "/etc/shadow",
					    "/etc/gshadow",
					    "/etc/ssh",
					    "/etc/sudoers",
					    "/etc/machine-id",
					    "/var",
					    "/run",
					    "/home/agent/.ssh",
					    "/etc/ssh/ssh_host_ed25519_key",
					    "/etc/pip.conf",
					    "/etc/npmrc",
					    "/proc/1/root/root"};
	for (size_t i = 0; i < ARRAY_SIZE(paths) + (size_t)argc; i++) {
		const char *p = i < ARRAY_SIZE(paths) ? paths[i] : argv[i - ARRAY_SIZE(paths)];
		char name[128];
		snprintf(name, sizeof(name), "cred%s", p);
		for (char *c = name; *c; c++)
			if (*c == '/' || *c == '.' || *c == '-')
				*c = '_';
		struct stat st;
		expect_fail(name, stat(p, &st));
	}
	DIR *d = opendir("/home");
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "agent"))
			escaped("home_entry", "/home/%s", e->d_name);
	if (d)
		closedir(d);
	return finish();
}

/* Landlock: writes outside the writable areas fail even where the mount
 * itself is writable (/dev is a rw tmpfs, /proc is rw). */
static int a_landlock(void)
{
	int fd = open("/ajescape", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		unlink("/ajescape");
	expect_open_fail("create_in_root", fd);
	fd = open("/etc/ajescape", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		unlink("/etc/ajescape");
	expect_open_fail("create_in_etc", fd);
	fd = open("/dev/ajescape", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		unlink("/dev/ajescape");
	expect_open_fail("create_in_dev", fd);
	if (mkdir("/dev/ajdir", 0755) == 0) {
		rmdir("/dev/ajdir");
		escaped("mkdir_in_dev", "made /dev/ajdir");
	} else {
		blocked("mkdir_in_dev", errno);
	}
	if (symlink("/workspace", "/dev/ajlink") == 0) {
		unlink("/dev/ajlink");
		escaped("symlink_in_dev", "made /dev/ajlink");
	} else {
		blocked("symlink_in_dev", errno);
	}
	if (unlink("/dev/null") == 0)
		escaped("unlink_dev_null", "removed /dev/null");
	else
		blocked("unlink_dev_null", errno);
	if (rename("/dev/zero", "/dev/ajzero") == 0)
		escaped("rename_dev_zero", "renamed /dev/zero");
	else
		blocked("rename_dev_zero", errno);
	expect_open_fail("write_proc_self_comm", open("/proc/self/comm", O_WRONLY | O_CLOEXEC));
	expect_fail("truncate_attack", truncate("/attack", 0));
	expect_fail("chmod_usr_bin", chmod("/usr/bin", 0777));
	/* the writable areas do work */
	static const char *const ok[] = {"/workspace/ajok", "/tmp/ajok", "/home/agent/ajok",
					 "/dev/shm/ajok"};
	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		fd = open(ok[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		bool w = fd >= 0 && write(fd, "ok\n", 3) == 3;
		info("write %s %s", ok[i], w ? "ok" : ename(errno));
		if (fd >= 0)
			close(fd);
		unlink(ok[i]);
	}
	return finish();
}

static int a_kinfo(void)
{
	char buf[4096];
	long n = read_small("/proc/kallsyms", buf, sizeof(buf));
	if (n <= 0) {
		blocked("kallsyms", errno);
	} else {
		unsigned long long addr = 1;
		char sym[128] = "";
		sscanf(buf, "%llx %*s %127s", &addr, sym);
		info("kallsyms first %016llx %s", addr, sym);
		if (addr != 0)
			escaped("kallsyms", "kernel address %llx of %s visible", addr, sym);
		else
			held("kallsyms");
	}
	expect_open_fail("kcore", open("/proc/kcore", O_RDONLY | O_CLOEXEC));
	expect_open_fail("kmsg", open("/proc/kmsg", O_RDONLY | O_CLOEXEC));
	expect_open_fail("kpagecount", open("/proc/kpagecount", O_RDONLY | O_CLOEXEC));
	return finish();
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
	fputs("usage: ajattack ATTACK [ARGS...]   (see tests/security/README.md)\n", stderr);
	exit(2);
}

#define ARG(i) (argc > (i) ? argv[i] : (usage(), ""))

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *c = argv[1];
	argc -= 1;
	argv += 1;
	if (!strcmp(c, "fds"))
		return a_fds();
	if (!strcmp(c, "fd_write"))
		return a_fd_write(atoi(ARG(1)), ARG(2));
	if (!strcmp(c, "init_fds"))
		return a_init_fds();
	if (!strcmp(c, "cwd"))
		return a_cwd();
	if (!strcmp(c, "exe_write"))
		return a_exe_write();
	if (!strcmp(c, "proc_write"))
		return a_proc_write();
	if (!strcmp(c, "sys"))
		return a_sys();
	if (!strcmp(c, "remount"))
		return a_remount();
	if (!strcmp(c, "newmount"))
		return a_newmount();
	if (!strcmp(c, "chroot"))
		return a_chroot();
	if (!strcmp(c, "pivot_root"))
		return a_pivot_root();
	if (!strcmp(c, "symlink_write"))
		return a_symlink_write(ARG(1), ARG(2));
	if (!strcmp(c, "read_planted"))
		return a_read_planted(ARG(1), argc > 2 ? argv[2] : NULL);
	if (!strcmp(c, "handle"))
		return a_handle();
	if (!strcmp(c, "proc1root"))
		return a_proc1root();
	if (!strcmp(c, "mknod"))
		return a_mknod();
	if (!strcmp(c, "devscan"))
		return a_devscan();
	if (!strcmp(c, "privstate"))
		return a_privstate();
	if (!strcmp(c, "setuid"))
		return a_setuid();
	if (!strcmp(c, "caps_raise"))
		return a_caps_raise();
	if (!strcmp(c, "ids"))
		return a_ids();
	if (!strcmp(c, "suid_exec"))
		return a_suid_exec(argc - 1, argv + 1);
	if (!strcmp(c, "suid_copy"))
		return a_suid_copy(ARG(1));
	if (!strcmp(c, "ptrace1"))
		return a_ptrace1();
	if (!strcmp(c, "kill1"))
		return a_kill1();
	if (!strcmp(c, "tiocsti"))
		return a_tty_ioctl(false);
	if (!strcmp(c, "tioclinux"))
		return a_tty_ioctl(true);
	if (!strcmp(c, "hostsock"))
		return a_hostsock(argc - 1, argv + 1);
	if (!strcmp(c, "listen_abstract"))
		return a_listen_abstract(ARG(1), argc > 2 ? atoi(argv[2]) : 30);
	if (!strcmp(c, "userns"))
		return a_userns();
	if (!strcmp(c, "cgroup"))
		return a_cgroup();
	if (!strcmp(c, "clone3"))
		return a_clone3();
	if (!strcmp(c, "int80"))
		return a_int80();
	if (!strcmp(c, "x32"))
		return a_x32();
	if (!strcmp(c, "io_uring"))
		return a_io_uring();
	if (!strcmp(c, "keyring"))
		return a_keyring();
	if (!strcmp(c, "bpf"))
		return a_bpf();
	if (!strcmp(c, "perf"))
		return a_perf();
	if (!strcmp(c, "userfaultfd"))
		return a_userfaultfd();
	if (!strcmp(c, "privsweep"))
		return a_privsweep();
	if (!strcmp(c, "rawsock"))
		return a_rawsock();
	if (!strcmp(c, "vsock"))
		return a_vsock();
	if (!strcmp(c, "netlink"))
		return a_netlink();
	if (!strcmp(c, "forkbomb"))
		return a_forkbomb(argc > 1 ? atoi(argv[1]) : 100000);
	if (!strcmp(c, "forkbomb_wild"))
		a_forkbomb_wild();
	if (!strcmp(c, "membomb"))
		return a_membomb(argc > 1 ? atol(argv[1]) : 1024, argc > 2 ? atoi(argv[2]) : 0);
	if (!strcmp(c, "fill"))
		return a_fill(ARG(1), argc > 2 ? atol(argv[2]) : 2048);
	if (!strcmp(c, "inodefill"))
		return a_inodefill(ARG(1), argc > 2 ? atol(argv[2]) : 1000000);
	if (!strcmp(c, "spin"))
		a_spin(argc > 1 ? atoi(argv[1]) : 1, argc > 2 && !strcmp(argv[2], "ignore_term"));
	if (!strcmp(c, "killall"))
		return a_killall();
	if (!strcmp(c, "flood"))
		a_flood(ARG(1));
	if (!strcmp(c, "rlimit"))
		return a_rlimit();
	if (!strcmp(c, "fsize"))
		return a_fsize(ARG(1), argc > 2 ? atol(argv[2]) : 64);
	if (!strcmp(c, "orphan"))
		return a_orphan(ARG(1), argc > 2 && !strcmp(argv[2], "keepfds"));
	if (!strcmp(c, "spawn"))
		return a_spawn(ARG(1), argc > 2 ? atoi(argv[2]) : 4);
	if (!strcmp(c, "scan_secret"))
		return a_scan_secret(ARG(1), argc > 2 && !strcmp(argv[2], "pid1"));
	if (!strcmp(c, "creds"))
		return a_creds(argc - 1, argv + 1);
	if (!strcmp(c, "leak"))
		return a_leak(ARG(1));
	if (!strcmp(c, "landlock"))
		return a_landlock();
	if (!strcmp(c, "kinfo"))
		return a_kinfo();
	usage();
	return 2;
}
