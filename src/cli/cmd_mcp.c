/* SPDX-License-Identifier: MIT */
/* agentjail mcp: a Model Context Protocol server on stdio (JSON-RPC 2.0, one
 * message per line) whose tools use the sandboxes of `agentjail serve`
 * (svc_client.c: its unix socket, or --url with a token). The messages and
 * the tools' schemas are mcp_proto.c's; docs/mcp.md says what each tool
 * does. Requests are answered one at a time, in order. */
#include <errno.h>
#include <jansson.h>
#include <libwebsockets.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "daemon.h"
#include "mcp_proto.h"
#include "request.h"
#include "svc_client.h"
#include "util.h"

static const char mcp_usage[] =
    "Usage: agentjail mcp [--socket PATH | --url URL [--token-file F]]\n"
    "\n"
    "A Model Context Protocol server on stdio for agent hosts (Claude Desktop,\n"
    "Claude Code, any MCP client): JSON-RPC 2.0, one message per line, MCP\n"
    "revision " AJ_MCP_VERSION " (also 2025-03-26, 2024-11-05). Its tools use the\n"
    "sandboxes of `agentjail serve`:\n"
    "  sandbox_create, sandbox_list, sandbox_kill, sandbox_pause, sandbox_resume,\n"
    "  run_command (output streamed as progress notifications), process_start,\n"
    "  process_list, process_output, process_signal (background processes),\n"
    "  read_file, write_file, list_files\n"
    "\n"
    "It needs the service: without one at the socket (or --url) it exits with\n"
    "125 at start, saying so. Logs go to stderr; stdout carries only messages.\n"
    "\n"
    "  --socket PATH       the service's unix socket (default $AGENTJAIL_SOCKET or\n"
    "                      " AJ_DAEMON_RUN_DIR "/agentjail.sock)\n"
    "  --url URL           the service over TCP (serve --listen), with\n"
    "  --token-file F      the bearer token in F\n"
    "\n"
    "Docs: docs/mcp.md (tools, schemas, host configuration).\n";

/* One stream of a command's output, kept for the result. */
#define OUT_MAX (1u << 20)
/* A file read, a listing page: at most this much of the answer. */
#define BODY_MAX (4u << 20)
#define RUN_TIMEOUT 120
/* tools_call's *code for a request not to be answered (cancelled) */
#define NO_ANSWER 1

/* stdin: lines of messages in buf[0..len) (NUL after them); the line
 * being handled is buf[0..busy). */
static struct input {
	char *buf;
	size_t len, cap, busy;
	bool skipping; /* the rest of a line that was refused */
	bool eof;
} inp;

/* One read into the room there is (no realloc: a line being handled
 * points into buf). */
