/* SPDX-License-Identifier: MIT */
/* Unit tests: host id plans and map texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
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

/* Is byte slot of the lock file locked by another open file? */
static bool held_elsewhere(unsigned slot)
{
	int fd = open(AJ_UID_LOCK_DIR "/" AJ_UID_LOCK_FILE, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = slot, .l_len = 1};
	assert_int_equal(fcntl(fd, F_OFD_GETLK, &fl), 0);
	close(fd);
	return fl.l_type != F_UNLCK;
}

/* Each reservation is a lock on its own byte of one host-wide file, seen
 * by any other open of it, and gone with its fd. */
static void test_reserve_locks(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	unsigned a, b;
	aj_error err;
	int fa = aj_userns_reserve(&a, &err), fb = aj_userns_reserve(&b, &err);
	assert_true(fa >= 0 && fb >= 0);
	assert_int_not_equal(a, b);
	assert_true(a < AJ_UID_SLOTS && b < AJ_UID_SLOTS);
	assert_true(held_elsewhere(a));
	assert_true(held_elsewhere(b));
	close(fa);
	assert_false(held_elsewhere(a));
	assert_true(held_elsewhere(b));
	close(fb);
	assert_false(held_elsewhere(b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_privileged_map),
	    cmocka_unit_test(test_unprivileged_map),
	    cmocka_unit_test(test_plan_never_root_nor_caller),
	    cmocka_unit_test(test_reserve_locks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
