/* SPDX-License-Identifier: MIT */
/* Unit tests: host id plans and map texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "userns.h"

static void test_privileged_map(void **state)
{
	(void)state;
	aj_idmap m = {.privileged = true,
		      .host_base = AJ_UID_BASE + 3 * AJ_UID_RANGE,
		      .inside_uid = 1000,
		      .inside_gid = 100};
	char buf[64];
	assert_int_equal(aj_userns_format_map(&m, false, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0 1000196608 65536\n");
	assert_int_equal(aj_userns_host_uid(&m), 1000196608u + 1000);
	assert_int_equal(aj_userns_host_gid(&m), 1000196608u + 100);
	assert_int_equal(aj_userns_format_map(&m, false, buf, 4), -ENOSPC);
}

static void test_unprivileged_map(void **state)
{
	(void)state;
	aj_idmap m = {.privileged = false,
		      .caller_uid = 1000,
		      .caller_gid = 1001,
		      .inside_uid = 0,
		      .inside_gid = 0};
	char buf[64];
	assert_int_equal(aj_userns_format_map(&m, false, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0 1000 1\n");
	assert_int_equal(aj_userns_format_map(&m, true, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0 1001 1\n");
	assert_int_equal(aj_userns_host_uid(&m), 1000);
}

static void test_plan_never_root_nor_caller(void **state)
{
	(void)state;
	aj_idmap a, b;
	aj_error err;
	assert_int_equal(aj_userns_plan(&a, 0, 0, &err), 0);
	if (!a.privileged) {
		/* unprivileged: the caller's own uid, by design */
		assert_int_equal(aj_userns_host_uid(&a), geteuid());
		return;
	}
	assert_true(aj_userns_host_uid(&a) >= AJ_UID_BASE);
	assert_true(a.host_base + AJ_UID_RANGE <= 0x7fffffffu);
	assert_int_not_equal(aj_userns_host_uid(&a), 0);
	assert_int_equal((a.host_base - AJ_UID_BASE) % AJ_UID_RANGE, 0);
	/* a second plan in the same process takes a different, reserved slot */
	assert_int_equal(aj_userns_plan(&b, 0, 0, &err), 0);
	(void)b;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_privileged_map),
	    cmocka_unit_test(test_unprivileged_map),
	    cmocka_unit_test(test_plan_never_root_nor_caller),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
