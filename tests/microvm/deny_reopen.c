/* SPDX-License-Identifier: MIT */
/* Test helper (tests/microvm/run.bats): runs a command in which no file
 * can be opened write-only and non-blocking (EACCES), as `agentjail run`'s
 * reopen of its stdout through /proc/self/fd fails for a pipe of another
 * uid, or without /proc. A seccomp filter on the flags: the same syscall
 * failing as the kernel would fail it. */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ajdenyreopen CMD [ARG...]\n");
		return 2;
	}
	const scmp_datum_t mask = O_ACCMODE | O_NONBLOCK, want = O_WRONLY | O_NONBLOCK;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	/* root (CAP_SYS_ADMIN) needs no no_new_privs: none set on agentjail */
	if (!ctx || seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 1,
			     SCMP_A2(SCMP_CMP_MASKED_EQ, mask, want)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, mask, want)) < 0 ||
	    seccomp_load(ctx) < 0) {
		fprintf(stderr, "ajdenyreopen: cannot load the seccomp filter\n");
		return 125;
	}
	seccomp_release(ctx);
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
