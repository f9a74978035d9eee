/* SPDX-License-Identifier: MIT */
/* Unit tests: the guest agent's op "limits" (src/backend/gvisor/
 * agent_limits.c), a pooled microVM's hand-out: each value read back
 * exactly (a cgroup file keeping less than it was given fails the op),
 * and the writable tmpfs resized, never below what it holds. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_limits.h"

static int fake_cg(char *dir)
{
	strcpy(dir, "/tmp/aj-test-limits-XXXXXX");
	assert_non_null(mkdtemp(dir));
	int cg = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(cg >= 0);
	assert_int_equal(mkdirat(cg, "cmd", 0755), 0);
	close(openat(cg, "cgroup.subtree_control", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	return cg;
}

static void rm_cg(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static int limits(int cg, long long pids, long long mem)
{
	json_t *q = json_pack("{s:s,s:I,s:I}", "op", "limits", "pids", (json_int_t)pids, "memory",
			      (json_int_t)mem);
	int r = aj_agent_limits(q, cg);
	json_decref(q);
	return r;
}

/* pids.max read back as written: in place; memory.max the page below */
static void test_read_back(void **state)
{
	(void)state;
	char dir[64];
	int cg = fake_cg(dir);
	close(openat(cg, "cmd/pids.max", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	close(openat(cg, "cmd/memory.max", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
	assert_int_equal(limits(cg, 16, 8192), 0);
	close(cg);
	rm_cg(dir);
}

/* a pids.max that keeps less than the value asked (a stand-in: the
 * process's coredump_filter keeps 9 bits of 1000 and shows them in hex,
 * "000001e8", read as 1): the op fails, as it must for 1 below too */
static void test_pids_less_fails(void **state)
{
	(void)state;
	char dir[64];
	int cg = fake_cg(dir);
	assert_int_equal(symlinkat("/proc/self/coredump_filter", cg, "cmd/pids.max"), 0);
	assert_int_equal(limits(cg, 1000, 0), -EIO);
	close(cg);
	rm_cg(dir);
}

/* 0 all is well; else which step failed (in a child: its own mounts) */
static int disk_child(void)
{
	char dir[] = "/tmp/aj-test-disk-XXXXXX";
	if (!mkdtemp(dir) || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("t", dir, "tmpfs", 0, "size=1m,nr_inodes=64") < 0)
		return 10;
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char f[64];
	snprintf(f, sizeof(f), "%s/f", dir);
	FILE *w = fopen(f, "w");
	static char blk[64 << 10];
	memset(blk, 'x', sizeof(blk));
	for (int k = 0; w && k < 10; k++) /* 640 KiB */
		fwrite(blk, 1, sizeof(blk), w);
	if (fd < 0 || !w || fclose(w) != 0)
		return 11;
	struct statfs sf;
	/* below what it holds, in bytes or in inodes: refused, unchanged */
	if (aj_agent_disk(fd, 256 << 10, 64) != -ENOSPC ||
	    aj_agent_disk(fd, 4 << 20, 1) != -ENOSPC || fstatfs(fd, &sf) < 0 ||
	    sf.f_blocks * (unsigned long long)sf.f_bsize != 1 << 20 || sf.f_files != 64)
		return 12;
	/* larger: in place (whole pages), and a write past it ENOSPC */
	if (aj_agent_disk(fd, (2 << 20) + 1, 100) != 0 || fstatfs(fd, &sf) < 0 ||
	    sf.f_blocks * (unsigned long long)sf.f_bsize != (2 << 20) + (unsigned)sf.f_bsize ||
	    sf.f_files != 100)
		return 13;
	/* smaller, above the 640 KiB: in place */
	if (aj_agent_disk(fd, 768 << 10, 64) != 0 || fstatfs(fd, &sf) < 0 ||
	    sf.f_blocks * (unsigned long long)sf.f_bsize != 768 << 10)
		return 14;
	snprintf(f, sizeof(f), "%s/g", dir);
	w = fopen(f, "w");
	size_t put = 0;
	for (int k = 0; w && k < 4; k++)
		put += fwrite(blk, 1, sizeof(blk), w);
	int e = w && fflush(w) != 0 ? errno : 0;
	if (w)
		fclose(w);
	if (put == 4 * sizeof(blk) && e != ENOSPC)
		return 15;
	/* not a tmpfs: refused */
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct statfs rs;
	if (fstatfs(root, &rs) == 0 && rs.f_type != 0x01021994 &&
	    aj_agent_disk(root, 1 << 20, 64) != -ENOTSUP)
		return 16;
	umount2(dir, MNT_DETACH);
	rmdir(dir);
	return 0;
}

static void test_disk(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(disk_child());
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_back),
	    cmocka_unit_test(test_pids_less_fails),
	    cmocka_unit_test(test_disk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
