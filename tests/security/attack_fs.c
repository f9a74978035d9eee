/* SPDX-License-Identifier: MIT */
/* ajattack: fds, cwd and the filesystem walls. */
#include "attack.h"

/* ------------------------------------------------------------ fds and cwd */

/* Only 0, 1, 2 and the directory fd of this very listing may be open. */
int a_fds(void)
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
int a_fd_write(int fd, const char *text)
{
	ssize_t w = write(fd, text, strlen(text));
	if (w < 0)
		blocked("fd_write", errno);
	else
		escaped("fd_write", "wrote %zd bytes to inherited fd %d", w, fd);
	return finish();
}

/* The fds init (pid 1) holds must not hand out a host file or directory. */
int a_init_fds(void)
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
int a_cwd(void)
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

int a_exe_write(void)
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

int a_proc_write(void)
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

int a_sys(void)
{
	struct stat st;
	expect_fail("sys_stat", stat("/sys", &st));
	expect_fail("sys_cgroup_procs", open("/sys/fs/cgroup/cgroup.procs", O_WRONLY | O_CLOEXEC));
	mkdir("/tmp/ajsys", 0755);
	expect_fail("sysfs_mount", mount("sysfs", "/tmp/ajsys", "sysfs", 0, NULL));
	rmdir("/tmp/ajsys");
	return finish();
}

int a_remount(void)
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

int a_newmount(void)
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

int a_chroot(void)
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

int a_pivot_root(void)
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
int a_symlink_write(const char *name, const char *target)
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
int a_read_planted(const char *path, const char *secret_marker)
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

int a_handle(void)
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
int a_proc1root(void)
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

int a_mknod(void)
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
void scan_dev(const char *dir, int depth)
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

int a_devscan(void)
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
