/* SPDX-License-Identifier: MIT */
/* Unit tests: the default seccomp filter embedded at build time is exactly
 * what libseccomp compiles from the profile now. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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
	assert_int_equal(fast.len, live.len);
	/* main program and the personality filter stacked after it */
	size_t extra = 9; /* personality_filter in seccomp.c */
	assert_memory_equal(fast.insns, live.insns, (live.len + extra) * sizeof(live.insns[0]));
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
