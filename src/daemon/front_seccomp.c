/* SPDX-License-Identifier: MIT */
/* The front's seccomp filter: an allow-list fitting a libwebsockets event
 * loop on sockets it already has (accept, read, write, epoll/poll), its
 * threads (clone with CLONE_THREAD only), memory, time, and the fds the
 * supervisor passes (recvmsg, sendmsg, a memfd for large payloads).
 * Everything else fails with EPERM: no execve, no open of a path, no new
 * socket, no ptrace, no mount, no namespaces, no id change, no kill of
 * another process. */
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "front_seccomp.h"
#include "util.h"

static const char *const allowed[] = {
    /* I/O on fds it has */
    "read",
    "write",
    "readv",
    "writev",
    "pread64",
    "pwrite64",
    "close",
    "fstat",
    "newfstatat",
    "statx",
    "lseek",
    "fcntl",
    "dup",
    "dup3",
    "ftruncate",
    "pipe2",
    "memfd_create",
    /* sockets it has */
    "accept",
    "accept4",
    "recvfrom",
    "recvmsg",
    "sendto",
    "sendmsg",
    "shutdown",
    "getsockname",
    "getpeername",
    "getsockopt",
    "setsockopt",
    /* waiting */
    "poll",
    "ppoll",
    "epoll_wait",
    "epoll_pwait",
    "epoll_ctl",
    "epoll_create1",
    "select",
    "pselect6",
    "eventfd2",
    "futex",
    "nanosleep",
    "clock_nanosleep",
    "sched_yield",
    /* memory */
    "mmap",
    "munmap",
    "mprotect",
    "mremap",
    "madvise",
    "brk",
    /* signals (its own) */
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "restart_syscall",
    /* threads and time */
    "set_robust_list",
    "get_robust_list",
    "rseq",
    "set_tid_address",
    "exit",
    "exit_group",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "time",
    "getrandom",
    "getpid",
    "gettid",
    "getppid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getresuid",
    "getresgid",
    "uname",
    "sched_getaffinity",
    "getrlimit",
    "sysinfo",
    NULL,
};

static int allow_all(scmp_filter_ctx ctx)
{
	for (size_t i = 0; allowed[i]; i++) {
		int nr = seccomp_syscall_resolve_name(allowed[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

int aj_front_seccomp(aj_error *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx)
		return aj_err(err, ENOMEM, "seccomp_init");
	int r = allow_all(ctx);
	/* threads only: a clone without CLONE_THREAD is a new process */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
	/* clone3 hides its flags: ENOSYS makes libc use clone */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/* signals to its own threads only (raise, abort) */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
	/* ioctl: the few a socket loop uses (no TIOCSTI, nothing on devices) */
	static const unsigned long ioctls[] = {FIONREAD, FIONBIO, TIOCOUTQ};
	for (size_t i = 0; r == 0 && i < AJ_ARRAY_SIZE(ioctls); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)ioctls[i]));
	/* its own limits only: netd's helpers run as nobody too */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1,
				     SCMP_A0(SCMP_CMP_EQ, 0));
	/* prctl: naming its threads only */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
				     SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME));
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r < 0 ? aj_err(err, -r, "cannot load the front's seccomp filter") : 0;
}
