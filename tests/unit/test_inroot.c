/* SPDX-License-Identifier: MIT */
/* inroot.c: lookups and creation inside a tree whose links point out of it
 * (absolute, relative, chained, "..", dangling, loops) stay inside it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "inroot.h"
#include "util.h"

typedef struct fixture {
	char top[PATH_MAX];	/* a temporary directory */
	char root[PATH_MAX];	/* top/root: the tree */
	char outside[PATH_MAX]; /* top/outside: what the links name outside */
	int rootfd;
} fixture;

static void at(char *buf, const fixture *f, const char *rel)
{
	snprintf(buf, PATH_MAX, "%s/%s", f->top, rel);
}

static void link_in(const fixture *f, const char *target, const char *name)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", f->root, name);
	assert_int_equal(symlink(target, p), 0);
}

static bool exists(const fixture *f, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;
	at(p, f, rel);
	return lstat(p, &st) == 0;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	snprintf(f->top, sizeof(f->top), "/tmp/aj-inroot-XXXXXX");
	assert_non_null(mkdtemp(f->top));
	at(f->root, f, "root");
	at(f->outside, f, "outside");
	assert_int_equal(mkdir(f->root, 0755), 0);
	assert_int_equal(mkdir(f->outside, 0755), 0);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/bin", f->root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/file", f->root);
	assert_int_equal(aj_write_file(p, "x", 0644), 0);
	f->rootfd = open(f->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->rootfd >= 0);
	/* every way out of root there is, each to outside */
	link_in(f, f->outside, "abs");		  /* absolute */
	link_in(f, "../../../../outside", "rel"); /* relative, climbing */
	link_in(f, "c1", "chain");		  /* chained */
	link_in(f, "/c2", "c1");
	link_in(f, "../outside", "c2");
	link_in(f, "bin/../../outside", "dotdot");	/* .. after a directory */
	link_in(f, "loop", "loop");			/* a loop */
	link_in(f, "/proc/self/root/outside", "magic"); /* a magic link on the host */
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	close(f->rootfd);
	(void)aj_rm_tree_at(AT_FDCWD, f->top, 64);
	free(f);
	return 0;
}

/* path (inside root) made as a directory: it lands in root, never outside */
static void mkdir_stays_in(fixture *f, const char *path, const char *where)
{
	int fd = aj_mkdir_in_root(f->rootfd, path, 0755);
	assert_true(fd >= 0);
	close(fd);
	char rel[PATH_MAX];
	snprintf(rel, sizeof(rel), "root/%s", where);
	assert_true(exists(f, rel));
	assert_false(exists(f, "outside/agent"));
}

static void test_links_out_are_followed_inside(void **state)
{
	fixture *f = *state;
	char where[PATH_MAX];
	/* the absolute link: the outside path, made inside root */
	snprintf(where, sizeof(where), "%s/agent", f->outside + 1);
	mkdir_stays_in(f, "/abs/agent", where);
	mkdir_stays_in(f, "/rel/agent", "outside/agent");
	mkdir_stays_in(f, "chain/agent", "outside/agent");
	mkdir_stays_in(f, "/dotdot/agent", "outside/agent");
	/* the magic link: there is no /proc in root, made as directories */
	mkdir_stays_in(f, "/magic/agent", "proc/self/root/outside/agent");
	/* .. components of the path itself stay at the root */
	mkdir_stays_in(f, "/../../x/../../deep", "deep");
	assert_false(exists(f, "deep"));
}

static void test_files(void **state)
{
	fixture *f = *state;
	int fd = aj_mkfile_in_root(f->rootfd, "/rel/null", 0644);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	close(fd);
	assert_true(exists(f, "root/outside/null"));
	assert_false(exists(f, "outside/null"));
	/* a file that exists is opened, not made again */
	fd = aj_mkfile_in_root(f->rootfd, "/file", 0644);
	assert_true(fd >= 0);
	close(fd);
	/* the wrong kind */
	assert_int_equal(aj_mkfile_in_root(f->rootfd, "/bin", 0644), -EISDIR);
	assert_int_equal(aj_mkdir_in_root(f->rootfd, "/file", 0755), -ENOTDIR);
	assert_int_equal(aj_mkdir_in_root(f->rootfd, "/file/sub", 0755), -ENOTDIR);
}

static void test_loops_refused(void **state)
{
	fixture *f = *state;
	assert_int_equal(aj_mkdir_in_root(f->rootfd, "/loop/agent", 0755), -ELOOP);
	assert_int_equal(aj_mkfile_in_root(f->rootfd, "/loop", 0644), -ELOOP);
	/* a link that leads back through itself after a dangling hop */
	link_in(f, "/hop/x", "hop");
	assert_int_equal(aj_mkdir_in_root(f->rootfd, "/hop", 0755), -ELOOP);
}

static void test_open_in_root(void **state)
{
	fixture *f = *state;
	int fd = aj_open_in_root(f->rootfd, "../../..", O_PATH | O_DIRECTORY, 0);
	assert_true(fd >= 0);
	struct stat a, b;
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(f->rootfd, &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	close(fd);
	assert_int_equal(aj_open_in_root(f->rootfd, "/rel", O_PATH, 0), -ENOENT);
	/* a magic link of the real /proc is refused */
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/root", (int)getpid());
	int proc = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(aj_open_in_root(proc, p, O_PATH, 0), -ELOOP);
	close(proc);
}

/* refuses every directory but the tree's root and bin (by identity) */
static int only_root_bin(int fd, void *ctx)
{
	const fixture *f = ctx;
	struct stat st, r, b;
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/bin", f->root);
	if (fstat(fd, &st) < 0 || fstat(f->rootfd, &r) < 0 || stat(p, &b) < 0)
		return -errno;
	bool ok = (st.st_dev == r.st_dev && st.st_ino == r.st_ino) ||
		  (st.st_dev == b.st_dev && st.st_ino == b.st_ino) || !S_ISDIR(st.st_mode);
	return ok ? 0 : -EXDEV;
}

static void test_checked(void **state)
{
	fixture *f = *state;
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/sub", f->root);
	assert_int_equal(mkdir(p, 0755), 0);
	link_in(f, "/sub/a/b", "into"); /* dangling, into a refused directory */
	/* nothing made in a refused directory, whichever way the walk got there */
	assert_int_equal(
	    aj_make_in_root_checked(f->rootfd, "/into/x", 0755, true, only_root_bin, f), -EXDEV);
	assert_int_equal(
	    aj_make_in_root_checked(f->rootfd, "/sub/y", 0644, false, only_root_bin, f), -EXDEV);
	assert_false(exists(f, "root/sub/a"));
	assert_false(exists(f, "root/sub/y"));
	/* an existing refused result, made nothing */
	assert_int_equal(aj_make_in_root_checked(f->rootfd, "/sub", 0755, true, only_root_bin, f),
			 -EXDEV);
	/* allowed parents: made, and the result asked too */
	int fd = aj_make_in_root_checked(f->rootfd, "/bin/new", 0644, false, only_root_bin, f);
	assert_true(fd >= 0);
	close(fd);
	assert_true(exists(f, "root/bin/new"));
	assert_int_equal(aj_make_in_root_checked(f->rootfd, "/bin/d", 0755, true, only_root_bin, f),
			 -EXDEV);
	assert_true(exists(f, "root/bin/d")); /* made in bin, itself refused */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_links_out_are_followed_inside, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_files, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_loops_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_open_in_root, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_checked, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
