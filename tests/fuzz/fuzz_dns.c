/* SPDX-License-Identifier: MIT */
/* libFuzzer target: agentjail's resolver answering a query packet from the
 * sandbox (no upstream: allowed names get SERVFAIL, never a network call).
 * Checks: no crash; a reply fits the buffer, keeps the query's id, and a
 * name outside the allow-list is never answered with an address. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static aj_policy p;
	static bool init;
	if (!init) {
		aj_policy_init(&p);
		if (aj_policy_add_allow(&p, "example.com", NULL) < 0 ||
		    aj_policy_add_allow(&p, "*.cdn.test", NULL) < 0)
			abort();
		init = true;
	}
	aj_net n = {.table = "agentjail-fuzz"};
	aj_netd_ctx ctx = {.p = &p, .n = &n, .log_fd = -1};
	pthread_mutex_init(&ctx.lock, NULL);
	uint8_t out[512];
	ssize_t len = aj_dns_handle(&ctx, data, size, out, sizeof(out));
	if (len > (ssize_t)sizeof(out))
		abort();
	if (len >= 12) {
		if (size < 2 || memcmp(out, data, 2) != 0)
			abort(); /* the id */
		if ((out[6] | out[7]) != 0)
			abort(); /* no upstream: never an answer record */
	}
	pthread_mutex_destroy(&ctx.lock);
	return 0;
}
