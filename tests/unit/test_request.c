/* SPDX-License-Identifier: MIT */
/* Unit tests: the API's request parsing (exec bodies) and policies from JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "code_req.h"
#include "policy.h"
#include "request.h"

static int parse(const char *body, aj_exec_req *q)
{
	aj_error err;
	return aj_exec_req_parse(body, strlen(body), q, &err);
}

static void test_exec_forms(void **state)
{
	(void)state;
	aj_exec_req q;
	assert_int_equal(parse("{\"cmd\": \"echo hi\"}", &q), 0);
	assert_string_equal(q.argv[0], "/bin/sh");
	assert_string_equal(q.argv[1], "-c");
	assert_string_equal(q.argv[2], "echo hi");
	assert_null(q.argv[3]);
	aj_exec_req_free(&q);
	assert_int_equal(
	    parse("{\"cmd\": [\"ls\", \"-l\"], \"env\": {\"A\": \"1\"}, \"cwd\": \"/tmp\", "
		  "\"timeout\": 1.5, \"stdin\": \"x\\u0000y\", \"background\": true}",
		  &q),
	    0);
	assert_string_equal(q.argv[1], "-l");
	assert_string_equal(q.env[0], "A=1");
	assert_string_equal(q.cwd, "/tmp");
	assert_int_equal(q.timeout_ms, 1500);
	assert_int_equal(q.stdin_len, 3); /* NUL bytes are fine in stdin */
	assert_true(q.background);
	aj_exec_req_free(&q);
}

static void test_exec_refused(void **state)
{
	(void)state;
	const char *bad[] = {
	    "",
	    "[]",
	    "{",
	    "{}",
	    "{\"cmd\": []}",
	    "{\"cmd\": \"\"}",
	    "{\"cmd\": [\"\"]}",
	    "{\"cmd\": [1]}",
	    "{\"cmd\": [\"a\\u0000b\"]}",
	    "{\"cmd\": \"ls\", \"timeout\": -1}",
	    "{\"cmd\": \"ls\", \"timeout\": \"1\"}",
	    "{\"cmd\": \"ls\", \"cwd\": \"tmp\"}",
	    "{\"cmd\": \"ls\", \"env\": [\"A=1\"]}",
	    "{\"cmd\": \"ls\", \"env\": {\"A=B\": \"1\"}}",
	    "{\"cmd\": \"ls\", \"env\": {\"A\": 1}}",
	    "{\"cmd\": \"ls\", \"background\": 1}",
	    "{\"cmd\": \"ls\", \"unknown\": 1}",
	    "{\"cmd\": \"ls\", \"cmd\": \"ls\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		aj_exec_req q;
		if (parse(bad[i], &q) == 0)
			fail_msg("accepted: %s", bad[i]);
	}
}

static int from_json(const char *text, aj_policy *p, aj_error *err)
{
	json_t *o = json_loads(text, 0, NULL);
	aj_policy_init(p);
	int r = aj_policy_from_json(p, o, err);
	json_decref(o);
	return r;
}

static void test_policy_from_json(void **state)
{
	(void)state;
	aj_policy p;
	aj_error err;
	assert_int_equal(
	    from_json("{\"memory\": \"256M\", \"pids\": 64, \"cpus\": 0.5, "
		      "\"env\": {\"A\": \"1\"}, \"secret\": {\"T\": \"secret-value\"}, "
		      "\"ro\": [\"/usr:/u\"], \"no-default-masks\": true, "
		      "\"hostname\": \"box\"}",
		      &p, &err),
	    0);
	assert_int_equal(p.memory, 256ULL << 20);
	assert_int_equal(p.pids, 64);
	assert_int_equal(p.cpu_millis, 500);
	assert_string_equal(p.env[0], "A=1");
	assert_string_equal(p.secrets[0].name, "T");
	assert_int_equal(p.n_binds, 1);
	assert_true(p.no_default_masks);
	aj_policy_free(&p);
	/* host files of agentjail itself and the service's environment: refused */
	const char *bad[] = {"{\"result\": \"/tmp/r.json\"}",
			     "{\"env-file\": \"/etc/passwd\"}",
			     "{\"seccomp-profile\": \"/tmp/p.json\"}",
			     "{\"env\": \"HOME\"}",
			     "{\"secret\": \"HOME\"}",
			     "{\"net-log\": \"/tmp/l\"}",
			     "{\"bogus\": 1}",
			     "{\"memory\": {\"a\": 1}}",
			     "{\"ro\": [[\"/usr\"]]}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (from_json(bad[i], &p, &err) == 0)
			fail_msg("accepted: %s", bad[i]);
		aj_policy_free(&p);
	}
}

