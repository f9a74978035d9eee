/* SPDX-License-Identifier: MIT */
/* Unit tests: size/number parsing, errors, files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "util.h"

static void test_parse_size(void **state)
{
	(void)state;
	unsigned long long v;
	assert_int_equal(aj_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(aj_parse_size("512M", &v), 0);
	assert_int_equal(v, 512ULL << 20);
	assert_int_equal(aj_parse_size("1G", &v), 0);
	assert_int_equal(v, 1ULL << 30);
	assert_int_equal(aj_parse_size("1.5GiB", &v), 0);
	assert_int_equal(v, 3ULL << 29);
	assert_int_equal(aj_parse_size("64kb", &v), 0);
	assert_int_equal(v, 64ULL << 10);
	assert_int_equal(aj_parse_size("", &v), -EINVAL);
	assert_int_equal(aj_parse_size("-1G", &v), -EINVAL);
	assert_int_equal(aj_parse_size("1X", &v), -EINVAL);
	assert_int_equal(aj_parse_size("1GG", &v), -EINVAL);
	assert_int_equal(aj_parse_size("inf", &v), -EINVAL);
	assert_int_equal(aj_parse_size("99999999T", &v), -ERANGE);
}

static void test_parse_uint(void **state)
{
	(void)state;
	unsigned long long v;
	assert_int_equal(aj_parse_uint("0", 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(aj_parse_uint("10", 10, &v), 0);
	assert_int_equal(aj_parse_uint("11", 10, &v), -ERANGE);
	assert_int_equal(aj_parse_uint(" 1", 10, &v), -EINVAL);
	assert_int_equal(aj_parse_uint("+1", 10, &v), -EINVAL);
	assert_int_equal(aj_parse_uint("1a", 10, &v), -EINVAL);
	assert_int_equal(aj_parse_uint("99999999999999999999999", ~0ULL, &v), -ERANGE);
}

static void test_error_format(void **state)
{
	(void)state;
	aj_error err;
	aj_err_clear(&err);
	assert_int_equal(aj_err(&err, EACCES, "cannot mount %s", "/workspace"), -EACCES);
	assert_int_equal(err.exit, AJ_EXIT_INTERNAL);
	aj_err_hint(&err, "chmod it");
	aj_err_prefix(&err, "setup");
	char buf[1024];
	aj_err_format(&err, buf, sizeof(buf));
	assert_string_equal(buf,
			    "setup: cannot mount /workspace: Permission denied (fix: chmod it)");
	assert_int_equal(aj_err(NULL, 0, "x"), -EINVAL);
	aj_err_clear(&err);
	aj_err(&err, EINVAL, "bad flag");
	aj_err_format(&err, buf, sizeof(buf));
	assert_string_equal(buf, "bad flag");
}

static void test_steal(void **state)
{
	(void)state;
	_cleanup_free_ char *a = strdup("x");
	char *b = steal_pointer(&a);
	assert_null(a);
	assert_string_equal(b, "x");
	free(b);
	char *j = aj_strjoin("ab", "cd");
	assert_string_equal(j, "abcd");
	free(j);
	assert_true(aj_startswith("agentjail", "agent"));
	assert_false(aj_startswith("agent", "agentjail"));
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_mkdir_p(void **state)
{
	(void)state;
	char tmp[] = "/tmp/aj-test-mkdir-XXXXXX";
	assert_non_null(mkdtemp(tmp));
	char p[256], q[256];
	/* every missing level, then nothing to do, then one more level */
	snprintf(p, sizeof(p), "%s/a/b/c", tmp);
	assert_int_equal(aj_mkdir_p(p, 0755), 0);
	assert_true(is_dir(p));
	assert_int_equal(aj_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/a/b/c/d/", tmp);
	assert_int_equal(aj_mkdir_p(p, 0755), 0);
	assert_true(is_dir(p));
	/* a file in the way */
	snprintf(q, sizeof(q), "%s/f", tmp);
	int fd = open(q, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/f/x/y", tmp);
	assert_int_equal(aj_mkdir_p(p, 0755), -ENOTDIR);
	assert_int_equal(aj_mkdir_p("", 0755), -ENAMETOOLONG);
	snprintf(p, sizeof(p), "rm -rf '%s'", tmp);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_size),	 cmocka_unit_test(test_parse_uint),
	    cmocka_unit_test(test_error_format), cmocka_unit_test(test_steal),
	    cmocka_unit_test(test_mkdir_p),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
