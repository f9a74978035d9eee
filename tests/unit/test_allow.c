/* SPDX-License-Identifier: MIT */
/* The allow-list: --allow/--publish/--dns parsing, host-name matching, the
 * proxy's request-head parser and the allow-mode nft batch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "allow.h"
#include "inject.h"
#include "netd_ctx.h"
#include "nft.h"
#include "proxy_parse.h"
#include "proxy_h2.h"
#include "proxy_tls.h"
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
	assert_int_equal(aj_policy_add_allow(&p, "Example.COM.", &err), 0); /* one trailing dot */
	assert_string_equal(p.allow[3].host, "example.com");
	p.n_allow--;
	free(p.allow[3].host);
	p.allow[3].host = NULL;
	const char *bad[] = {"",
			     "example.com..",
			     "3221225994",
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
	/* one trailing dot is the same name; case never matters */
	assert_int_equal(aj_host_canon("ALLOWED.TEST.", 13, out, sizeof(out)), 0);
	assert_string_equal(out, "allowed.test");
	const char *bad[] = {"example.com..", ".example.com", "a..b",	   "a b",   "a@b",  "a%2eb",
			     "a:80",	      "a/b",	      "",	   "é.com", "a\tb", ".",
			     "a\rb",	      "a\x7f",	      "3221225994"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (aj_host_canon(bad[i], strlen(bad[i]), out, sizeof(out)) == 0)
			fail_msg("'%s' was accepted", bad[i]);
	/* the length counts, not a NUL: "example.com\0evil" is not example.com */
	assert_int_not_equal(aj_host_canon("example.com\0evil", 16, out, sizeof(out)), 0);
	assert_int_not_equal(aj_host_canon("evil\0.allowed.test", 18, out, sizeof(out)), 0);
	char label[70];
	memset(label, 'a', 64);
	strcpy(label + 64, ".com");
	assert_int_not_equal(aj_host_canon(label, strlen(label), out, sizeof(out)), 0);
	char longname[300];
	for (size_t i = 0; i < 254; i++)
		longname[i] = i % 2 ? '.' : 'a';
	longname[253] = 'a'; /* 254 bytes, labels of one */
	assert_int_not_equal(aj_host_canon(longname, 254, out, sizeof(out)), 0);
	assert_int_equal(aj_host_canon(longname, 253, out, sizeof(out)), 0);
}

/* The one normaliser: names, IPv4 in every spelling, IPv6, refusals. */
static void test_host_norm(void **state)
{
	(void)state;
	aj_host h;
	const char *why = NULL;
	static const struct {
		const char *in;
		aj_host_kind kind;
		const char *text;
	} ok[] = {
	    {"ALLOWED.TEST.", AJ_HOST_NAME, "allowed.test"},
	    {"allowed.test", AJ_HOST_NAME, "allowed.test"},
	    {"allowed.test.evil.test", AJ_HOST_NAME, "allowed.test.evil.test"},
	    {"xn--bcher-kva.example", AJ_HOST_NAME, "xn--bcher-kva.example"},
	    {"1.2.3.example", AJ_HOST_NAME, "1.2.3.example"},
	    {"192.0.2.10", AJ_HOST_IPV4, "192.0.2.10"},
	    {"192.0.2.10.", AJ_HOST_IPV4, "192.0.2.10"},
	    {"3221225994", AJ_HOST_IPV4, "192.0.2.10"},
	    {"0300.0.2.012", AJ_HOST_IPV4, "192.0.2.10"},
	    {"0xC0.0x0.2.0xa", AJ_HOST_IPV4, "192.0.2.10"},
	    {"0xc000020a", AJ_HOST_IPV4, "192.0.2.10"},
	    {"192.0.522", AJ_HOST_IPV4, "192.0.2.10"},
	    {"127.1", AJ_HOST_IPV4, "127.0.0.1"},
	    {"2130706433", AJ_HOST_IPV4, "127.0.0.1"},
	    {"0251.0376.0251.0376", AJ_HOST_IPV4, "169.254.169.254"},
	    {"::FFFF:127.0.0.1", AJ_HOST_IPV6, "::ffff:127.0.0.1"},
	    {"2001:DB8::1", AJ_HOST_IPV6, "2001:db8::1"},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (aj_host_norm(ok[i].in, strlen(ok[i].in), &h, &why) != 0)
			fail_msg("'%s' was refused: %s", ok[i].in, why);
		if (h.kind != ok[i].kind || strcmp(h.text, ok[i].text) != 0)
			fail_msg("'%s': kind %d '%s', expected %d '%s'", ok[i].in, h.kind, h.text,
				 ok[i].kind, ok[i].text);
	}
	static const char *const bad[] = {
	    "evil\x00.allowed.test", /* counted with its NUL below */
	    "allowed.test..",
	    "..",
	    "a..b",
	    ".a",
	    "",
	    "bücher.example",
	    "a\x01.test",
	    "a\x7f.test",
	    "a b.test",
	    "a%00.test",
	    "1.2.3.4.5",
	    "256.1.1.1.",
	    "999999999999",
	    "09.1.1.1",
	    "a.b:c",
	    "[::1]",
	    "*.test",
	    "allowed.test/x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = i == 0 ? sizeof("evil\x00.allowed.test") - 1 : strlen(bad[i]);
		why = NULL;
		if (aj_host_norm(bad[i], len, &h, &why) == 0)
			fail_msg("'%s' was accepted as %d '%s'", bad[i], h.kind, h.text);
		assert_non_null(why);
	}
	char label[80];
	memset(label, 'a', 63);
	strcpy(label + 63, ".test");
	assert_int_equal(aj_host_norm(label, strlen(label), &h, NULL), 0);
	memset(label, 'a', 64);
	strcpy(label + 64, ".test");
	assert_int_equal(aj_host_norm(label, strlen(label), &h, NULL), -EINVAL);
	/* patterns */
	assert_true(aj_host_match("allowed.test", "allowed.test"));
	assert_false(aj_host_match("allowed.test", "allowed.test.evil.test"));
	assert_true(aj_host_match("*.example.org", "a.b.example.org"));
	assert_false(aj_host_match("*.example.org", "example.org"));
	assert_false(aj_host_match("*.example.org", "evilexample.org"));
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
	assert_string_equal(r.host, "example.com"); /* canonical */
	assert_int_equal(r.host_kind, AJ_HOST_NAME);
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

	/* the same host in two spellings agrees; an IP spelling is an IP */
	const char *same = "GET http://ALLOWED.TEST./ HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
	assert_int_equal(aj_proxy_parse(same, strlen(same), &r), 0);
	assert_string_equal(r.host, "allowed.test");
	const char *dec = "GET http://3221225994/ HTTP/1.1\r\n\r\n";
	assert_int_equal(aj_proxy_parse(dec, strlen(dec), &r), 0);
	assert_string_equal(r.host, "192.0.2.10");
	assert_int_equal(r.host_kind, AJ_HOST_IPV4);
	const char *cdot = "CONNECT Allowed.Test.:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n";
	assert_int_equal(aj_proxy_parse(cdot, strlen(cdot), &r), 0);
	assert_string_equal(r.host, "allowed.test");

	static const char nul_connect[] = "CONNECT evil\0.allowed.test:443 HTTP/1.1\r\n\r\n";
	assert_int_equal(aj_proxy_parse(nul_connect, sizeof(nul_connect) - 1, &r), -EINVAL);
	static const char nul_host[] = "GET / HTTP/1.1\r\nHost: evil\0.allowed.test\r\n\r\n";
	assert_int_equal(aj_proxy_parse(nul_host, sizeof(nul_host) - 1, &r), -EINVAL);

	const char *bad[] = {
	    "CONNECT example.com HTTP/1.1\r\n\r\n",
	    "CONNECT allowed.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n",
	    "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test.evil.test:443\r\n\r\n",
	    "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:8443\r\n\r\n",
	    "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test.evil.test\r\n\r\n",
	    "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test..\r\n\r\n",
	    "GET http://allowed.test../ HTTP/1.1\r\n\r\n",
	    "GET http://1.2.3.4.5/ HTTP/1.1\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a..b\r\n\r\n",
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

/* RFC 9110 7.6.1: the headers the client's Connection names stay at the
 * proxy with the standard hop-by-hop ones; Upgrade stays on a switch; a
 * Connection naming a framing header is refused (a smuggled request). */
static void test_proxy_connection(void **state)
{
	(void)state;
	aj_proxy_req r;
	const char *g = "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nX-Secret-Hdr: v\r\n"
			"Connection: X-Secret-Hdr, keep-alive\r\nConnection: x-other\r\n"
			"X-Other: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nUpgrade: h2c\r\n"
			"X-Kept: 2\r\n\r\n";
	assert_int_equal(aj_proxy_parse(g, strlen(g), &r), 0);
	assert_null(strcasestr(r.headers, "X-Secret-Hdr"));
	assert_null(strcasestr(r.headers, "X-Other"));
	assert_null(strcasestr(r.headers, "Keep-Alive"));
	assert_null(strcasestr(r.headers, "Upgrade")); /* no "upgrade" option: not a switch */
	assert_non_null(strstr(r.headers, "TE: trailers\r\n")); /* h2's te: trailers */
	assert_non_null(strstr(r.headers, "X-Kept: 2\r\n"));
	assert_false(r.upgrade);
	assert_string_equal(r.connection, "keep-alive");

	const char *ws = "GET /ws HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive, Upgrade\r\n"
			 "Upgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n";
	assert_int_equal(aj_proxy_parse(ws, strlen(ws), &r), 0);
	assert_true(r.upgrade);
	assert_non_null(strstr(r.headers, "Upgrade: websocket\r\n"));
	assert_non_null(strstr(r.headers, "Sec-WebSocket-Key: k\r\n"));
	assert_string_equal(r.connection, "keep-alive, Upgrade");
	const char *te = "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close, TE\r\n"
			 "TE: trailers\r\n\r\n";
	assert_int_equal(aj_proxy_parse(te, strlen(te), &r), 0);
	assert_null(strstr(r.headers, "TE:"));
	assert_string_equal(r.connection, "close");

	const char *bad[] = {
	    "POST / HTTP/1.1\r\nHost: a.test\r\nConnection: Content-Length\r\n"
	    "Content-Length: 3\r\n\r\n",
	    "POST / HTTP/1.1\r\nHost: a.test\r\nConnection: close,transfer-encoding\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n",
	    "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: host\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(aj_proxy_parse(bad[i], strlen(bad[i]), &r), -EINVAL);
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

/* --secret NAME@HOSTS=VALUE: parsing, and its hosts must be allowed */
static void test_secret_scope(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	aj_error err;
	assert_int_equal(
	    aj_policy_add_secret(&p, "API_KEY@Api.Example.COM.,*.example.org=s3cr=et!", &err), 0);
	assert_string_equal(p.secrets[0].name, "API_KEY");
	assert_string_equal(p.secrets[0].value, "s3cr=et!"); /* the first '=' ends the hosts */
	assert_int_equal(p.secrets[0].n_hosts, 2);
	assert_string_equal(p.secrets[0].hosts[0], "api.example.com");
	assert_string_equal(p.secrets[0].hosts[1], "*.example.org");
	assert_int_equal(aj_policy_add_secret(&p, "PLAIN=value1", &err), 0);
	assert_int_equal(p.secrets[1].n_hosts, 0);
	const char *hosts[] = {"api.test"};
	assert_int_equal(
	    aj_policy_add_secret_scoped(&p, "TOK", "tokvalue", hosts, 1, "x-api-key", &err), 0);
	assert_string_equal(p.secrets[2].header, "x-api-key");
	const char *bad[] = {
	    "K@=value",	    "K@a..b=value",	     "K@*.com=value",	    "K@*=value",
	    "K@a,,b=value", "K@evil\x01.test=value", "K@bücher.test=value", "K@2001:db8::1=value",
	    "K@a/b=value",  "1K@a.test=value",	     "K@a.test=abc",	    "K@a.test:bdy=value",
	    "K@:body=value"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		aj_err_clear(&err);
		if (aj_policy_add_secret(&p, bad[i], &err) == 0)
			fail_msg("--secret '%s' was accepted", bad[i]);
		assert_true(err.msg[0] != '\0');
	}
	assert_int_equal(p.n_secrets, 3);
	/* the hosts must be allowed: none, one missing, then all */
	aj_err_clear(&err);
	assert_int_equal(aj_policy_validate_net(&p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "needs a network"));
	assert_int_equal(aj_policy_add_allow(&p, "api.example.com", NULL), 0);
	assert_int_equal(aj_policy_add_allow(&p, "api.test", NULL), 0);
	aj_err_clear(&err);
	assert_int_equal(aj_policy_validate_net(&p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "*.example.org"));
	assert_non_null(strstr(err.hint, "--allow '*.example.org'"));
	assert_int_equal(aj_policy_add_allow(&p, "*.org", NULL), -EINVAL); /* (one label) */
	assert_int_equal(aj_policy_add_allow(&p, "*.example.org", NULL), 0);
	assert_int_equal(aj_policy_validate_net(&p, NULL), 0);
	aj_policy_free(&p);

	/* NAME@HOSTS:body: bodies too; --inspect hosts, allowed like the
	 * secrets' hosts; --net open takes both (the proxy is the way out) */
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_secret(&p, "B@b.test:body=bvalue", &err), 0);
	assert_true(p.secrets[0].body);
	assert_int_equal(p.secrets[0].n_hosts, 1);
	assert_string_equal(p.secrets[0].hosts[0], "b.test");
	assert_int_equal(aj_policy_add_inspect(&p, "Seen.Test.", &err), 0);
	assert_string_equal(p.inspect[0], "seen.test");
	assert_int_equal(aj_policy_add_inspect(&p, "seen..test", NULL), -EINVAL);
	assert_int_equal(aj_policy_add_allow(&p, "b.test", NULL), 0);
	aj_err_clear(&err);
	assert_int_equal(aj_policy_validate_net(&p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "--inspect seen.test"));
	assert_int_equal(aj_policy_add_allow(&p, "seen.test", NULL), 0);
	assert_int_equal(aj_policy_validate_net(&p, NULL), 0);
	aj_policy_free(&p);
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_secret(&p, "B@b.test=bvalue", NULL), 0);
	assert_false(p.secrets[0].body);
	assert_int_equal(aj_policy_set_net(&p, "open", NULL), 0);
	assert_int_equal(aj_policy_validate_net(&p, NULL), 0);
	assert_true(aj_net_proxied(&p));
	aj_policy_free(&p);

	/* the API / policy-file form; today's string form still works */
	aj_policy_init(&p);
	json_t *j = json_loads("{\"secret\": {\"K\": {\"value\": \"kvalue\", \"hosts\": "
			       "[\"API.test.\", \"*.cdn.test\"], \"header\": \"x-api-key\"}, "
			       "\"P\": \"pvalue\"}}",
			       0, NULL);
	assert_non_null(j);
	assert_int_equal(aj_policy_from_json(&p, j, &err), 0);
	json_decref(j);
	assert_int_equal(p.n_secrets, 2);
	assert_string_equal(p.secrets[0].value, "kvalue");
	assert_string_equal(p.secrets[0].hosts[0], "api.test");
	assert_string_equal(p.secrets[0].hosts[1], "*.cdn.test");
	assert_string_equal(p.secrets[0].header, "x-api-key");
	assert_int_equal(p.secrets[1].n_hosts, 0);
	assert_false(p.secrets[0].body);
	j = json_loads("{\"secret\": {\"B\": {\"value\": \"bvalue\", \"hosts\": [\"b.test\"], "
		       "\"body\": true}}, \"inspect\": [\"Seen.test\"]}",
		       0, NULL);
	assert_int_equal(aj_policy_from_json(&p, j, &err), 0);
	json_decref(j);
	assert_true(p.secrets[2].body);
	assert_string_equal(p.inspect[0], "seen.test");
	const char *bad_json[] = {
	    "{\"secret\": {\"K\": {\"hosts\": [\"a.test\"]}}}",
	    "{\"secret\": {\"K\": {\"value\": \"kvalue\", \"hosts\": \"a.test\"}}}",
	    "{\"secret\": {\"K\": {\"value\": \"kvalue\", \"hosts\": [\"a..test\"]}}}",
	    "{\"secret\": {\"K\": {\"value\": \"kvalue\", \"hosts\": [1]}}}",
	    "{\"secret\": {\"K\": {\"value\": \"kvalue\", \"host\": [\"a.test\"]}}}",
	    "{\"secret\": {\"K\": {\"value\": \"kvalue\", \"hosts\": [\"a.test\"], "
	    "\"header\": \"bad header\"}}}",
	    "{\"secret\": {\"K\": {\"value\": \"kvalue\", \"header\": \"x-api-key\"}}}",
	    "{\"secret\": {\"K\": {\"value\": \"kvalue\", \"body\": true}}}",
	    "{\"secret\": {\"K\": {\"value\": \"kvalue\", \"hosts\": [\"a.test\"], "
	    "\"body\": 1}}}",
	    "{\"secret\": {\"K\": {\"value\": \"kvalue\", \"hosts\": [\"a.test\"], "
	    "\"header\": \"x-api-key\", \"body\": true}}}",
	    "{\"inspect\": [\"a..test\"]}",
	};
	for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++) {
		j = json_loads(bad_json[i], 0, NULL);
		assert_non_null(j);
		aj_err_clear(&err);
		if (aj_policy_from_json(&p, j, &err) == 0)
			fail_msg("%s was accepted", bad_json[i]);
		assert_true(err.msg[0] != '\0');
		json_decref(j);
	}
	aj_policy_free(&p);
}

/* The proxy's injection: scoped host gets the value, others the placeholder */
static void test_inject(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(
	    aj_policy_add_secret(&p, "KEY@allowed.test,*.wild.test=real&value 1", NULL), 0);
	const char *hosts[] = {"allowed.test"};
	assert_int_equal(
	    aj_policy_add_secret_scoped(&p, "HDR", "hdr-value", hosts, 1, "X-Api-Key", NULL), 0);
	const char *ph = p.secrets[0].placeholder, *hph = p.secrets[1].placeholder;
	aj_proxy_req r;
	aj_inject_note notes[AJ_INJECT_NOTES];
	size_t n;
	char head[4096];
	/* user:placeholder, base64 */
	char basic_plain[128], basic[256];
	snprintf(basic_plain, sizeof(basic_plain), "user:%s", ph);
	EVP_EncodeBlock((unsigned char *)basic, (unsigned char *)basic_plain,
			(int)strlen(basic_plain));
	snprintf(head, sizeof(head),
		 "GET http://allowed.test/v1?key=%s&x=1 HTTP/1.1\r\nHost: allowed.test\r\n"
		 "Authorization: Bearer %s\r\nx-api-key: %s\r\nX-Other: %s\r\n"
		 "Proxy-Authorization: Basic %s\r\n\r\n",
		 ph, ph, hph, hph, basic);
	assert_int_equal(aj_proxy_parse(head, strlen(head), &r), 0);
	assert_int_equal(aj_inject(&p, &r, notes, &n), 0);
	assert_non_null(strstr(r.headers, "Authorization: Bearer real&value 1\r\n"));
	assert_non_null(strstr(r.headers, "x-api-key: hdr-value\r\n"));
	/* HDR goes only in its own header */
	char want[256];
	snprintf(want, sizeof(want), "X-Other: %s\r\n", hph);
	assert_non_null(strstr(r.headers, want));
	assert_string_equal(r.target, "/v1?key=real%26value%201&x=1");
	assert_null(strstr(r.headers, "Proxy-Authorization"));
	bool withheld_other = false;
	for (size_t i = 0; i < n; i++)
		withheld_other =
		    withheld_other || (!notes[i].injected && !strcmp(notes[i].secret, "HDR") &&
				       !strcmp(notes[i].where, "header X-Other"));
	assert_true(withheld_other);

	/* Basic: base64(user:placeholder) -> base64(user:value) */
	snprintf(head, sizeof(head),
		 "GET http://sub.wild.test/ HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n", basic);
	assert_int_equal(aj_proxy_parse(head, strlen(head), &r), 0);
	assert_int_equal(aj_inject(&p, &r, notes, &n), 0);
	EVP_EncodeBlock((unsigned char *)basic, (const unsigned char *)"user:real&value 1", 17);
	snprintf(want, sizeof(want), "Authorization: Basic %s\r\n", basic);
	assert_non_null(strstr(r.headers, want));
	assert_int_equal(n, 1);
	assert_true(notes[0].injected);

	/* another host, a look-alike, the scope's parent: the placeholder stays */
	const char *others[] = {"other.test", "allowed.test.evil.test", "wild.test",
				"evilwild.test"};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		snprintf(head, sizeof(head),
			 "GET http://%s/?k=%s HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n",
			 others[i], ph, ph);
		assert_int_equal(aj_proxy_parse(head, strlen(head), &r), 0);
		assert_int_equal(aj_inject(&p, &r, notes, &n), 0);
		assert_null(strstr(r.headers, "real&value"));
		assert_null(strstr(r.target, "real"));
		assert_non_null(strstr(r.headers, ph));
		assert_int_equal(n, 2);
		assert_false(notes[0].injected);
		assert_false(notes[1].injected);
		assert_non_null(notes[0].reason);
	}
	/* a value too long for the head: refused, not cut */
	char big[9000];
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(aj_policy_add_secret_scoped(&p, "BIG", big, hosts, 1, NULL, NULL), 0);
	snprintf(head, sizeof(head), "GET http://allowed.test/ HTTP/1.1\r\nA: %s\r\n\r\n",
		 p.secrets[2].placeholder);
	assert_int_equal(aj_proxy_parse(head, strlen(head), &r), 0);
	assert_int_equal(aj_inject(&p, &r, notes, &n), -E2BIG);
	aj_policy_free(&p);
}

/* An intercepted HTTPS session's requests (proxy_tls.c, without TLS):
 * each request of a keep-alive connection gets the value, bodies pass as
 * framed, a Host naming another server ends the session unsent. */
static void test_tls_frame(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_secret(&p, "KEY@api.test=real-value-1", NULL), 0);
	const char *ph = p.secrets[0].placeholder;
	aj_netd_ctx ctx = {.p = &p, .log_fd = -1};
	aj_proxy_req c;
	static const char connect[] = "CONNECT api.test:443 HTTP/1.1\r\n\r\n";
	assert_int_equal(aj_proxy_parse(connect, strlen(connect), &c), 0);
	char in[2048], out[4096];
	snprintf(in, sizeof(in),
		 "GET /a HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer %s\r\n\r\n"
		 "POST /b HTTP/1.1\r\nHost: api.test:443\r\nTransfer-Encoding: chunked\r\n"
		 "x-key: %s\r\n\r\n3\r\nGET\r\n0\r\n\r\n"
		 "GET /c HTTP/1.1\r\nHost: other.test\r\nx-key: %s\r\n\r\n",
		 ph, ph, ph);
	size_t n = aj_proxy_tls_frame(&ctx, &c, in, strlen(in), NULL, 0, out, sizeof(out) - 1);
	out[n] = '\0';
	assert_non_null(strstr(out, "GET /a HTTP/1.1\r\nHost: api.test\r\n"
				    "Authorization: Bearer real-value-1\r\n\r\n"));
	assert_non_null(strstr(out, "x-key: real-value-1\r\n\r\n3\r\nGET\r\n0\r\n\r\n"));
	assert_null(strstr(out, "/c"));
	assert_null(strstr(out, ph));
	/* a Host with another port than the CONNECT's, and none (443 implied)
	 * for a CONNECT to 8443: refused */
	static const char c8443[] = "CONNECT api.test:8443 HTTP/1.1\r\n\r\n";
	assert_int_equal(aj_proxy_parse(c8443, strlen(c8443), &c), 0);
	static const char bad[] = "GET /d HTTP/1.1\r\nHost: api.test\r\n\r\n";
	assert_int_equal(aj_proxy_tls_frame(&ctx, &c, bad, strlen(bad), NULL, 0, out, sizeof(out)),
			 0);
	aj_policy_free(&p);

	/* a :body secret: chunked and Content-Length bodies held, filled and
	 * sent with their new length; "Expect" dropped (the proxy answers it);
	 * KEY (not :body) stays a placeholder in a body */
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_secret(&p, "KEY@api.test=real-value-1", NULL), 0);
	assert_int_equal(aj_policy_add_secret(&p, "B@api.test:body=body-value-22", NULL), 0);
	ph = p.secrets[0].placeholder;
	const char *bph = p.secrets[1].placeholder;
	assert_int_equal(aj_proxy_parse(connect, strlen(connect), &c), 0);
	snprintf(in, sizeof(in),
		 "POST /a HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n"
		 "Expect: 100-continue\r\n\r\n2\r\nb=\r\n%zx\r\n%s\r\n0\r\n\r\n"
		 "POST /b HTTP/1.1\r\nHost: api.test\r\nContent-Length: %zu\r\n\r\n%s;%s"
		 "GET /c HTTP/1.1\r\nHost: api.test\r\n\r\n",
		 strlen(bph), bph, strlen(bph) + 1 + strlen(ph), bph, ph);
	n = aj_proxy_tls_frame(&ctx, &c, in, strlen(in), NULL, 0, out, sizeof(out) - 1);
	out[n] = '\0';
	assert_non_null(strstr(out, "POST /a HTTP/1.1\r\nHost: api.test\r\nContent-Length: 15\r\n"
				    "\r\nb=body-value-22POST /b"));
	char want[512];
	snprintf(want, sizeof(want), "Content-Length: %zu\r\n\r\nbody-value-22;%s", 14 + strlen(ph),
		 ph);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "GET /c HTTP/1.1\r\n"));
	assert_null(strstr(out, "Expect"));
	assert_null(strstr(out, "chunked"));
	assert_null(strstr(out, bph));
	/* toward a host the secret is not scoped to: the body as it was */
	char *filled = NULL;
	size_t fl = 0, nn = 0;
	aj_inject_note notes[AJ_INJECT_NOTES];
	assert_false(aj_inject_body_wanted(&p, "other.test"));
	assert_true(aj_inject_body_wanted(&p, "api.test"));
	assert_int_equal(
	    aj_inject_body(&p, "other.test", bph, strlen(bph), &filled, &fl, notes, &nn), 0);
	assert_int_equal(fl, strlen(bph));
	assert_memory_equal(filled, bph, fl);
	assert_int_equal(nn, 1);
	assert_false(notes[0].injected);
	free(filled);
	aj_policy_free(&p);
}

