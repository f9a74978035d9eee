/* SPDX-License-Identifier: MIT */
/* Unit tests: policy parsing and validation (no privileges needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etc.h"
#include "policy.h"
#include "util.h"

static char tmpdir[] = "/tmp/aj-unit-XXXXXX";

static int setup_dir(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int teardown_dir(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_workspace_paths(void **state)
{
	(void)state;
	aj_policy p;
	aj_error err;
	aj_policy_init(&p);
	aj_err_clear(&err);
	assert_int_equal(aj_policy_set_workspace(&p, "relative/dir", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "relative"));
	assert_int_equal(aj_policy_set_workspace(&p, "/tmp/../etc", &err), -EINVAL);
	assert_int_equal(aj_policy_set_workspace(&p, "/tmp/./x", &err), -EINVAL);
	assert_int_equal(aj_policy_set_workspace(&p, "/nonexistent-aj-dir", &err), -ENOENT);
	assert_non_null(strstr(err.hint, "mkdir"));
	assert_null(p.workspace);

	char ws[256], link[256], file[256];
	snprintf(ws, sizeof(ws), "%s/ws", tmpdir);
	snprintf(link, sizeof(link), "%s/link", tmpdir);
	snprintf(file, sizeof(file), "%s/file", tmpdir);
	assert_int_equal(mkdir(ws, 0755), 0);
	assert_int_equal(symlink(ws, link), 0);
	assert_int_equal(aj_write_file(file, "x", 0644), 0);

	assert_int_equal(aj_policy_set_workspace(&p, link, &err), -ELOOP);
	char inner[300];
	snprintf(inner, sizeof(inner), "%s/link/", tmpdir);
	assert_int_equal(aj_policy_set_workspace(&p, inner, &err), -ELOOP);
	assert_int_equal(aj_policy_set_workspace(&p, file, &err), -ENOTDIR);

	char messy[300];
	snprintf(messy, sizeof(messy), "/%s//ws/", tmpdir);
	assert_int_equal(aj_policy_set_workspace(&p, messy, &err), 0);
	assert_string_equal(p.workspace, ws);
	aj_policy_free(&p);
}

static void test_binds(void **state)
{
	(void)state;
	aj_policy p;
	aj_error err;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_bind(&p, "/usr/share:/data", false, &err), 0);
	assert_string_equal(p.binds[0].src, "/usr/share");
	assert_string_equal(p.binds[0].dest, "/data");
	assert_false(p.binds[0].writable);
	assert_int_equal(aj_policy_add_bind(&p, "/usr/lib", true, &err), 0);
	assert_string_equal(p.binds[1].dest, "/usr/lib");
	assert_int_equal(aj_policy_add_bind(&p, "/usr:/proc/x", false, &err), -EINVAL);
	assert_int_equal(aj_policy_add_bind(&p, "/usr:relative", false, &err), -EINVAL);
	assert_int_equal(aj_policy_add_bind(&p, "/usr:/a/../b", false, &err), -EINVAL);
	assert_int_equal(aj_policy_add_bind(&p, "/usr:/", false, &err), -EINVAL);
	assert_int_equal(aj_policy_add_bind(&p, "/no/such/path", false, &err), -ENOENT);
	assert_int_equal(p.n_binds, 2);
	/* duplicate destinations are refused at validation */
	assert_int_equal(aj_policy_add_bind(&p, "/usr/bin:/data", false, &err), 0);
	char *argv[] = {"true", NULL};
	p.argv = argv;
	assert_int_equal(aj_policy_validate(&p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/data"));
	aj_policy_free(&p);
}

static void test_env(void **state)
{
	(void)state;
	aj_policy p;
	aj_error err;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_env(&p, "A=1", &err), 0);
	assert_int_equal(aj_policy_add_env(&p, "1BAD=x", &err), -EINVAL);
	assert_int_equal(aj_policy_add_env(&p, "=x", &err), -EINVAL);
	assert_int_equal(aj_policy_add_env(&p, "BAD-NAME=x", &err), -EINVAL);
	setenv("AJ_UNIT_COPY", "copied", 1);
	assert_int_equal(aj_policy_add_env(&p, "AJ_UNIT_COPY", &err), 0);
	unsetenv("AJ_UNIT_NOT_SET");
	assert_int_equal(aj_policy_add_env(&p, "AJ_UNIT_NOT_SET", &err), -ENOENT);
	assert_int_equal(aj_policy_add_env(&p, "PATH=/custom", &err), 0);

	char envfile[256];
	snprintf(envfile, sizeof(envfile), "%s/env", tmpdir);
	assert_int_equal(aj_write_file(envfile, "# comment\n\nB=two words\r\nexport C=3\n", 0600),
			 0);
	assert_int_equal(aj_policy_add_env_file(&p, envfile, &err), 0);
	assert_int_equal(aj_write_file(envfile, "OK=1\nnot a var\n", 0600), 0);
	assert_int_equal(aj_policy_add_env_file(&p, envfile, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "line 2"));

	setenv("AJ_UNIT_LEAK", "secret", 1);
	char **env = aj_policy_build_env(&p, "xterm", NULL);
	assert_non_null(env);
	size_t n = 0;
	bool path_custom = false, has_b = false, has_c = false, has_copy = false;
	for (char **e = env; *e; e++, n++) {
		assert_null(strstr(*e, "AJ_UNIT_LEAK"));
		path_custom |= strcmp(*e, "PATH=/custom") == 0;
		has_b |= strcmp(*e, "B=two words") == 0;
		has_c |= strcmp(*e, "C=3") == 0;
		has_copy |= strcmp(*e, "AJ_UNIT_COPY=copied") == 0;
	}
	/* PATH HOME TERM LANG A AJ_UNIT_COPY B C OK (PATH replaced in place) */
	assert_int_equal(n, 9);
	assert_true(path_custom && has_b && has_c && has_copy);
	aj_strv_free(env);
	aj_policy_free(&p);
}

