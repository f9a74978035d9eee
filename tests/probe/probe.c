/* ajprobe: a tiny static program run inside agentjail sandboxes by the
 * integration tests.  Every subcommand prints simple `key=value` lines.
 * Single file, libc only, C17 + _GNU_SOURCE.  Run without arguments for usage. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "EUNKNOWN";
}

static int fail(const char *what)
{
	printf("error=%s%s%s\n", what ? what : "", what ? ":" : "", ename(errno));
	return 1;
}

static void msleep(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		continue;
}

static void spawn_sleepers(int n, long ms)
{
	for (int i = 0; i < n; i++)
		if (fork() == 0) {
			msleep(ms);
			_exit(0);
		}
}

static int is_numeric(const char *s)
{
	return *s && s[strspn(s, "0123456789")] == '\0';
}

static int cmd_ids(void)
{
	gid_t g[256];
	int n = getgroups(256, g);
	printf("uid=%u\ngid=%u\neuid=%u\negid=%u\ngroups=", (unsigned)getuid(), (unsigned)getgid(),
	       (unsigned)geteuid(), (unsigned)getegid());
	for (int i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", (unsigned)g[i]);
	return printf("\n") < 0;
}

/* Capability, NoNewPrivs and Seccomp lines of /proc/self/status. */
static int cmd_caps(void)
{
	static const char *keys[] = {"CapInh", "CapPrm",     "CapEff",	"CapBnd",
				     "CapAmb", "NoNewPrivs", "Seccomp", NULL};
	char line[512];
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return fail(NULL);
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		for (int i = 0; keys[i]; i++)
			if (strcmp(line, keys[i]) == 0)
				printf("%s=%s", line, colon + 1 + strspn(colon + 1, " \t"));
	}
	fclose(f);
	return 0;
}

static int cmd_read(const char *path)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(NULL);
	while ((n = read(fd, buf, sizeof buf)) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	return n < 0 ? fail(NULL) : close(fd) & 0;
}

static int cmd_write(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(NULL);
	if (write(fd, text, len) != (ssize_t)len || close(fd) < 0)
		return fail(NULL);
	printf("written=%s\n", path);
	return 0;
}

static int cmd_readlink(int argc, char **argv)
{
	char buf[4096];
	int rc = 0;
	for (int i = 0; i < argc; i++) {
		ssize_t n = readlink(argv[i], buf, sizeof buf - 1);
		buf[n < 0 ? 0 : n] = '\0';
		printf("%s=%s%s\n", argv[i], n < 0 ? "error:" : buf, n < 0 ? ename(errno) : "");
		rc |= n < 0;
	}
	return rc;
}

static int cmd_ls(const char *dir)
{
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort);
	if (n < 0)
		return fail(NULL);
	for (int i = 0; i < n; i++) {
		if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, ".."))
			printf("%s\n", list[i]->d_name);
		free(list[i]);
	}
	free(list);
	return 0;
}

static int cmd_tty(void)
{
	for (int fd = 0; fd < 3; fd++) {
		const char *n = isatty(fd) ? ttyname(fd) : NULL;
		printf("fd%d_isatty=%d\nfd%d_ttyname=%s\n", fd, isatty(fd), fd, n ? n : "");
	}
	printf("sid=%d\npgid=%d\n", (int)getsid(0), (int)getpgrp());
	return 0;
}

/* Try to push a harmless character into a terminal's input queue. */
static int try_tiocsti(const char *label, int fd)
{
	char c = '#';
	if (ioctl(fd, TIOCSTI, &c) == 0) {
		printf("%s=ok\n", label);
		return 1;
	}
	printf("%s=%s\n", label, ename(errno));
	return 0;
}

static int cmd_tiocsti(void)
{
	int ok = try_tiocsti("fd0", 0) + try_tiocsti("fd1", 1) + try_tiocsti("fd2", 2);
	int t = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t < 0)
		printf("devtty=open:%s\n", ename(errno));
	ok += t >= 0 ? try_tiocsti("devtty", t) : 0;
	close(t);
	printf("injected=%d\n", ok);
	return ok ? 1 : 0;
}