/* An Upgrade request on an intercepted session: the client's next bytes
 * wait for the server's answer; a 101 makes them a relay of bytes, any
 * other answer leaves the connection HTTP (the next request checked and
 * filled as any other). */
static void test_tls_upgrade(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_secret(&p, "KEY@api.test=real-value-1", NULL), 0);
	const char *ph = p.secrets[0].placeholder;
	aj_netd_ctx ctx = {.p = &p, .log_fd = -1};
	aj_proxy_req c;
	static const char connect[] = "CONNECT api.test:443 HTTP/1.1\r\n\r\n";
	assert_int_equal(aj_proxy_parse(connect, strlen(connect), &c), 0);
	char in[2048], out[4096];
	snprintf(in, sizeof(in),
		 "GET /ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n"
		 "Connection: Upgrade\r\nx-key: %s\r\n\r\n"
		 "GET /next HTTP/1.1\r\nHost: api.test\r\nx-key: %s\r\n\r\n"
		 "GET /other HTTP/1.1\r\nHost: other.test\r\n\r\n",
		 ph, ph);
	static const char no[] = "HTTP/1.1 100 Continue\r\n\r\n"
				 "HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\nnope";
	size_t n =
	    aj_proxy_tls_frame(&ctx, &c, in, strlen(in), no, strlen(no), out, sizeof(out) - 1);
	out[n] = '\0';
	/* declined: the next request is parsed, filled, checked */
	assert_non_null(
	    strstr(out, "GET /next HTTP/1.1\r\nHost: api.test\r\nx-key: real-value-1\r\n"));
	assert_null(strstr(out, ph));
	assert_null(strstr(out, "/other"));
	/* switched: what follows is the new protocol's, passed as it is */
	static const char yes[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
				  "Connection: Upgrade\r\n\r\n";
	n = aj_proxy_tls_frame(&ctx, &c, in, strlen(in), yes, strlen(yes), out, sizeof(out) - 1);
	out[n] = '\0';
	assert_non_null(strstr(out, "GET /next HTTP/1.1\r\nHost: api.test\r\nx-key: agentjail-"));
	/* no answer yet: nothing after the upgrade's head goes out */
	n = aj_proxy_tls_frame(&ctx, &c, in, strlen(in), NULL, 0, out, sizeof(out) - 1);
	out[n] = '\0';
	assert_non_null(strstr(out, "GET /ws HTTP/1.1\r\n"));
	assert_null(strstr(out, "/next"));
	/* an Upgrade with a body could not wait for the answer: refused */
	static const char body[] = "POST /up HTTP/1.1\r\nHost: api.test\r\nUpgrade: x\r\n"
				   "Connection: upgrade\r\nContent-Length: 3\r\n\r\nabc";
	assert_int_equal(
	    aj_proxy_tls_frame(&ctx, &c, body, strlen(body), yes, strlen(yes), out, sizeof(out)),
	    0);

	/* pipelined: GET /a, then the Upgrade. The server's answers come in
	 * order, one each: the 200 is /a's, never the Upgrade's */
	char piped[2048];
	snprintf(piped, sizeof(piped), "GET /a HTTP/1.1\r\nHost: api.test\r\n\r\n%s", in);
	static const char first[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	n = aj_proxy_tls_frame(&ctx, &c, piped, strlen(piped), first, strlen(first), out,
			       sizeof(out) - 1);
	out[n] = '\0';
	assert_non_null(strstr(out, "GET /ws HTTP/1.1\r\n"));
	assert_null(strstr(out, "/next")); /* still waiting for the Upgrade's answer */
	/* /a's 200, then the 101: what follows is the new protocol's */
	char both[512];
	snprintf(both, sizeof(both), "%s%s", first, yes);
	n = aj_proxy_tls_frame(&ctx, &c, piped, strlen(piped), both, strlen(both), out,
			       sizeof(out) - 1);
	out[n] = '\0';
	assert_non_null(strstr(out, "GET /next HTTP/1.1\r\nHost: api.test\r\nx-key: agentjail-"));
	/* a 101 inside /a's body (or to a HEAD's bodiless answer) is no
	 * switch: the Upgrade's own 401 is, and the Host check holds */
	snprintf(both, sizeof(both), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s%s",
		 strlen(yes), yes, no);
	n = aj_proxy_tls_frame(&ctx, &c, piped, strlen(piped), both, strlen(both), out,
			       sizeof(out) - 1);
	out[n] = '\0';
	assert_non_null(strstr(out, "x-key: real-value-1\r\n"));
	assert_null(strstr(out, "/other"));
	snprintf(piped, sizeof(piped), "HEAD /a HTTP/1.1\r\nHost: api.test\r\n\r\n%s", in);
	snprintf(both, sizeof(both), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s",
		 strlen(yes), no);
	n = aj_proxy_tls_frame(&ctx, &c, piped, strlen(piped), both, strlen(both), out,
			       sizeof(out) - 1);
	out[n] = '\0';
	assert_non_null(strstr(out, "x-key: real-value-1\r\n"));
	assert_null(strstr(out, "/other"));
	/* a 101 answering a plain GET loses the thread: the session ends */
	snprintf(piped, sizeof(piped), "GET /a HTTP/1.1\r\nHost: api.test\r\n\r\n%s", in);
	snprintf(both, sizeof(both), "%s%s", yes, no);
	n = aj_proxy_tls_frame(&ctx, &c, piped, strlen(piped), both, strlen(both), out,
			       sizeof(out) - 1);
	out[n] = '\0';
	assert_null(strstr(out, "/next"));
	/* a 304 (or 204) with a length has no body (RFC 9112 6.3): the next
	 * bytes are the Upgrade's own answer, never the 304's body */
	snprintf(both, sizeof(both), "HTTP/1.1 304 Not Modified\r\nContent-Length: %zu\r\n\r\n%s",
		 strlen(no), no);
	n = aj_proxy_tls_frame(&ctx, &c, piped, strlen(piped), both, strlen(both), out,
			       sizeof(out) - 1);
	out[n] = '\0';
	assert_non_null(
	    strstr(out, "GET /next HTTP/1.1\r\nHost: api.test\r\nx-key: real-value-1\r\n"));
	assert_null(strstr(out, "/other"));
	aj_policy_free(&p);
}

/* A request refused after its secrets were put in (a held body whose
 * chunked framing breaks, 400) logs no secret_injected line: the value
 * went nowhere. */
static void test_tls_refused_not_injected(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_secret(&p, "KEY@api.test=real-value-1", NULL), 0);
	assert_int_equal(aj_policy_add_secret(&p, "B@api.test:body=body-value-22", NULL), 0);
	const char *ph = p.secrets[0].placeholder;
	int log = memfd_create("netlog", 0);
	assert_true(log >= 0);
	aj_netd_ctx ctx = {.p = &p, .log_fd = log, .audit_fd = -1};
	pthread_mutex_init(&ctx.lock, NULL);
	aj_proxy_req c;
	static const char connect[] = "CONNECT api.test:443 HTTP/1.1\r\n\r\n";
	assert_int_equal(aj_proxy_parse(connect, strlen(connect), &c), 0);
	size_t cap = 4096;
	char *in = malloc(cap), out[4096];
	assert_non_null(in);
	int h = snprintf(in, cap,
			 "POST /bad HTTP/1.1\r\nHost: api.test\r\nx-key: %s\r\n"
			 "Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\nzz\r\n",
			 ph);
	assert_int_equal(aj_proxy_tls_frame(&ctx, &c, in, (size_t)h, NULL, 0, out, sizeof(out)), 0);
	/* the same head with a small body is sent, and logged */
	h = snprintf(in, cap,
		     "POST /small HTTP/1.1\r\nHost: api.test\r\nx-key: %s\r\n"
		     "Content-Length: 2\r\n\r\nab",
		     ph);
	assert_true(aj_proxy_tls_frame(&ctx, &c, in, (size_t)h, NULL, 0, out, sizeof(out)) > 0);
	char logged[8192] = "";
	assert_true(pread(log, logged, sizeof(logged) - 1, 0) > 0);
	char *first = strstr(logged, "\"secret_injected\"");
	assert_non_null(first);
	assert_null(strstr(first + 1, "\"secret_injected\""));
	const char *refused = strstr(logged, "\"refused\"");
	assert_non_null(refused);
	assert_true(first > refused);
	free(in);
	close(log);
	aj_policy_free(&p);
}

