/* SPDX-License-Identifier: MIT */
/* The tree sync of snapshots and forks (tree.c) and the warm-up parser of
 * warm interpreters (zygote.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree.h"
#include "util.h"
#include "zygote.h"

static char *mkdtemp_str(void)
{
	char *d = strdup("/tmp/aj-test-tree-XXXXXX");
	assert_non_null(d);
	assert_non_null(mkdtemp(d));
	return d;
}

static void put(const char *dir, const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(aj_write_file(path, text, 0640), 0);
}

static char *get(const char *dir, const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	char *txt = NULL;
	return aj_read_file(path, &txt, NULL) < 0 ? NULL : txt;
}

static void rm_rf(const char *d)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf --one-file-system '%s'", d);
	assert_int_equal(system(cmd), 0);
}

static int sync_dirs(const char *a, const char *b, const aj_tree_ids *ids)
{
	int s = open(a, O_RDONLY | O_DIRECTORY | O_CLOEXEC), d = open(b, O_RDONLY | O_DIRECTORY);
	assert_true(s >= 0 && d >= 0);
	aj_error err;
	aj_err_clear(&err);
	int r = aj_tree_sync(s, d, ids, &err);
	if (r < 0)
		print_message("aj_tree_sync: %s\n", err.msg);
	close(s);
	close(d);
	return r;
}

static void test_sync(void **state)
{
	(void)state;
	char *src = mkdtemp_str(), *dst = mkdtemp_str(), *outside = mkdtemp_str();
	char p[512];
	/* the source: files, a nested dir, symlinks out of the tree, a fifo */
	put(src, "a.txt", "alpha");
	snprintf(p, sizeof(p), "%s/d", src);
	assert_int_equal(mkdir(p, 0750), 0);
	snprintf(p, sizeof(p), "%s/d/e", src);
	assert_int_equal(mkdir(p, 0700), 0);
	put(src, "d/e/deep", "deep");
	snprintf(p, sizeof(p), "%s/d/e/deep", src);
	assert_int_equal(chmod(p, 04755), 0);
	put(outside, "secret", "host file");
	snprintf(p, sizeof(p), "%s/link", src);
	assert_int_equal(symlink("/etc/passwd", p), 0);
	snprintf(p, sizeof(p), "%s/dirlink", src);
	assert_int_equal(symlink(outside, p), 0);
	snprintf(p, sizeof(p), "%s/fifo", src);
	assert_int_equal(mkfifo(p, 0600), 0);
	/* the destination: an extra file and dir (to go), a file where the
	 * source has a directory, and a directory where it has a file */
	put(dst, "extra", "x");
	snprintf(p, sizeof(p), "%s/extra-dir/sub", dst);
	assert_int_equal(aj_mkdir_p(p, 0755), 0);
	put(dst, "extra-dir/sub/f", "x");
	put(dst, "d", "not a dir");
	snprintf(p, sizeof(p), "%s/a.txt", dst);
	assert_int_equal(mkdir(p, 0755), 0);
	aj_tree_ids ids = {.range = 65536};
	assert_int_equal(sync_dirs(src, dst, &ids), 0);
	char *t;
	assert_string_equal((t = get(dst, "a.txt")), "alpha");
	free(t);
	assert_string_equal((t = get(dst, "d/e/deep")), "deep");
	free(t);
	struct stat st;
	snprintf(p, sizeof(p), "%s/d/e/deep", dst);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 04755);
	snprintf(p, sizeof(p), "%s/d", dst);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	/* links copied as links, never followed */
	char target[256] = "";
	snprintf(p, sizeof(p), "%s/link", dst);
	assert_true(readlink(p, target, sizeof(target) - 1) > 0);
	assert_string_equal(target, "/etc/passwd");
	snprintf(p, sizeof(p), "%s/dirlink", dst);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	snprintf(p, sizeof(p), "%s/fifo", dst);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	/* what only the destination had is gone; the outside is untouched */
	snprintf(p, sizeof(p), "%s/extra", dst);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/extra-dir", dst);
	assert_int_equal(access(p, F_OK), -1);
	assert_string_equal((t = get(outside, "secret")), "host file");
	free(t);
	/* again: nothing to do, same result */
	assert_int_equal(sync_dirs(src, dst, &ids), 0);
	assert_string_equal((t = get(dst, "d/e/deep")), "deep");
	free(t);
	rm_rf(src);
	rm_rf(dst);
	rm_rf(outside);
	free(src);
	free(dst);
	free(outside);
}

/* Owners are shifted from the source's id range to the destination's;
 * ids outside it become nobody (needs root to chown). */
static void test_sync_ids(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char *src = mkdtemp_str(), *dst = mkdtemp_str(), p[512];
	put(src, "in", "1");
	put(src, "out", "2");
	snprintf(p, sizeof(p), "%s/in", src);
	assert_int_equal(chown(p, 200005, 200007), 0);
	snprintf(p, sizeof(p), "%s/out", src);
	assert_int_equal(chown(p, 1234, 1234), 0);
	aj_tree_ids ids = {.from_uid = 200000, .from_gid = 200000, .range = 65536};
	assert_int_equal(sync_dirs(src, dst, &ids), 0);
	struct stat st;
	snprintf(p, sizeof(p), "%s/in", dst);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, 5);
	assert_int_equal(st.st_gid, 7);
	snprintf(p, sizeof(p), "%s/out", dst);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	rm_rf(src);
	rm_rf(dst);
	free(src);
	free(dst);
}

static void test_warmup_interp(void **state)
{
	(void)state;
	char in[64];
	assert_true(aj_zygote_interp("python3 -c 'import pandas'", in, sizeof(in)));
	assert_string_equal(in, "python3");
	assert_true(aj_zygote_interp("/usr/bin/python3.11 -c x", in, sizeof(in)));
	assert_string_equal(in, "/usr/bin/python3.11");
	const char *no[] = {
	    NULL,
	    "",
	    "python3",
	    "python3 -c",
	    "python3 x.py",
	    "node -c x",
	    "sh -c 'python3 -c x'",
	    "python3  -c x",
	    "PYTHON=1 python3 -c x",
	    "/opt/py/bin/node -c x",
	    "python3;rm -c x",
	    "pythonaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa -c x"};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (aj_zygote_interp(no[i], in, sizeof(in)))
			fail_msg("'%s' taken as a Python warm-up", no[i] ? no[i] : "(null)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sync),
	    cmocka_unit_test(test_sync_ids),
	    cmocka_unit_test(test_warmup_interp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
