/* SPDX-License-Identifier: MIT */
/* Unit tests: finding our place in cgroup v1, hybrid and v2 layouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "cgroup.h"

static const char hybrid_mi[] =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
static const char hybrid_pc[] = "8:pids:/\n"
				"4:memory:/process_api/abc\n"
				"2:cpuacct:/\n"
				"1:cpu:/x\n"
				"0::/\n";

static void test_hybrid(void **state)
{
	(void)state;
	aj_cgroup_hier h;
	assert_int_equal(aj_cgroup_find(hybrid_mi, hybrid_pc, "memory", &h), 0);
	assert_string_equal(h.mount, "/sys/fs/cgroup/memory");
	assert_string_equal(h.own, "/process_api/abc");
	assert_int_equal(h.version, 1);
	assert_int_equal(aj_cgroup_find(hybrid_mi, hybrid_pc, "cpu", &h), 0);
	assert_string_equal(h.mount, "/sys/fs/cgroup/cpu");
	assert_string_equal(h.own, "/x");
	assert_int_equal(aj_cgroup_find(hybrid_mi, hybrid_pc, "pids", &h), 0);
	assert_string_equal(h.own, "/");
	assert_int_equal(aj_cgroup_find(hybrid_mi, hybrid_pc, "", &h), 0);
	assert_string_equal(h.mount, "/sys/fs/cgroup/unified");
	assert_int_equal(h.version, 2);
	assert_int_equal(aj_cgroup_find(hybrid_mi, hybrid_pc, "blkio", &h), -ENOENT);
}

static void test_combined_v1(void **state)
{
	(void)state;
	const char mi[] =
	    "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
	const char pc[] = "3:cpu,cpuacct:/user.slice\n";
	aj_cgroup_hier h;
	assert_int_equal(aj_cgroup_find(mi, pc, "cpu", &h), 0);
	assert_string_equal(h.mount, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(h.own, "/user.slice");
}

static void test_v2(void **state)
{
	(void)state;
	const char mi[] = "29 22 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
	const char pc[] = "0::/user.slice/user-1000.slice/session-3.scope\n";
	aj_cgroup_hier h;
	assert_int_equal(aj_cgroup_find(mi, pc, "memory", &h), -ENOENT);
	assert_int_equal(aj_cgroup_find(mi, pc, "", &h), 0);
	assert_string_equal(h.mount, "/sys/fs/cgroup");
	assert_string_equal(h.own, "/user.slice/user-1000.slice/session-3.scope");
	/* agentjail's own leaf (it moved there to enable controllers for the
	 * children of its cgroup): its place is the cgroup above */
	const char pc_leaf[] = "0::/user.slice/app.scope/agentjail-1234-self\n";
	assert_int_equal(aj_cgroup_find(mi, pc_leaf, "", &h), 0);
	assert_string_equal(h.own, "/user.slice/app.scope");
	const char pc_other[] = "0::/user.slice/agentjail-1234-selfish\n";
	assert_int_equal(aj_cgroup_find(mi, pc_other, "", &h), 0);
	assert_string_equal(h.own, "/user.slice/agentjail-1234-selfish");
	/* a bind mount of a sub-tree (root != "/") is not the hierarchy */
	const char mi2[] = "29 22 0:26 /sub /mnt rw - cgroup2 cgroup2 rw\n";
	assert_int_equal(aj_cgroup_find(mi2, pc, "", &h), -ENOENT);
}

static void test_garbage(void **state)
{
	(void)state;
	aj_cgroup_hier h;
	assert_int_equal(aj_cgroup_find("", "", "memory", &h), -ENOENT);
	assert_int_equal(aj_cgroup_find("garbage line\n\n- - -\n", "x:y\n::\n", "memory", &h),
			 -ENOENT);
	assert_int_equal(aj_cgroup_find(hybrid_mi, "garbage", "memory", &h), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hybrid),
	    cmocka_unit_test(test_combined_v1),
	    cmocka_unit_test(test_v2),
	    cmocka_unit_test(test_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