/* The chunked body that starts at *p (within end): de-framed into out
 * (its length); *p moves past it. */
static size_t dechunk(const char **p, const char *end, char *out)
{
	size_t o = 0;
	for (;;) {
		char *eol;
		size_t n = strtoul(*p, &eol, 16);
		assert_true(eol + 2 <= end && eol[0] == '\r' && eol[1] == '\n');
		*p = eol + 2;
		if (n == 0) {
			assert_memory_equal(*p, "\r\n", 2);
			*p += 2;
			return o;
		}
		assert_true(*p + n + 2 <= end);
		memcpy(out + o, *p, n);
		o += n;
		*p += n + 2;
	}
}

/* A body over AJ_INJECT_BODY_MAX toward a host with a :body secret is
 * streamed: filled as it comes (placeholders cut between pieces or
 * chunks too), sent chunked, and the connection goes on. */
static void test_tls_stream(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_secret(&p, "KEY@api.test=real-value-1", NULL), 0);
	assert_int_equal(aj_policy_add_secret(&p, "B@api.test:body=body-value-22", NULL), 0);
	const char *ph = p.secrets[0].placeholder, *bph = p.secrets[1].placeholder;
	size_t pl = strlen(bph);
	aj_netd_ctx ctx = {.p = &p, .log_fd = -1};
	aj_proxy_req c;
	static const char connect[] = "CONNECT api.test:443 HTTP/1.1\r\n\r\n";
	assert_int_equal(aj_proxy_parse(connect, strlen(connect), &c), 0);
	/* the body: a placeholder every 997 bytes (so across every boundary
	 * of the proxy's 16 KiB reads), KEY's (not :body) once */
	size_t big = AJ_INJECT_BODY_MAX + 100000, cap = 2 * big + 65536;
	char *body = malloc(big), *want = malloc(big), *in = malloc(cap), *out = malloc(cap),
	     *got = malloc(cap);
	assert_true(body && want && in && out && got);
	memset(body, 'a', big);
	memcpy(body + 5, ph, strlen(ph));
	size_t wl = 0;
	for (size_t i = 0; i < big;) {
		if (i >= 100 && i % 997 == 0 && i + pl <= big) {
			memcpy(body + i, bph, pl);
			memcpy(want + wl, "body-value-22", 13);
			wl += 13, i += pl;
		} else
			want[wl++] = body[i++];
	}
	for (int chunked = 0; chunked < 2; chunked++) {
		size_t h = (size_t)snprintf(
		    in, cap, "POST /big HTTP/1.1\r\nHost: api.test\r\n%s\r\n",
		    chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: 1148576\r\n");
		assert_int_equal(big, 1148576);
		for (size_t i = 0; i < big;) { /* chunks of 1000: placeholders cut */
			size_t n = !chunked ? big : big - i < 1000 ? big - i : 1000;
			if (chunked)
				h += (size_t)sprintf(in + h, "%zx\r\n", n);
			memcpy(in + h, body + i, n);
			h += n, i += n;
			if (chunked)
				h += (size_t)sprintf(in + h, "\r\n");
		}
		if (chunked)
			h += (size_t)sprintf(in + h, "0\r\n\r\n");
		h += (size_t)sprintf(in + h, "GET /c HTTP/1.1\r\nHost: api.test\r\n\r\n");
		size_t n = aj_proxy_tls_frame(&ctx, &c, in, h, NULL, 0, out, cap - 1);
		out[n] = '\0';
		const char *b = strstr(out, "\r\n\r\n");
		assert_non_null(b);
		assert_non_null(memmem(out, (size_t)(b - out), "Transfer-Encoding: chunked", 26));
		assert_null(memmem(out, (size_t)(b - out), "Content-Length", 14));
		b += 4;
		size_t gl = dechunk(&b, out + n, got);
		assert_int_equal(gl, wl);
		assert_memory_equal(got, want, wl);
		assert_non_null(memmem(got, gl, ph, strlen(ph))); /* KEY: not in bodies */
		assert_string_equal(b, "GET /c HTTP/1.1\r\nHost: api.test\r\n\r\n");
	}
	free(body);
	free(want);
	free(in);
	free(out);
	free(got);
	aj_policy_free(&p);
}