static void fill(void)
{
	if (inp.eof || inp.len + 1 >= inp.cap)
		return;
	ssize_t k = read(STDIN_FILENO, inp.buf + inp.len, inp.cap - inp.len - 1);
	if (k < 0 && errno == EINTR)
		return;
	if (k <= 0) {
		inp.eof = true;
		return;
	}
	inp.len += (size_t)k;
	inp.buf[inp.len] = '\0';
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("agentjail mcp: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* One message and its newline on stdout; false when stdout is gone. */
static bool send_line(char *line)
{
	if (!line) {
		logf_("out of memory: a message was not sent");
		return true;
	}
	bool ok = fputs(line, stdout) >= 0 && fputc('\n', stdout) != EOF && fflush(stdout) == 0;
	free(line);
	return ok;
}

/* s as a valid UTF-8 JSON string: bytes that are not (and NUL) become
 * U+FFFD. */
static json_t *utf8_string(const char *s, size_t len)
{
	aj_buf b = {0};
	while (len) {
		size_t k = aj_utf8_prefix((const unsigned char *)s, len);
		if (k && !aj_buf_write((char *)s, 1, k, &b))
			break;
		s += k, len -= k;
		if (len) {
			aj_buf_write("\xef\xbf\xbd", 1, 3, &b);
			s++, len--;
		}
	}
	json_t *o = json_stringn(b.data ? b.data : "", b.len);
	free(b.data);
	return o;
}

/* The result of a tool: a text block, structuredContent, isError. */
static json_t *tool_result(json_t *text, json_t *structured, bool is_error)
{
	json_t *r = json_object(), *item = json_object(), *content = json_array();
	json_object_set_new(item, "type", json_string("text"));
	json_object_set_new(item, "text", text ? text : json_string(""));
	json_array_append_new(content, item);
	json_object_set_new(r, "content", content);
	if (structured)
		json_object_set_new(r, "structuredContent", structured);
	json_object_set_new(r, "isError", json_boolean(is_error));
	return r;
}

static json_t *tool_error(const char *msg)
{
	return tool_result(utf8_string(msg, strlen(msg)), NULL, true);
}

/* The failure of a request (unreachable, or the service's JSON error). */
static json_t *svc_failure(long status, const aj_buf *b, const char *why)
{
	char msg[1024];
	if (status < 0)
		snprintf(msg, sizeof(msg), "%s", why[0] ? why : "the request failed");
	else
		aj_svc_error_message(b, status, msg, sizeof(msg));
	return tool_error(msg);
}

/* %-escape of a path segment or query value */
static void escape(const char *s, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (; *s && o + 4 < size; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~/", c)) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

/* /v1/sandboxes/ID + suffix, the id escaped (a '/' too) */
static void sb_path(json_t *args, const char *suffix, char *out, size_t size)
{
	char id[256];
	escape(json_string_value(json_object_get(args, "sandbox_id")), id, sizeof(id));
	for (char *p = id; (p = strchr(p, '/'));)
		*p = '_';
	snprintf(out, size, "/v1/sandboxes/%s%s", id, suffix);
}

/* A request whose JSON answer is wanted: the answer (new reference) when
 * the status is ok, else NULL with *fail set to the tool's error. */
static json_t *call_json(const aj_svc *c, const char *method, const char *path, const char *body,
			 long ok, json_t **fail)
{
	aj_buf b = {0};
	char why[512] = "";
	aj_svc_req q = {.method = method,
			.path = path,
			.body = body,
			.out = &b,
			.why = why,
			.why_size = sizeof(why)};
	long st = aj_svc_request(c, &q);
	json_t *o = st == ok && b.data ? json_loads(b.data, 0, NULL) : NULL;
	if (!o)
		*fail = st == ok ? tool_error("the service's answer is not JSON")
				 : svc_failure(st, &b, why);
	free(b.data);
	return o;
}

static json_t *t_sandbox_create(const aj_svc *c, json_t *args)
{
	char *body = json_dumps(args, JSON_COMPACT);
	json_t *fail = NULL;
	json_t *o = body ? call_json(c, "POST", "/v1/sandboxes", body, 201, &fail) : NULL;
	free(body);
	if (!o)
		return fail ? fail : tool_error("out of memory");
	const char *id = json_string_value(json_object_get(o, "id"));
	const char *exp = json_string_value(json_object_get(o, "expires_at"));
	char *text = aj_asprintf("created sandbox %s (expires %s); pass sandbox_id \"%s\" to "
				 "run_command and the file tools",
				 id ? id : "?", exp ? exp : "never", id ? id : "?");
	json_t *r = tool_result(json_string(text ? text : ""), o, false);
	free(text);
	return r;
}

static json_t *t_sandbox_list(const aj_svc *c, json_t *args)
{
	json_t *fail = NULL;
	json_t *o = call_json(c, "GET", "/v1/sandboxes", NULL, 200, &fail);
	if (!o)
		return fail;
	aj_buf b = {0};
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(o, "sandboxes"), i, s)
	{
		const char *exp = json_string_value(json_object_get(s, "expires_at"));
		const char *ws = json_string_value(json_object_get(s, "workspace"));
		const char *st = json_string_value(json_object_get(s, "state"));
		char line[1024];
		int n = snprintf(line, sizeof(line), "%s %s expires %s workspace %s\n",
				 json_string_value(json_object_get(s, "id")), st ? st : "?",
				 exp ? exp : "never", ws ? ws : "-");
		aj_buf_write(line, 1, n > 0 ? (size_t)n : 0, &b);
	}
	json_t *text = b.data ? utf8_string(b.data, b.len) : json_string("no sandboxes");
	free(b.data);
	return tool_result(text, o, false);
}

static json_t *t_sandbox_kill(const aj_svc *c, json_t *args)
{
	char path[512];
	sb_path(args, "", path, sizeof(path));
	json_t *fail = NULL;
	json_t *o = call_json(c, "DELETE", path, NULL, 200, &fail);
	if (!o)
		return fail;
	char text[512];
	snprintf(text, sizeof(text), "destroyed sandbox %s",
		 json_string_value(json_object_get(args, "sandbox_id")));
	return tool_result(utf8_string(text, strlen(text)), o, false);
}

/* A command's NDJSON events, as they come. */
typedef struct run {
	aj_buf line, out, err, error;
	bool out_cut, err_cut;
	json_t *exit;  /* the exit event */
	json_t *token; /* the request's progressToken, or NULL */
	long long progress;
	bool gone;	  /* stdout closed */
	const json_t *id; /* the request's */
	size_t scanned;	  /* of stdin's lines, looking for its cancellation */
	bool cancelled;
} run;

/* A notifications/cancelled of the request r runs? */
static bool cancels(const run *r, const char *line, size_t len)
{
	aj_mcp_msg m;
	bool yes = aj_mcp_parse(line, len, &m) == 0 && m.method && !m.id &&
		   !strcmp(m.method, "notifications/cancelled") &&
		   json_equal(json_object_get(m.params, "requestId"), (json_t *)r->id);
	aj_mcp_msg_free(&m);
	return yes;
}

/* While a command runs: stdin's new lines, for its cancellation (the
 * others wait their turn). */
static int watch(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	run *r = ud;
	struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
	if (!inp.eof && poll(&p, 1, 0) > 0)
		fill();
	if (r->scanned < inp.busy)
		r->scanned = inp.busy;
	while (r->scanned < inp.len) {
		const char *at = inp.buf + r->scanned;
		const char *nl = memchr(at, '\n', inp.len - r->scanned);
		if (!nl)
			break;
		size_t n = (size_t)(nl - at);
		if (memmem(at, n, "notifications/cancelled", 23) && cancels(r, at, n)) {
			r->cancelled = true;
			return 1; /* the service kills a command whose client has gone */
		}
		r->scanned += n + 1;
	}
	return 0;
}

static void keep(aj_buf *b, bool *cut, const char *p, size_t n)
{
	size_t room = b->len < OUT_MAX ? OUT_MAX - b->len : 0;
	if (n > room)
		*cut = true;
	if (n && room)
		aj_buf_write((char *)p, 1, n < room ? n : room, b);
}

static void progress(run *r, const char *p, size_t n)
{
	if (!r->token || !n || r->gone)
		return;
	r->progress += (long long)n;
	json_t *params = json_object();
	json_object_set_new(params, "progressToken", json_deep_copy(r->token));
	json_object_set_new(params, "progress", json_integer(r->progress));
	json_object_set_new(params, "message", utf8_string(p, n));
	if (!send_line(aj_mcp_notification("notifications/progress", params)))
		r->gone = true;
}

static void on_event(void *ud, const char *line, size_t len)
{
	run *r = ud;
	json_t *o = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	const char *type = json_string_value(json_object_get(o, "type"));
	if (!type) {
		aj_buf_write((char *)line, 1, len, &r->error);
		json_decref(o);
		return;
	}
	bool is_out = !strcmp(type, "stdout"), is_err = !strcmp(type, "stderr");
	if (is_out || is_err) {
		json_t *data = json_object_get(o, "data");
		const char *b64 = json_string_value(json_object_get(o, "data_b64"));
		unsigned char *raw = NULL;
		size_t n = 0;
		const char *p = json_string_value(data);
		if (p) {
			n = json_string_length(data);
		} else if (b64 && (raw = malloc(strlen(b64)))) {
			if (aj_b64_decode(b64, strlen(b64), raw, strlen(b64), &n) < 0)
				n = 0;
			p = (const char *)raw;
		}
		if (p) {
			keep(is_out ? &r->out : &r->err, is_out ? &r->out_cut : &r->err_cut, p, n);
			progress(r, p, n);
		}
		free(raw);
	} else if (!strcmp(type, "exit")) {
		json_decref(r->exit);
		r->exit = json_incref(o);
	}
	json_decref(o);
}

static size_t on_stream(char *p, size_t sz, size_t n, void *ud)
{
	run *r = ud;
	/* a longer line is not an event the service writes */
	if (!aj_ndjson_feed(&r->line, p, sz * n, 2 * OUT_MAX + 4096, on_event, r))
		return 0;
	return r->gone ? 0 : sz * n;
}

/* The result of a command that ran to its exit event. */
static json_t *run_result(run *r)
{
	json_t *s = json_object();
	const char *keys[] = {"exit_code",  "signal",	   "timed_out",
			      "oom_killed", "duration_ms", "error"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(r->exit, keys[i]);
		if (v)
			json_object_set(s, keys[i], v);
	}
	json_object_set_new(s, "stdout", utf8_string(r->out.data ? r->out.data : "", r->out.len));
	json_object_set_new(s, "stderr", utf8_string(r->err.data ? r->err.data : "", r->err.len));
	json_object_set_new(s, "stdout_truncated", json_boolean(r->out_cut));
	json_object_set_new(s, "stderr_truncated", json_boolean(r->err_cut));
	long long code = json_integer_value(json_object_get(r->exit, "exit_code"));
	const char *m =
	    json_string_value(json_object_get(json_object_get(r->exit, "error"), "message"));
	char *head =
	    aj_asprintf("exit code %lld%s%s%s", code, m ? ": " : "", m ? m : "",
			json_is_true(json_object_get(r->exit, "timed_out"))    ? " (timed out)"
			: json_is_true(json_object_get(r->exit, "oom_killed")) ? " (out of memory)"
									       : "");
	char *text = aj_asprintf(
	    "%s\n--- stdout%s\n%s\n--- stderr%s\n%s", head ? head : "",
	    r->out_cut ? " (first 1 MiB)" : "", json_string_value(json_object_get(s, "stdout")),
	    r->err_cut ? " (first 1 MiB)" : "", json_string_value(json_object_get(s, "stderr")));
	free(head);
	json_t *res = tool_result(text ? json_string(text) : NULL, s, m != NULL);
	free(text);
	return res;
}

static json_t *t_run_command(const aj_svc *c, json_t *args, json_t *token, const json_t *id,
			     int *code)
{
	json_t *body = json_object();
	const char *keys[] = {"cmd", "cwd", "stdin", "env"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(keys); i++)
		if (json_object_get(args, keys[i]))
			json_object_set(body, keys[i], json_object_get(args, keys[i]));
	json_t *t = json_object_get(args, "timeout");
	json_object_set_new(body, "timeout",
			    t ? json_real(json_number_value(t)) : json_integer(RUN_TIMEOUT));
	char *b = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	char path[512], why[512] = "";
	sb_path(args, "/exec", path, sizeof(path));
	run r = {.token = token, .id = id};
	aj_svc_req q = {.method = "POST",
			.path = path,
			.body = b,
			.sink = on_stream,
			.ud = &r,
			.watch = watch,
			.watch_ud = &r,
			.why = why,
			.why_size = sizeof(why)};
	long st = b ? aj_svc_request(c, &q) : -1;
	free(b);
	aj_ndjson_end(&r.line, on_event, &r);
	json_t *res;
	if (r.cancelled) {
		logf_("a run_command was cancelled: the command is killed, not answered");
		*code = NO_ANSWER;
		res = NULL;
	} else if (st == 200 && r.exit)
		res = run_result(&r);
	else if (st == 200 || (st < 0 && !why[0]))
		res = tool_error("the service ended the command's stream early");
	else
		res = svc_failure(st, &r.error, why);
	json_decref(r.exit);
	free(r.line.data), free(r.out.data), free(r.err.data), free(r.error.data);
	return res;
}

/* run_code: a cell's events, as they come (stdout and stderr as in
 * run_command, with progress notifications; results and images kept,
 * bounded). */
typedef struct coderun {
	run base; /* first: watch(), keep(), progress() take it */
	json_t *results, *images, *error, *end;
	size_t kept; /* bytes of results and images */
} coderun;

#define CODE_KEEP_MAX (8u << 20)

static void code_event(void *ud, const char *line, size_t len)
{
	coderun *cr = ud;
	run *r = &cr->base;
	json_t *o = json_loadb(line, len, 0, NULL);
	const char *type = json_string_value(json_object_get(o, "type"));
	const char *data = json_string_value(json_object_get(o, "data"));
	if (!type) {
		aj_buf_write((char *)line, 1, len, &r->error);
	} else if ((!strcmp(type, "stdout") || !strcmp(type, "stderr")) && data) {
		bool out = type[3] == 'o';
		keep(out ? &r->out : &r->err, out ? &r->out_cut : &r->err_cut, data, strlen(data));
		progress(r, data, strlen(data));
	} else if (!strcmp(type, "display") || !strcmp(type, "result")) {
		json_t *d = json_object_get(o, "data");
		static const char *const imgs[] = {"image/png", "image/jpeg"};
		for (size_t i = 0; i < AJ_ARRAY_SIZE(imgs); i++) {
			const char *v = json_string_value(json_object_get(d, imgs[i]));
			if (v && cr->kept + strlen(v) <= CODE_KEEP_MAX) {
				cr->kept += strlen(v);
				json_array_append_new(cr->images,
						      json_pack("{s:s, s:s, s:s}", "type", "image",
								"data", v, "mimeType", imgs[i]));
				break;
			}
		}
		json_t *keepd = json_object(); /* the text formats, bounded */
		static const char *const texts[] = {"text/plain", "text/html", "text/markdown",
						    "image/svg+xml"};
		for (size_t i = 0; i < AJ_ARRAY_SIZE(texts); i++) {
			const char *v = json_string_value(json_object_get(d, texts[i]));
			if (v && cr->kept + strlen(v) <= CODE_KEEP_MAX) {
				cr->kept += strlen(v);
				json_object_set_new(keepd, texts[i], json_string(v));
			}
		}
		json_array_append_new(cr->results,
				      json_pack("{s:s, s:o}", "type", type, "data", keepd));
	} else if (!strcmp(type, "error")) {
		json_decref(cr->error);
		cr->error = json_incref(o);
	} else if (!strcmp(type, "end")) {
		json_decref(cr->end);
		cr->end = json_incref(o);
	}
	json_decref(o);
}

static size_t code_stream(char *p, size_t sz, size_t n, void *ud)
{
	coderun *cr = ud;
	/* a longer line is not an event the service writes */
	if (!aj_ndjson_feed(&cr->base.line, p, sz * n, 64u << 20, code_event, cr))
		return 0;
	return cr->base.gone ? 0 : sz * n;
}

/* Jupyter's traceback without its terminal colours. */
static char *plain_traceback(json_t *tb)
{
	aj_buf b = {0};
	size_t i;
	json_t *l;
	json_array_foreach(tb, i, l)
	{
		const char *s = json_string_value(l);
		for (; s && *s; s++) {
			if (s[0] == '\x1b' && s[1] == '[') { /* ESC [ ... m */
				const char *m = s + 2;
				while (*m && ((*m >= '0' && *m <= '9') || *m == ';'))
					m++;
				if (*m == 'm') {
					s = m;
					continue;
				}
			}
			aj_buf_write((char *)s, 1, 1, &b);
		}
		aj_buf_write("\n", 1, 1, &b);
	}
	return b.data ? b.data : strdup("");
}

static json_t *code_result(coderun *cr)
{
	run *r = &cr->base;
	json_t *s = json_object(), *e = cr->end;
	json_object_set_new(s, "stdout", utf8_string(r->out.data ? r->out.data : "", r->out.len));
	json_object_set_new(s, "stderr", utf8_string(r->err.data ? r->err.data : "", r->err.len));
	json_object_set(s, "results", cr->results);
	json_object_set_new(s, "images", json_integer((json_int_t)json_array_size(cr->images)));
	const char *keys[] = {"execution_count", "timed_out",	"oom_killed",
			      "restarted",	 "duration_ms", "context"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(keys); i++)
		if (json_object_get(e, keys[i]))
			json_object_set(s, keys[i], json_object_get(e, keys[i]));
	_cleanup_free_ char *tb =
	    cr->error ? plain_traceback(json_object_get(cr->error, "traceback")) : NULL;
	if (cr->error)
		json_object_set_new(
		    s, "error",
		    json_pack("{s:O, s:O, s:s}", "name", json_object_get(cr->error, "name"),
			      "value", json_object_get(cr->error, "value"), "traceback", tb));
	aj_buf t = {0};
	if (r->out.len)
		aj_buf_write(r->out.data, 1, r->out.len, &t);
	if (r->err.len) {
		aj_buf_write("--- stderr\n", 1, 11, &t);
		aj_buf_write(r->err.data, 1, r->err.len, &t);
	}
	size_t i;
	json_t *x;
	json_array_foreach(cr->results, i, x)
	{
		const char *txt =
		    json_string_value(json_object_get(json_object_get(x, "data"), "text/plain"));
		if (txt && strncmp(txt, "<Figure", 7)) {
			aj_buf_write((char *)txt, 1, strlen(txt), &t);
			aj_buf_write("\n", 1, 1, &t);
		}
	}
	if (cr->error) {
		const char *n = json_string_value(json_object_get(cr->error, "name"));
		const char *v = json_string_value(json_object_get(cr->error, "value"));
		char *m = tb && *tb ? aj_asprintf("%s", tb)
				    : aj_asprintf("%s: %s\n", n ? n : "", v ? v : "");
		if (m)
			aj_buf_write(m, 1, strlen(m), &t);
		free(m);
	}
	json_t *res = tool_result(utf8_string(t.data ? t.data : "", t.len), s, cr->error != NULL);
	free(t.data);
	json_array_extend(json_object_get(res, "content"), cr->images);
	return res;
}

static json_t *t_run_code(const aj_svc *c, json_t *args, json_t *token, const json_t *id, int *code)
{
	json_t *body =
	    json_pack("{s:O, s:s}", "code", json_object_get(args, "code"), "language", "python");
	if (json_object_get(args, "context"))
		json_object_set(body, "context", json_object_get(args, "context"));
	json_t *t = json_object_get(args, "timeout");
	double secs = t ? json_number_value(t) : RUN_TIMEOUT;
	json_object_set_new(body, "timeout", json_real(secs > 0 ? secs : 86400));
	char *b = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	char path[512], why[512] = "";
	sb_path(args, "/code", path, sizeof(path));
	coderun cr = {
	    .base = {.token = token, .id = id}, .results = json_array(), .images = json_array()};
	aj_svc_req q = {.method = "POST",
			.path = path,
			.body = b,
			.sink = code_stream,
			.ud = &cr,
			.watch = watch,
			.watch_ud = &cr.base,
			.why = why,
			.why_size = sizeof(why)};
	long st = b ? aj_svc_request(c, &q) : -1;
	free(b);
	aj_ndjson_end(&cr.base.line, code_event, &cr);
	json_t *res;
	if (cr.base.cancelled) {
		logf_("a run_code was cancelled: the run is interrupted, not answered");
		*code = NO_ANSWER;
		res = NULL;
	} else if (st == 200 && cr.end)
		res = code_result(&cr);
	else if (st == 200 || (st < 0 && !why[0]))
		res = tool_error("the service ended the run's stream early");
	else
		res = svc_failure(st, &cr.base.error, why);
	json_decref(cr.results), json_decref(cr.images), json_decref(cr.error), json_decref(cr.end);
	free(cr.base.line.data), free(cr.base.out.data), free(cr.base.err.data);
	free(cr.base.error.data);
	return res;
}

/* Collects at most BODY_MAX bytes (then fails the transfer). */
static size_t capped(char *p, size_t sz, size_t n, void *ud)
{
	aj_buf *b = ud;
	if (b->len + sz * n > BODY_MAX)
		return 0;
	return aj_buf_write(p, sz, n, b);
}

/* GET of the files API: 0 with the body and its Content-Type in b and
 * ctype, else the tool's error in *fail. */
static int files_get(const aj_svc *c, json_t *args, const char *query, aj_buf *b, char *ctype,
		     size_t ctype_size, size_t max, json_t **fail)
{
	char esc[8192], path[8704], why[512] = "";
	escape(json_string_value(json_object_get(args, "path")), esc, sizeof(esc));
	char *suffix = aj_asprintf("/files?path=%s%s", esc, query);
	if (!suffix) {
		*fail = tool_error("out of memory");
		return -1;
	}
	sb_path(args, suffix, path, sizeof(path));
	free(suffix);
	aj_svc_req q = {.method = "GET",
			.path = path,
			.sink = capped,
			.ud = b,
			.got_ctype = ctype,
			.got_ctype_size = ctype_size,
			.why = why,
			.why_size = sizeof(why)};
	long st = aj_svc_request(c, &q);
	if (st == 200 && b->len <= max)
		return 0;
	if (st == 200 || (st < 0 && !why[0])) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the file is larger than %zu bytes (max_bytes)", max);
		*fail = tool_error(msg);
	} else {
		*fail = svc_failure(st, b, why);
	}
	return -1;
}

static json_t *t_read_file(const aj_svc *c, json_t *args)
{
	json_t *mb = json_object_get(args, "max_bytes");
	size_t max = mb ? (size_t)json_integer_value(mb) : 1u << 20;
	aj_buf b = {0};
	char ctype[128] = "";
	json_t *fail = NULL;
	if (files_get(c, args, "", &b, ctype, sizeof(ctype), max, &fail) < 0) {
		free(b.data);
		return fail;
	}
	const char *path = json_string_value(json_object_get(args, "path"));
	if (!strncmp(ctype, "application/json", 16)) {
		free(b.data);
		return tool_error("it is a directory (list_files lists it)");
	}
	const char *data = b.data ? b.data : "";
	bool text = aj_utf8_valid(data, b.len);
	json_t *s = json_pack("{s:s,s:I,s:s}", "path", path, "size", (json_int_t)b.len, "encoding",
			      text ? "utf8" : "base64");
	json_t *content;
	if (text) {
		content = json_stringn(data, b.len);
	} else {
		size_t cap = b.len / 3 * 4 + 8;
		char *enc = malloc(cap);
		int n = enc ? lws_b64_encode_string(data, (int)b.len, enc, (int)cap) : -1;
		content = n >= 0 ? json_stringn(enc, (size_t)n) : NULL;
		free(enc);
	}
	free(b.data);
	if (!s || !content) {
		json_decref(s), json_decref(content);
		return tool_error("out of memory");
	}
	json_object_set(s, "content", content);
	return tool_result(content, s, false);
}

static json_t *t_write_file(const aj_svc *c, json_t *args, int *code, char *why, size_t size)
{
	json_t *cv = json_object_get(args, "content");
	const char *enc = json_string_value(json_object_get(args, "encoding"));
	const char *mode = json_string_value(json_object_get(args, "mode"));
	size_t len = json_string_length(cv);
	_cleanup_free_ unsigned char *raw = malloc(len + 1);
	if (!raw)
		return tool_error("out of memory");
	if (enc && !strcmp(enc, "base64")) {
		if (aj_b64_decode(json_string_value(cv), len, raw, len + 1, &len) < 0) {
			*code = AJ_MCP_INVALID_PARAMS;
			snprintf(why, size, "write_file: arguments.content: not base64");
			return NULL;
		}
	} else {
		memcpy(raw, json_string_value(cv), len);
	}
	if (mode && (!*mode || strspn(mode, "01234567") != strlen(mode) || strlen(mode) > 4)) {
		*code = AJ_MCP_INVALID_PARAMS;
		snprintf(why, size, "write_file: arguments.mode: octal digits, e.g. 0644");
		return NULL;
	}
	char esc[8192], path[8800], q_why[512] = "";
	escape(json_string_value(json_object_get(args, "path")), esc, sizeof(esc));
	char *suffix =
	    aj_asprintf("/files?path=%s%s%s", esc, mode ? "&mode=" : "", mode ? mode : "");
	if (!suffix)
		return tool_error("out of memory");
	sb_path(args, suffix, path, sizeof(path));
	free(suffix);
	aj_buf b = {0};
	raw[len] = '\0';
	aj_svc_req q = {.method = "PUT",
			.path = path,
			.body = (const char *)raw,
			.body_len = len,
			.ctype = "application/octet-stream",
			.out = &b,
			.why = q_why,
			.why_size = sizeof(q_why)};
	long st = aj_svc_request(c, &q);
	json_t *o = (st == 200 || st == 201) && b.data ? json_loads(b.data, 0, NULL) : NULL;
	json_t *r;
	if (o) {
		char text[9000];
		snprintf(text, sizeof(text), "wrote %zu bytes to %s", len,
			 json_string_value(json_object_get(args, "path")));
		r = tool_result(utf8_string(text, strlen(text)), o, false);
	} else {
		r = svc_failure(st, &b, q_why);
	}
	free(b.data);
	return r;
}

static json_t *t_list_files(const aj_svc *c, json_t *args)
{
	if (!json_object_get(args, "path"))
		json_object_set_new(args, "path", json_string("/workspace"));
	char query[600] = "", cur[512] = "";
	json_t *limit = json_object_get(args, "limit");
	const char *cursor = json_string_value(json_object_get(args, "cursor"));
	if (limit)
		snprintf(query, sizeof(query), "&limit=%lld", (long long)json_integer_value(limit));
	if (cursor) {
		escape(cursor, cur, sizeof(cur));
		size_t l = strlen(query);
		snprintf(query + l, sizeof(query) - l, "&cursor=%s", cur);
	}
	aj_buf b = {0};
	char ctype[128] = "";
	json_t *fail = NULL;
	if (files_get(c, args, query, &b, ctype, sizeof(ctype), BODY_MAX, &fail) < 0) {
		free(b.data);
		return fail;
	}
	json_t *o = strncmp(ctype, "application/json", 16) ? NULL : json_loads(b.data, 0, NULL);
	free(b.data);
	if (!o)
		return tool_error("not a directory (read_file reads a file)");
	aj_buf t = {0};
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(o, "entries"), i, e)
	{
		const char *name = json_string_value(json_object_get(e, "name"));
		char line[1024];
		int n = snprintf(line, sizeof(line), "%-7s %10lld %s\n",
				 json_string_value(json_object_get(e, "type")),
				 (long long)json_integer_value(json_object_get(e, "size")),
				 name ? name : "(a name that is not UTF-8: see name_b64)");
		aj_buf_write(line, 1, n > 0 ? (size_t)n : 0, &t);
	}
	if (json_is_true(json_object_get(o, "truncated")))
		aj_buf_write("(more: pass next_cursor as cursor)\n", 1, 35, &t);
	json_t *text = t.data ? utf8_string(t.data, t.len) : json_string("(empty directory)");
	free(t.data);
	return tool_result(text, o, false);
}

/* ---- background processes and pause (docs/mcp.md) ---- */

/* /v1/sandboxes/ID/processes/PID + suffix, both escaped as one segment */
static void proc_path(json_t *args, const char *suffix, char *out, size_t size)
{
	char pid[256], tail[512];
	escape(json_string_value(json_object_get(args, "process_id")), pid, sizeof(pid));
	for (char *p = pid; (p = strchr(p, '/'));)
		*p = '_';
	snprintf(tail, sizeof(tail), "/processes/%s%s", pid, suffix);
	sb_path(args, tail, out, size);
}

static json_t *t_process_start(const aj_svc *c, json_t *args)
{
	json_t *body = json_pack("{s:b}", "background", 1);
	const char *keys[] = {"cmd", "cwd", "stdin", "env"};
	for (size_t i = 0; body && i < AJ_ARRAY_SIZE(keys); i++)
		if (json_object_get(args, keys[i]))
			json_object_set(body, keys[i], json_object_get(args, keys[i]));
	char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	char path[512];
	sb_path(args, "/exec", path, sizeof(path));
	json_t *fail = NULL;
	json_t *o = b ? call_json(c, "POST", path, b, 201, &fail) : NULL;
	free(b);
	if (!o)
		return fail ? fail : tool_error("out of memory");
	const char *pid = json_string_value(json_object_get(o, "process"));
	char *text = aj_asprintf("started process %s in the background; process_output reads "
				 "its output, process_signal stops it",
				 pid ? pid : "?");
	json_t *r = tool_result(json_string(text ? text : ""), o, false);
	free(text);
	return r;
}

static json_t *t_process_list(const aj_svc *c, json_t *args)
{
	char path[512];
	sb_path(args, "/processes", path, sizeof(path));
	json_t *fail = NULL;
	json_t *o = call_json(c, "GET", path, NULL, 200, &fail);
	if (!o)
		return fail;
	aj_buf b = {0};
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(o, "processes"), i, p)
	{
		json_t *ex = json_object_get(p, "exit");
		char *cmd = json_dumps(json_object_get(p, "cmd"), JSON_COMPACT | JSON_ENCODE_ANY);
		char state[64] = "running";
		if (!json_is_true(json_object_get(p, "running")))
			snprintf(state, sizeof(state), "exited %lld",
				 (long long)json_integer_value(json_object_get(ex, "exit_code")));
		char *line =
		    aj_asprintf("%s %s, %lld bytes of output: %s\n",
				json_string_value(json_object_get(p, "id")), state,
				(long long)json_integer_value(json_object_get(p, "output_bytes")),
				cmd ? cmd : "?");
		if (line)
			aj_buf_write(line, 1, strlen(line), &b);
		free(line);
		free(cmd);
	}
	json_t *text = b.data ? utf8_string(b.data, b.len) : json_string("no background processes");
	free(b.data);
	return tool_result(text, o, false);
}

