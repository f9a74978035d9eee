/* SPDX-License-Identifier: MIT */
/* Credential files masked value by value (credmask.c): what is not secret
 * stays, each secret becomes the placeholder, what does not parse is NULL
 * (masked whole). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "credmask.h"

#define S "s3cr3t-VALUE-42"

static char *mask(aj_cred_kind k, const char *text)
{
	return aj_cred_mask(k, text, strlen(text));
}

/* masked to exactly want, and S gone */
static void expect(aj_cred_kind k, const char *text, const char *want)
{
	char *got = mask(k, text);
	assert_non_null(got);
	assert_string_equal(got, want);
	assert_null(strstr(got, S));
	free(got);
}

static void test_kind_of(void **state)
{
	(void)state;
	assert_int_equal(aj_cred_kind_of(".npmrc", ".npmrc"), AJ_CRED_NPMRC);
	assert_int_equal(aj_cred_kind_of("a/b/.npmrc", ".npmrc"), AJ_CRED_NPMRC);
	assert_int_equal(aj_cred_kind_of(".pypirc", ".pypirc"), AJ_CRED_INI);
	assert_int_equal(aj_cred_kind_of(".config/pip/pip.conf", "pip.conf"), AJ_CRED_INI);
	assert_int_equal(aj_cred_kind_of(".netrc", ".netrc"), AJ_CRED_NETRC);
	assert_int_equal(aj_cred_kind_of(".git-credentials", ".git-credentials"), AJ_CRED_GITCRED);
	assert_int_equal(aj_cred_kind_of(".docker/config.json", "config.json"), AJ_CRED_DOCKER);
	assert_int_equal(aj_cred_kind_of("x/.docker/config.json", "config.json"), AJ_CRED_DOCKER);
	assert_int_equal(aj_cred_kind_of("x.docker/config.json", "config.json"), AJ_CRED_WHOLE);
	assert_int_equal(aj_cred_kind_of("config.json", "config.json"), AJ_CRED_WHOLE);
	assert_int_equal(aj_cred_kind_of(".yarnrc.yml", ".yarnrc.yml"), AJ_CRED_YARNRC);
	assert_int_equal(aj_cred_kind_of("id_rsa", "id_rsa"), AJ_CRED_WHOLE);
	assert_null(mask(AJ_CRED_WHOLE, "anything"));
}

static void test_npmrc(void **state)
{
	(void)state;
	expect(AJ_CRED_NPMRC,
	       "registry=http://registry.test/\n"
	       "//registry.test/:_authToken=" S "\n"
	       "  _auth = " S "\n"
	       "//r.example:8080/path/:_password=\"" S "\"\n"
	       "@scope:registry=https://user:" S "@npm.example/\n"
	       "# old: //registry.npmjs.org/:_authToken=" S "\n"
	       "; comment\n"
	       "\n"
	       "email=me@example.com\n"
	       "always-auth=true",
	       "registry=http://registry.test/\n"
	       "//registry.test/:_authToken=agentjail-masked\n"
	       "_auth =agentjail-masked\n"
	       "//r.example:8080/path/:_password=agentjail-masked\n"
	       "@scope:registry=https://user:agentjail-masked@npm.example/\n"
	       "\n"
	       "email=me@example.com\n"
	       "always-auth=true\n");
	/* a bare token on a line, a key with no name: masked whole */
	assert_null(mask(AJ_CRED_NPMRC, "registry=http://r/\n" S "\n"));
	assert_null(mask(AJ_CRED_NPMRC, "=" S "\n"));
	assert_null(mask(AJ_CRED_NPMRC, "[broken\n"));
	char nul[] = "registry=x\0_authToken=" S;
	assert_null(aj_cred_mask(AJ_CRED_NPMRC, nul, sizeof(nul) - 1));
	expect(AJ_CRED_NPMRC, "", "");
}

static void test_ini(void **state)
{
	(void)state;
	expect(AJ_CRED_INI,
	       "[distutils]\nindex-servers =\n    pypi\n    testpypi\n\n"
	       "[pypi]\nusername = __token__\npassword = " S "\n"
	       "[testpypi]\nrepository: https://test.pypi.org/legacy/\npassword:\n  " S "\n\n  " S
	       "\nusername = bob\n",
	       "[distutils]\nindex-servers =\n    pypi\n    testpypi\n\n"
	       "[pypi]\nusername = __token__\npassword =agentjail-masked\n"
	       "[testpypi]\nrepository: https://test.pypi.org/legacy/\npassword:agentjail-masked\n"
	       "\nusername = bob\n");
	expect(AJ_CRED_INI,
	       "[global]\nindex-url = https://alice:" S "@pypi.example/simple\n"
	       "extra-index-url =\n    https://" S "@fury.example/x/\n"
	       "    https://other.example/simple\n",
	       "[global]\nindex-url = https://alice:agentjail-masked@pypi.example/simple\n"
	       "extra-index-url =\n    https://agentjail-masked@fury.example/x/\n"
	       "    https://other.example/simple\n");
	/* a raw '/' or '@' in the password does not cut the user info short */
	expect(AJ_CRED_INI, "[g]\nindex-url = https://u:" S "/x@y@host/simple\n",
	       "[g]\nindex-url = https://u:agentjail-masked@host/simple\n");
	assert_null(mask(AJ_CRED_INI, "[pypi]\n" S "\n"));
}

