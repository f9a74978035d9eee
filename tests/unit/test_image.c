/* SPDX-License-Identifier: MIT */
/* Images: names, recipes, and the tree digest (what changes it, what not). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "image.h"
#include "util.h"

static void test_names(void **state)
{
	(void)state;
	assert_true(aj_image_name_ok("python"));
	assert_true(aj_image_name_ok("py-3.11_x"));
	assert_true(aj_image_name_ok("0day"));
	const char *bad[] = {
	    "",	   "Python",
	    ".x",  "-x",
	    "_x",  "a/b",
	    "a b", "../x",
	    "é",   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (aj_image_name_ok(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
}

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/aj-test-recipe-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(aj_write_all(fd, text, strlen(text)), 0);
	close(fd);
	return path;
}

static void test_recipe(void **state)
{
	(void)state;
	char *ok =
	    write_tmp("{\"from\": \"debian:bookworm\", \"packages\": [\"python3\", \"git\"], "
		      "\"warmup\": \"python3 -V\"}");
	aj_image_spec s = {0};
	void *store = NULL;
	aj_error err;
	assert_int_equal(aj_image_recipe_load(ok, &s, &store, &err), 0);
	assert_int_equal(s.source, AJ_IMAGE_FROM_DEBIAN);
	assert_string_equal(s.from, "bookworm");
	assert_int_equal(s.n_packages, 2);
	assert_string_equal(s.packages[1], "git");
	assert_string_equal(s.warmup, "python3 -V");
	aj_image_recipe_free(store);
	unlink(ok);
	free(ok);
	const char *bad[] = {"{",
			     "[]",
			     "{\"from\": \"ubuntu:jammy\"}",
			     "{\"from\": \"debian:\"}",
			     "{\"from\": \"debian:bookworm\", \"packages\": \"git\"}",
			     "{\"from\": \"debian:bookworm\", \"packages\": [\"--evil\"]}",
			     "{\"from\": \"debian:bookworm\", \"packages\": [1]}",
			     "{\"from\": \"debian:bookworm\", \"warmup\": 3}",
			     "{\"from\": \"debian:a\", \"from\": \"debian:b\"}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *p = write_tmp(bad[i]);
		aj_image_spec s2 = {0};
		void *st2 = NULL;
		if (aj_image_recipe_load(p, &s2, &st2, &err) == 0)
			fail_msg("recipe %s accepted", bad[i]);
		aj_image_recipe_free(st2);
		unlink(p);
		free(p);
	}
}

static void digest_of(const char *dir, char out[80])
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	unsigned long long size, files;
	aj_error err;
	assert_int_equal(aj_image_digest(fd, out, &size, &files, &err), 0);
	close(fd);
}

static void test_digest(void **state)
{
	(void)state;
	char dir[] = "/tmp/aj-test-tree-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256], d1[80], d2[80];
	snprintf(path, sizeof(path), "%s/f", dir);
	assert_int_equal(aj_write_file(path, "content", 0644), 0);
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub/link", dir);
	assert_int_equal(symlink("../f", path), 0);
	digest_of(dir, d1);
	assert_int_equal(strncmp(d1, "sha256:", 7), 0);
	assert_int_equal(strlen(d1), 7 + 64);
	/* timestamps don't count */
	snprintf(path, sizeof(path), "%s/f", dir);
	struct timeval tv[2] = {{.tv_sec = 1}, {.tv_sec = 1}};
	assert_int_equal(utimes(path, tv), 0);
	digest_of(dir, d2);
	assert_string_equal(d1, d2);
	/* content, mode and link targets do */
	assert_int_equal(aj_write_file(path, "Content", 0644), 0);
	digest_of(dir, d2);
	assert_string_not_equal(d1, d2);
	assert_int_equal(aj_write_file(path, "content", 0644), 0);
	digest_of(dir, d2);
	assert_string_equal(d1, d2);
	assert_int_equal(chmod(path, 0600), 0);
	digest_of(dir, d2);
	assert_string_not_equal(d1, d2);
	assert_int_equal(chmod(path, 0644), 0);
	snprintf(path, sizeof(path), "%s/sub/link", dir);
	unlink(path);
	assert_int_equal(symlink("../g", path), 0);
	digest_of(dir, d2);
	assert_string_not_equal(d1, d2);
	unlink(path);
	assert_int_equal(symlink("../f", path), 0);
	digest_of(dir, d2);
	assert_string_equal(d1, d2);
	/* extended attributes (file capabilities live there) count */
	snprintf(path, sizeof(path), "%s/f", dir);
	if (setxattr(path, "user.aj", "1", 1, 0) == 0) {
		digest_of(dir, d2);
		assert_string_not_equal(d1, d2);
	}
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* A level's stream of its root (a microVM's agent: untrusted) written by
 * aj_tree_writer: no way out of the tree, no device, capped in size. */
