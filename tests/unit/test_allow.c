/* SPDX-License-Identifier: MIT */
/* The allow-list: --allow/--publish/--dns parsing, host-name matching, the
 * proxy's request-head parser and the allow-mode nft batch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "allow.h"
#include "nft.h"
#include "proxy_parse.h"
#include "policy.h"

static void test_allow_parse(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	aj_error err;
	assert_int_equal(aj_policy_add_allow(&p, "Example.COM", &err), 0);
	assert_string_equal(p.allow[0].host, "example.com");
	assert_int_equal(p.allow[0].port, 0);
	assert_int_equal(p.net, AJ_NET_ALLOW);
	assert_int_equal(aj_policy_add_allow(&p, "*.npmjs.org:8443", &err), 0);
	assert_string_equal(p.allow[1].host, "*.npmjs.org");
	assert_int_equal(p.allow[1].port, 8443);
	assert_int_equal(aj_policy_add_allow(&p, "203.0.113.0/24:443", &err), 0);
	assert_null(p.allow[2].host);
	assert_int_equal(p.allow[2].cidr.prefix, 24);
	assert_int_equal(p.allow[2].port, 443);
	const char *bad[] = {"",
			     "example.com.",
			     "*.com",
			     "*",
			     "a..b",
			     "x.test:0",
			     "x.test:65536",
			     "10.0.0.0/8",
			     "127.0.0.1",
			     "169.254.1.1:80",
			     "[::1]:80",
			     "2001:db8::/32",
			     "http://x.test",
			     "user@x.test",
			     "-x.test",
			     "x-.test",
			     "x_y.test",
			     "1.2.3",
			     "0x7f.1",
			     "ex ample.com",
			     "example.com:",
			     "*.*.example.com",
			     "exa*mple.com"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		aj_err_clear(&err);
		if (aj_policy_add_allow(&p, bad[i], &err) != -EINVAL)
			fail_msg("--allow '%s' was accepted", bad[i]);
		assert_true(err.msg[0] != '\0');
	}
	assert_int_equal(p.n_allow, 3);
	aj_policy_free(&p);
}

static void test_allow_match(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_allow(&p, "example.com", NULL), 0);
	assert_int_equal(aj_policy_add_allow(&p, "*.cdn.test:8443", NULL), 0);
	assert_true(aj_allow_name(&p, "example.com", 443));
	assert_true(aj_allow_name(&p, "example.com", 80));
	assert_false(aj_allow_name(&p, "example.com", 8080));
	assert_false(aj_allow_name(&p, "notexample.com", 0));
	assert_false(aj_allow_name(&p, "www.example.com", 0));
	assert_false(aj_allow_name(&p, "example.com.evil.test", 0));
	assert_true(aj_allow_name(&p, "a.cdn.test", 8443));
	assert_true(aj_allow_name(&p, "a.b.cdn.test", 8443));
	assert_false(aj_allow_name(&p, "a.cdn.test", 443));
	assert_false(aj_allow_name(&p, "cdn.test", 0));
	assert_false(aj_allow_name(&p, "xcdn.test", 0));
	unsigned ports[4];
	assert_int_equal(aj_allow_ports(&p, "example.com", ports, 4), 2);
	assert_int_equal(ports[0], 80);
	assert_int_equal(ports[1], 443);
	assert_int_equal(aj_allow_ports(&p, "x.cdn.test", ports, 4), 1);
	assert_int_equal(ports[0], 8443);
	assert_int_equal(aj_allow_ports(&p, "other.test", ports, 4), 0);
	aj_policy_free(&p);
}

static void test_host_canon(void **state)
{
	(void)state;
	char out[AJ_HOST_MAX + 1];
	assert_int_equal(aj_host_canon("ExAmPle.COM", 11, out, sizeof(out)), 0);
	assert_string_equal(out, "example.com");
	const char *bad[] = {"example.com.", ".example.com", "a..b", "a b",   "a@b", "a%2eb",
			     "a:80",	     "a/b",	     "",     "é.com", "a\tb"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (aj_host_canon(bad[i], strlen(bad[i]), out, sizeof(out)) == 0)
			fail_msg("'%s' was accepted", bad[i]);
	/* the length counts, not a NUL: "example.com\0evil" is not example.com */
	assert_int_not_equal(aj_host_canon("example.com\0evil", 16, out, sizeof(out)), 0);
	char label[70];
	memset(label, 'a', 64);
	strcpy(label + 64, ".com");
	assert_int_not_equal(aj_host_canon(label, strlen(label), out, sizeof(out)), 0);
}

static void test_addr_allow(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_allow(&p, "0.0.0.0/0:443", NULL), 0);
	unsigned char a[4];
	inet_pton(AF_INET, "203.0.113.9", a);
	assert_true(aj_allow_addr(&p, AF_INET, a, 443));
	assert_false(aj_allow_addr(&p, AF_INET, a, 80));
	inet_pton(AF_INET, "169.254.169.254", a); /* refused ranges win */
	assert_false(aj_allow_addr(&p, AF_INET, a, 443));
	inet_pton(AF_INET, "10.1.2.3", a);
	assert_false(aj_allow_addr(&p, AF_INET, a, 443));
	aj_policy_free(&p);
}

