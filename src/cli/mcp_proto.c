/* SPDX-License-Identifier: MIT */
/* `agentjail mcp`'s messages and tool schemas: mcp_proto.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_proto.h"

/* The tools and their input schemas (JSON Schema), the one source of what
 * tools/list shows and of what tools/call accepts. docs/mcp.md has them
 * in prose. */
#define SB_ID                                                                                      \
	"\"sandbox_id\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"the "         \
	"sandbox's id (sb-...), from sandbox_create or sandbox_list\"}"
#define PROC_ID                                                                                    \
	"\"process_id\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"the "         \
	"background process's id (p1...), from process_start or process_list\"}"
#define STR_MAP "{\"type\": \"object\", \"additionalProperties\": {\"type\": \"string\"}"
static const char tools_json[] =
    "[{\"name\": \"sandbox_create\", \"title\": \"Create a sandbox\","
    " \"description\": \"Create an isolated, limited, throw-away Linux sandbox of the agentjail "
    "service and return its id. Nothing of the host is writable in it but the workspace, if "
    "one is given; the network is off unless net is open (the service's policy decides).\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
    "  \"image\": {\"type\": \"string\", \"description\": \"an image of `agentjail image` "
    "(e.g. python); default: the host's system, read-only\"},"
    "  \"memory\": {\"type\": \"string\", \"description\": \"memory limit, e.g. 512M "
    "(default 1G)\"},"
    "  \"cpus\": {\"type\": \"number\", \"minimum\": 0, \"description\": \"CPU limit in "
    "CPUs, e.g. 1.5\"},"
    "  \"pids\": {\"type\": \"integer\", \"minimum\": 1, \"description\": \"most processes "
    "at once (default 256)\"},"
    "  \"disk\": {\"type\": \"string\", \"description\": \"size of the writable layer, e.g. "
    "1G\"},"
    "  \"net\": {\"type\": \"string\", \"enum\": [\"none\", \"open\"], \"description\": "
    "\"none (default: loopback only) or open (the internet, never the host or its LAN)\"},"
    "  \"allow\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"description\": "
    "\"only these hosts or host:port (e.g. pypi.org)\"},"
    "  \"env\": " STR_MAP ", \"description\": \"environment variables\"},"
    "  \"secret\": " STR_MAP ", \"description\": \"secrets: the sandbox sees a placeholder, "
    "output shows [REDACTED]\"},"
    "  \"workspace\": {\"type\": \"string\", \"description\": \"a host directory mounted "
    "read-write at /workspace (the service's operator policy must allow it)\"},"
    "  \"timeout\": {\"type\": \"number\", \"minimum\": 0, \"description\": \"the "
    "sandbox's time to live in seconds (default 3600, 0: none)\"},"
    "  \"isolation\": {\"type\": \"string\", \"enum\": [\"process\", \"gvisor\", \"wasm\"], "
    "\"description\": \"the isolation level (default process)\"},"
    "  \"limits\": {\"type\": \"string\", \"enum\": [\"strict\", \"best-effort\"], "
    "\"description\": \"strict (default): refuse what cannot be limited\"}}}},"
    " {\"name\": \"sandbox_list\", \"title\": \"List sandboxes\","
    " \"description\": \"The service's sandboxes: id, state, expiry, limits, workspace.\","
    " \"annotations\": {\"readOnlyHint\": true},"
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": "
    "{}}},"
    " {\"name\": \"sandbox_kill\", \"title\": \"Destroy a sandbox\","
    " \"description\": \"Kill every process of the sandbox and remove all of it.\","
    " \"annotations\": {\"destructiveHint\": true, \"idempotentHint\": true},"
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\"], \"properties\": {" SB_ID "}}},"
    " {\"name\": \"run_command\", \"title\": \"Run a command in a sandbox\","
    " \"description\": \"Run a command in a sandbox and return its stdout, stderr and exit "
    "code (124: timed out). A string runs as /bin/sh -c STRING, an array as argv. Output is "
    "streamed as progress notifications when the call has a progressToken.\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\", \"cmd\"], \"properties\": {" SB_ID ","
    "  \"cmd\": {\"type\": [\"string\", \"array\"], \"items\": {\"type\": \"string\"}, "
    "\"minItems\": 1, \"minLength\": 1, \"description\": \"a shell line, or argv\"},"
    "  \"cwd\": {\"type\": \"string\", \"description\": \"absolute directory inside\"},"
    "  \"timeout\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 86400, "
    "\"description\": \"seconds (default 120); then the command is killed, exit code 124\"},"
    "  \"stdin\": {\"type\": \"string\", \"description\": \"the command's whole standard "
    "input\"},"
    "  \"env\": " STR_MAP ", \"description\": \"more environment variables\"}}}},"
    " {\"name\": \"run_code\", \"title\": \"Run Python in a sandbox's code interpreter\","
    " \"description\": \"Run Python in a Jupyter kernel kept in the sandbox: variables, imports "
    "and files persist from one call to the next (a context). Returns what it printed, the "
    "cell's value, charts (plt.show()) as images, tables as text, and the error with its "
    "traceback. A timeout interrupts the code; the context lives on.\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\", \"code\"], \"properties\": {" SB_ID ","
    "  \"code\": {\"type\": \"string\", \"description\": \"the Python cell\"},"
    "  \"context\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 32, "
    "\"description\": \"the code context (default: default)\"},"
    "  \"timeout\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 86400, "
    "\"description\": \"seconds (default 120); then the kernel is interrupted\"}}}},"
    " {\"name\": \"read_file\", \"title\": \"Read a file of a sandbox\","
    " \"description\": \"A file's contents: as text when it is UTF-8, else base64.\","
    " \"annotations\": {\"readOnlyHint\": true},"
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\", \"path\"], \"properties\": {" SB_ID ","
    "  \"path\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"absolute path "
    "inside the sandbox\"},"
    "  \"max_bytes\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 4194304, "
    "\"description\": \"refuse a bigger file (default 1048576)\"}}}},"
    " {\"name\": \"write_file\", \"title\": \"Write a file in a sandbox\","
    " \"description\": \"Create or replace a file (in /workspace, /tmp, /home/agent: the "
    "sandbox's writable places).\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\", \"path\", \"content\"], \"properties\": {" SB_ID ","
    "  \"path\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"absolute path "
    "inside the sandbox\"},"
    "  \"content\": {\"type\": \"string\", \"description\": \"the file's contents\"},"
    "  \"encoding\": {\"type\": \"string\", \"enum\": [\"utf8\", \"base64\"], "
    "\"description\": \"of content (default utf8)\"},"
    "  \"mode\": {\"type\": \"string\", \"description\": \"octal, e.g. 0755 (default "
    "0644)\"}}}},"
    " {\"name\": \"list_files\", \"title\": \"List a directory of a sandbox\","
    " \"description\": \"A directory's entries: name, type, size, mode, mtime.\","
    " \"annotations\": {\"readOnlyHint\": true},"
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\"], \"properties\": {" SB_ID ","
    "  \"path\": {\"type\": \"string\", \"minLength\": 1, \"description\": \"absolute path "
    "inside the sandbox (default /workspace)\"},"
    "  \"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 10000, "
    "\"description\": \"entries in one page (default 1000)\"},"
    "  \"cursor\": {\"type\": \"string\", \"description\": \"next_cursor of the page "
    "before\"}}}},"
    " {\"name\": \"process_start\", \"title\": \"Start a background process\","
    " \"description\": \"Start a command in the background in a sandbox (a server, a "
    "watcher, a long build) and return its process id at once. process_output reads what it "
    "printed, process_signal stops it. A string runs as /bin/sh -c STRING, an array as "
    "argv.\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\", \"cmd\"], \"properties\": {" SB_ID ","
    "  \"cmd\": {\"type\": [\"string\", \"array\"], \"items\": {\"type\": \"string\"}, "
    "\"minItems\": 1, \"minLength\": 1, \"description\": \"a shell line, or argv\"},"
    "  \"cwd\": {\"type\": \"string\", \"description\": \"absolute directory inside\"},"
    "  \"stdin\": {\"type\": \"string\", \"description\": \"the command's whole standard "
    "input\"},"
    "  \"env\": " STR_MAP ", \"description\": \"more environment variables\"}}}},"
    " {\"name\": \"process_list\", \"title\": \"List background processes\","
    " \"description\": \"A sandbox's background processes: id, command, running or its exit, "
    "bytes of output.\","
    " \"annotations\": {\"readOnlyHint\": true},"
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\"], \"properties\": {" SB_ID "}}},"
    " {\"name\": \"process_output\", \"title\": \"Read a background process's output\","
    " \"description\": \"What a background process printed from byte offset on (stdout and "
    "stderr, the last 1 MiB kept), whether it still runs, its exit once ended, and "
    "next_offset: pass it as offset to read on from there.\","
    " \"annotations\": {\"readOnlyHint\": true},"
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\", \"process_id\"], \"properties\": {" SB_ID "," PROC_ID ","
    "  \"offset\": {\"type\": \"integer\", \"minimum\": 0, \"description\": \"the byte "
    "of output to start at (default 0)\"}}}},"
    " {\"name\": \"process_signal\", \"title\": \"Signal a background process\","
    " \"description\": \"Send a signal to a background process's process group (default "
    "TERM; KILL to force it).\","
    " \"annotations\": {\"destructiveHint\": true},"
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\", \"process_id\"], \"properties\": {" SB_ID "," PROC_ID ","
    "  \"signal\": {\"type\": \"string\", \"enum\": [\"TERM\", \"KILL\", \"INT\", "
    "\"HUP\", \"QUIT\", \"USR1\", \"USR2\", \"STOP\", \"CONT\"], \"description\": "
    "\"the signal (default TERM)\"}}}},"
    " {\"name\": \"sandbox_pause\", \"title\": \"Pause a sandbox\","
    " \"description\": \"Freeze every process of a sandbox (memory kept, its time to live "
    "stopped) until sandbox_resume; commands and file tools are refused meanwhile.\","
    " \"annotations\": {\"idempotentHint\": false},"
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\"], \"properties\": {" SB_ID "}}},"
    " {\"name\": \"sandbox_resume\", \"title\": \"Resume a sandbox\","
    " \"description\": \"Let a paused sandbox's processes run again.\","
    " \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": "
    "[\"sandbox_id\"], \"properties\": {" SB_ID "}}}]";

