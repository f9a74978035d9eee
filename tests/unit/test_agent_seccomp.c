/* SPDX-License-Identifier: MIT */
/* Unit tests: the guest agent's loading of level 3's --seccomp-profile
 * (src/backend/gvisor/agent_seccomp.c): a program in any wrong form, or
 * one the kernel refuses, is an error and nothing is loaded (the agent
 * then fails the exec); a good one narrows what the process may call. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_seccomp.h"

/* the hex form microvm/boot.c sends: code, jt, jf, k */
static void hex(char *out, const struct sock_filter *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + i * 16, "%04x%02x%02x%08x", f[i].code, f[i].jt, f[i].jf, f[i].k);
}

/* getppid: EPERM; everything else allowed */
static const struct sock_filter deny_getppid[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

/* In a child with no_new_privs: exit 0 when aj_agent_profile_load(text)
 * returns want and the process then has `filters` seccomp mode (0 or 2). */
static int load_in_child(const char *text, int want, int mode)
{
	pid_t pid = fork();
	if (pid == 0) {
		json_t *q = text ? json_pack("{s:s}", "seccomp_profile", text)
				 : json_pack("{s:i}", "seccomp_profile", 7);
		if (!q || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(10);
		if (aj_agent_profile_load(q) != want)
			_exit(11);
		if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != mode)
			_exit(12);
		if (mode && (syscall(__NR_getppid) != -1 || errno != EPERM))
			_exit(13);
		if (mode && getpid() <= 0)
			_exit(14);
		_exit(0);
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void test_good_program_narrows(void **state)
{
	(void)state;
	char text[sizeof(deny_getppid) / sizeof(deny_getppid[0]) * 16 + 1];
	hex(text, deny_getppid, sizeof(deny_getppid) / sizeof(deny_getppid[0]));
	assert_int_equal(load_in_child(text, 0, 2), 0);
}

static void test_no_profile_loads_nothing(void **state)
{
	(void)state;
	json_t *q = json_object();
	assert_int_equal(aj_agent_profile_load(q), 0);
	assert_int_equal(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), 0);
	json_decref(q);
}

static void test_bad_forms_fail_closed(void **state)
{
	(void)state;
	char good[4 * 16 + 1];
	hex(good, deny_getppid, 4);
	char upper[sizeof(good)], cut[sizeof(good)];
	memcpy(upper, good, sizeof(good));
	upper[20] = 'G';
	memcpy(cut, good, sizeof(good));
	cut[4 * 16 - 1] = '\0';
	assert_int_equal(load_in_child("", -EINVAL, 0), 0);
	assert_int_equal(load_in_child(cut, -EINVAL, 0), 0);
	assert_int_equal(load_in_child(upper, -EINVAL, 0), 0);
	assert_int_equal(load_in_child(NULL, -EINVAL, 0), 0); /* not a string */
	/* the kernel's checker: a load beyond seccomp_data, no return */
	static const struct sock_filter bad[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4096),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	char t[2 * 16 + 1];
	hex(t, bad, 2);
	assert_int_equal(load_in_child(t, -EINVAL, 0), 0);
	hex(t, deny_getppid, 1); /* no return at the end */
	t[16] = '\0';
	assert_int_equal(load_in_child(t, -EINVAL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_program_narrows),
	    cmocka_unit_test(test_no_profile_loads_nothing),
	    cmocka_unit_test(test_bad_forms_fail_closed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
