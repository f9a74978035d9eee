/* SPDX-License-Identifier: MIT */
/* Unit tests: the compiled plan (src/backend/process/plan.c), what
 * `agentjail run --print-plan` prints. No privileges needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount.h"
#include "plan.h"
#include "policy.h"
#include "util.h"

static char tmpdir[] = "/tmp/aj-unit-plan-XXXXXX";
static char ws[64], data[64], out[64], root[64];
static char *cmd[] = {"echo", "hello", NULL};

static int setup_dir(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(ws, sizeof(ws), "%s/ws", tmpdir);
	snprintf(data, sizeof(data), "%s/data", tmpdir);
	snprintf(out, sizeof(out), "%s/out", tmpdir);
	snprintf(root, sizeof(root), "%s/root", tmpdir);
	return mkdir(ws, 0755) || mkdir(data, 0755) || mkdir(out, 0755) || mkdir(root, 0755) ? -1
											     : 0;
}

static int teardown_dir(void **state)
{
	(void)state;
	return aj_rm_tree_at(AT_FDCWD, tmpdir, 64) == 0 ? 0 : -1;
}

static void set(aj_policy *p, const char *name, const char *value)
{
	aj_error err;
	aj_err_clear(&err);
	int r = aj_policy_set(p, name, value, 0, &err);
	if (r < 0)
		fail_msg("%s %s: %s", name, value ? value : "", err.msg);
}

static json_t *plan_of(aj_policy *p)
{
	aj_error err;
	aj_err_clear(&err);
	p->argv = cmd;
	json_t *j = aj_plan_json(p, &err);
	if (!j)
		fail_msg("plan: %s", err.msg);
	return j;
}

/* The mount whose target is t, or NULL. */
static json_t *mount_at(json_t *plan, const char *t)
{
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(plan, "mounts"), i, m)
	{
		if (!strcmp(json_string_value(json_object_get(m, "target")), t))
			return m;
	}
	return NULL;
}

static size_t count_what(json_t *plan, const char *what)
{
	size_t i, n = 0;
	json_t *m;
	json_array_foreach(json_object_get(plan, "mounts"), i, m)
	{
		n += !strcmp(json_string_value(json_object_get(m, "what")), what);
	}
	return n;
}

static bool has_landlock(json_t *plan, const char *path, const char *access)
{
	size_t i, k;
	json_t *r, *a;
	json_array_foreach(json_object_get(json_object_get(plan, "landlock"), "rules"), i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "path")), path))
			continue;
		json_array_foreach(json_object_get(r, "access"), k, a)
		{
			if (!strcmp(json_string_value(a), access))
				return true;
		}
	}
	return false;
}

static void test_workspace(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	set(&p, "workspace", ws);
	json_t *j = plan_of(&p);
	assert_string_equal(json_string_value(json_object_get(j, "isolation")), "process");
	json_t *m = mount_at(j, "/workspace");
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "source")), ws);
	assert_string_equal(json_string_value(json_object_get(m, "type")), "bind");
	assert_false(json_is_true(json_object_get(m, "ro")));
	/* the host view: the system directories, /etc entries, /proc, /tmp */
	assert_true(count_what(j, "system") > 0);
	assert_non_null(mount_at(j, "/proc"));
	assert_non_null(mount_at(j, "/tmp"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "root"), "kind")),
			    "host");
	assert_true(has_landlock(j, "/workspace", "write"));
	assert_true(has_landlock(j, "/", "read"));
	assert_false(has_landlock(j, "/", "write"));
	/* masks and the workspace guard come with a workspace */
	json_t *masks = json_object_get(j, "masks");
	assert_true(json_array_size(json_object_get(masks, "defaults")) > 0);
	json_t *guard = json_object_get(json_object_get(j, "workspace_guard"), "protected");
	assert_true(json_array_size(guard) > 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "user"), "cwd")),
			    "/workspace");
	json_t *sc = json_object_get(j, "seccomp");
	assert_string_equal(json_string_value(json_object_get(sc, "profile")), "default");
	assert_true(json_array_size(json_object_get(sc, "denied")) > 10);
	json_decref(j);
	aj_policy_free(&p);

	/* without one: no masks, no guard, cwd is home */
	aj_policy_init(&p);
	j = plan_of(&p);
	assert_null(mount_at(j, "/workspace"));
	assert_true(json_is_null(json_object_get(j, "masks")));
	assert_true(json_is_null(json_object_get(j, "workspace_guard")));
	assert_false(has_landlock(j, "/workspace", "write"));
	json_decref(j);
	aj_policy_free(&p);
}