/* A body over 1 MiB with a Content-Length and a spool directory: spooled
 * as sent, then one head with the filled length and the filled body (a
 * placeholder every 997 bytes: across the spool's 16 KiB reads and the
 * 16 KiB pieces it arrives in); over the cap: nothing to the server, the
 * spool directory empty. */
static void test_tls_spool(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_secret(&p, "B@api.test:body=body-value-22", NULL), 0);
	const char *bph = p.secrets[0].placeholder;
	size_t pl = strlen(bph);
	char dir[] = "/tmp/aj-spool-XXXXXX";
	assert_non_null(mkdtemp(dir));
	aj_netd_ctx ctx = {.p = &p, .log_fd = -1, .spool_max = 64 << 20};
	ctx.spool_dir = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ctx.spool_dir > 0);
	aj_proxy_req c;
	static const char connect[] = "CONNECT api.test:443 HTTP/1.1\r\n\r\n";
	assert_int_equal(aj_proxy_parse(connect, strlen(connect), &c), 0);
	size_t big = 3 * AJ_INJECT_BODY_MAX, cap = 2 * big + 65536, wl = 0;
	char *in = malloc(cap), *out = malloc(cap), *want = malloc(cap);
	assert_true(in && out && want);
	size_t h = (size_t)snprintf(in, cap,
				    "PUT /s3 HTTP/1.1\r\nHost: api.test\r\n"
				    "Content-Length: %zu\r\n\r\n",
				    big);
	for (size_t i = 0; i < big;) {
		if (i % 997 == 0 && i + pl <= big) {
			memcpy(in + h + i, bph, pl);
			memcpy(want + wl, "body-value-22", 13);
			wl += 13, i += pl;
		} else
			in[h + i] = want[wl++] = 'a', i++;
	}
	h += big;
	h += (size_t)sprintf(in + h, "GET /c HTTP/1.1\r\nHost: api.test\r\n\r\n");
	size_t n = aj_proxy_tls_frame(&ctx, &c, in, h, NULL, 0, out, cap - 1);
	out[n] = '\0';
	const char *b = strstr(out, "\r\n\r\n");
	assert_non_null(b);
	char cl[64];
	snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", wl);
	assert_non_null(memmem(out, (size_t)(b - out) + 2, cl, strlen(cl)));
	assert_null(memmem(out, (size_t)(b - out), "Transfer-Encoding", 17));
	b += 4;
	assert_true((size_t)(out + n - b) >= wl);
	assert_memory_equal(b, want, wl);
	assert_string_equal(b + wl, "GET /c HTTP/1.1\r\nHost: api.test\r\n\r\n");

	/* over the cap: refused at the head (its Content-Length), or once
	 * spooled (its values make it grow past the cap): nothing sent */
	ctx.spool_max = big - 1;
	n = aj_proxy_tls_frame(&ctx, &c, in, h, NULL, 0, out, cap - 1);
	assert_int_equal(n, 0);
	/* the sandbox's spools together: 2 MiB already held by another
	 * connection leave too little for it; each body's charge released */
	ctx.spool_max = big + 1;
	ctx.spool_used = 2 << 20;
	n = aj_proxy_tls_frame(&ctx, &c, in, h, NULL, 0, out, cap - 1);
	assert_int_equal(n, 0);
	assert_int_equal(ctx.spool_used, 2 << 20);
	ctx.spool_used = 0;
	n = aj_proxy_tls_frame(&ctx, &c, in, h, NULL, 0, out, cap - 1);
	assert_true(n > wl);
	assert_int_equal(ctx.spool_used, 0);
	char lv[400] = "B@api.test:body=";
	memset(lv + strlen(lv), 'v', 300);
	aj_policy p2;
	aj_policy_init(&p2);
	assert_int_equal(aj_policy_add_secret(&p2, lv, NULL), 0);
	free(p2.secrets[0].placeholder); /* the same placeholder as the body has */
	p2.secrets[0].placeholder = strdup(bph);
	ctx.p = &p2;
	ctx.spool_max = big + 1;
	n = aj_proxy_tls_frame(&ctx, &c, in, h, NULL, 0, out, cap - 1);
	assert_int_equal(n, 0);
	aj_policy_free(&p2);
	/* a value so much longer than its placeholder that one spool piece
	 * fills past AJ_INJECT_FILLED_MAX: refused while counting, before the
	 * head goes (was: the head sent, then the connection cut) */
	char *hv = malloc(20000);
	assert_non_null(hv);
	strcpy(hv, "B@api.test:body=");
	memset(hv + strlen(hv), 'w', 16384);
	hv[16 + 16384] = '\0';
	aj_policy p3;
	aj_policy_init(&p3);
	assert_int_equal(aj_policy_add_secret(&p3, hv, NULL), 0);
	free(p3.secrets[0].placeholder);
	p3.secrets[0].placeholder = strdup(bph);
	ctx.p = &p3;
	ctx.spool_max = 1ULL << 34;
	size_t reps = (2 * AJ_INJECT_BODY_MAX) / pl,
	       h3 = (size_t)snprintf(in, cap,
				     "PUT /s3 HTTP/1.1\r\nHost: api.test\r\n"
				     "Content-Length: %zu\r\n\r\n",
				     reps * pl);
	for (size_t i = 0; i < reps; i++, h3 += pl) /* placeholders back to back */
		memcpy(in + h3, bph, pl);
	n = aj_proxy_tls_frame(&ctx, &c, in, h3, NULL, 0, out, cap - 1);
	assert_int_equal(n, 0);
	assert_int_equal(ctx.spool_used, 0);
	aj_policy_free(&p3);
	free(hv);
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			fail_msg("left in the spool: %s", e->d_name);
	closedir(d);
	close(ctx.spool_dir);
	rmdir(dir);
	free(in);
	free(out);
	free(want);
	aj_policy_free(&p);
}