/* Double-fork + setsid a sleeper (comm NAME) that outlives us; print its pid. */
static int cmd_orphan(const char *name)
{
	int p[2];
	pid_t gc = -1, c;
	if (pipe(p) < 0 || (c = fork()) < 0)
		return fail("fork");
	if (c == 0) {
		setsid();
		if ((gc = fork()) == 0) {
			int null = open("/dev/null", O_RDWR);
			for (int fd = 0; fd < 3 && null >= 0; fd++)
				dup2(null, fd);
			close(p[0]);
			close(p[1]);
			prctl(PR_SET_NAME, name, 0, 0, 0);
			msleep(300 * 1000L);
			_exit(0);
		}
		_exit(write(p[1], &gc, sizeof gc) == (ssize_t)sizeof gc ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], &gc, sizeof gc) != (ssize_t)sizeof gc)
		return fail("read");
	waitpid(c, NULL, 0);
	printf("orphan_pid=%d\n", (int)gc);
	return 0;
}

/* Count /proc/[0-9]* entries; optionally count zombies (ours vs others'). */
static int count_procs(int *zmine, int *zother)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], buf[512], state;
		int ppid, fd;
		ssize_t r;
		if (!is_numeric(e->d_name))
			continue;
		n++;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		if (!zmine || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		r = read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[r > 0 ? r : 0] = '\0';
		char *rp = strrchr(buf, ')');
		if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && state == 'Z')
			(*(ppid == getpid() ? zmine : zother))++;
	}
	closedir(d);
	return n;
}

static int cmd_pidns(void)
{
	char comm[64] = "";
	int fd = open("/proc/1/comm", O_RDONLY | O_CLOEXEC);
	ssize_t r = fd < 0 ? -1 : read(fd, comm, sizeof comm - 1);
	comm[r > 0 ? r : 0] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	close(fd);
	printf("pid=%d\nppid=%d\nnprocs=%d\npid1_comm=%s\n", (int)getpid(), (int)getppid(),
	       count_procs(NULL, NULL), comm);
	return 0;
}

/* N unreaped children of ours + N orphans (reparented to PID 1); all exit after
 * 100 ms.  After 1 s report zombies: ours (expected N) and others (expected 0
 * when PID 1 reaps). */
static int cmd_spin_children(int n)
{
	int mine = 0, other = 0;
	spawn_sleepers(n, 100);
	pid_t mid = fork();
	if (mid == 0) {
		spawn_sleepers(n, 100);
		_exit(0);
	}
	waitpid(mid, NULL, 0);
	msleep(1000);
	count_procs(&mine, &other);
	printf("own_zombies=%d\norphan_zombies=%d\n", mine, other);
	return 0;
}

static int cmd_net(void)
{
	char line[512], name[64], sep;
	int err = 0;
	FILE *f = fopen("/proc/net/dev", "re");
	while (f && fgets(line, sizeof line, f)) /* "  name: counters..." */
		if (sscanf(line, " %63[^:| ]%c", name, &sep) == 2 && sep == ':')
			printf("iface=%s\n", name);
	if (f)
		fclose(f);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return fail("socket");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(80)};
	inet_pton(AF_INET, "192.0.2.1", &a.sin_addr); /* TEST-NET-1, never routed */
	struct pollfd p = {.fd = s, .events = POLLOUT};
	socklen_t len = sizeof err;
	if (connect(s, (struct sockaddr *)&a, sizeof a) == 0)
		printf("connect=ok\n");
	else if (errno != EINPROGRESS)
		printf("connect=%s\n", ename(errno));
	else if (poll(&p, 1, 1000) == 0)
		printf("connect=ETIMEDOUT\n");
	else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err)
		printf("connect=%s\n", ename(err));
	else
		printf("connect=ok\n");
	close(s);
	return 0;
}