/* process_output's body: the output ring (1 MiB) as NDJSON, escapes and all */
#define OUTPUT_MAX (16u << 20)
static size_t capped_output(char *p, size_t sz, size_t n, void *ud)
{
	aj_buf *b = ud;
	if (b->len + sz * n > OUTPUT_MAX)
		return 0;
	return aj_buf_write(p, sz, n, b);
}

/* An output event's bytes into out; its offset and length in *end. */
static void output_event(json_t *ev, aj_buf *out, long long *end)
{
	const char *d = json_string_value(json_object_get(ev, "data"));
	const char *b64 = json_string_value(json_object_get(ev, "data_b64"));
	long long off = json_integer_value(json_object_get(ev, "offset"));
	size_t n = 0;
	if (d) {
		n = json_string_length(json_object_get(ev, "data"));
		aj_buf_write((char *)d, 1, n, out);
	} else if (b64) {
		size_t cap = strlen(b64) / 4 * 3 + 4;
		char *raw = malloc(cap);
		int k = raw ? lws_b64_decode_string(b64, raw, (int)cap) : -1;
		if (k > 0) {
			n = (size_t)k;
			aj_buf_write(raw, 1, n, out);
		}
		free(raw);
	}
	if (off + (long long)n > *end)
		*end = off + (long long)n;
}