static void test_publish_dns(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_publish(&p, "8080:3000", NULL), 0);
	assert_int_equal(p.publish[0].host_port, 8080);
	assert_int_equal(p.publish[0].port, 3000);
	assert_int_equal(aj_policy_add_publish(&p, "8080:3001", NULL), -EINVAL); /* twice */
	const char *bad[] = {
	    "0:80", "80:0", "80", ":80", "80:", "x:80", "70000:1", "1:2:3", "-1:2"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(aj_policy_add_publish(&p, bad[i], NULL), -EINVAL);
	assert_int_equal(aj_policy_set_dns(&p, "192.0.2.53:5353", NULL), 0);
	assert_int_equal(p.dns_port, 5353);
	assert_int_equal(aj_policy_set_dns(&p, "192.0.2.0/24", NULL), -EINVAL);
	assert_int_equal(aj_policy_set_dns(&p, "resolver.example", NULL), -EINVAL);
	assert_int_equal(aj_policy_set_dns(&p, "2001:db8::1", NULL), -EINVAL);
	aj_policy_free(&p);
}

static void test_proxy_parse(void **state)
{
	(void)state;
	aj_proxy_req r;
	const char *c = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n";
	assert_int_equal(aj_proxy_parse(c, strlen(c), &r), 0);
	assert_true(r.connect);
	assert_string_equal(r.host, "example.com");
	assert_int_equal(r.port, 443);

	const char *g = "GET http://Example.com:8080/a/b?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n"
			"Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\nBODY";
	assert_int_equal(aj_proxy_parse(g, strlen(g), &r), 0);
	assert_false(r.connect);
	assert_string_equal(r.host, "Example.com");
	assert_int_equal(r.port, 8080);
	assert_string_equal(r.target, "/a/b?x=1");
	assert_string_equal(r.method, "GET");
	assert_null(strstr(r.headers, "Proxy-Connection"));
	assert_non_null(strstr(r.headers, "Accept: */*\r\n"));

	const char *o = "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n";
	assert_int_equal(aj_proxy_parse(o, strlen(o), &r), 0);
	assert_string_equal(r.host, "example.com");
	assert_int_equal(r.port, 80);
	assert_string_equal(r.target, "/x");

	const char *bad[] = {
	    "CONNECT example.com HTTP/1.1\r\n\r\n",
	    "CONNECT example.com@evil.test:443 HTTP/1.1\r\n\r\n",
	    "CONNECT example.com:0 HTTP/1.1\r\n\r\n",
	    "CONNECT example.com:99999 HTTP/1.1\r\n\r\n",
	    "GET http://example.com@evil.test/ HTTP/1.1\r\n\r\n",
	    "GET http://example.com/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
	    "GET http://example.com/ HTTP/1.1\r\nHost: example.com:81\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: example.com\r\nHost: evil.test\r\n\r\n",
	    "GET / HTTP/1.1\r\n\r\n",
	    "GET ftp://example.com/ HTTP/1.1\r\n\r\n",
	    "GET https://example.com/ HTTP/1.1\r\n\r\n",
	    "\x16\x03\x01\x02\x00\r\n\r\n",
	    "GET http://example.com/ HTTP/1.1\r\nX: y",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (aj_proxy_parse(bad[i], strlen(bad[i]), &r) == 0)
			fail_msg("request %zu was accepted: host %s port %u", i, r.host, r.port);
}

static void test_nft_allow_batch(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_allow(&p, "example.com", NULL), 0);
	assert_int_equal(aj_policy_add_allow(&p, "203.0.113.0/24:8443", NULL), 0);
	aj_net n = {
	    .sandbox_ip = AJ_NET_POOL + 6, .host_ip = AJ_NET_POOL + 5, .nflog_group = 16385};
	strcpy(n.host_if, "aj42n1");
	strcpy(n.table, "agentjail-42-1");
	char *b = NULL;
	assert_int_equal(aj_nft_build(&n, &p, &b), 0);
	assert_non_null(strstr(b, "set allow4 { type ipv4_addr . inet_service; flags timeout; }"));
	assert_non_null(strstr(b, "ip daddr . tcp dport @allow4 log prefix \"aj-allow \" group "
				  "16385 accept"));
	assert_non_null(strstr(b, "ip daddr 203.0.113.0/24 tcp dport 8443"));
	assert_non_null(strstr(b, "ip daddr 10.200.0.5 udp dport 53 accept"));
	assert_non_null(strstr(b, "jump refuse"));
	/* the refusals come before anything is accepted */
	assert_true(strstr(b, "@refused4 jump refuse") < strstr(b, "@allow4"));
	free(b);
	aj_policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allow_parse),	    cmocka_unit_test(test_allow_match),
	    cmocka_unit_test(test_host_canon),	    cmocka_unit_test(test_addr_allow),
	    cmocka_unit_test(test_publish_dns),	    cmocka_unit_test(test_proxy_parse),
	    cmocka_unit_test(test_nft_allow_batch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