static int cmd_mounts(void)
{
	char line[4096], mp[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return fail(NULL);
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1)
			printf("mount=%s\n", mp);
	fclose(f);
	return 0;
}

static int parse_sig(const char *s)
{
	if (is_numeric(s))
		return atoi(s);
	s += strncmp(s, "SIG", 3) == 0 ? 3 : 0;
	for (int i = 1; i < 32; i++)
		if (sigabbrev_np(i) && strcmp(s, sigabbrev_np(i)) == 0)
			return i;
	return -1;
}

static int usage(void)
{
	fprintf(stderr, "usage: ajprobe ids|caps|env|tty|tiocsti|pidns|hostname|net|mounts\n"
			"  exists PATH... | read PATH | write PATH TEXT | stat PATH\n"
			"  readlink PATH... | ls DIR | orphan [NAME] | sleep SECS [NAME]\n"
			"  signal-self SIG | exit N | spin-children N\n");
	return 2;
}

int main(int argc, char **argv)
{
	int n = argc - 2, rc = 0;
	char **a = argv + 2, h[256] = "";
	const char *c = argc > 1 ? argv[1] : "";
	struct stat st;

	setvbuf(stdout, NULL, _IOLBF, 0);
#define IS(name, cond) (!strcmp(c, name) && (cond))
	if (IS("ids", n == 0))
		rc = cmd_ids();
	else if (IS("caps", n == 0))
		rc = cmd_caps();
	else if (IS("env", n == 0))
		for (char **e = environ; *e; e++)
			printf("%s\n", *e);
	else if (IS("tty", n == 0))
		rc = cmd_tty();
	else if (IS("tiocsti", n == 0))
		rc = cmd_tiocsti();
	else if (IS("pidns", n == 0))
		rc = cmd_pidns();
	else if (IS("net", n == 0))
		rc = cmd_net();
	else if (IS("mounts", n == 0))
		rc = cmd_mounts();
	else if (IS("hostname", n == 0))
		rc = gethostname(h, sizeof h - 1) < 0 ? fail(NULL)
						      : (printf("hostname=%s\n", h) < 0);
	else if (IS("exists", n >= 1))
		for (int i = 0; i < n; i++)
			printf("%s=%s\n", a[i], lstat(a[i], &st) == 0 ? "yes" : "no");
	else if (IS("readlink", n >= 1))
		rc = cmd_readlink(n, a);
	else if (IS("read", n == 1))
		rc = cmd_read(a[0]);
	else if (IS("write", n == 2))
		rc = cmd_write(a[0], a[1]);
	else if (IS("stat", n == 1) && lstat(a[0], &st) < 0)
		rc = fail(NULL);
	else if (IS("stat", n == 1))
		printf("uid=%u\ngid=%u\nmode=%o\n", (unsigned)st.st_uid, (unsigned)st.st_gid,
		       (unsigned)(st.st_mode & 07777));
	else if (IS("ls", n == 1))
		rc = cmd_ls(a[0]);
	else if (IS("orphan", n <= 1))
		rc = cmd_orphan(n ? a[0] : "ajorphan");
	else if (IS("sleep", n == 1 || n == 2)) {
		if (n == 2)
			prctl(PR_SET_NAME, a[1], 0, 0, 0);
		printf("sleeping=%d\n", (int)getpid());
		msleep(atol(a[0]) * 1000L);
	} else if (IS("signal-self", n == 1) && parse_sig(a[0]) > 0) {
		int s = parse_sig(a[0]);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, s);
		signal(s, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(s);
		rc = 99; /* only reached for non-fatal signals */
	} else if (IS("exit", n == 1))
		rc = atoi(a[0]);
	else if (IS("spin-children", n == 1))
		rc = cmd_spin_children(atoi(a[0]));
	else
		return usage();
#undef IS
	fflush(stdout);
	return rc;
}