/* path_b64 (files API): both alphabets, padding optional, strict */
static void test_b64_decode(void **state)
{
	unsigned char out[16];
	size_t n = 0;
	assert_int_equal(aj_b64_decode("L3RtcC9h/2I=", 12, out, sizeof(out), &n), 0);
	assert_int_equal(n, 8);
	assert_memory_equal(out, "/tmp/a\377b", 8);
	assert_int_equal(aj_b64_decode("L3RtcC9h_2I", 11, out, sizeof(out), &n), 0);
	assert_memory_equal(out, "/tmp/a\377b", 8);
	/* '+' turned into ' ' by a query string's decoding; '-' URL-safe */
	assert_int_equal(aj_b64_decode("+/8=", 4, out, sizeof(out), &n), 0);
	assert_int_equal(aj_b64_decode(" /8=", 4, out + 4, sizeof(out) - 4, &n), 0);
	assert_int_equal(aj_b64_decode("-_8", 3, out + 8, sizeof(out) - 8, &n), 0);
	assert_memory_equal(out, out + 4, 2);
	assert_memory_equal(out, out + 8, 2);
	assert_int_equal(aj_b64_decode("", 0, out, sizeof(out), &n), 0);
	assert_int_equal(n, 0);
	const char *bad[] = {"*", "abcde", "ab\ncd", "L3Rt%", "ab=c", "AB==", "AAB="};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (aj_b64_decode(bad[i], strlen(bad[i]), out, sizeof(out), &n) == 0)
			fail_msg("accepted: %s", bad[i]);
	/* a NUL inside is not base64 */
	assert_int_equal(aj_b64_decode("AA\0A", 4, out, sizeof(out), &n), -EINVAL);
	/* more than the room */
	assert_int_equal(aj_b64_decode("AAAAAAAA", 8, out, 5, &n), -ENAMETOOLONG);
}

static void test_utf8(void **state)
{
	assert_true(aj_utf8_valid("plain", 5));
	assert_true(aj_utf8_valid("\303\251t\303\251", 5));
	assert_true(aj_utf8_valid("\360\237\230\200", 4));
	assert_true(aj_utf8_valid("new\nline", 8));
	assert_false(aj_utf8_valid("a\377b", 3));
	assert_false(aj_utf8_valid("\300\257", 2));	    /* overlong '/' */
	assert_false(aj_utf8_valid("\355\240\200", 3));	    /* a surrogate */
	assert_false(aj_utf8_valid("\364\220\200\200", 4)); /* past U+10FFFF */
	assert_false(aj_utf8_valid("\303", 1));		    /* cut short */
	assert_false(aj_utf8_valid("a\0b", 3));
	assert_int_equal(aj_utf8_prefix((const unsigned char *)"ab\377cd", 5), 2);
}