static json_t *t_process_output(const aj_svc *c, json_t *args)
{
	long long offset = json_integer_value(json_object_get(args, "offset"));
	char suffix[64], path[1024], why[512] = "";
	snprintf(suffix, sizeof(suffix), "/output?offset=%lld", offset);
	proc_path(args, suffix, path, sizeof(path));
	aj_buf body = {0}, out = {0};
	aj_svc_req q = {.method = "GET",
			.path = path,
			.sink = capped_output,
			.ud = &body,
			.why = why,
			.why_size = sizeof(why)};
	long st = aj_svc_request(c, &q);
	if (st != 200) {
		json_t *f = st < 0 && !why[0] ? tool_error("the output is too big to read at once")
					      : svc_failure(st, &body, why);
		free(body.data);
		return f;
	}
	json_t *exit_ev = NULL;
	long long next = offset, gap = -1;
	for (char *line = body.data, *nl; line && line < body.data + body.len; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(body.data + body.len - line));
		if (!nl)
			nl = body.data + body.len;
		json_t *ev = json_loadb(line, (size_t)(nl - line), 0, NULL);
		const char *type = json_string_value(json_object_get(ev, "type"));
		if (type && (!strcmp(type, "stdout") || !strcmp(type, "stderr")))
			output_event(ev, &out, &next);
		else if (type && !strcmp(type, "gap"))
			next = gap = json_integer_value(json_object_get(ev, "next"));
		else if (type && !strcmp(type, "exit") && !exit_ev)
			exit_ev = json_incref(ev);
		json_decref(ev);
	}
	free(body.data);
	json_t *s = json_pack("{s:s, s:o, s:I, s:b, s:O?}", "process",
			      json_string_value(json_object_get(args, "process_id")), "output",
			      utf8_string(out.data ? out.data : "", out.len), "next_offset",
			      (json_int_t)next, "running", exit_ev == NULL, "exit", exit_ev);
	if (s && gap >= 0)
		json_object_set_new(s, "lost_before", json_integer(gap));
	char head[64] = "running";
	if (exit_ev)
		snprintf(head, sizeof(head), "exited with code %lld",
			 (long long)json_integer_value(json_object_get(exit_ev, "exit_code")));
	char *text = aj_asprintf("%s\n--- output from byte %lld (next_offset %lld)%s\n%.*s", head,
				 offset, next, gap >= 0 ? "; earlier bytes were dropped" : "",
				 (int)out.len, out.data ? out.data : "");
	json_decref(exit_ev);
	free(out.data);
	json_t *t = text ? utf8_string(text, strlen(text)) : NULL;
	free(text);
	return s ? tool_result(t, s, false) : tool_error("out of memory");
}

