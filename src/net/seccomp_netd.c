/* SPDX-License-Identifier: MIT */
/* The seccomp filter of netd, the network helper that parses what a
 * sandbox sends (DNS, HTTP): everything the sandbox's default filter
 * denies (mounts, namespaces, ptrace, bpf, modules...), and also running
 * programs, making processes (threads only), changing ids or owners and
 * making device nodes. A parser bug in netd must not turn into a shell.
 * Nor does it link files: its spool's O_TMPFILE files (proxy_common.c)
 * stay unnamed. */
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <seccomp.h>

#include "sysfilter.h"
#include "util.h"

static const char *const netd_denied[] = {
    "execve",	 "execveat",  "fork",	  "vfork",    "setuid",	   "setgid", "setreuid", "setregid",
    "setresuid", "setresgid", "setfsuid", "setfsgid", "setgroups", "chown",  "fchown",	 "lchown",
    "fchownat",	 "mknod",     "mknodat",  "capset",   "link",	   "linkat", NULL,
};

static int deny_all(scmp_filter_ctx ctx, const char *const *names)
{
	for (size_t i = 0; names[i]; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

int aj_seccomp_netd(aj_error *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return aj_err(err, ENOMEM, "seccomp_init");
	int r = deny_all(ctx, aj_seccomp_denied);
	if (r == 0)
		r = deny_all(ctx, netd_denied);
	/* threads only: a clone without CLONE_THREAD is a new process */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
	/* clone3 hides its flags: ENOSYS makes libc use clone */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r < 0 ? aj_err(err, -r, "cannot load netd's seccomp filter") : 0;
}