/* The code interpreter's bodies: strict, never coerced. */
static void test_code_req(void **state)
{
	(void)state;
	aj_error err;
	aj_code_req q;
	const char *ok = "{\"code\": \"x = 1\", \"context\": \"a_b-1\", \"language\": \"python\", "
			 "\"timeout\": 2.5}";
	assert_int_equal(aj_code_req_parse(ok, strlen(ok), &q, &err), 0);
	assert_string_equal(q.code, "x = 1");
	assert_string_equal(q.context, "a_b-1");
	assert_true(q.timeout_s == 2.5);
	aj_code_req_free(&q);
	assert_int_equal(aj_code_req_parse("{\"code\": \"\"}", 12, &q, &err), 0);
	assert_string_equal(q.context, "default");
	assert_true(q.timeout_s == AJ_CODE_DEFAULT_TIMEOUT_S);
	aj_code_req_free(&q);
	static const char *const bad[] = {"{}",
					  "[]",
					  "{\"code\": 1}",
					  "{\"code\": \"x\", \"bogus\": 1}",
					  "{\"code\": \"x\", \"language\": \"r\"}",
					  "{\"code\": \"x\", \"timeout\": \"2\"}",
					  "{\"code\": \"x\", \"timeout\": 0}",
					  "{\"code\": \"x\", \"timeout\": 90000}",
					  "{\"code\": \"x\", \"context\": \"../x\"}",
					  "{\"code\": \"x\", \"context\": \"\"}",
					  "{\"code\": \"x\", \"context\": \"Aa\"}",
					  "{\"code\": \"a\\u0000b\"}",
					  "{\"code\": \"x\", \"code\": \"y\"}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(aj_code_req_parse(bad[i], strlen(bad[i]), &q, &err), -EINVAL);
		assert_null(q.code);
	}
	aj_code_ctx_req c;
	const char *cok = "{\"id\": \"ctx\", \"cwd\": \"/workspace\"}";
	assert_int_equal(aj_code_ctx_req_parse(cok, strlen(cok), &c, &err), 0);
	assert_string_equal(c.id, "ctx");
	assert_string_equal(c.cwd, "/workspace");
	aj_code_ctx_req_free(&c);
	assert_int_equal(aj_code_ctx_req_parse("", 0, &c, &err), 0);
	assert_string_equal(c.id, "");
	static const char *const cbad[] = {"{\"cwd\": \"rel\"}", "{\"id\": 3}",
					   "{\"language\": \"js\"}", "{\"x\": 1}"};
	for (size_t i = 0; i < sizeof(cbad) / sizeof(cbad[0]); i++)
		assert_int_equal(aj_code_ctx_req_parse(cbad[i], strlen(cbad[i]), &c, &err),
				 -EINVAL);
	/* the bridge's lines: rebuilt from known fields of the right types */
	json_t *m = json_loads("{\"id\": 1, \"type\": \"error\", \"name\": \"E\", \"x\": 1, "
			       "\"traceback\": [\"a\", 2, null, \"b\"]}",
			       0, NULL);
	json_t *ev = aj_code_event(m, "default", false);
	char *txt = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(txt, "{\"name\":\"E\",\"traceback\":[\"a\",\"b\"],\"type\":\"error\","
				 "\"value\":\"\"}");
	free(txt), json_decref(ev), json_decref(m);
	m = json_loads("{\"type\": \"end\", \"context\": \"forged\", \"timed_out\": true}", 0,
		       NULL);
	ev = aj_code_event(m, "mine", true);
	assert_string_equal(json_string_value(json_object_get(ev, "context")), "mine");
	assert_true(json_is_true(json_object_get(ev, "oom_killed")));
	json_decref(ev), json_decref(m);
	m = json_loads(
	    "{\"type\": \"display\", \"data\": {\"text/plain\": 3, \"image/png\": \"iV\"}}", 0,
	    NULL);
	ev = aj_code_event(m, "c", false);
	assert_null(json_object_get(json_object_get(ev, "data"), "text/plain"));
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(ev, "data"), "image/png")), "iV");
	json_decref(ev), json_decref(m);
	m = json_loads("{\"type\": \"stdout\", \"data\": 5}", 0, NULL);
	assert_null(aj_code_event(m, "c", false));
	json_decref(m);
	m = json_loads("{\"type\": \"reply\"}", 0, NULL);
	assert_null(aj_code_event(m, "c", false));
	json_decref(m);
	assert_true(aj_code_ctx_name_ok("a"));
	assert_false(aj_code_ctx_name_ok("-a"));
	assert_false(aj_code_ctx_name_ok("abcdefghijklmnopqrstuvwxyz0123456"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exec_forms),
	    cmocka_unit_test(test_exec_refused),
	    cmocka_unit_test(test_policy_from_json),
	    cmocka_unit_test(test_b64_decode),
	    cmocka_unit_test(test_utf8),
	    cmocka_unit_test(test_code_req),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