/* Body injection is one pass over what the client sent: a placeholder
 * that a replacement makes is not replaced again (it overran the buffer
 * sized for the client's own ones), and a body whose values would swell
 * it past AJ_INJECT_FILLED_MAX is refused (-EFBIG, a 413). */
static void test_inject_body_one_pass(void **state)
{
	(void)state;
	aj_policy p;
	aj_policy_init(&p);
	assert_int_equal(aj_policy_add_secret(&p, "A@api.test:body=placeholder-to-be", NULL), 0);
	char big[512];
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	char spec[600];
	snprintf(spec, sizeof(spec), "B@api.test:body=%s", big);
	assert_int_equal(aj_policy_add_secret(&p, spec, NULL), 0);
	const char *aph = p.secrets[0].placeholder, *bph = p.secrets[1].placeholder;
	/* A's value: B's placeholder but its last character */
	free(p.secrets[0].value);
	p.secrets[0].value = strndup(bph, strlen(bph) - 1);
	char body[4096];
	size_t bl = 0;
	for (int i = 0; i < 20; i++)
		bl += (size_t)snprintf(body + bl, sizeof(body) - bl, "%s%c|", aph,
				       bph[strlen(bph) - 1]);
	char *filled = NULL;
	size_t fl = 0, nn = 0;
	aj_inject_note notes[AJ_INJECT_NOTES];
	assert_int_equal(aj_inject_body(&p, "api.test", body, bl, &filled, &fl, notes, &nn), 0);
	/* each "A-placeholder + c" is now B's placeholder, as text: B's value
	 * is never put in where the client did not send B's placeholder */
	assert_int_equal(fl, 20 * (strlen(bph) + 1));
	for (size_t o = 0; o < fl; o += strlen(bph) + 1) {
		assert_memory_equal(filled + o, bph, strlen(bph));
		assert_int_equal(filled[o + strlen(bph)], '|');
	}
	assert_null(memmem(filled, fl, big, 16));
	assert_int_equal(nn, 1);
	assert_true(notes[0].injected);
	free(filled);
	/* 1 MiB of B's placeholders would be ~13 MiB filled: refused */
	size_t pl = strlen(bph), n = AJ_INJECT_BODY_MAX / pl;
	char *huge = malloc(n * pl);
	assert_non_null(huge);
	for (size_t i = 0; i < n; i++)
		memcpy(huge + i * pl, bph, pl);
	filled = NULL;
	assert_int_equal(aj_inject_body(&p, "api.test", huge, n * pl, &filled, &fl, notes, &nn),
			 -EFBIG);
	assert_null(filled);
	free(huge);
	aj_policy_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allow_parse),
	    cmocka_unit_test(test_allow_match),
	    cmocka_unit_test(test_inject_body_one_pass),
	    cmocka_unit_test(test_host_canon),
	    cmocka_unit_test(test_host_norm),
	    cmocka_unit_test(test_addr_allow),
	    cmocka_unit_test(test_publish_dns),
	    cmocka_unit_test(test_proxy_parse),
	    cmocka_unit_test(test_nft_allow_batch),
	    cmocka_unit_test(test_secret_scope),
	    cmocka_unit_test(test_inject),
	    cmocka_unit_test(test_tls_frame),
	    cmocka_unit_test(test_tls_upgrade),
	    cmocka_unit_test(test_tls_stream),
	    cmocka_unit_test(test_tls_spool),
	    cmocka_unit_test(test_proxy_connection),
	    cmocka_unit_test(test_tls_refused_not_injected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