static json_t *tools;
static pthread_once_t tools_once = PTHREAD_ONCE_INIT;

static void tools_load(void)
{
	json_t *a = json_loads(tools_json, 0, NULL);
	tools = a ? json_pack("{s:o}", "tools", a) : NULL;
}

json_t *aj_mcp_tools(void)
{
	pthread_once(&tools_once, tools_load);
	return tools;
}

const char *aj_mcp_negotiate(const char *asked)
{
	static const char *const known[] = {AJ_MCP_VERSION, "2025-03-26", "2024-11-05"};
	for (size_t i = 0; asked && i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(asked, known[i]))
			return known[i];
	return AJ_MCP_VERSION;
}

static int bad(aj_mcp_msg *m, int code, const char *why)
{
	m->code = code;
	snprintf(m->why, sizeof(m->why), "%s", why);
	return -1;
}

int aj_mcp_parse(const char *line, size_t len, aj_mcp_msg *m)
{
	memset(m, 0, sizeof(*m));
	json_error_t je;
	m->root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (!m->root) {
		m->code = AJ_MCP_PARSE_ERROR;
		snprintf(m->why, sizeof(m->why), "parse error: %s (at byte %d)", je.text,
			 je.position);
		return -1;
	}
	if (json_is_array(m->root))
		return bad(m, AJ_MCP_INVALID_REQUEST,
			   "a batch (JSON array): MCP " AJ_MCP_VERSION " has none; send one "
			   "message per line");
	if (!json_is_object(m->root))
		return bad(m, AJ_MCP_INVALID_REQUEST, "a message is a JSON object");
	json_t *id = json_object_get(m->root, "id");
	if (id && !json_is_string(id) && !json_is_integer(id))
		return bad(m, AJ_MCP_INVALID_REQUEST, "\"id\" must be a string or an integer");
	json_t *method = json_object_get(m->root, "method");
	if (method)
		m->id = id; /* a request's: its error answers it */
	if (!json_is_string(json_object_get(m->root, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(m->root, "jsonrpc")), "2.0"))
		return bad(m, AJ_MCP_INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\"");
	if (!method) {
		bool answer =
		    json_object_get(m->root, "result") || json_object_get(m->root, "error");
		if (answer && id)
			return 0; /* a response of the client's: nothing we asked for */
		return bad(m, AJ_MCP_INVALID_REQUEST, "no \"method\"");
	}
	if (!json_is_string(method))
		return bad(m, AJ_MCP_INVALID_REQUEST, "\"method\" must be a string");
	m->params = json_object_get(m->root, "params");
	if (m->params && !json_is_object(m->params))
		return bad(m, AJ_MCP_INVALID_PARAMS, "\"params\" must be an object");
	m->method = json_string_value(method);
	return 0;
}

