/* SPDX-License-Identifier: MIT */
/* ajattack: resources: bombs, fills, floods, spin, rlimits, orphans. */
#include "attack.h"

/* ------------------------------------------------------------ resources */

/* Fork until the kernel refuses; children wait to be killed by teardown. */
int a_forkbomb(int max)
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
_Noreturn void a_forkbomb_wild(void)
{
	out("attempt=forkbomb\n");
	for (;;)
		fork();
}

/* Touch MAX_MB MiB, one MiB at a time; then hold it HOLD seconds. */
int a_membomb(long max_mb, int hold)
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
int a_fill(const char *dir, long max_mb)
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

int a_inodefill(const char *dir, long max)
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
_Noreturn void a_spin(int n, bool ignore_term)
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
_Noreturn void a_flood(const char *tag)
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
int a_killall(void)
{
	signal(SIGTERM, SIG_IGN);
	long r = kill(-1, SIGKILL);
	info("kill(-1, SIGKILL) = %ld (%s)", r, r < 0 ? ename(errno) : "ok");
	r = kill(-1, SIGTERM);
	info("kill(-1, SIGTERM) = %ld (%s)", r, r < 0 ? ename(errno) : "ok");
	out("alive\n");
	return 0;
}

void raise_limit(const char *name, int res)
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

int a_rlimit(void)
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

int a_fsize(const char *path, long mb)
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
int a_orphan(const char *tag, bool keepfds)
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
int a_spawn(const char *tag, int n)
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

/* TCP socket buffers as memory: PAIRS loopback connections, each end's
 * send and receive buffers raised and filled without reading, until
 * MAX_MB MiB are queued or the kernel stops the writes; then HOLD seconds
 * (the host reads the sandbox's cgroup meanwhile). The kernel memory
 * behind it must be charged to the sandbox's memory limit (escaped when
 * more than LIMIT_MB MiB got queued). */
int a_tcpbuf(int pairs, long max_mb, long limit_mb, int hold)
{
	out("attempt=tcpbuf\n");
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1024) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) < 0) {
		blocked("listen", errno);
		return finish();
	}
	static char block[1 << 16];
	memset(block, 'x', sizeof(block));
	long long total = 0, max = (long long)max_mb << 20;
	int stalled = 0, e = 0, n = 0, big = 64 << 20;
	for (; n < pairs && total < max && !e; n++) {
		int fd[2] = {socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), -1};
		for (int k = 0; k < 2; k++) {
			if (k == 1 && (connect(fd[0], (struct sockaddr *)&a, sizeof(a)) < 0 ||
				       (fd[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0))
				break;
			if (fd[k] < 0)
				break;
			/* capped by net.core.[wr]mem_max; doubled by the kernel */
			setsockopt(fd[k], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
			setsockopt(fd[k], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
		}
		if (fd[0] < 0 || fd[1] < 0) {
			e = errno;
			break;
		}
		for (int k = 0; k < 2 && total < max; k++) {
			fcntl(fd[k], F_SETFL, O_NONBLOCK);
			for (;;) {
				ssize_t w = write(fd[k], block, sizeof(block));
				if (w > 0 && (total += w) < max)
					continue;
				if (w < 0 && errno != EAGAIN)
					e = errno;
				stalled += w < 0 && errno == EAGAIN;
				break;
			}
		}
	}
	info("tcp_pairs %d", n);
	info("tcp_queued_mb %lld", total >> 20);
	out("filled\n");
	if (hold > 0)
		sleep((unsigned)hold);
	if (total > (long long)limit_mb << 20)
		escaped("tcpbuf", "%lld MiB queued in socket buffers (limit %ld MiB)", total >> 20,
			limit_mb);
	else
		blocked("tcpbuf", e ? e : EAGAIN);
	return finish();
}
