/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a line on `agentjail mcp`'s stdin (src/cli/mcp_proto.c):
 * the JSON-RPC framing, and for a tools/call the check of its arguments
 * against the tool's schema; the arguments are also checked against every
 * tool's schema, and the answers built. Each must accept or refuse, never
 * crash or leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "mcp_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aj_mcp_msg m;
	char why[512];
	char *out;
	if (aj_mcp_parse((const char *)data, size, &m) < 0) {
		out = aj_mcp_error(m.id, m.code, m.why);
		free(out);
		aj_mcp_msg_free(&m);
		return 0;
	}
	if (m.params) {
		const char *name;
		json_t *args;
		int code = aj_mcp_check_call(m.params, &name, &args, why, sizeof(why));
		out = code ? aj_mcp_error(m.id, code, why) : aj_mcp_result(m.id, json_copy(args));
		free(out);
		json_t *a = json_object_get(m.params, "arguments");
		size_t i;
		json_t *t;
		json_array_foreach(json_object_get(aj_mcp_tools(), "tools"), i, t)(void)
		    aj_mcp_check(json_object_get(t, "inputSchema"), a ? a : m.params, "a", why,
				 sizeof(why));
		(void)aj_mcp_negotiate(
		    json_string_value(json_object_get(m.params, "protocolVersion")));
	}
	aj_mcp_msg_free(&m);
	return 0;
}
