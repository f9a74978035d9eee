/* SPDX-License-Identifier: MIT */
/* `agentjail mcp`'s messages: JSON-RPC 2.0 framing as MCP uses it, the
 * protocol revisions it speaks, its tools' input schemas and the check of
 * a call's arguments against them. No I/O: tests/fuzz/fuzz_mcp.c feeds it
 * any bytes. */
#ifndef AJ_CLI_MCP_PROTO_H
#define AJ_CLI_MCP_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* JSON-RPC 2.0 error codes */
#define AJ_MCP_PARSE_ERROR -32700
#define AJ_MCP_INVALID_REQUEST -32600
#define AJ_MCP_METHOD_NOT_FOUND -32601
#define AJ_MCP_INVALID_PARAMS -32602
#define AJ_MCP_INTERNAL_ERROR -32603

/* The revision this server speaks first (docs/mcp.md). */
#define AJ_MCP_VERSION "2025-06-18"
/* A message (one line) longer than this is refused unread. */
#define AJ_MCP_LINE_MAX (8u << 20)

typedef struct aj_mcp_msg {
	json_t *root;	    /* owned */
	json_t *id;	    /* borrowed: NULL for a notification */
	const char *method; /* NULL for a response */
	json_t *params;	    /* borrowed; NULL when absent */
	int code;	    /* after a failed parse: the JSON-RPC error */
	char why[256];
} aj_mcp_msg;

/* One message. 0: a request (id set), a notification (id NULL) or a
 * response of the client's (method NULL: nothing to answer); -1: m->code
 * and m->why say why, m->id is the request's id when it had a good one. */
int aj_mcp_parse(const char *line, size_t len, aj_mcp_msg *m);
void aj_mcp_msg_free(aj_mcp_msg *m);

/* The revision to answer a client that asks for `asked` (may be NULL). */
const char *aj_mcp_negotiate(const char *asked);

/* {"tools": [...]}: every tool with its inputSchema (borrowed, built once;
 * NULL only when out of memory). */
json_t *aj_mcp_tools(void);
/* A tools/call's params: the tool's name and its arguments (borrowed, an
 * empty object when absent), checked against its schema. 0, or
 * AJ_MCP_INVALID_PARAMS with why (an unknown tool too). */
int aj_mcp_check_call(json_t *params, const char **name, json_t **args, char *why, size_t size);
/* v against the schema's subset this server uses (type, properties,
 * required, additionalProperties, items, minItems, enum, minimum, maximum,
 * minLength); where names v in why. 0 or -1. */
int aj_mcp_check(const json_t *schema, const json_t *v, const char *where, char *why, size_t size);

/* A response or notification as one line (no newline), or NULL when out of
 * memory. result and params are stolen; id is not. */
char *aj_mcp_result(const json_t *id, json_t *result);
char *aj_mcp_error(const json_t *id, int code, const char *message);
char *aj_mcp_notification(const char *method, json_t *params);

#endif
