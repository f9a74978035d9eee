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
#include <string.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prebuilt_matches_libseccomp),
	    cmocka_unit_test(test_compile_uses_the_same_program),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
