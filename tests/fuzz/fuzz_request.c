/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the JSON bodies of the service's API: an exec request
 * (aj_exec_req_parse), a code run and a code context and a line of the code bridge
 * (code_req.h) and a
 * sandbox's policy (aj_policy_from_json), as the
 * service parses them, and a files path_b64 (aj_b64_decode) with the UTF-8
 * check the files API makes. Each must accept or refuse, never crash or
 * leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "code_req.h"
#include "policy.h"
#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aj_error err;
	aj_exec_req q;
	unsigned char path[4096];
	size_t plen = 0;
	if (aj_b64_decode((const char *)data, size, path, sizeof(path), &plen) == 0)
		(void)aj_utf8_valid((const char *)path, plen);
	(void)aj_utf8_prefix(data, size);
	if (aj_exec_req_parse((const char *)data, size, &q, &err) == 0)
		aj_exec_req_free(&q);
	aj_code_req cq;
	if (aj_code_req_parse((const char *)data, size, &cq, &err) == 0)
		aj_code_req_free(&cq);
	json_t *m = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	json_t *ev = aj_code_event(m, "default", false); /* a line of the bridge */
	free(ev ? json_dumps(ev, JSON_COMPACT) : NULL);
	json_decref(ev);
	json_decref(m);
	aj_code_ctx_req xq;
	if (aj_code_ctx_req_parse((const char *)data, size, &xq, &err) == 0)
		aj_code_ctx_req_free(&xq);
	json_t *o = aj_json_body((const char *)data, size, &err);
	if (o) {
		/* the API's own key, as registry.c takes it out */
		json_object_del(o, "timeout");
		aj_policy p;
		aj_policy_init(&p);
		if (aj_policy_from_json(&p, o, &err) == 0)
			(void)aj_policy_validate(&p, &err);
		aj_policy_free(&p);
		json_decref(o);
	}
	return 0;
}