void aj_mcp_msg_free(aj_mcp_msg *m)
{
	json_decref(m->root);
	m->root = NULL;
}

static bool type_is(const char *t, const json_t *v)
{
	if (!strcmp(t, "string"))
		return json_is_string(v);
	if (!strcmp(t, "integer"))
		return json_is_integer(v);
	if (!strcmp(t, "number"))
		return json_is_number(v);
	if (!strcmp(t, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(t, "object"))
		return json_is_object(v);
	if (!strcmp(t, "array"))
		return json_is_array(v);
	if (!strcmp(t, "null"))
		return json_is_null(v);
	return false;
}

static int check_type(const json_t *schema, const json_t *v, const char *where, char *why,
		      size_t size)
{
	const json_t *t = json_object_get(schema, "type");
	bool ok = !t;
	char names[128] = "";
	if (json_is_string(t)) {
		ok = type_is(json_string_value(t), v);
		snprintf(names, sizeof(names), "%s", json_string_value(t));
	}
	size_t i;
	const json_t *e;
	json_array_foreach(t, i, e)
	{
		ok |= json_is_string(e) && type_is(json_string_value(e), v);
		size_t l = strlen(names);
		snprintf(names + l, sizeof(names) - l, "%s%s", i ? " or " : "",
			 json_string_value(e) ? json_string_value(e) : "?");
	}
	if (!ok)
		snprintf(why, size, "%s: must be of type %s", where, names);
	return ok ? 0 : -1;
}

static int check_value(const json_t *schema, const json_t *v, const char *where, char *why,
		       size_t size)
{
	const json_t *en = json_object_get(schema, "enum");
	if (en) {
		bool found = false;
		size_t i;
		const json_t *e;
		json_array_foreach(en, i, e) found |= json_equal((json_t *)e, (json_t *)v);
		if (!found) {
			char *all = json_dumps(en, JSON_COMPACT);
			snprintf(why, size, "%s: must be one of %s", where, all ? all : "the enum");
			free(all);
			return -1;
		}
	}
	const json_t *min = json_object_get(schema, "minimum");
	const json_t *max = json_object_get(schema, "maximum");
	if (json_is_number(v) && min && json_number_value(v) < json_number_value(min)) {
		snprintf(why, size, "%s: must be at least %g", where, json_number_value(min));
		return -1;
	}
	if (json_is_number(v) && max && json_number_value(v) > json_number_value(max)) {
		snprintf(why, size, "%s: must be at most %g", where, json_number_value(max));
		return -1;
	}
	const json_t *ml = json_object_get(schema, "minLength");
	if (json_is_string(v) && ml && (json_int_t)json_string_length(v) < json_integer_value(ml)) {
		snprintf(why, size, "%s: must not be empty", where);
		return -1;
	}
	const json_t *mi = json_object_get(schema, "minItems");
	if (json_is_array(v) && mi && (json_int_t)json_array_size(v) < json_integer_value(mi)) {
		snprintf(why, size, "%s: must have at least %lld item(s)", where,
			 (long long)json_integer_value(mi));
		return -1;
	}
	return 0;
}

static int check_object(const json_t *schema, const json_t *v, const char *where, char *why,
			size_t size)
{
	const json_t *props = json_object_get(schema, "properties");
	const json_t *extra = json_object_get(schema, "additionalProperties");
	char at[256];
	const char *k;
	json_t *x;
	json_object_foreach((json_t *)v, k, x)
	{
		const json_t *s = json_object_get(props, k);
		snprintf(at, sizeof(at), "%s.%s", where, k);
		if (!s && json_is_false(extra)) {
			char known[512] = "";
			const char *pk;
			json_t *pv;
			json_object_foreach((json_t *)props, pk, pv)
			{
				size_t l = strlen(known);
				snprintf(known + l, sizeof(known) - l, "%s%s", l ? ", " : "", pk);
			}
			snprintf(why, size, "%s: unknown property '%s' (known: %s)", where, k,
				 known[0] ? known : "none");
			return -1;
		}
		if (!s && json_is_object(extra))
			s = extra;
		if (s && aj_mcp_check(s, x, at, why, size) < 0)
			return -1;
	}
	size_t i;
	const json_t *r;
	json_array_foreach(json_object_get(schema, "required"), i, r)
	{
		if (json_is_string(r) && !json_object_get(v, json_string_value(r))) {
			snprintf(why, size, "%s: '%s' is required", where, json_string_value(r));
			return -1;
		}
	}
	return 0;
}

int aj_mcp_check(const json_t *schema, const json_t *v, const char *where, char *why, size_t size)
{
	if (check_type(schema, v, where, why, size) < 0 ||
	    check_value(schema, v, where, why, size) < 0)
		return -1;
	if (json_is_object(v))
		return check_object(schema, v, where, why, size);
	const json_t *items = json_object_get(schema, "items");
	if (json_is_array(v) && items) {
		size_t i;
		const json_t *e;
		char at[256];
		json_array_foreach(v, i, e)
		{
			snprintf(at, sizeof(at), "%s[%zu]", where, i);
			if (aj_mcp_check(items, e, at, why, size) < 0)
				return -1;
		}
	}
	return 0;
}

int aj_mcp_check_call(json_t *params, const char **name, json_t **args, char *why, size_t size)
{
	json_t *all = json_object_get(aj_mcp_tools(), "tools");
	const char *n = json_string_value(json_object_get(params, "name"));
	if (!n) {
		snprintf(why, size, "tools/call: \"name\" (a string) is required");
		return AJ_MCP_INVALID_PARAMS;
	}
	json_t *tool = NULL, *t;
	size_t i;
	json_array_foreach(all, i, t)
	{
		if (!strcmp(json_string_value(json_object_get(t, "name")), n))
			tool = t;
	}
	if (!tool) {
		snprintf(why, size, "unknown tool '%.64s' (tools/list names them)", n);
		return AJ_MCP_INVALID_PARAMS;
	}
	json_t *a = json_object_get(params, "arguments");
	if (a && !json_is_object(a)) {
		snprintf(why, size, "%s: \"arguments\" must be an object", n);
		return AJ_MCP_INVALID_PARAMS;
	}
	if (!a) {
		a = json_object();
		if (!a || json_object_set_new(params, "arguments", a) < 0) {
			snprintf(why, size, "out of memory");
			return AJ_MCP_INTERNAL_ERROR;
		}
	}
	char where[96];
	snprintf(where, sizeof(where), "%s: arguments", n);
	if (aj_mcp_check(json_object_get(tool, "inputSchema"), a, where, why, size) < 0)
		return AJ_MCP_INVALID_PARAMS;
	*name = json_string_value(json_object_get(tool, "name"));
	*args = a;
	return 0;
}

static char *dump(json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
	json_decref(o);
	return s;
}

char *aj_mcp_result(const json_t *id, json_t *result)
{
	json_t *o = json_object();
	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set_new(o, "id", id ? json_deep_copy(id) : json_null());
	json_object_set_new(o, "result", result ? result : json_object());
	return dump(o);
}

char *aj_mcp_error(const json_t *id, int code, const char *message)
{
	json_t *o = json_object();
	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set_new(o, "id", id ? json_deep_copy(id) : json_null());
	json_t *m = json_string(message);
	json_t *e = json_object();
	json_object_set_new(e, "code", json_integer(code));
	json_object_set_new(e, "message", m ? m : json_string("error (its message is not UTF-8)"));
	json_object_set_new(o, "error", e);
	return dump(o);
}

char *aj_mcp_notification(const char *method, json_t *params)
{
	json_t *o = json_object();
	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set_new(o, "method", json_string(method));
	json_object_set_new(o, "params", params ? params : json_object());
	return dump(o);
}