static void test_image_root(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	set(&p, "rootfs", root);
	aj_plan pl;
	aj_error err;
	assert_int_equal(aj_plan_mounts(&p, &pl, &err), 0);
	assert_int_equal(pl.m[0].role, AJ_PLAN_ROOTFS);
	assert_string_equal(pl.m[0].source, root);
	json_t *j = plan_of(&p);
	json_t *r = json_object_get(j, "root");
	assert_string_equal(json_string_value(json_object_get(r, "kind")), "image");
	assert_string_equal(json_string_value(json_object_get(r, "source")), root);
	assert_int_equal(count_what(j, "system"), 0);
	assert_int_equal(count_what(j, "etc"), 0);
	assert_string_equal(json_string_value(json_object_get(mount_at(j, "/"), "type")),
			    "overlay");
	assert_true(has_landlock(j, "/", "write")); /* the overlay is writable */
	/* level 1 keeps the image's own /etc, agentjail's files written over it */
	json_t *etc = json_object_get(j, "etc");
	assert_int_equal(json_array_size(json_object_get(etc, "synthesized")), AJ_ETC_FILES);
	assert_string_equal(
	    json_string_value(json_array_get(json_object_get(etc, "synthesized"), 0)), "passwd");
	json_decref(j);
	aj_policy_free(&p);
}

static void test_net_allow(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	set(&p, "allow", "example.com:443");
	set(&p, "allow", "*.pypi.org");
	set(&p, "deny", "10.1.0.0/16");
	json_t *j = plan_of(&p);
	json_t *n = json_object_get(j, "network");
	assert_string_equal(json_string_value(json_object_get(n, "mode")), "allow");
	json_t *a = json_object_get(n, "allow");
	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "dest")),
			    "example.com");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "ports")),
			    "443");
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "ports")),
			    "80,443");
	assert_string_equal(json_string_value(json_array_get(json_object_get(n, "deny"), 0)),
			    "10.1.0.0/16");
	assert_non_null(strstr(json_string_value(json_object_get(n, "resolver")), "agentjail"));
	assert_non_null(json_object_get(n, "proxy"));
	json_decref(j);
	aj_policy_free(&p);

	aj_policy_init(&p);
	j = plan_of(&p);
	n = json_object_get(j, "network");
	assert_string_equal(json_string_value(json_object_get(n, "mode")), "none");
	assert_null(json_object_get(n, "proxy"));
	json_decref(j);
	aj_policy_free(&p);
}

static void test_binds_and_limits(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	char spec[160];
	snprintf(spec, sizeof(spec), "%s:/data", data);
	set(&p, "ro", spec);
	snprintf(spec, sizeof(spec), "%s:/out", out);
	set(&p, "rw", spec);
	set(&p, "memory", "256M");
	set(&p, "pids", "50");
	set(&p, "cpus", "1.5");
	set(&p, "timeout", "2.5");
	set(&p, "nofile", "100");
	set(&p, "user", "1000:1000");
	json_t *j = plan_of(&p);
	json_t *ro = mount_at(j, "/data"), *rw = mount_at(j, "/out");
	assert_non_null(ro);
	assert_non_null(rw);
	assert_true(json_is_true(json_object_get(ro, "ro")));
	assert_false(json_is_true(json_object_get(rw, "ro")));
	assert_string_equal(json_string_value(json_object_get(ro, "source")), data);
	assert_true(has_landlock(j, "/out", "write"));
	assert_false(has_landlock(j, "/data", "write"));
	json_t *l = json_object_get(j, "limits");
	assert_int_equal(json_integer_value(json_object_get(l, "memory_bytes")), 256 << 20);
	assert_int_equal(json_integer_value(json_object_get(l, "pids")), 50);
	assert_int_equal(json_integer_value(json_object_get(l, "cpus_millis")), 1500);
	assert_int_equal(json_integer_value(json_object_get(l, "timeout_ms")), 2500);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(l, "rlimits"), "nofile")), 100);
	json_t *u = json_object_get(j, "user");
	assert_int_equal(json_integer_value(json_object_get(u, "uid")), 1000);
	json_decref(j);
	aj_policy_free(&p);
}

