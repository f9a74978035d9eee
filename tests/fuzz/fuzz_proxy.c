/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the head of a request to agentjail's proxy, and the
 * scoped secrets it fills in. Checks: it accepts or refuses, never
 * crashes; an accepted request has a canonical host (aj_host_norm gives
 * it back unchanged), a port 1..65535, and (plain HTTP) an origin-form
 * target; a secret's value never lands in a request to a host it is not
 * scoped to. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allow.h"
#include "inject.h"
#include "proxy_parse.h"

static aj_policy policy;
static bool ready;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ready) {
		aj_policy_init(&policy);
		if (aj_policy_add_secret(&policy, "K@api.test,*.wild.test=SECRETVALUE", NULL) < 0)
			abort();
		/* a fixed placeholder, so that the fuzzer can find it */
		strcpy(policy.secrets[0].placeholder, "agentjail-placeholder-K-0000000000000000");
		ready = true;
	}
	aj_proxy_req *r = malloc(sizeof(*r));
	if (!r)
		return 0;
	if (aj_proxy_parse((const char *)data, size, r) == 0) {
		if (!r->host[0] || strchr(r->host, '@') || r->port == 0 || r->port > 65535)
			abort();
		if (!r->connect && r->target[0] != '/')
			abort();
		aj_host h;
		if (aj_host_norm(r->host, strlen(r->host), &h, NULL) != 0 ||
		    strcmp(h.text, r->host) != 0 || h.kind != r->host_kind)
			abort(); /* not canonical */
		aj_inject_note notes[AJ_INJECT_NOTES];
		size_t n;
		bool scoped =
		    aj_host_match("api.test", r->host) || aj_host_match("*.wild.test", r->host);
		bool had = memmem(data, size, "SECRETVALUE", 11) != NULL;
		if (aj_inject(&policy, r, notes, &n) == 0 && !scoped && !had &&
		    (strstr(r->headers, "SECRETVALUE") || strstr(r->target, "SECRETVALUE")))
			abort(); /* the value went to another host */
	} else if (!r->error) {
		abort(); /* a refusal always says why */
	}
	free(r);
	return 0;
}