static json_t *t_process_signal(const aj_svc *c, json_t *args)
{
	const char *sig = json_string_value(json_object_get(args, "signal"));
	json_t *body = json_pack("{s:s}", "signal", sig ? sig : "TERM");
	char *b = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	char path[1024];
	proc_path(args, "/signal", path, sizeof(path));
	json_t *fail = NULL;
	json_t *o = b ? call_json(c, "POST", path, b, 200, &fail) : NULL;
	free(b);
	if (!o)
		return fail ? fail : tool_error("out of memory");
	char *text = aj_asprintf("sent SIG%s to process %s", sig ? sig : "TERM",
				 json_string_value(json_object_get(args, "process_id")));
	json_t *r = tool_result(text ? utf8_string(text, strlen(text)) : NULL, o, false);
	free(text);
	return r;
}

static json_t *t_sandbox_pause(const aj_svc *c, json_t *args, bool pause)
{
	char path[512];
	sb_path(args, pause ? "/pause" : "/resume", path, sizeof(path));
	json_t *fail = NULL;
	json_t *o = call_json(c, "POST", path, "{}", 200, &fail);
	if (!o)
		return fail;
	char *text =
	    aj_asprintf("sandbox %s is %s", json_string_value(json_object_get(args, "sandbox_id")),
			pause ? "paused (sandbox_resume lets it run again)" : "running");
	json_t *r = tool_result(text ? utf8_string(text, strlen(text)) : NULL, o, false);
	free(text);
	return r;
}

