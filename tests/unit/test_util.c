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

#include "agent_frame.h"
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

/* data-hole-data-hole: 1 MiB of data at 0 and at 32 MiB, 96 MiB in all */
static int make_sparse(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	static char chunk[1 << 20];
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (char)('a' + i % 23);
	assert_int_equal(pwrite(fd, chunk, sizeof(chunk), 0), (ssize_t)sizeof(chunk));
	chunk[7] = 'Z';
	assert_int_equal(pwrite(fd, chunk, sizeof(chunk), 32 << 20), (ssize_t)sizeof(chunk));
	assert_int_equal(ftruncate(fd, 96 << 20), 0);
	assert_int_equal(fsync(fd), 0);
	close(fd);
	return 0;
}

static void same_content(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	assert_non_null(fa);
	assert_non_null(fb);
	static char x[1 << 16], y[1 << 16];
	size_t na, nb;
	do {
		na = fread(x, 1, sizeof(x), fa);
		nb = fread(y, 1, sizeof(y), fb);
		assert_int_equal(na, nb);
		assert_memory_equal(x, y, na);
	} while (na > 0);
	fclose(fa);
	fclose(fb);
}

/* The copy keeps the holes: about the source's blocks (2 MiB), not its
 * 96 MiB of apparent size; the same bytes. On the same filesystem
 * (copy_file_range) and to another one (tmpfs: pread/pwrite). */
static void test_copy_sparse(void **state)
{
	(void)state;
	char dir[] = "/var/tmp/aj-test-copy-XXXXXX";
	char shm[] = "/dev/shm/aj-test-copy-XXXXXX";
	assert_non_null(mkdtemp(dir));
	assert_non_null(mkdtemp(shm));
	char src[256], dsts[2][256];
	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(dsts[0], sizeof(dsts[0]), "%s/dst", dir);
	snprintf(dsts[1], sizeof(dsts[1]), "%s/dst", shm);
	make_sparse(src);
	struct stat ss, ds;
	assert_int_equal(stat(src, &ss), 0);
	assert_true(ss.st_blocks * 512 < (4 << 20)); /* the filesystem keeps holes */
	for (int k = 0; k < 2; k++) {
		int in = open(src, O_RDONLY | O_CLOEXEC);
		int out = open(dsts[k], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		assert_true(in >= 0 && out >= 0);
		assert_int_equal(aj_copy_fd(in, out), 0);
		close(in);
		assert_int_equal(fsync(out), 0);
		close(out);
		assert_int_equal(stat(dsts[k], &ds), 0);
		assert_int_equal(ds.st_size, 96 << 20);
		assert_true(ds.st_blocks * 512 <= (4 << 20));
		assert_true(ds.st_blocks * 512 >= (2 << 20)); /* the data is there */
		same_content(src, dsts[k]);
	}
	/* a pipe (no holes to find) still copies every byte */
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "hello", 5), 5);
	close(p[1]);
	char pd[256];
	snprintf(pd, sizeof(pd), "%s/pipe", dir);
	int out = open(pd, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_int_equal(aj_copy_fd(p[0], out), 0);
	char got[8] = {0};
	assert_int_equal(pread(out, got, sizeof(got), 0), 5);
	assert_string_equal(got, "hello");
	close(out);
	close(p[0]);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, shm);
	assert_int_equal(system(cmd), 0);
}

/* cpuset lists (oci update's cpu.cpus and mems): strict syntax, ranges */
static void test_cpulist(void **state)
{
	(void)state;
	aj_cpulist a, b;
	assert_int_equal(aj_cpulist_parse("0-3,6", false, &a), 0);
	assert_true(a.bits[0] == 0x4f);
	assert_int_equal(aj_cpulist_parse("1", false, &b), 0);
	assert_int_equal(aj_cpulist_first_missing(&b, &a), -1);
	assert_int_equal(aj_cpulist_first_missing(&a, &b), 0);
	assert_int_equal(aj_cpulist_parse("0-1\n", true, &b), 0);
	assert_int_equal(aj_cpulist_first_missing(&a, &b), 2);
	assert_int_equal(aj_cpulist_parse("\n", true, &b), 0);
	assert_int_equal(aj_cpulist_parse("100,8191", false, &a), 0);
	assert_int_equal(aj_cpulist_first_missing(&a, &b), 100);
	static const char *const bad[] = {"",	"0-", "-1",    "1,",  ",1", "1,,2", "3-1", "1 ",
					  " 1", "a",  "1-2-3", "0x1", "+1", "1\n",  "1;2"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(bad); i++)
		assert_int_equal(aj_cpulist_parse(bad[i], false, &a), -EINVAL);
	assert_int_equal(aj_cpulist_parse("8192", false, &a), -ERANGE);
	assert_int_equal(aj_cpulist_parse("0,99999999999999999999", false, &a), -ERANGE);
	assert_int_equal(aj_cpulist_parse("9000-9001", false, &a), -ERANGE);
	assert_int_equal(aj_cpulist_parse("9000-1,x", false, &a), -EINVAL);
}

/* A silent or stopped agent: the idle calls give up instead of blocking
 * (a header alone, an empty pipe, a full pipe); a whole frame still reads. */
static void test_agent_idle(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	char type, *buf = NULL;
	uint32_t n;
	assert_int_equal(aj_agent_recv_idle(p[0], &type, &buf, &n, 50), -ETIMEDOUT);
	unsigned char h[AJ_AGENT_HDR];
	aj_agent_hdr(h, AJ_AG_DATA, 4);
	assert_int_equal(write(p[1], h, sizeof(h)), (ssize_t)sizeof(h));
	assert_int_equal(aj_agent_recv_idle(p[0], &type, &buf, &n, 50), -ETIMEDOUT);
	assert_null(buf);
	char fill[4096] = {0};
	while (write(p[1], fill, sizeof(fill)) > 0)
		;
	assert_int_equal(aj_agent_send_idle(p[1], AJ_AG_DATA, "abcd", 4, 50), -ETIMEDOUT);
	close(p[0]), close(p[1]);
	assert_int_equal(pipe2(p, O_NONBLOCK), 0);
	assert_int_equal(aj_agent_send_idle(p[1], AJ_AG_DATA, "abcd", 4, 50), 0);
	assert_int_equal(aj_agent_recv_idle(p[0], &type, &buf, &n, 50), 1);
	assert_int_equal(n, 4);
	assert_string_equal(buf, "abcd");
	free(buf);
	close(p[0]), close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_size),	cmocka_unit_test(test_agent_idle),
	    cmocka_unit_test(test_parse_uint),	cmocka_unit_test(test_error_format),
	    cmocka_unit_test(test_steal),	cmocka_unit_test(test_mkdir_p),
	    cmocka_unit_test(test_copy_sparse), cmocka_unit_test(test_cpulist),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
