/* SPDX-License-Identifier: MIT */
/* ajattack: privilege, processes, terminals, host sockets, namespaces, ABIs. */
#include "attack.h"

/* ------------------------------------------------------------ privilege */

int a_privstate(void)
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

int a_setuid(void)
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

int a_caps_raise(void)
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
int a_ids(void)
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
int a_suid_exec(int argc, char **argv)
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
int a_suid_copy(const char *dst)
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

int a_ptrace1(void)
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

bool init_alive(void)
{
	char buf[512];
	if (read_small("/proc/1/stat", buf, sizeof(buf)) <= 0)
		return false;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

int a_kill1(void)
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
int a_tty_ioctl(bool linux_req)
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

int connect_unix(const char *name, bool abstract)
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
int a_hostsock(int argc, char **argv)
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
int a_listen_abstract(const char *name, int secs)
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

int a_userns(void)
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

int a_cgroup(void)
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

void *thread_fn(void *arg)
{
	return arg;
}

int a_clone3(void)
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

int a_int80(void)
{
	out("attempt=int80\n");
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) /* i386 getpid */ : "memory", "cc");
	escaped("int80", "i386 getpid returned %ld", ret);
	return finish();
}

int a_x32(void)
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
