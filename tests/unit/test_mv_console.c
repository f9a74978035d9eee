/* SPDX-License-Identifier: MIT */
/* Unit tests: a microVM's console (microvm/console.c): the host's file
 * stays under its cap however much the VM writes, its latest lines kept,
 * and an error shows the guest init's fatal line, not an earlier word of
 * it nor a line the guest kernel printed with those words inside. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "console.h"
#include "util.h"

static void fatal_line(void **state)
{
	(void)state;
	char out[256];
	/* a word of ours before a fatal one, virtiofsd's lines after it */
	assert_true(aj_mv_console_fatal("agentjail-guest: cannot thaw /cg/cmd\n"
					"agentjail-guest: fatal: cannot mount /ws: No such device\n"
					"virtio_loop: Exit\n",
					out, sizeof(out)));
	assert_string_equal(out, "agentjail-guest: fatal: cannot mount /ws: No such device");
	/* no fatal line: the caller shows the tail, never the earlier word */
	assert_false(aj_mv_console_fatal("agentjail-guest: cannot thaw /cg/cmd\n"
					 "[ 3.1] Kernel panic - not syncing\n",
					 out, sizeof(out)));
	/* the kernel printing the guest's words back: not at a line's start */
	assert_false(aj_mv_console_fatal(
	    "[ 2.0] tmpfs: Unknown parameter 'agentjail-guest: fatal: forged'\n", out,
	    sizeof(out)));
}

static void capped(void **state)
{
	(void)state;
	char dir[] = "/tmp/aj-test-console-XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/console", dir);
	aj_mv_console *c = NULL;
	int w = -1;
	aj_error err;
	assert_int_equal(aj_mv_console_open(&c, path, getuid(), getgid(), &w, &err), 0);
	char line[100];
	for (int i = 0; i < 40000; i++) { /* ~4 MiB of lines */
		int n = snprintf(line, sizeof(line), "line %07d %080d\n", i, 0);
		assert_int_equal(write(w, line, (size_t)n), n);
		if (i % 5000 == 0) {
			struct stat st;
			aj_mv_console_sync(c);
			assert_int_equal(stat(path, &st), 0);
			assert_true(st.st_size <= AJ_MV_CONSOLE_CAP);
		}
	}
	aj_mv_console_sync(c);
	_cleanup_free_ char *text = NULL;
	size_t n = 0;
	assert_int_equal(aj_read_file(path, &text, &n), 0);
	assert_true(n <= AJ_MV_CONSOLE_CAP && n >= AJ_MV_CONSOLE_CAP / 4);
	/* whole lines, the last one written last */
	assert_memory_equal(text, "line ", 5);
	assert_non_null(strstr(text + n - 100, "line 0039999 "));
	/* the same through our fd, with what was written since (no sync) */
	assert_int_equal(write(w, "after\n", 6), 6);
	_cleanup_free_ char *mine = NULL;
	size_t m = 0;
	assert_int_equal(aj_mv_console_read(c, &mine, &m), 0);
	assert_int_equal(m, n + 6);
	assert_memory_equal(mine, text, n);
	assert_string_equal(mine + n, "after\n");
	close(w);
	aj_mv_console_close(&c);
	assert_null(c);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(fatal_line), cmocka_unit_test(capped)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
