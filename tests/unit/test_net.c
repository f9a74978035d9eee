/* SPDX-License-Identifier: MIT */
/* Address parsing, the refused ranges, resolv.conf and the nft batch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"
#include "nft.h"
#include "policy.h"

static bool refused4(const aj_policy *p, const char *a)
{
	unsigned char b[4];
	assert_int_equal(inet_pton(AF_INET, a, b), 1);
	return aj_net_is_refused(p, AF_INET, b);
}

static bool refused6(const char *a)
{
	unsigned char b[16];
	assert_int_equal(inet_pton(AF_INET6, a, b), 1);
	return aj_net_is_refused(NULL, AF_INET6, b);
}

static void test_cidr(void **state)
{
	(void)state;
	aj_cidr c;
	char buf[64];
	assert_int_equal(aj_cidr_parse("203.0.113.77/24", &c), 0);
	aj_cidr_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "203.0.113.0/24");
	assert_int_equal(aj_cidr_parse("2001:db8::1", &c), 0);
	aj_cidr_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "2001:db8::1/128");
	assert_int_equal(aj_cidr_parse("1.2.3.4/0", &c), 0);
	aj_cidr_format(&c, buf, sizeof(buf));
	assert_string_equal(buf, "0.0.0.0/0");
	const char *bad[] = {"",	  "300.1.2.3",	"1.2.3.4/33",  "1.2.3.4/",    "::/129",
			     "1.2.3.4/x", "2852039166", "example.com", "1.2.3.4/24/1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(aj_cidr_parse(bad[i], &c), -EINVAL);
}

static void test_refused(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	const char *no[] = {"0.0.0.0",	       "10.1.2.3",   "127.0.0.1",      "127.1.0.1",
			    "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.168.1.1",
			    "100.64.0.1",      "224.0.0.1",  "240.0.0.1",      "255.255.255.255",
			    "10.200.0.1"};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_true(refused4(&p, no[i]));
	const char *yes[] = {"192.0.2.10", "203.0.113.10", "8.8.8.8",
			     "172.32.0.1", "100.128.0.1",  "1.1.1.1"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_false(refused4(&p, yes[i]));
	assert_int_equal(aj_policy_set_net(&p, "open", NULL), 0);
	assert_int_equal(aj_policy_add_deny(&p, "203.0.113.0/24", NULL), 0);
	assert_true(refused4(&p, "203.0.113.10"));
	assert_false(refused4(&p, "192.0.2.10"));
	assert_true(refused6("::1"));
	assert_true(refused6("::"));
	assert_true(refused6("::ffff:1.2.3.4"));
	assert_true(refused6("64:ff9b::808:808"));
	assert_true(refused6("fd00::1"));
	assert_true(refused6("fe80::1"));
	assert_true(refused6("ff02::1"));
	assert_false(refused6("2001:db8::1"));
	assert_int_equal(aj_policy_set_net(&p, "closed", NULL), -EINVAL);
	aj_policy_free(&p);
}

static void test_resolv(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	aj_net n = {.host_ip = AJ_NET_POOL + 1};
	char *r = aj_net_resolv_conf(&n, &p, "nameserver 192.0.2.53\n");
	assert_non_null(strstr(r, "nameserver 127.0.0.1"));
	free(r);
	p.net = AJ_NET_OPEN;
	r = aj_net_resolv_conf(
	    &n, &p,
	    "# x\nnameserver 127.0.0.53\nnameserver 192.0.2.53\n"
	    "nameserver 10.0.0.2\nnameserver fe80::1\n  nameserver 198.51.100.53");
	assert_non_null(strstr(r, "nameserver 192.0.2.53\n"));
	assert_non_null(strstr(r, "nameserver 198.51.100.53\n"));
	assert_null(strstr(r, "127.0.0.53"));
	assert_null(strstr(r, "10.0.0.2"));
	assert_null(strstr(r, "fe80"));
	free(r);
	r = aj_net_resolv_conf(&n, &p, "nameserver 127.0.0.53\n");
	assert_non_null(strstr(r, "nameserver 127.0.0.1"));
	free(r);
	r = aj_net_resolv_conf(&n, &p, NULL);
	assert_non_null(r);
	free(r);
	aj_policy_free(&p);
}

static void test_nft_batch(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	p.net = AJ_NET_OPEN;
	assert_int_equal(aj_policy_add_deny(&p, "2001:db8::/32", NULL), 0);
	aj_net n = {.sandbox_ip = AJ_NET_POOL + 6, .host_ip = AJ_NET_POOL + 5};
	strcpy(n.host_if, "aj42n1");
	strcpy(n.table, "agentjail-42-1");
	char *b = NULL;
	assert_int_equal(aj_nft_build(&n, &p, &b), 0);
	assert_non_null(strstr(b, "table inet agentjail-42-1"));
	assert_non_null(strstr(b, "169.254.0.0/16"));
	assert_non_null(strstr(b, "2001:db8::/32"));
	assert_non_null(strstr(b, "ip saddr != 10.200.0.6 drop"));
	assert_non_null(strstr(b, "ip saddr 10.200.0.6 oifname != \"aj42n1\" masquerade"));
	free(b);
	aj_policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cidr),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_resolv),
	    cmocka_unit_test(test_nft_batch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
