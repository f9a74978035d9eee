/* SPDX-License-Identifier: MIT */
/* Unit tests: level 2's OCI bundle (src/backend/gvisor/bundle.c) and the
 * "isolation" policy key. No privileges, no runsc needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/backend/gvisor/gvbox.h"
#include "../../src/backend/gvisor/gvisor.h"
#include "policy.h"
#include "util.h"

static char tmpdir[] = "/tmp/aj-unit-gv-XXXXXX";

static int setup_dir(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	(void)state;
	return aj_rm_tree_at(AT_FDCWD, tmpdir, 64) == 0 ? 0 : -1;
}

static void test_isolation_key(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	aj_error err;
	assert_int_equal(p.isolation, AJ_ISO_PROCESS);
	assert_int_equal(aj_policy_set(&p, "isolation", "gvisor", 0, &err), 0);
	assert_int_equal(p.isolation, AJ_ISO_GVISOR);
	assert_int_equal(aj_policy_set(&p, "isolation", "process", 0, &err), 0);
	assert_int_equal(p.isolation, AJ_ISO_PROCESS);
	aj_err_clear(&err);
	assert_int_equal(aj_policy_set(&p, "isolation", "microvm", 0, &err), 0);
	assert_int_equal(p.isolation, AJ_ISO_MICROVM);
	assert_int_equal(aj_policy_set(&p, "isolation", "wasm", 0, &err), 0);
	assert_int_equal(p.isolation, AJ_ISO_WASM);
	assert_int_equal(aj_policy_set(&p, "isolation", "bogus", 0, &err), -EINVAL);
	assert_int_equal(aj_policy_set(&p, "isolation", "", 0, &err), -EINVAL);
	/* the API's JSON names the level too (the service refuses one it
	 * cannot serve: registry.c, never a silent level 1) */
	json_t *j = json_pack("{s:s}", "isolation", "process");
	assert_int_equal(aj_policy_from_json(&p, j, &err), 0);
	assert_int_equal(p.isolation, AJ_ISO_PROCESS);
	json_decref(j);
	j = json_pack("{s:s}", "isolation", "gvisor");
	assert_int_equal(aj_policy_from_json(&p, j, &err), 0);
	assert_int_equal(p.isolation, AJ_ISO_GVISOR);
	json_decref(j);
	aj_policy_free(&p);
}

static json_t *find_mount(json_t *cfg, const char *dest)
{
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(cfg, "mounts"), i, m)
	{
		if (!strcmp(json_string_value(json_object_get(m, "destination")), dest))
			return m;
	}
	return NULL;
}

static bool has_opt(json_t *m, const char *opt)
{
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(m, "options"), i, o)
	{
		if (!strcmp(json_string_value(o), opt))
			return true;
	}
	return false;
}