/* tools/call: the result, or NULL with *code and why for a protocol error. */
static json_t *tools_call(const aj_svc *c, json_t *params, const json_t *id, int *code, char *why,
			  size_t size)
{
	const char *name = NULL;
	json_t *args = NULL;
	*code = aj_mcp_check_call(params, &name, &args, why, size);
	if (*code)
		return NULL;
	json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
	if (token && !json_is_string(token) && !json_is_integer(token)) {
		*code = AJ_MCP_INVALID_PARAMS;
		snprintf(why, size, "_meta.progressToken must be a string or an integer");
		return NULL;
	}
	if (!strcmp(name, "sandbox_create"))
		return t_sandbox_create(c, args);
	if (!strcmp(name, "sandbox_list"))
		return t_sandbox_list(c, args);
	if (!strcmp(name, "sandbox_kill"))
		return t_sandbox_kill(c, args);
	if (!strcmp(name, "run_command"))
		return t_run_command(c, args, token, id, code);
	if (!strcmp(name, "run_code"))
		return t_run_code(c, args, token, id, code);
	if (!strcmp(name, "read_file"))
		return t_read_file(c, args);
	if (!strcmp(name, "write_file"))
		return t_write_file(c, args, code, why, size);
	if (!strcmp(name, "process_start"))
		return t_process_start(c, args);
	if (!strcmp(name, "process_list"))
		return t_process_list(c, args);
	if (!strcmp(name, "process_output"))
		return t_process_output(c, args);
	if (!strcmp(name, "process_signal"))
		return t_process_signal(c, args);
	if (!strcmp(name, "sandbox_pause") || !strcmp(name, "sandbox_resume"))
		return t_sandbox_pause(c, args, !strcmp(name, "sandbox_pause"));
	return t_list_files(c, args);
}