static void test_tree_writer(void **state)
{
	(void)state;
	char dir[] = "/tmp/aj-test-tw-XXXXXX";
	assert_non_null(mkdtemp(dir));
	int cwd = open(".", O_PATH | O_DIRECTORY);
	assert_true(cwd >= 0);
	assert_int_equal(chdir(dir), 0);
	aj_tree_writer *w;
	aj_error err;
	/* five entries at 4096 bytes each plus their names, and "abc" */
	assert_int_equal(aj_tree_writer_new(5 * 4096 + 60, &w, &err), 0);
	aj_root_entry d = {.path = "a", .type = 'd', .mode = 0755, .mtime = 1},
		      f = {.path = "/a/f", .type = 'f', .mode = 0640, .size = 3, .uid = 100000},
		      l = {.path = "a/l", .type = 'l', .mode = 0777, .link = "/etc"},
		      p = {.path = "a/p", .type = 'p', .mode = 0600};
	assert_int_equal(aj_tree_writer_entry(w, &d, &err), 0);
	assert_int_equal(aj_tree_writer_entry(w, &f, &err), 0);
	assert_int_equal(aj_tree_writer_data(w, "abc", 3, &err), 0);
	assert_int_equal(aj_tree_writer_data(w, "d", 1, &err), -EPROTO); /* more than its size */
	assert_int_equal(aj_tree_writer_entry(w, &l, &err), 0);
	assert_int_equal(aj_tree_writer_entry(w, &p, &err), 0);
	/* out of the tree: "..", through the symlink to /etc; a device; too big */
	aj_root_entry bad[] = {{.path = "a/../../x", .type = 'f'},
			       {.path = "..", .type = 'd', .mode = 0755},
			       {.path = "", .type = 'f'},
			       {.path = "a/dev", .type = 'c'},
			       {.path = "a/l2", .type = 'l'}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(aj_tree_writer_entry(w, &bad[i], &err), -EPROTO);
	aj_root_entry through = {.path = "a/l/aj-test-tw-planted", .type = 'f', .mode = 0644};
	assert_int_equal(aj_tree_writer_entry(w, &through, &err), -EPERM);
	aj_root_entry big = {.path = "a/big", .type = 'f', .mode = 0644, .size = 1};
	assert_int_equal(aj_tree_writer_entry(w, &big, &err), -EDQUOT);
	assert_int_equal(aj_tree_writer_close(w, &err), 0);
	struct stat st;
	assert_int_equal(access("/etc/aj-test-tw-planted", F_OK), -1);
	assert_int_equal(lstat("a/f", &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(st.st_mode & 07777, 0640);
	if (geteuid() == 0)
		assert_int_equal(st.st_uid, 65534); /* outside the image's ids: nobody */
	assert_int_equal(lstat("a/l", &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(lstat("a/p", &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(lstat("a", &st), 0);
	assert_int_equal(st.st_mtime, 1); /* the directory's time, set last */
	assert_int_equal(fchdir(cwd), 0);
	close(cwd);
	assert_int_equal(aj_rm_tree_at(AT_FDCWD, dir, 8), 0);
}

/* Every entry costs (4096 bytes plus its names) against the limit, not only
 * a file's bytes; the checkpoint's directory, what is under /tmp and the
 * home are dropped; data frames only after a file's entry. */
static void test_tree_writer_limits(void **state)
{
	(void)state;
	char dir[] = "/tmp/aj-test-tw-XXXXXX";
	assert_non_null(mkdtemp(dir));
	int cwd = open(".", O_PATH | O_DIRECTORY);
	assert_true(cwd >= 0);
	assert_int_equal(chdir(dir), 0);
	aj_tree_writer *w;
	aj_error err;
	assert_int_equal(aj_tree_writer_new(3 * 4096 + 100, &w, &err), 0);
	char name[8];
	for (int k = 0; k < 4; k++) {
		snprintf(name, sizeof(name), "d%d", k);
		aj_root_entry d = {.path = name, .type = 'd', .mode = 0755};
		assert_int_equal(aj_tree_writer_entry(w, &d, &err), k < 3 ? 0 : -EDQUOT);
	}
	assert_int_equal(aj_tree_writer_close(w, &err), 0);
	/* a long symlink target counts too */
	static char target[3000];
	memset(target, 'x', sizeof(target) - 1);
	assert_int_equal(aj_tree_writer_new(2 * 4096 + 100, &w, &err), 0);
	aj_root_entry l1 = {.path = "l1", .type = 'l', .mode = 0777, .link = target},
		      l2 = {.path = "l2", .type = 'l', .mode = 0777, .link = target};
	assert_int_equal(aj_tree_writer_entry(w, &l1, &err), 0);
	assert_int_equal(aj_tree_writer_entry(w, &l2, &err), -EDQUOT);
	assert_int_equal(aj_tree_writer_close(w, &err), 0);

	assert_int_equal(aj_tree_writer_new(1 << 20, &w, &err), 0);
	assert_int_equal(aj_tree_writer_data(w, "", 0, &err), -EPROTO); /* no file yet */
	aj_root_entry es[] = {
	    {.path = ".agentjail-checkpoint", .type = 'd', .mode = 0700},
	    {.path = ".agentjail-checkpoint/checkpoint.img", .type = 'f', .mode = 0600, .size = 3},
	    {.path = "tmp", .type = 'd', .mode = 01777},
	    {.path = "tmp/x", .type = 'f', .mode = 0644, .size = 3},
	    {.path = "home", .type = 'd', .mode = 0755},
	    {.path = "home/agent", .type = 'd', .mode = 0755},
	    {.path = "home/agent/y", .type = 'f', .mode = 0644, .size = 3},
	    {.path = "kept", .type = 'f', .mode = 0644, .size = 3}};
	for (size_t i = 0; i < sizeof(es) / sizeof(es[0]); i++) {
		assert_int_equal(aj_tree_writer_entry(w, &es[i], &err), 0);
		if (es[i].type == 'f') {
			assert_int_equal(aj_tree_writer_data(w, "abc", 3, &err), 0);
			assert_int_equal(aj_tree_writer_data(w, "", 0, &err), 0); /* its end */
			assert_int_equal(aj_tree_writer_data(w, "", 0, &err), -EPROTO);
		} else {
			assert_int_equal(aj_tree_writer_data(w, "", 0, &err), -EPROTO);
		}
	}
	assert_int_equal(aj_tree_writer_close(w, &err), 0);
	struct stat st;
	assert_int_equal(lstat(".agentjail-checkpoint", &st), -1);
	assert_int_equal(lstat("tmp/x", &st), -1);
	assert_int_equal(lstat("home/agent/y", &st), -1);
	assert_int_equal(lstat("tmp", &st), 0);
	assert_int_equal(lstat("home/agent", &st), 0);
	assert_int_equal(lstat("kept", &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(fchdir(cwd), 0);
	close(cwd);
	assert_int_equal(aj_rm_tree_at(AT_FDCWD, dir, 8), 0);
}

/* A hard link ('h') only to a name the stream made a regular file and that
 * still is one: not to an unknown name, a directory, a symlink, a FIFO, a
 * name dropped (/tmp), through ".." or itself; charged as any entry. */
static void test_tree_writer_links(void **state)
{
	(void)state;
	char dir[] = "/tmp/aj-test-tw-XXXXXX";
	assert_non_null(mkdtemp(dir));
	int cwd = open(".", O_PATH | O_DIRECTORY);
	assert_true(cwd >= 0);
	assert_int_equal(chdir(dir), 0);
	aj_tree_writer *w;
	aj_error err;
	assert_int_equal(aj_tree_writer_new(1 << 20, &w, &err), 0);
	aj_root_entry es[] = {{.path = "a", .type = 'd', .mode = 0755},
			      {.path = "a/f", .type = 'f', .mode = 0640, .size = 3},
			      {.path = "a/g", .type = 'f', .mode = 0644, .size = 0},
			      {.path = "a/l", .type = 'l', .mode = 0777, .link = "/etc/passwd"},
			      {.path = "a/p", .type = 'p', .mode = 0600},
			      {.path = "tmp", .type = 'd', .mode = 01777},
			      {.path = "tmp/x", .type = 'f', .mode = 0644},
			      {.path = "a/h", .type = 'h', .mode = 0640, .link = "a/f"},
			      {.path = "/a/h2", .type = 'h', .mode = 0640, .link = "/a/h"},
			      {.path = "a/g", .type = 'l', .mode = 0777, .link = "f"}};
	for (size_t i = 0; i < sizeof(es) / sizeof(es[0]); i++) {
		assert_int_equal(aj_tree_writer_entry(w, &es[i], &err), 0);
		if (es[i].type == 'f' && es[i].size)
			assert_int_equal(aj_tree_writer_data(w, "abc", 3, &err), 0);
	}
	assert_int_equal(aj_tree_writer_data(w, "x", 1, &err), -EPROTO); /* no data to a link */
	/* the aliases of a name ("a/./f", "a//f", "a/f/") too: one spelling each */
	const char *bad[] = {"nowhere", "a", "a/l", "a/p",   "tmp/x", "a/../a/f", "../a/f",
			     "a/g",	"",  "a/x", "a/./f", "a//f",  "a/f/"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		aj_root_entry h = {.path = "a/x", .type = 'h', .mode = 0640, .link = bad[i]};
		assert_int_equal(aj_tree_writer_entry(w, &h, &err), -EPROTO);
	}
	aj_root_entry alias = {.path = "a//y", .type = 'f', .mode = 0644};
	assert_int_equal(aj_tree_writer_entry(w, &alias, &err), -EPROTO);
	assert_int_equal(aj_tree_writer_close(w, &err), 0);
	struct stat f, h, h2;
	assert_int_equal(lstat("a/f", &f), 0);
	assert_int_equal(lstat("a/h", &h), 0);
	assert_int_equal(lstat("a/h2", &h2), 0);
	assert_true(f.st_ino == h.st_ino && f.st_ino == h2.st_ino);
	assert_int_equal(f.st_nlink, 3);
	assert_int_equal(f.st_size, 3);
	assert_int_equal(lstat("a/x", &h), -1);
	assert_int_equal(lstat("a/l", &h), 0);
	assert_true(S_ISLNK(h.st_mode) && h.st_nlink == 1);
	/* a link costs as an entry: its name and target */
	assert_int_equal(aj_tree_writer_new(2 * 4096 + 3, &w, &err), 0);
	aj_root_entry one = {.path = "f", .type = 'f', .mode = 0644},
		      l1 = {.path = "l1", .type = 'h', .mode = 0644, .link = "f"};
	assert_int_equal(aj_tree_writer_entry(w, &one, &err), 0);
	assert_int_equal(aj_tree_writer_entry(w, &l1, &err), -EDQUOT);
	assert_int_equal(aj_tree_writer_close(w, &err), 0);
	assert_int_equal(fchdir(cwd), 0);
	close(cwd);
	assert_int_equal(aj_rm_tree_at(AT_FDCWD, dir, 8), 0);
}

/* Level 2 restores from an image's checkpoint only when its image.json
 * (outside the tree) says a level-2 snapshot made it, and only for an
 * image of the store. */
static void test_checkpoint_of(void **state)
{
	(void)state;
	char st[] = "/tmp/aj-test-ck-XXXXXX";
	assert_non_null(mkdtemp(st));
	assert_int_equal(setenv("AGENTJAIL_STATE_DIR", st, 1), 0);
	char hex[65], root[PATH_MAX], cmd[PATH_MAX * 2], buf[PATH_MAX];
	memset(hex, 'a', 64);
	hex[64] = '\0';
	snprintf(root, sizeof(root), "%s/images/%s/rootfs", st, hex);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/.agentjail-checkpoint && echo x >%s/.agentjail-checkpoint/"
		 "checkpoint.img && echo '{\"checkpoint\": false}' >%s/../image.json",
		 root, root, root);
	assert_int_equal(system(cmd), 0);
	/* the tree has one, owned by whoever runs this: not made by level 2 */
	assert_null(aj_image_checkpoint_of(root, buf, sizeof(buf)));
	snprintf(cmd, sizeof(cmd), "echo '{\"checkpoint\": true}' >%s/../image.json", root);
	assert_int_equal(system(cmd), 0);
	if (geteuid() == 0)
		assert_non_null(aj_image_checkpoint_of(root, buf, sizeof(buf)));
	/* a path that only looks like the store's */
	char other[PATH_MAX];
	snprintf(other, sizeof(other), "%s/images/%s/rootfs/../rootfs", st, hex);
	assert_null(aj_image_checkpoint_of(other, buf, sizeof(buf)));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", st);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_tree_writer),
	    cmocka_unit_test(test_tree_writer_limits),
	    cmocka_unit_test(test_tree_writer_links),
	    cmocka_unit_test(test_checkpoint_of),
	    cmocka_unit_test(test_recipe),
	    cmocka_unit_test(test_digest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