static void test_secrets_never_printed(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	set(&p, "workspace", ws);
	set(&p, "secret", "API_TOKEN=s3cr3t-value-4711");
	set(&p, "redact", "other-value-0815");
	set(&p, "env", "MODE=fast");
	char *argv[] = {"curl", "-H", "Authorization: s3cr3t-value-4711", NULL};
	aj_error err;
	p.argv = argv;
	json_t *j = aj_plan_json(&p, &err);
	assert_non_null(j);
	char *text = json_dumps(j, 0);
	assert_non_null(text);
	assert_null(strstr(text, "s3cr3t-value-4711"));
	assert_null(strstr(text, "other-value-0815"));
	assert_null(strstr(text, "fast")); /* no --env value either: names only */
	json_t *env = json_object_get(j, "env");
	json_t *s = json_array_get(json_object_get(env, "secrets"), 0);
	assert_string_equal(json_string_value(json_object_get(s, "name")), "API_TOKEN");
	assert_string_equal(json_string_value(json_object_get(s, "placeholder")),
			    p.secrets[0].placeholder);
	assert_non_null(strstr(text, "\"MODE\""));
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "command"), 2)),
			    "[REDACTED]");
	free(text);
	json_decref(j);
	aj_policy_free(&p);
}

static void test_gvisor(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	set(&p, "isolation", "gvisor");
	set(&p, "workspace", ws);
	set(&p, "pids", "64");
	json_t *j = plan_of(&p);
	assert_string_equal(json_string_value(json_object_get(j, "isolation")), "gvisor");
	assert_non_null(mount_at(j, "/workspace"));
	assert_int_equal(count_what(j, "dev"), 0); /* runsc's own /dev */
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "landlock"), "rules")),
			 0);
	assert_null(json_object_get(json_object_get(j, "seccomp"), "denied"));
	json_t *rl = json_object_get(json_object_get(j, "limits"), "rlimits");
	assert_int_equal(json_integer_value(json_object_get(rl, "nproc")), 64);
	json_decref(j);
	aj_policy_free(&p);
}

/* The printed binds are those level 1 mounts: aj_mount_plan_build takes
 * them from aj_plan_mounts (without the state directory's caches). */
static void test_printed_is_mounted(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	set(&p, "workspace", ws);
	char spec[160];
	snprintf(spec, sizeof(spec), "%s:/data", data);
	set(&p, "ro", spec);
	json_t *j = plan_of(&p);
	aj_mount_plan mp;
	aj_error err;
	assert_int_equal(aj_mount_plan_build(&p, &mp, NULL, &err), 0);
	size_t i, k = 0;
	json_t *m;
	json_array_foreach(json_object_get(j, "mounts"), i, m)
	{
		const char *what = json_string_value(json_object_get(m, "what"));
		const char *type = json_string_value(json_object_get(m, "type"));
		bool host = !strcmp(what, "system") || !strcmp(what, "etc") ||
			    !strcmp(what, "dev") || !strcmp(what, "workspace") ||
			    !strcmp(what, "bind");
		if (!host || (strcmp(type, "bind") && strcmp(type, "symlink")))
			continue;
		assert_true(k < mp.n);
		assert_string_equal(json_string_value(json_object_get(m, "target")),
				    mp.ops[k].dest);
		bool link = !strcmp(json_string_value(json_object_get(m, "type")), "symlink");
		assert_int_equal(link, mp.ops[k].kind == AJ_MOUNT_SYMLINK);
		if (!link)
			assert_int_equal(json_is_true(json_object_get(m, "ro")),
					 !mp.ops[k].writable);
		k++;
	}
	assert_int_equal(k, mp.n);
	aj_mount_plan_free(&mp);
	json_decref(j);
	aj_policy_free(&p);
}

static void test_invalid(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	aj_error err;
	aj_err_clear(&err);
	p.argv = NULL; /* no command */
	assert_null(aj_plan_json(&p, &err));
	assert_true(err.msg[0] != '\0');
	aj_policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_workspace),
	    cmocka_unit_test(test_image_root),
	    cmocka_unit_test(test_net_allow),
	    cmocka_unit_test(test_binds_and_limits),
	    cmocka_unit_test(test_secrets_never_printed),
	    cmocka_unit_test(test_gvisor),
	    cmocka_unit_test(test_printed_is_mounted),
	    cmocka_unit_test(test_invalid),
	};
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