static json_t *initialize(json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion",
			 aj_mcp_negotiate(asked), "capabilities", "tools", "listChanged", 0,
			 "serverInfo", "name", "agentjail", "title", "agentjail sandboxes",
			 "version", AJ_VERSION, "instructions",
			 "Run untrusted commands in isolated, limited, throw-away Linux "
			 "sandboxes: sandbox_create gives an id; run_command, read_file, "
			 "write_file and list_files use it; process_start runs a command in "
			 "the background (process_output, process_signal, process_list); "
			 "sandbox_pause and sandbox_resume freeze and thaw it; sandbox_kill "
			 "ends it.");
}

/* One line: false when stdout is gone. */
static bool handle(const aj_svc *c, const char *line, size_t len)
{
	aj_mcp_msg m;
	if (aj_mcp_parse(line, len, &m) < 0) {
		bool ok = send_line(aj_mcp_error(m.id, m.code, m.why));
		aj_mcp_msg_free(&m);
		return ok;
	}
	bool ok = true;
	json_t *result = NULL;
	int code = 0;
	char why[1024] = "";
	if (!m.method || !m.id) {
		/* a response, or a notification (initialized, cancelled, ...):
		 * nothing to answer */
	} else if (!strcmp(m.method, "initialize")) {
		result = initialize(m.params);
	} else if (!strcmp(m.method, "ping")) {
		result = json_object();
	} else if (!strcmp(m.method, "tools/list")) {
		result = json_deep_copy(aj_mcp_tools());
	} else if (!strcmp(m.method, "tools/call")) {
		json_t *p = m.params ? m.params : json_object();
		if (!m.params)
			json_object_set_new(m.root, "params", p);
		result = tools_call(c, p, m.id, &code, why, sizeof(why));
	} else {
		code = AJ_MCP_METHOD_NOT_FOUND;
		snprintf(why, sizeof(why), "method not found: %.200s", m.method);
	}
	if (m.method && m.id && code != NO_ANSWER) {
		if (code)
			ok = send_line(aj_mcp_error(m.id, code, why));
		else
			ok = send_line(
			    result ? aj_mcp_result(m.id, result)
				   : aj_mcp_error(m.id, AJ_MCP_INTERNAL_ERROR, "out of memory"));
	}
	aj_mcp_msg_free(&m);
	return ok;
}

