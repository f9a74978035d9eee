/* SPDX-License-Identifier: MIT */
/* etc.c: the root's CA bundle for HTTPS interception, resolved inside the
 * root; anything but a regular file there refused, never read (a FIFO
 * hung the start: alarm() fails such a test instead of hanging it). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "etc.h"
#include "util.h"

#define PEM "-----BEGIN CERTIFICATE-----\nnetd\n-----END CERTIFICATE-----\n"

static char top[PATH_MAX], root[PATH_MAX], bundle[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/aj-etcca-XXXXXX");
	assert_non_null(mkdtemp(top));
	snprintf(root, sizeof(root), "%s/root", top);
	snprintf(bundle, sizeof(bundle), "%s/etc/ssl/certs/ca-certificates.crt", root);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/etc/ssl/certs", root);
	assert_int_equal(aj_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/outside", top);
	assert_int_equal(aj_write_file(p, "outside", 0644), 0);
	alarm(5);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	alarm(0);
	assert_int_equal(aj_rm_tree_at(AT_FDCWD, top, 16), 0);
	return 0;
}

static int bundle_of(bool missing_ok, char **text, aj_error *err)
{
	size_t len = 0;
	memset(err, 0, sizeof(*err));
	int r = aj_etc_ca_bundle(root, missing_ok, PEM, text, &len, err);
	if (r == 0)
		assert_int_equal(len, strlen(*text));
	return r;
}

static void test_regular_and_absent(void **state)
{
	(void)state;
	aj_error err;
	char *text = NULL;
	/* absent: the CA alone for an image, an error saying what to install else */
	assert_int_equal(bundle_of(true, &text, &err), 0);
	assert_string_equal(text, PEM);
	free(text);
	assert_int_equal(bundle_of(false, &text, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "needs /etc/ssl/certs/ca-certificates.crt"));
	/* a file without a final newline gets one before the CA */
	assert_int_equal(aj_write_file(bundle, "image", 0644), 0);
	assert_int_equal(bundle_of(false, &text, &err), 0);
	assert_string_equal(text, "image\n" PEM);
	free(text);
	/* a link pointing out of the root resolves inside it: absent there */
	assert_int_equal(unlink(bundle), 0);
	assert_int_equal(symlink("../../../../outside", bundle), 0);
	assert_int_equal(bundle_of(true, &text, &err), 0);
	assert_string_equal(text, PEM);
	free(text);
}

static void refused(const char *kind)
{
	aj_error err;
	char *text = NULL;
	assert_int_equal(bundle_of(true, &text, &err), -EINVAL);
	assert_null(text);
	char want[128];
	snprintf(want, sizeof(want), "it is %s, not a regular file", kind);
	assert_non_null(strstr(err.msg, want));
	assert_non_null(strstr(err.hint, "remove it"));
	char *read = NULL;
	size_t len = 1;
	int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	assert_int_equal(aj_etc_read_ca(rootfd, &read, &len, &err), -EINVAL);
	assert_null(read);
	assert_int_equal(len, 0);
	close(rootfd);
}

static void test_not_regular(void **state)
{
	(void)state;
	assert_int_equal(mkfifo(bundle, 0644), 0);
	refused("a FIFO");
	/* a link to a FIFO elsewhere in the root */
	char fifo[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/fifo", root);
	assert_int_equal(rename(bundle, fifo), 0);
	assert_int_equal(symlink("/fifo", bundle), 0);
	refused("a FIFO");
	assert_int_equal(unlink(bundle), 0);
	assert_int_equal(mkdir(bundle, 0755), 0);
	refused("a directory");
	assert_int_equal(rmdir(bundle), 0);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	assert_true(strlen(bundle) < sizeof(a.sun_path));
	memcpy(a.sun_path, bundle, strlen(bundle) + 1);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	refused("a socket");
	close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_regular_and_absent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_regular, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
