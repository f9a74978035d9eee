/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the HTTP/2 side of an intercepted HTTPS connection
 * (proxy_h2.c), without the TLS: what a sandbox sends (preface, frames,
 * HPACK) through the proxy to a server session that decodes it. Checks:
 * it never crashes, leaks or loops; every request the server gets names
 * the CONNECT host and port in :authority; a secret's value only goes
 * out in a request to it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netd_ctx.h"
#include "proxy_h2.h"
#include "proxy_parse.h"

static aj_policy policy;
static aj_netd_ctx ctx;
static aj_proxy_req connect_req;
static bool ready;

/* Does the authority name api.test (port 443, or none)? */
static bool ours(const char *auth, size_t n)
{
	char head[512];
	static aj_proxy_req r;
	if (n > 300)
		return false;
	int k = snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: %.*s\r\n\r\n", (int)n, auth);
	return aj_proxy_parse(head, (size_t)k, &r) == 0 && strcmp(r.host, "api.test") == 0 &&
	       (!r.port_given || r.port == 443);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ready) {
		aj_policy_init(&policy);
		if (aj_policy_add_secret(&policy, "K@api.test=SECRETVALUE", NULL) < 0)
			abort();
		strcpy(policy.secrets[0].placeholder, "agentjail-placeholder-K-0000000000000000");
		ctx = (aj_netd_ctx){.p = &policy, .log_fd = -1, .audit_fd = -1};
		static const char head[] = "CONNECT api.test:443 HTTP/1.1\r\n\r\n";
		if (aj_proxy_parse(head, sizeof(head) - 1, &connect_req) < 0)
			abort();
		ready = true;
	}
	size_t cap = 8 * size + 65536;
	char *out = malloc(cap + 1);
	if (!out)
		return 0;
	size_t n = aj_proxy_h2_frame(&ctx, &connect_req, (const char *)data, size, out, cap);
	out[n] = '\0';
	/* every request's :authority is the CONNECT's (:method comes first) */
	if (!strncmp(out, ":authority: ", 12))
		abort();
	for (char *l = out; (l = strstr(l, "\n:authority: "));) {
		l += 13;
		size_t len = strcspn(l, "\n");
		if (!ours(l, len))
			abort();
		l += len;
	}
	/* the value only with that authority, and no host header beside it */
	if (strstr(out, "\nhost: ") || (!strstr(out, ":authority: ") && strstr(out, "SECRETVALUE")))
		abort();
	free(out);
	return 0;
}