static void test_bundle(void **state)
{
	(void)state;
	char ws[PATH_MAX], dir[PATH_MAX];
	snprintf(ws, sizeof(ws), "%s/ws", tmpdir);
	snprintf(dir, sizeof(dir), "%s/bundle", tmpdir);
	assert_int_equal(mkdir(ws, 0755), 0);
	assert_int_equal(mkdir(dir, 0755), 0);
	char envf[PATH_MAX + 8];
	snprintf(envf, sizeof(envf), "%s/.env", ws);
	assert_int_equal(aj_write_file(envf, "KEY=realvalue\n", 0644), 0);
	aj_policy p;
	aj_policy_init(&p);
	aj_error err;
	char *argv[] = {"/bin/echo", "hi", NULL};
	p.argv = argv;
	assert_int_equal(aj_policy_set(&p, "workspace", ws, 0, &err), 0);
	assert_int_equal(aj_policy_set(&p, "user", "1000", 0, &err), 0);
	assert_int_equal(aj_policy_set(&p, "env", "FOO=bar", 0, &err), 0);
	assert_int_equal(aj_policy_set(&p, "secret", "TOK=s3cr3tvalue", 0, &err), 0);
	assert_int_equal(aj_policy_set(&p, "nofile", "100", 0, &err), 0);
	assert_int_equal(aj_policy_set(&p, "pids", "20", 0, &err), 0);
	aj_gv_ids ids = {.base = 1000000000u, .ws_uid = 4242, .ws_gid = 4343, .owner_mapped = true};
	aj_gv_staged st = {.etc_tree = -1};
	assert_int_equal(aj_gvisor_bundle_write(&p, &ids, dir, &st, &err), 0);

	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/config.json", dir);
	json_t *cfg = json_load_file(path, 0, NULL);
	assert_non_null(cfg);
	/* the process: argv, uid, no capabilities, no new privileges */
	json_t *proc = json_object_get(cfg, "process");
	assert_string_equal(json_string_value(json_array_get(json_object_get(proc, "args"), 0)),
			    "/bin/echo");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(proc, "user"), "uid")),
			 1000);
	assert_true(json_is_true(json_object_get(proc, "noNewPrivileges")));
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(proc, "capabilities"), "bounding")), 0);
	/* env: FOO and the secret's placeholder, never its value */
	char *envs = json_dumps(json_object_get(proc, "env"), 0);
	assert_non_null(strstr(envs, "FOO=bar"));
	assert_non_null(strstr(envs, "TOK=agentjail-placeholder-TOK-"));
	assert_null(strstr(envs, "s3cr3tvalue"));
	free(envs);
	char *rl = json_dumps(json_object_get(proc, "rlimits"), 0);
	assert_non_null(strstr(rl, "RLIMIT_NOFILE"));
	assert_non_null(strstr(rl, "RLIMIT_NPROC"));
	free(rl);
	/* the root is the skeleton, read-only; /usr a read-only bind */
	assert_true(json_is_true(json_object_get(json_object_get(cfg, "root"), "readonly")));
	json_t *usr = find_mount(cfg, "/usr");
	assert_non_null(usr);
	assert_true(has_opt(usr, "ro"));
	/* the workspace: read-write, from its staged path */
	json_t *w = find_mount(cfg, "/workspace");
	assert_non_null(w);
	assert_true(has_opt(w, "rw"));
	assert_int_equal(st.n, 1);
	assert_string_equal(st.src[0], ws);
	assert_non_null(strstr(json_string_value(json_object_get(w, "source")), "/binds/0"));
	/* .env masked by a read-only replacement with placeholders */
	json_t *env = find_mount(cfg, "/workspace/.env");
	assert_non_null(env);
	assert_true(has_opt(env, "ro"));
	_cleanup_free_ char *text = NULL;
	assert_int_equal(
	    aj_read_file(json_string_value(json_object_get(env, "source")), &text, NULL), 0);
	assert_null(strstr(text, "realvalue"));
	/* no host uid 0 in the maps; the sandbox user is the workspace owner */
	json_t *um = json_object_get(json_object_get(cfg, "linux"), "uidMappings");
	size_t i;
	json_t *e;
	bool owner = false;
	json_array_foreach(um, i, e)
	{
		json_int_t host = json_integer_value(json_object_get(e, "hostID"));
		json_int_t c = json_integer_value(json_object_get(e, "containerID"));
		assert_true(host != 0);
		if (c == 1000 && host == 4242)
			owner = true;
	}
	assert_true(owner);
	/* the synthesized /etc is in the skeleton, not the host's */
	snprintf(path, sizeof(path), "%s/rootfs/etc/passwd", dir);
	_cleanup_free_ char *pw = NULL;
	assert_int_equal(aj_read_file(path, &pw, NULL), 0);
	assert_non_null(strstr(pw, "1000"));
	json_decref(cfg);
	aj_gv_staged_free(&st);
	aj_policy_free(&p);
}

/* A connection's agent stopped after it answered (its runsc exec never
 * exits): the relay's wait ends after the grace, the process killed and
 * still unreaped until aj_gvbox_agent_end (the old code waited for ever). */
static void test_agent_settle_stopped(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	assert_int_equal(kill(pid, SIGSTOP), 0);
	gv_agent a = {.pid = pid, .to = -1, .from = -1, .errp = -1};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	aj_gvbox_agent_settle(&a, false, 200);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 150 && ms < 2000);
	siginfo_t si = {0};
	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT), 0);
	assert_int_equal(si.si_pid, pid); /* exited, not yet reaped */
	assert_int_equal(si.si_status, SIGKILL);
	aj_gvbox_agent_end(&a, false);
	assert_int_equal(a.pid, 0);
	assert_true(waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_isolation_key),
	    cmocka_unit_test(test_bundle),
	    cmocka_unit_test(test_agent_settle_stopped),
	};
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