static void test_user_hostname_cpus(void **state)
{
	(void)state;
	aj_policy p;
	aj_error err;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_set_user(&p, "1000", &err), 0);
	assert_int_equal(p.uid, 1000);
	assert_int_equal(p.gid, 1000);
	assert_int_equal(aj_policy_set_user(&p, "5:7", &err), 0);
	assert_int_equal(p.gid, 7);
	assert_int_equal(aj_policy_set_user(&p, "root", &err), -EINVAL);
	assert_int_equal(aj_policy_set_user(&p, "-1", &err), -EINVAL);
	assert_int_equal(aj_policy_set_user(&p, "70000", &err), -EINVAL);
	assert_int_equal(aj_policy_set_user(&p, "1:", &err), -EINVAL);
	assert_int_equal(aj_policy_set_hostname(&p, "box-1.local", &err), 0);
	assert_int_equal(aj_policy_set_hostname(&p, "-bad", &err), -EINVAL);
	assert_int_equal(aj_policy_set_hostname(&p, "a b", &err), -EINVAL);
	assert_int_equal(aj_policy_set_cpus(&p, "1.5", &err), 0);
	assert_int_equal(p.cpu_millis, 1500);
	assert_int_equal(aj_policy_set_cpus(&p, "0", &err), -EINVAL);
	assert_int_equal(aj_policy_set_cpus(&p, "two", &err), -EINVAL);
	assert_int_equal(aj_policy_set_cpus(&p, "nan", &err), -EINVAL);
	assert_int_equal(aj_policy_set_cwd(&p, "rel", &err), -EINVAL);
	assert_int_equal(aj_policy_set_cwd(&p, "/workspace/../etc", &err), -EINVAL);
	assert_int_equal(aj_policy_set_cwd(&p, "/workspace/sub/", &err), 0);
	assert_string_equal(p.cwd, "/workspace/sub");
	/* --limits: strict by default */
	assert_false(p.limits_best_effort);
	assert_int_equal(aj_policy_set(&p, "limits", "best-effort", AJ_POLICY_SET_REMOTE, &err), 0);
	assert_true(p.limits_best_effort);
	assert_int_equal(aj_policy_set(&p, "limits", "strict", 0, &err), 0);
	assert_false(p.limits_best_effort);
	assert_int_equal(aj_policy_set(&p, "limits", "loose", 0, &err), -EINVAL);
	assert_int_equal(aj_policy_set(&p, "limits", NULL, 0, &err), -EINVAL);
	assert_false(p.limits_best_effort);
	aj_policy_free(&p);
}

static void test_validate_command(void **state)
{
	(void)state;
	aj_policy p;
	aj_error err;
	aj_policy_init(&p);
	char *empty[] = {NULL};
	p.argv = empty;
	assert_int_equal(aj_policy_validate(&p, &err), -EINVAL);
	assert_non_null(strstr(err.hint, "--"));
	char *ok[] = {"true", NULL};
	p.argv = ok;
	assert_int_equal(aj_policy_validate(&p, &err), 0);
	p.memory = 1024;
	assert_int_equal(aj_policy_validate(&p, &err), -EINVAL);
	aj_policy_free(&p);
}

static void test_etc_passwd(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	char *pw = aj_etc_passwd(&p);
	assert_non_null(strstr(pw, "root:x:0:0:root:" AJ_SANDBOX_HOME));
	free(pw);
	p.uid = 1000;
	p.gid = 1000;
	pw = aj_etc_passwd(&p);
	assert_non_null(strstr(pw, "agent:x:1000:1000:"));
	free(pw);
	char *gr = aj_etc_group(&p);
	assert_non_null(strstr(gr, "agent:x:1000:"));
	free(gr);
}

/* --writable: relative, normalized, one of the protected paths or below. */
static void test_writable(void **state)
{
	(void)state;
	aj_policy p;
	aj_error err;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_writable(&p, ".vscode/", &err), 0);
	assert_int_equal(aj_policy_add_writable(&p, ".vscode", &err), 0); /* once */
	assert_int_equal(aj_policy_add_writable(&p, ".git/hooks", &err), 0);
	assert_int_equal(aj_policy_add_writable(&p, ".claude/settings.json", &err), 0);
	assert_int_equal(p.n_writable, 3);
	assert_string_equal(p.writable[0], ".vscode");
	assert_string_equal(p.writable[1], ".git/hooks");
	static const char *const bad[] = {"",	     "/",	  "/etc",	"..",
					  "../.git", ".git/../x", "./.vscode",	".git//hooks",
					  "src",     ".gitx",	  ".vscodex/a", "a/.vscode",
					  ".git/\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(aj_policy_add_writable(&p, bad[i], &err), -EINVAL);
		assert_non_null(strstr(err.msg, "--writable"));
	}
	assert_int_equal(p.n_writable, 3);
	char *cmd[] = {"true", NULL};
	p.argv = cmd;
	assert_int_equal(aj_policy_validate(&p, &err), -EINVAL); /* no workspace */
	assert_non_null(strstr(err.msg, "--workspace"));
	aj_policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_workspace_paths),
	    cmocka_unit_test(test_binds),
	    cmocka_unit_test(test_env),
	    cmocka_unit_test(test_user_hostname_cpus),
	    cmocka_unit_test(test_validate_command),
	    cmocka_unit_test(test_etc_passwd),
	    cmocka_unit_test(test_writable),
	};
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
