/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the requests of an intercepted HTTPS session
 * (proxy_tls.c), without the TLS: keep-alive heads, bodies framed by
 * http-parser (Content-Length, chunked), bodies held for a :body secret,
 * upgrades and pipelining (the last byte picks what the server says, in
 * order, once the client's first requests are out: a 101, a 401, a 100
 * then a 200, not HTTP, none, a 200 then a 101, a 200 whose body is a
 * 101 head then a 401). Checks: it never
 * crashes or loops; a secret's value comes out only where the input had
 * its placeholder (or the value itself); a request whose Host names
 * another server than the CONNECT's is never passed on. And a body filled
 * as it streams (inject.h), cut in pieces the input picks, comes out as
 * the same body filled whole. */
#include <http_parser.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "netd_ctx.h"
#include "proxy_parse.h"
#include "proxy_tls.h"

static aj_policy policy;
static aj_netd_ctx ctx;
static aj_proxy_req connect_req;
static bool ready;

/* The bodies of the requests in the input, de-framed as http-parser
 * (lenient, as the proxy's) reads them: a chunked body's placeholder may
 * be cut by its framing. */
typedef struct flat {
	char *p;
	size_t len;
} flat;

static int on_flat_body(http_parser *hp, const char *at, size_t n)
{
	flat *f = hp->data;
	memcpy(f->p + f->len, at, n);
	f->len += n;
	return 0;
}

static void unframe(const char *in, size_t n, flat *f)
{
	static const http_parser_settings set = {.on_body = on_flat_body};
	http_parser hp;
	http_parser_init(&hp, HTTP_REQUEST);
	hp.data = f;
	(void)http_parser_execute(&hp, &set, in, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ready) {
		aj_policy_init(&policy);
		if (aj_policy_add_secret(&policy, "K@api.test=SECRETVALUE", NULL) < 0)
			abort();
		strcpy(policy.secrets[0].placeholder, "agentjail-placeholder-K-0000000000000000");
		if (aj_policy_add_secret(&policy, "B@api.test:body=BODYVALUE", NULL) < 0)
			abort();
		strcpy(policy.secrets[1].placeholder, "agentjail-placeholder-B-0000000000000000");
		ctx = (aj_netd_ctx){.p = &policy, .log_fd = -1};
		static const char head[] = "CONNECT api.test:443 HTTP/1.1\r\n\r\n";
		if (aj_proxy_parse(head, sizeof(head) - 1, &connect_req) < 0)
			abort();
		ready = true;
	}
	static const char *const answers[] = {
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	    "HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\nno",
	    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
	    "\x16\x03\x01 not http\r\n\r\n",
	    "",
	    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nContent-Length: 36\r\n\r\nHTTP/1.1 101 Switching Protocols\r\n\r\n"
	    "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"};
	const char *answer = answers[size ? data[size - 1] % 7 : 4];
	size_t cap = 4 * size + 65536;
	char *out = malloc(cap);
	if (!out)
		return 0;
	size_t n = aj_proxy_tls_frame(&ctx, &connect_req, (const char *)data, size, answer,
				      strlen(answer), out, cap);
	bool had = memmem(data, size, "agentjail-placeholder-K-0000000000000000", 40) ||
		   memmem(data, size, "SECRETVALUE", 11);
	if (!had && memmem(out, n, "SECRETVALUE", 11))
		abort(); /* a value without its placeholder */
	/* a chunked body's placeholder may be cut by its framing */
	flat f = {malloc(size + 1), 0};
	if (!f.p)
		abort();
	unframe((const char *)data, size, &f);
	if (!memmem(data, size, "agentjail-placeholder-B-0000000000000000", 40) &&
	    !memmem(data, size, "BODYVALUE", 9) &&
	    !memmem(f.p, f.len, "agentjail-placeholder-B-0000000000000000", 40) &&
	    !memmem(f.p, f.len, "BODYVALUE", 9) && memmem(out, n, "BODYVALUE", 9))
		abort();
	free(f.p);
	if (memmem(out, n, "\nHost: other.test", 17) && !memmem(data, size, "other.test", 10))
		abort();
	free(out);

	/* the input as a body, streamed in pieces of 1..64 bytes (each
	 * piece's size from the byte that starts it) */
	char *whole = NULL, *got = malloc(4 * size + 64);
	size_t wl = 0, gl = 0, nn = 0;
	aj_inject_note notes[AJ_INJECT_NOTES];
	aj_body_stream st;
	if (!got || aj_inject_stream_init(&st, &policy, "api.test") < 0) {
		free(got);
		return 0;
	}
	for (size_t i = 0;;) {
		size_t k = i < size ? (data[i] & 63) + 1 : 0;
		k = k < size - i ? k : size - i;
		char *piece = NULL;
		size_t pl = 0;
		if (aj_inject_stream(&st, (const char *)data + i, k, i + k == size, &piece, &pl) <
		    0)
			abort();
		memcpy(got + gl, piece, pl);
		gl += pl;
		free(piece);
		i += k;
		if (i == size)
			break;
	}
	aj_inject_stream_free(&st);
	if (aj_inject_body(&policy, "api.test", (const char *)data, size, &whole, &wl, notes, &nn) <
		0 ||
	    wl != gl || (wl && memcmp(whole, got, wl) != 0))
		abort();
	free(whole);
	free(got);
	return 0;
}