static void test_netrc(void **state)
{
	(void)state;
	expect(AJ_CRED_NETRC,
	       "machine api.example.com\n  login alice\n  password " S "\n"
	       "# a comment " S "\n"
	       "machine github.com login " S " password x-oauth-basic\n"
	       "default login anonymous password \"" S " with spaces\"\n"
	       "macdef init\ncd /pub " S "\nls\n\nmachine last.example account " S "\n",
	       "machine api.example.com login agentjail-masked password agentjail-masked\n"
	       "machine github.com login agentjail-masked password agentjail-masked\n"
	       "default login agentjail-masked password agentjail-masked\n"
	       "machine last.example account agentjail-masked\n");
	assert_null(mask(AJ_CRED_NETRC, "machine x password\n"));
	assert_null(mask(AJ_CRED_NETRC, "password " S "\n"));
	assert_null(mask(AJ_CRED_NETRC, "machine x lgin " S "\n"));
	assert_null(mask(AJ_CRED_NETRC, "machine x password \"" S "\n"));
	assert_null(mask(AJ_CRED_NETRC, "machine \"a b\" password " S "\n"));
	expect(AJ_CRED_NETRC, "# nothing\n", "");
}

static void test_gitcred(void **state)
{
	(void)state;
	expect(AJ_CRED_GITCRED,
	       "https://alice:" S "@github.com\nhttps://x-access-token:" S
	       "@git.example/org/repo.git\n\nhttps://" S "@host.example\n",
	       "https://alice:agentjail-masked@github.com\n"
	       "https://x-access-token:agentjail-masked@git.example/org/repo.git\n\n"
	       "https://agentjail-masked@host.example\n");
	assert_null(mask(AJ_CRED_GITCRED, S "\n"));
	assert_null(mask(AJ_CRED_GITCRED, "https://a:b c@host\n"));
}

static void test_docker(void **state)
{
	(void)state;
	char *got =
	    mask(AJ_CRED_DOCKER, "{\"auths\": {\"registry.example\": {\"auth\": \"" S "\"},"
				 " \"https://index.docker.io/v1/\": {\"identitytoken\": \"" S "\","
				 " \"email\": \"me@example.com\"}},"
				 " \"credsStore\": \"desktop\","
				 " \"proxies\": {\"default\": {\"httpProxy\": \"http://u:" S
				 "@proxy.example:3128\"}}}");
	assert_non_null(got);
	assert_null(strstr(got, S));
	assert_non_null(strstr(got, "\"registry.example\""));
	assert_non_null(strstr(got, "\"auth\": \"YWdlbnRqYWlsLW1hc2tlZDphZ2VudGphaWwtbWFza2Vk\""));
	assert_non_null(strstr(got, "\"identitytoken\": \"agentjail-masked\""));
	assert_non_null(strstr(got, "\"credsStore\": \"desktop\""));
	assert_non_null(strstr(got, "http://u:agentjail-masked@proxy.example:3128"));
	assert_non_null(strstr(got, "me@example.com"));
	free(got);
	assert_null(mask(AJ_CRED_DOCKER, "{\"auths\": {\"x\": {\"auth\": \"" S "\"}"));
	assert_null(mask(AJ_CRED_DOCKER, "[\"" S "\"]"));
	assert_null(mask(AJ_CRED_DOCKER, "{\"auth\": \"a\", \"auth\": \"" S "\"}"));
}

static void test_yarnrc(void **state)
{
	(void)state;
	expect(
	    AJ_CRED_YARNRC,
	    "yarnPath: .yarn/releases/yarn.cjs\n"
	    "npmRegistryServer: \"https://registry.test\"\n"
	    "npmAuthToken: " S "\n"
	    "npmScopes:\n  corp:\n    npmAlwaysAuth: true\n    npmAuthIdent: \"alice:" S "\"\n"
	    "    npmRegistryServer: https://bob:" S "@corp.example\n"
	    "npmRegistries:\n  \"https://r.example\":\n    npmAuthToken: " S "\n      " S
	    "\n  # npmAuthToken: " S "\n",
	    "yarnPath: .yarn/releases/yarn.cjs\n"
	    "npmRegistryServer: \"https://registry.test\"\n"
	    "npmAuthToken: \"agentjail-masked\"\n"
	    "npmScopes:\n  corp:\n    npmAlwaysAuth: true\n"
	    "    npmAuthIdent: \"agentjail-masked\"\n"
	    "    npmRegistryServer: https://bob:agentjail-masked@corp.example\n"
	    "npmRegistries:\n  \"https://r.example\":\n    npmAuthToken: \"agentjail-masked\"\n");
	/* forms a line parser can't follow: masked whole */
	assert_null(mask(AJ_CRED_YARNRC, "npmScopes: {corp: {npmAuthToken: " S "}}\n"));
	assert_null(mask(AJ_CRED_YARNRC, "npmAuthToken: |\n  " S "\n"));
	assert_null(mask(AJ_CRED_YARNRC, "x: &t " S "\nnpmAuthToken: *t\n"));
	assert_null(mask(AJ_CRED_YARNRC, "npmAuthToken: \"" S "\n  more\"\n"));
	assert_null(mask(AJ_CRED_YARNRC, "? npmAuthToken\n: " S "\n"));
}

static void test_too_big(void **state)
{
	(void)state;
	size_t n = AJ_CRED_MAX_BYTES + 1;
	char *big = malloc(n);
	assert_non_null(big);
	memset(big, '\n', n);
	assert_null(aj_cred_mask(AJ_CRED_NPMRC, big, n));
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kind_of), cmocka_unit_test(test_npmrc),
	    cmocka_unit_test(test_ini),	    cmocka_unit_test(test_netrc),
	    cmocka_unit_test(test_gitcred), cmocka_unit_test(test_docker),
	    cmocka_unit_test(test_yarnrc),  cmocka_unit_test(test_too_big),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
