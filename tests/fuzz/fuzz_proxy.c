/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the head of a request to agentjail's proxy. Checks: it
 * accepts or refuses, never crashes; an accepted request has a host without
 * '@', a port 1..65535, and (plain HTTP) an origin-form target. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allow.h"
#include "proxy_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aj_proxy_req *r = malloc(sizeof(*r));
	if (!r)
		return 0;
	if (aj_proxy_parse((const char *)data, size, r) == 0) {
		if (!r->host[0] || strchr(r->host, '@') || r->port == 0 || r->port > 65535)
			abort();
		if (!r->connect && r->target[0] != '/')
			abort();
		char canon[AJ_HOST_MAX + 1];
		(void)aj_host_canon(r->host, strlen(r->host), canon, sizeof(canon));
	} else if (!r->error) {
		abort(); /* a refusal always says why */
	}
	free(r);
	return 0;
}
