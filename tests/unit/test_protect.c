/* SPDX-License-Identifier: MIT */
/* Unit tests: which workspace paths protect.c keeps read-only, the
 * placeholders it makes for missing ones (and removes), its reading of
 * .git/config, .git files and symlinks (no mounts: the parent's half). */
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

#include "policy.h"
#include "protect.h"
#include "util.h"

static char tmpdir[] = "/tmp/aj-unit-protect-XXXXXX";
static char ws[256];

static void put(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	assert_int_equal(aj_write_file(path, text, 0644), 0);
}

static void mk(const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	assert_int_equal(aj_mkdir_p(path, 0755), 0);
}

static bool exists(const char *rel)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", ws, rel);
	return lstat(path, &st) == 0;
}

static const aj_protect_entry *entry(const aj_protect *pr, const char *rel)
{
	for (size_t i = 0; i < pr->n; i++)
		if (!strcmp(pr->e[i].rel, rel))
			return &pr->e[i];
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	char sd[300];
	snprintf(sd, sizeof(sd), "%s/state", tmpdir);
	setenv("AGENTJAIL_STATE_DIR", sd, 1); /* the manifests, as root */
	char rt[300];
	snprintf(rt, sizeof(rt), "%s/run", tmpdir);
	setenv("XDG_RUNTIME_DIR", rt, 1); /* and as a user */
	return mkdir(rt, 0700);
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void fresh_ws(const char *name, aj_policy *p)
{
	snprintf(ws, sizeof(ws), "%s/%s", tmpdir, name);
	assert_int_equal(mkdir(ws, 0755), 0);
	aj_policy_init(p);
	p->workspace = strdup(ws);
}

static void test_repo(void **state)
{
	(void)state;
	aj_policy p;
	aj_error err;
	fresh_ws("repo", &p);
	mk(".git/hooks");
	mk("tools");
	put(".git/HEAD", "ref: refs/heads/main\n");
	put(".git/config", "[core]\n\tbare = false\n\thooksPath = \"tools/hooks\" ; a comment\n"
			   "[include]\n\tpath = ../extra.cfg\n"
			   "[includeIf \"gitdir:/x/\"]\n\tpath = /elsewhere/outside.cfg\n"
			   "[include] path = ~/home.cfg\n");
	char link[512];
	snprintf(link, sizeof(link), "%s/.vscode", ws);
	assert_int_equal(symlink("/etc", link), 0);
	aj_protect *pr = NULL;
	assert_int_equal(aj_protect_prepare(&p, &pr, &err), 0);
	assert_non_null(pr);
	const aj_protect_entry *e;
	assert_non_null(e = entry(pr, ".git"));
	assert_int_equal(e->kind, AJ_PROTECT_PIN);
	assert_non_null(e = entry(pr, ".git/config"));
	assert_int_equal(e->kind, AJ_PROTECT_RO);
	assert_int_equal(e->made, 0);
	assert_non_null(e = entry(pr, ".git/hooks"));
	assert_int_equal(e->made, 0);
	assert_non_null(e = entry(pr, ".git/commondir"));
	assert_int_equal(e->made, 'f');
	assert_non_null(e = entry(pr, ".git/config.worktree"));
	assert_int_equal(e->made, 'l');
	assert_non_null(e = entry(pr, "tools")); /* on the way: pinned */
	assert_int_equal(e->kind, AJ_PROTECT_PIN);
	assert_non_null(e = entry(pr, "tools/hooks"));
	assert_int_equal(e->made, 'd');
	assert_non_null(e = entry(pr, "extra.cfg")); /* include, relative to .git */
	assert_int_equal(e->made, 'l');
	assert_non_null(e = entry(pr, ".vscode")); /* the link itself, not /etc */
	assert_int_equal(e->made, 0);
	assert_null(entry(pr, "home.cfg"));
	assert_non_null(e = entry(pr, ".mcp.json"));
	assert_int_equal(e->made, 'd');
	assert_true(exists("tools/hooks") && exists(".git/commondir") && exists(".mcp.json"));
	aj_protect_release(pr);
	assert_false(exists("tools/hooks") || exists(".git/commondir") || exists(".mcp.json") ||
		     exists("extra.cfg") || exists(".git/modules") || exists(".claude"));
	assert_true(exists(".git/hooks") && exists(".vscode") && exists("tools"));
	aj_policy_free(&p);
}

static void test_lifted_and_gitfile(void **state)
{
	(void)state;
	aj_policy p;
	aj_error err;
	fresh_ws("wt", &p);
	mk("store/hooks");
	put(".git", "gitdir: store\n");
	put("store/config", "[core]\n");
	assert_int_equal(aj_policy_add_writable(&p, ".vscode", &err), 0);
	aj_protect *pr = NULL;
	assert_int_equal(aj_protect_prepare(&p, &pr, &err), 0);
	const aj_protect_entry *e;
	assert_non_null(e = entry(pr, ".git"));
	assert_int_equal(e->kind, AJ_PROTECT_RO);
	assert_non_null(e = entry(pr, "store"));
	assert_int_equal(e->kind, AJ_PROTECT_PIN);
	assert_non_null(entry(pr, "store/config"));
	assert_non_null(entry(pr, "store/hooks"));
	assert_null(entry(pr, ".vscode"));
	assert_false(exists(".vscode"));
	aj_protect_release(pr);
	aj_policy_free(&p);
}

static void test_unsafe_dotdot(void **state)
{
	(void)state;
	aj_policy p;
	aj_error err;
	fresh_ws("dotdot", &p);
	mk(".git");
	put(".git/config", "[core]\n\thooksPath = missing/../hooks\n");
	aj_protect *pr = NULL;
	assert_int_equal(aj_protect_prepare(&p, &pr, &err), -ELOOP);
	assert_null(pr);
	assert_non_null(strstr(err.msg, "missing/../hooks"));
	/* nothing made stays */
	assert_false(exists(".mcp.json") || exists(".git/hooks") || exists(".git/commondir"));
	aj_policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_repo),
	    cmocka_unit_test(test_lifted_and_gitfile),
	    cmocka_unit_test(test_unsafe_dotdot),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