/* Lines from stdin until EOF; a line past AJ_MCP_LINE_MAX is refused (its
 * bytes skipped up to its newline). */
static bool refuse_big(void)
{
	char msg[128];
	snprintf(msg, sizeof(msg), "a message over %u bytes: refused", AJ_MCP_LINE_MAX);
	logf_("%s", msg);
	return send_line(aj_mcp_error(NULL, AJ_MCP_INVALID_REQUEST, msg));
}

static int serve_stdio(const aj_svc *c)
{
	inp.cap = 1 << 16;
	inp.buf = malloc(inp.cap);
	int r = 0;
	while (inp.buf) {
		char *nl = memchr(inp.buf, '\n', inp.len);
		size_t n = nl ? (size_t)(nl - inp.buf) : inp.len;
		if (!inp.skipping && n > AJ_MCP_LINE_MAX) {
			if (!refuse_big())
				break;
			inp.skipping = true;
		}
		if (nl) {
			/* what a command's watch reads meanwhile goes after it */
			inp.busy = n + 1;
			if (!inp.skipping && strspn(inp.buf, " \t\r") < n && !handle(c, inp.buf, n))
				break;
			inp.skipping = false;
			memmove(inp.buf, inp.buf + n + 1, inp.len - n - 1);
			inp.len -= n + 1;
			inp.buf[inp.len] = '\0';
			continue;
		}
		if (inp.skipping)
			inp.len = 0;
		if (inp.eof) { /* a last line without its newline */
			inp.busy = inp.len;
			if (!inp.skipping && inp.len && strspn(inp.buf, " \t\r\n") < inp.len)
				handle(c, inp.buf, inp.len);
			break;
		}
		if (inp.len + 65536 > inp.cap) {
			char *bigger = realloc(inp.buf, inp.cap * 2);
			if (!bigger) {
				r = AJ_EXIT_INTERNAL;
				break;
			}
			inp.buf = bigger, inp.cap *= 2;
		}
		fill();
	}
	if (!inp.buf)
		r = AJ_EXIT_INTERNAL;
	free(inp.buf);
	return r;
}

int aj_cmd_mcp(int argc, char **argv)
{
	aj_svc c;
	aj_svc_init(&c);
	for (int i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(mcp_usage, stdout);
			return 0;
		}
		int k = i + 1 < argc ? aj_svc_option(&c, argv[i], argv[i + 1]) : 0;
		if (k < 0)
			return AJ_EXIT_INTERNAL;
		if (k == 0) {
			fprintf(stderr,
				"agentjail: mcp: unknown option '%s' (see agentjail mcp "
				"--help)\n",
				argv[i]);
			return AJ_EXIT_INTERNAL;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	aj_buf b = {0};
	char why[512] = "";
	aj_svc_req q = {
	    .method = "GET", .path = "/healthz", .out = &b, .why = why, .why_size = sizeof(why)};
	long st = aj_svc_request(&c, &q);
	free(b.data);
	int r = AJ_EXIT_INTERNAL;
	if (st != 200) {
		fprintf(stderr,
			"agentjail: mcp: no agentjail service at %s (%s) (fix: start `agentjail "
			"serve`, or pass --socket PATH or --url URL --token-file F)\n",
			aj_svc_where(&c), st < 0 ? why : "it did not answer /healthz with 200");
	} else {
		logf_("serving MCP %s on stdio; the service is at %s", AJ_MCP_VERSION,
		      aj_svc_where(&c));
		r = serve_stdio(&c);
	}
	curl_global_cleanup();
	return r;
}
