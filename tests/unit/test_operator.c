/* SPDX-License-Identifier: MIT */
/* Unit tests: the operator policy and the tokens file (operator_parse.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "operator.h"
#include "policy.h"

static int parse(const char *text, aj_operator_policy *p, aj_error *err)
{
	aj_err_clear(err);
	return aj_operator_parse(text, strlen(text), p, err);
}

static void test_defaults(void **state)
{
	(void)state;
	aj_operator_policy p;
	aj_error err;
	assert_int_equal(parse("{}", &p, &err), 0);
	assert_int_equal(p.n_binds, 0); /* no host path by default */
	assert_int_equal(p.n_rootfs, 0);
	assert_true(p.images_any);
	assert_true(p.net & (1u << AJ_NET_NONE));
	assert_int_equal(p.caps.memory, 0);
	aj_operator_free(&p);
}

static void test_full(void **state)
{
	(void)state;
	aj_operator_policy p;
	aj_error err;
	assert_int_equal(
	    parse("{\"version\": 1, \"bind_roots\": [{\"path\": \"/srv//work/\", "
		  "\"rw\": true}, \"/opt/./data\"], \"rootfs_roots\": [\"/srv/roots\"], "
		  "\"images\": [\"debian\", \"py-*\"], \"net\": [\"none\", \"allow\"], "
		  "\"max_memory\": \"512M\", \"max_pids\": 64, \"max_cpus\": 1.5, "
		  "\"max_disk\": 1048576, \"max_timeout\": 600, \"max_sandboxes\": 3}",
		  &p, &err),
	    0);
	assert_int_equal(p.n_binds, 2);
	assert_string_equal(p.binds[0].path, "/srv/work");
	assert_true(p.binds[0].rw);
	assert_string_equal(p.binds[1].path, "/opt/data");
	assert_false(p.binds[1].rw);
	assert_string_equal(p.rootfs[0].path, "/srv/roots");
	assert_false(p.images_any);
	assert_int_equal(p.n_images, 2);
	assert_int_equal(p.net, (1u << AJ_NET_NONE) | (1u << AJ_NET_ALLOW));
	assert_int_equal(p.caps.memory, 512ULL << 20);
	assert_int_equal(p.caps.pids, 64);
	assert_int_equal(p.caps.cpu_millis, 1500);
	assert_int_equal(p.caps.disk, 1048576);
	assert_int_equal(p.caps.timeout_s, 600);
	assert_int_equal(p.caps.sandboxes, 3);
	aj_operator_free(&p);
}

static void test_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "",
	    "[]",
	    "{\"bind_root\": []}",	 /* a typo is not ignored */
	    "{\"bind_roots\": [\"/\"]}", /* the whole host */
	    "{\"bind_roots\": [\"//\"]}",
	    "{\"bind_roots\": [\"/srv/../etc\"]}",
	    "{\"bind_roots\": [\"srv\"]}",
	    "{\"bind_roots\": [{\"path\": \"/srv\", \"rw\": 1}]}",
	    "{\"bind_roots\": [{\"path\": \"/srv\", \"mode\": \"rw\"}]}",
	    "{\"rootfs_roots\": [{\"path\": \"/srv\", \"rw\": true}]}",
	    "{\"bind_roots\": \"/srv\"}",
	    "{\"images\": [\"Bad/Name\"]}",
	    "{\"images\": \"debian\"}",
	    "{\"net\": [\"bridge\"]}",
	    "{\"max_memory\": \"lots\"}",
	    "{\"max_memory\": 0}",
	    "{\"max_pids\": -1}",
	    "{\"max_cpus\": 0}",
	    "{\"max_timeout\": 1e12}",
	    "{\"max_sandboxes\": \"x\"}",
	    "{\"version\": 2}",
	    "{\"net\": [\"none\"], \"net\": [\"open\"]}", /* duplicate keys */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		aj_operator_policy p;
		aj_error err;
		if (parse(bad[i], &p, &err) == 0)
			fail_msg("accepted: %s", bad[i]);
		assert_true(err.msg[0] != '\0');
		assert_int_equal(p.n_binds, 0); /* nothing half-parsed stays */
	}
}

static void test_paths(void **state)
{
	(void)state;
	char out[64];
	assert_true(aj_op_normalize("/a//b/./c/", out, sizeof(out)));
	assert_string_equal(out, "/a/b/c");
	assert_true(aj_op_normalize("/", out, sizeof(out)));
	assert_string_equal(out, "/");
	assert_false(aj_op_normalize("/a/../b", out, sizeof(out)));
	assert_false(aj_op_normalize("a/b", out, sizeof(out)));
	assert_true(aj_op_under("/srv/work", "/srv/work"));
	assert_true(aj_op_under("/srv/work/x", "/srv/work"));
	assert_false(aj_op_under("/srv/workx", "/srv/work"));
	assert_false(aj_op_under("/srv", "/srv/work"));
}

static int tparse(const char *text, aj_tenant *t, size_t *n)
{
	aj_error err;
	aj_err_clear(&err);
	return aj_tenants_parse(text, strlen(text), t, 8, n, &err);
}

static void test_tokens(void **state)
{
	(void)state;
	aj_tenant t[8];
	size_t n;
	assert_int_equal(
	    tparse("[{\"tenant\": \"alice\", \"token\": \"alice-token-0123456789\", "
		   "\"max_sandboxes\": 2, \"max_memory\": \"256M\"}, {\"tenant\": \"bob\", "
		   "\"token\": \"bob-token-0123456789ab\"}]",
		   t, &n),
	    0);
	assert_int_equal(n, 2);
	assert_string_equal(t[0].name, "alice");
	assert_int_equal(t[0].caps.sandboxes, 2);
	assert_int_equal(t[0].caps.memory, 256ULL << 20);
	unsigned char d[32];
	aj_token_digest("bob-token-0123456789ab", 22, d);
	assert_memory_equal(t[1].digest, d, 32);
	static const char *const bad[] = {
	    "[]",
	    "{}",
	    "[{\"tenant\": \"alice\"}]",
	    "[{\"tenant\": \"alice\", \"token\": \"short\"}]",
	    "[{\"tenant\": \"alice\", \"token\": \"has a space 0123456789\"}]",
	    "[{\"tenant\": \"Alice\", \"token\": \"alice-token-0123456789\"}]",
	    "[{\"tenant\": \"../x\", \"token\": \"alice-token-0123456789\"}]",
	    "[{\"tenant\": \"a\", \"token\": \"alice-token-0123456789\", \"admin\": true}]",
	    "[{\"tenant\": \"a\", \"token\": \"alice-token-0123456789\"}, "
	    "{\"tenant\": \"a\", \"token\": \"other-token-0123456789\"}]",
	    "[{\"tenant\": \"a\", \"token\": \"alice-token-0123456789\"}, "
	    "{\"tenant\": \"b\", \"token\": \"alice-token-0123456789\"}]",
	    "[{\"tenant\": \"a\", \"token\": \"alice-token-0123456789\", \"max_pids\": 0}]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (tparse(bad[i], t, &n) == 0)
			fail_msg("accepted: %s", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults), cmocka_unit_test(test_full),
	    cmocka_unit_test(test_refused),  cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_tokens),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
