/* SPDX-License-Identifier: MIT */
/* Unit tests: the default seccomp filter embedded at build time is exactly
 * what libseccomp compiles from the profile now. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/seccomp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy.h"
#include "sysfilter.h"

static void test_prebuilt_matches_libseccomp(void **state)
{
	(void)state;
	aj_error err;
	aj_err_clear(&err);
	aj_bpf live;
	assert_int_equal(aj_seccomp_compile_default(&live, &err), 0);
	assert_true(aj_seccomp_prebuilt_len > 0);
	assert_int_equal(aj_seccomp_prebuilt_len, live.len);
	assert_memory_equal(aj_seccomp_prebuilt, live.insns, live.len * sizeof(live.insns[0]));
	aj_bpf_free(&live);
}

static void test_compile_uses_the_same_program(void **state)
{
	(void)state;
	aj_error err;
	aj_err_clear(&err);
	aj_policy p;
	aj_policy_init(&p);
	aj_bpf live, fast;
	assert_int_equal(aj_seccomp_compile_default(&live, &err), 0);
	assert_int_equal(aj_seccomp_compile(&p, &fast, &err), 0);
	assert_false(fast.replaced);
	/* one program: the personality check (8 instructions, seccomp.c), then
	 * the main program, to which the check's every non-denial jumps */
	size_t pre = 8;
	assert_int_equal(fast.len, live.len + pre);
	assert_memory_equal(fast.insns + pre, live.insns, live.len * sizeof(live.insns[0]));
	for (size_t i = 0; i < pre; i++) {
		const struct sock_filter *f = &fast.insns[i];
		if (BPF_CLASS(f->code) == BPF_RET) /* the check's only return: EPERM */
			assert_int_equal(f->k, SECCOMP_RET_ERRNO | EPERM);
		if (BPF_CLASS(f->code) == BPF_JMP) /* no jump past the main program's start */
			assert_true(i + 1 + f->jt <= pre && i + 1 + f->jf <= pre);
	}
	assert_int_equal(BPF_CLASS(fast.insns[pre - 1].code), BPF_RET);
	aj_bpf_free(&live);
	aj_bpf_free(&fast);
	aj_policy_free(&p);
}

/* The setid-only filter (level 3's virtiofsd): a setuid or setgid mode is
 * refused by chmod, fchmodat, open(O_CREAT) and mknod; other modes pass. */
static void test_setid_filter(void **state)
{
	(void)state;
	char dir[] = "/tmp/aj-test-setid-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char f[64], g[64], h[64];
	snprintf(f, sizeof(f), "%s/f", dir);
	snprintf(g, sizeof(g), "%s/g", dir);
	snprintf(h, sizeof(h), "%s/h", dir);
	int fd = open(f, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	aj_bpf bpf;
	aj_error err;
	aj_err_clear(&err);
	assert_int_equal(aj_seccomp_compile_setid(&bpf, &err), 0);
	pid_t pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || aj_seccomp_load(&bpf, &err) < 0)
			_exit(10);
		if (chmod(f, 04755) == 0 || errno != EPERM)
			_exit(11);
		if (fchmodat(AT_FDCWD, f, 02755, 0) == 0 || errno != EPERM)
			_exit(12);
		if (open(g, O_CREAT | O_WRONLY, 04755) >= 0 || errno != EPERM)
			_exit(13);
		if (mknod(h, S_IFREG | 06644, 0) == 0 || errno != EPERM)
			_exit(14);
		if (chmod(f, 0755) < 0 || open(g, O_CREAT | O_WRONLY, 0644) < 0)
			_exit(15);
		_exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	aj_bpf_free(&bpf);
	struct stat sb;
	assert_int_equal(stat(f, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0755);
	unlink(f), unlink(g), unlink(h), rmdir(dir);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prebuilt_matches_libseccomp),
	    cmocka_unit_test(test_compile_uses_the_same_program),
	    cmocka_unit_test(test_setid_filter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
