/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the operator policy (serve --operator-policy) and the
 * tokens file (serve --tokens), as the service parses them. Each must be
 * accepted or refused, never crash or leak. */
#include <stddef.h>
#include <stdint.h>

#include "operator.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aj_error err;
	aj_operator_policy p;
	if (aj_operator_parse((const char *)data, size, &p, &err) == 0) {
		char norm[4096];
		for (size_t i = 0; i < p.n_binds; i++)
			if (!aj_op_normalize(p.binds[i].path, norm, sizeof(norm)))
				__builtin_trap(); /* a root is kept normalized */
		aj_operator_free(&p);
	}
	static aj_tenant t[AJ_TENANT_MAX];
	size_t n;
	(void)aj_tenants_parse((const char *)data, size, t, AJ_TENANT_MAX, &n, &err);
	return 0;
}
