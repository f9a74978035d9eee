/* SPDX-License-Identifier: MIT */
/* Unit test: the front's seccomp allow-list (src/daemon/front_seccomp.c),
 * loaded in a child: what a compromised front would try (run a program,
 * open a path, make a socket, fork, ptrace, mount, unshare, change ids,
 * signal another process, push into a terminal) fails with EPERM; what its
 * event loop does (I/O on its fds, threads, memfds) still works. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "front_seccomp.h"

static void *thread_fn(void *arg)
{
	return arg;
}

/* In the child, after the filter: 0 when every check held, else the
 * number of the first that did not. */
static int checks(void)
{
	char *argv[] = {"/bin/false", NULL};
	char *envp[] = {NULL};
	int n = 0;
#define DENIED(expr)                                                                               \
	do {                                                                                       \
		n++;                                                                               \
		errno = 0;                                                                         \
		if ((expr) >= 0 || errno != EPERM)                                                 \
			return n;                                                                  \
	} while (0)
	DENIED(execve("/bin/false", argv, envp));
	DENIED(open("/etc/hostname", O_RDONLY));
	DENIED(openat(AT_FDCWD, "/", O_RDONLY | O_DIRECTORY));
	DENIED(socket(AF_INET, SOCK_STREAM, 0));
	DENIED(socket(AF_UNIX, SOCK_STREAM, 0));
	DENIED(syscall(SYS_fork));
	DENIED(ptrace(PTRACE_TRACEME, 0, NULL, NULL));
	DENIED(mount("none", "/tmp", "tmpfs", 0, NULL));
	DENIED(unshare(CLONE_NEWUSER));
	DENIED(setuid(0));
	DENIED(kill(getppid(), 0));
	DENIED(ioctl(0, TIOCSTI, "x"));
	DENIED(chmod("/tmp", 0777));
	DENIED(unlink("/tmp/nothing-here"));
	struct rlimit rl = {0, 0};
	DENIED(prlimit(getppid(), RLIMIT_NOFILE, NULL, &rl)); /* another nobody: netd */
	/* what it needs still works */
	n++;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0 || write(p[1], "x", 1) != 1)
		return n;
	n++;
	pthread_t t;
	void *ret = NULL;
	if (pthread_create(&t, NULL, thread_fn, &n) != 0 || pthread_join(t, &ret) != 0 || ret != &n)
		return n;
	n++;
	int m = memfd_create("x", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0 || fcntl(m, F_ADD_SEALS, F_SEAL_WRITE) < 0)
		return n;
	n++;
	if (prlimit(0, RLIMIT_NOFILE, NULL, &rl) < 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return n;
	n++;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0) /* not on the list */
		return n;
	return 0;
}

static void test_filter(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		aj_error err;
		if (aj_front_seccomp(&err) < 0)
			_exit(100);
		_exit(checks());
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_filter)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
