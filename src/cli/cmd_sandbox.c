/* SPDX-License-Identifier: MIT */
/* agentjail sandbox create|ls|exec|cp|rm: a client of `agentjail serve`
 * (libcurl on its unix socket, or on --url with a bearer token: svc_client.c). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <libwebsockets.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "daemon.h"
#include "policy.h"
#include "jsonstr.h"
#include "sandbox_code.h"
#include "sandbox_ws.h"
#include "svc_client.h"
#include "util.h"

static const char sandbox_usage[] =
    "Usage: agentjail sandbox [--socket PATH | --url URL [--token-file F]] COMMAND ...\n"
    "\n"
    "  create [--timeout SECS] [RUN-OPTIONS]   new sandbox; prints its id. RUN-OPTIONS\n"
    "                          are those of `agentjail run` (--memory 256M, --env A=1,\n"
    "                          --secret NAME=VALUE, --workspace DIR, --net open ...)\n"
    "  ls [--json]             the service's sandboxes\n"
    "  exec [--timeout SECS] [--cwd DIR] [-e NAME=VALUE] [-i|-t|-d] ID -- CMD [ARG...]\n"
    "                          run CMD in sandbox ID, streaming its output; exits with\n"
    "                          its status (-i: send our stdin; -t/--tty: interactive,\n"
    "                          a terminal in the sandbox, our stdin streamed to it;\n"
    "                          -d/--background: start it in the background and print\n"
    "                          its process id)\n"
    "  code [--context NAME] [--timeout SECS] [--out DIR] [--json] ID\n"
    "                          run Python read from stdin in the sandbox's code\n"
    "                          context (a Jupyter kernel: variables persist between\n"
    "                          calls); prints output and results, writes images to\n"
    "                          DIR/code-N.png (default .); exits 1 when the code\n"
    "                          raised, 124 at its timeout, 137 out of memory\n"
    "  ps [--json] ID          the sandbox's background processes\n"
    "  logs [-f] [--offset N] ID PROC\n"
    "                          a background process's output (kept: its last 1 MiB);\n"
    "                          -f: follow until it ends, then exit with its status\n"
    "  kill [-s SIGNAL] ID PROC  signal a background process's group (default TERM)\n"
    "  cp SRC DST              copy a file in or out: one of them is ID:/path\n"
    "  rm ID...                destroy sandboxes\n"
    "  pause ID...             freeze every process (memory kept, TTL clock stopped)\n"
    "  resume ID...            let them run again\n"
    "\n"
    "The socket defaults to $AGENTJAIL_SOCKET or " AJ_DAEMON_RUN_DIR "/agentjail.sock.\n";

/* the service's client (svc_client.c, shared with `agentjail mcp`) */
typedef aj_svc client;
typedef aj_buf buf;
#define to_buf aj_buf_write

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("agentjail: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return AJ_EXIT_INTERNAL;
}

/* One request. body may be NULL; sink NULL: collect into out. Returns the
 * HTTP status, or -1 (message printed) when the service is unreachable. */
static long request(const client *c, const char *method, const char *path, const char *body,
		    curl_write_callback sink, void *ud, FILE *upload, buf *out)
{
	aj_svc_req q = {.method = method,
			.path = path,
			.body = body,
			.sink = sink,
			.ud = ud,
			.upload = upload,
			.out = out};
	return aj_svc_request(c, &q);
}

/* A JSON error body, printed; returns 125. */
static int api_fail(long status, const buf *b)
{
	json_t *o = b->data ? json_loads(b->data, 0, NULL) : NULL;
	const char *m = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
	int r = status < 0 ? AJ_EXIT_INTERNAL
			   : fail("%s (HTTP %ld)", m ? m : (b->data ? b->data : "error"), status);
	json_decref(o);
	return r;
}

/* --name VALUE / --name=VALUE options of run, into a JSON policy. */
static int parse_create(int argc, char **argv, json_t *req)
{
	static const char *const flags[] = {"no-default-masks", "quiet"};
	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "--", 2) != 0)
			return fail("create: unexpected argument '%s'", argv[i]);
		char name[64];
		const char *eq = strchr(argv[i], '='), *v = NULL;
		snprintf(name, sizeof(name), "%.*s", (int)(eq ? eq - argv[i] - 2 : 62),
			 argv[i] + 2);
		bool flag = false;
		for (size_t k = 0; k < AJ_ARRAY_SIZE(flags); k++)
			flag |= !strcmp(name, flags[k]);
		if (flag) {
			json_object_set_new(req, name, json_true());
			continue;
		}
		v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
		if (!v)
			return fail("create: --%s needs a value", name);
		int kind = aj_policy_json_kind(name);
		/* --seccomp-profile FILE: the client's own file, sent inline */
		if (kind == AJ_JSON_OBJ) {
			json_error_t je;
			json_t *o = json_load_file(v, JSON_REJECT_DUPLICATES, &je);
			if (!json_is_object(o)) {
				json_decref(o);
				return fail("create: --%s %s: %s", name, v,
					    o ? "expected a JSON object" : je.text);
			}
			json_object_set_new(req, name, o);
			continue;
		}
		/* each key of its JSON type (aj_policy_json_kind); a value that
		 * is not a number goes as a string, for the service to refuse */
		char *end = NULL;
		double d = strtod(v, &end);
		bool num = *v && end && !*end && (kind != AJ_JSON_INT || d == (double)(long long)d);
		if ((kind == AJ_JSON_NUM || kind == AJ_JSON_INT) && num) {
			json_object_set_new(req, name,
					    kind == AJ_JSON_INT ? json_integer((json_int_t)d)
								: json_real(d));
			continue;
		}
		if (kind != AJ_JSON_LIST && kind != AJ_JSON_MAP) {
			json_object_set_new(req, name, json_string(v)); /* the last one */
			continue;
		}
		json_t *a = json_object_get(req, name);
		if (!a)
			json_object_set_new(req, name, a = json_array());
		json_array_append_new(a, json_string(v));
	}
	return 0;
}

static int cmd_create(const client *c, int argc, char **argv)
{
	json_t *req = json_object();
	int r = parse_create(argc, argv, req);
	char *body = r ? NULL : json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!body)
		return r ? r : AJ_EXIT_INTERNAL;
	buf b = {0};
	long st = request(c, "POST", "/v1/sandboxes", body, NULL, NULL, NULL, &b);
	free(body);
	json_t *o = st == 201 ? json_loads(b.data, 0, NULL) : NULL;
	r = o ? (printf("%s\n", json_string_value(json_object_get(o, "id"))), 0) : api_fail(st, &b);
	json_decref(o);
	free(b.data);
	return r;
}

static int cmd_ls(const client *c, int argc, char **argv)
{
	bool raw = argc > 0 && !strcmp(argv[0], "--json");
	buf b = {0};
	long st = request(c, "GET", "/v1/sandboxes", NULL, NULL, NULL, NULL, &b);
	json_t *o = st == 200 ? json_loads(b.data, 0, NULL) : NULL;
	int r = o ? 0 : api_fail(st, &b);
	if (o && raw) {
		fputs(b.data, stdout);
	} else if (o) {
		printf("%-20s %-8s %-21s %6s %s\n", "ID", "PID", "EXPIRES", "EXECS", "WORKSPACE");
		size_t i;
		json_t *s;
		json_array_foreach(json_object_get(o, "sandboxes"), i, s)
		{
			const char *exp = json_string_value(json_object_get(s, "expires_at"));
			const char *ws = json_string_value(json_object_get(s, "workspace"));
			printf("%-20s %-8lld %-21s %6lld %s\n",
			       json_string_value(json_object_get(s, "id")),
			       (long long)json_integer_value(json_object_get(s, "pid")),
			       exp ? exp : "never",
			       (long long)json_integer_value(json_object_get(s, "execs")),
			       ws ? ws : "-");
		}
	}
	json_decref(o);
	free(b.data);
	return r;
}

/* NDJSON events: output to our stdout/stderr, the exit status kept. */
typedef struct stream {
	buf line;
	buf error; /* a body that is not events: the service's error */
	int exit_code;
	bool ended;
	FILE *last; /* written to since the last flush */
	char *text; /* an event's output, unescaped */
	size_t text_cap;
} stream;

/* Output kept in stdio's buffer (stream_buffers) until the end of what
 * curl gave us (on_stream), or until the other stream is written: a write
 * per read of the response, not one per event, in the order it came. */
static void put(stream *s, FILE *f, const char *p, size_t n)
{
	if (s->last && s->last != f)
		fflush(s->last);
	fwrite(p, 1, n, f);
	s->last = f;
}

static void stream_buffers(void)
{
	static char out[256 * 1024], err[256 * 1024];
	setvbuf(stdout, out, _IOFBF, sizeof(out));
	setvbuf(stderr, err, _IOFBF, sizeof(err));
}

/* The event as the service writes text, {"type":"stdout","data":"..."}:
 * the string unescaped into s->text, no json_t (jansson took as long as
 * the rest of the client). false: anything else, for jansson (the line
 * itself is left as it came). */
static bool fast_event(stream *s, const char *line, size_t len)
{
	static const char pre_out[] = "{\"type\":\"stdout\",\"data\":\"";
	static const char pre_err[] = "{\"type\":\"stderr\",\"data\":\"";
	size_t pl = sizeof(pre_out) - 1;
	if (len < pl + 2 || memcmp(line + len - 2, "\"}", 2))
		return false;
	FILE *f = !memcmp(line, pre_out, pl) ? stdout : !memcmp(line, pre_err, pl) ? stderr : NULL;
	if (!f)
		return false;
	if (len > s->text_cap) {
		char *t = realloc(s->text, len);
		if (!t)
			return false;
		s->text = t;
		s->text_cap = len;
	}
	long n = aj_json_unescape(line + pl, len - pl - 2, s->text);
	if (n < 0)
		return false;
	put(s, f, s->text, (size_t)n);
	return true;
}

static void on_event(stream *s, const char *line, size_t len)
{
	if (fast_event(s, line, len))
		return;
	json_t *o = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	const char *type = json_string_value(json_object_get(o, "type"));
	json_t *data = json_object_get(o, "data");
	const char *b64 = json_string_value(json_object_get(o, "data_b64"));
	bool output = type && (!strcmp(type, "stdout") || !strcmp(type, "stderr"));
	FILE *f = output && !strcmp(type, "stdout") ? stdout : stderr;
	if (output && data) {
		put(s, f, json_string_value(data), json_string_length(data));
	} else if (output && b64) { /* bytes that are not UTF-8 */
		size_t bl = strlen(b64);
		char *raw = malloc(bl / 4 * 3 + 4);
		int n =
		    raw ? lws_b64_decode_string_len(b64, (int)bl, raw, (int)(bl / 4 * 3 + 4)) : -1;
		if (n > 0)
			put(s, f, raw, (size_t)n);
		free(raw);
	} else if (type && !strcmp(type, "gap")) {
		put(s, stderr, "", 0);
		fprintf(stderr,
			"agentjail: output from byte %lld to %lld has left the ring (1 MiB kept)\n",
			(long long)json_integer_value(json_object_get(o, "offset")),
			(long long)json_integer_value(json_object_get(o, "next")));
	} else if (type && !strcmp(type, "exit")) {
		put(s, stderr, "", 0);
		s->exit_code = (int)json_integer_value(json_object_get(o, "exit_code"));
		s->ended = true;
		const char *m =
		    json_string_value(json_object_get(json_object_get(o, "error"), "message"));
		if (m)
			fprintf(stderr, "agentjail: %s\n", m);
		else if (json_is_true(json_object_get(o, "timed_out")))
			fprintf(stderr, "agentjail: timeout: the command was stopped (exit 124)\n");
		else if (json_is_true(json_object_get(o, "oom_killed")))
			fprintf(stderr, "agentjail: out of memory: the kernel killed a process\n");
	} else if (!type) {
		to_buf((char *)line, 1, len, &s->error);
	}
	json_decref(o);
}

static size_t on_stream(char *p, size_t sz, size_t n, void *ud)
{
	stream *s = ud;
	size_t total = sz * n;
	/* whole spans up to each newline (not a byte at a time: 64 MiB of
	 * output took 18 s in the client alone); a line whole in curl's
	 * buffer is handled there, without a copy */
	for (size_t i = 0; i < total;) {
		char *nl = memchr(p + i, '\n', total - i);
		size_t span = nl ? (size_t)(nl - (p + i)) : total - i;
		if (nl && !s->line.len) {
			on_event(s, p + i, span);
			i += span + 1;
			continue;
		}
		if (span && !to_buf(p + i, 1, span, &s->line))
			return 0;
		i += span;
		if (!nl)
			break;
		i++; /* the newline */
		on_event(s, s->line.data, s->line.len);
		s->line.len = 0;
	}
	if (s->last) {
		fflush(s->last);
		s->last = NULL;
	}
	return total;
}

static int exec_body(int argc, char **argv, json_t *req, const char **id)
{
	json_object_set_new(req, "background", json_false());
	json_t *env = json_object();
	json_object_set_new(req, "env", env);
	int i = 0;
	for (; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--"); i++) {
		const char *o = argv[i];
		if (!strcmp(o, "-i")) {
			char *in = NULL;
			size_t len = 0;
			if (aj_read_fd(STDIN_FILENO, &in, &len) < 0)
				return fail("exec -i: cannot read stdin (at most 1 MiB)");
			json_object_set_new(req, "stdin", json_stringn(in, len));
			free(in);
			continue;
		}
		if (!strcmp(o, "-t") || !strcmp(o, "--tty")) {
			json_object_set_new(req, "tty", json_true());
			continue;
		}
		if (!strcmp(o, "-d") || !strcmp(o, "--background")) {
			json_object_set_new(req, "background", json_true());
			continue;
		}
		if (i + 1 >= argc)
			return fail("exec: %s needs a value", o);
		const char *v = argv[++i];
		if (!strcmp(o, "--timeout"))
			json_object_set_new(req, "timeout", json_real(strtod(v, NULL)));
		else if (!strcmp(o, "--cwd"))
			json_object_set_new(req, "cwd", json_string(v));
		else if ((!strcmp(o, "-e") || !strcmp(o, "--env")) && strchr(v, '=')) {
			char *name = strndup(v, strcspn(v, "="));
			json_object_set_new(env, name ? name : "", json_string(strchr(v, '=') + 1));
			free(name);
		} else
			return fail("exec: unknown option '%s'", o);
	}
	if (i >= argc)
		return fail("exec: which sandbox? (agentjail sandbox exec ID -- CMD...)");
	*id = argv[i++];
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc)
		return fail("exec: no command given");
	json_t *cmd = json_array();
	for (; i < argc; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	json_object_set_new(req, "cmd", cmd);
	return 0;
}

/* exec -t: the request's fields as the WebSocket's URL arguments. */
static int exec_tty(const client *c, const char *id, json_t *req)
{
	if (json_is_true(json_object_get(req, "background")) || json_object_get(req, "stdin"))
		return fail("exec: -t streams our stdin to a terminal: not with -i or -d");
	json_t *cmd = json_object_get(req, "cmd"), *env = json_object_get(req, "env");
	size_t n = json_array_size(cmd), ne = json_object_size(env), k = 0;
	char **argv = calloc(n + 1, sizeof(char *)), **envv = calloc(ne + 1, sizeof(char *));
	char timeout[32] = "";
	json_t *t = json_object_get(req, "timeout");
	if (t)
		snprintf(timeout, sizeof(timeout), "%g", json_number_value(t));
	int r = argv && envv ? 0 : fail("out of memory");
	for (size_t i = 0; !r && i < n; i++)
		argv[i] = (char *)json_string_value(json_array_get(cmd, i));
	const char *name;
	json_t *v;
	json_object_foreach(env, name, v)
	{
		if (r || !(envv[k++] = aj_asprintf("%s=%s", name, json_string_value(v))))
			r = fail("out of memory");
	}
	aj_ws_target target = {.socket = c->socket, .url = c->url, .auth = c->auth};
	if (!r)
		r = aj_sandbox_exec_tty(&target, id, argv, (int)n,
					json_string_value(json_object_get(req, "cwd")),
					t ? timeout : NULL, envv, (int)k);
	for (size_t i = 0; envv && i < k; i++)
		free(envv[i]);
	free(envv);
	free(argv);
	return r;
}

static int cmd_exec(const client *c, int argc, char **argv)
{
	json_t *req = json_object();
	const char *id = NULL;
	int r = exec_body(argc, argv, req, &id);
	if (!r && json_is_true(json_object_get(req, "tty"))) {
		r = exec_tty(c, id, req);
		json_decref(req);
		return r;
	}
	bool bg = json_is_true(json_object_get(req, "background"));
	if (!bg)
		json_object_del(req, "background");
	char *body = r ? NULL : json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!body)
		return r ? r : AJ_EXIT_INTERNAL;
	char path[256];
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
	if (bg) {
		buf b = {0};
		long st = request(c, "POST", path, body, NULL, NULL, NULL, &b);
		free(body);
		json_t *o = st == 201 ? json_loads(b.data, 0, NULL) : NULL;
		const char *proc = json_string_value(json_object_get(o, "process"));
		r = proc ? (printf("%s\n", proc), 0) : api_fail(st, &b);
		json_decref(o);
		free(b.data);
		return r;
	}
	stream s = {.exit_code = AJ_EXIT_INTERNAL};
	stream_buffers();
	long st = request(c, "POST", path, body, on_stream, &s, NULL, NULL);
	free(body);
	if (s.line.len) /* a last line without its newline */
		on_event(&s, s.line.data, s.line.len);
	if (st != 200 || !s.ended) {
		if (st == 200)
			fail("the service ended the stream early");
		r = st == 200 ? AJ_EXIT_INTERNAL : api_fail(st, &s.error);
	} else {
		r = s.exit_code;
	}
	free(s.line.data);
	free(s.text);
	free(s.error.data);
	return r;
}

/* ID PROC after options; fills a path below /v1/sandboxes/ID/processes. */
static int proc_path(int argc, char **argv, int i, const char *what, char *path, size_t size,
		     const char *suffix)
{
	if (argc - i != 2)
		return fail("%s: expected ID PROC (agentjail sandbox ps ID lists them)", what);
	for (int k = i; k < argc; k++)
		if (!argv[k][0] || strpbrk(argv[k], "/?#%"))
			return fail("%s: bad id '%s'", what, argv[k]);
	snprintf(path, size, "/v1/sandboxes/%s/processes/%s%s", argv[i], argv[i + 1], suffix);
	return 0;
}

static int cmd_ps(const client *c, int argc, char **argv)
{
	bool raw = argc > 0 && !strcmp(argv[0], "--json");
	if (argc != 1 + raw || argv[raw][0] == '-' || strpbrk(argv[raw], "/?#%"))
		return fail("ps: expected [--json] ID");
	char path[256];
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", argv[raw]);
	buf b = {0};
	long st = request(c, "GET", path, NULL, NULL, NULL, NULL, &b);
	json_t *o = st == 200 ? json_loads(b.data, 0, NULL) : NULL;
	int r = o ? 0 : api_fail(st, &b);
	if (o && raw) {
		fputs(b.data, stdout);
	} else if (o) {
		printf("%-6s %-8s %10s  %s\n", "PROC", "STATUS", "OUTPUT", "COMMAND");
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(o, "processes"), i, p)
		{
			json_t *ex = json_object_get(p, "exit");
			char status[32] = "running";
			if (ex)
				snprintf(status, sizeof(status), "exit %lld",
					 (long long)json_integer_value(
					     json_object_get(ex, "exit_code")));
			char *cmd =
			    json_dumps(json_object_get(p, "cmd"), JSON_COMPACT | JSON_ENCODE_ANY);
			printf("%-6s %-8s %10lld  %s\n",
			       json_string_value(json_object_get(p, "id")), status,
			       (long long)json_integer_value(json_object_get(p, "output_bytes")),
			       cmd ? cmd : "?");
			free(cmd);
		}
	}
	json_decref(o);
	free(b.data);
	return r;
}

static int cmd_logs(const client *c, int argc, char **argv)
{
	bool follow = false;
	long long offset = 0;
	int i = 0;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow")) {
			follow = true;
		} else if (!strcmp(argv[i], "--offset") && i + 1 < argc) {
			char *end;
			errno = 0;
			offset = strtoll(argv[++i], &end, 10);
			if (errno || *end || end == argv[i] || offset < 0)
				return fail("logs: --offset wants a byte count, got '%s'", argv[i]);
		} else {
			return fail("logs: unknown option '%s'", argv[i]);
		}
	}
	char suffix[96], path[512];
	snprintf(suffix, sizeof(suffix), "/output?offset=%lld%s", offset,
		 follow ? "&follow=true" : "");
	int r = proc_path(argc, argv, i, "logs", path, sizeof(path), suffix);
	if (r)
		return r;
	stream s = {.exit_code = 0};
	stream_buffers();
	long st = request(c, "GET", path, NULL, on_stream, &s, NULL, NULL);
	if (s.line.len)
		on_event(&s, s.line.data, s.line.len);
	if (st != 200)
		r = api_fail(st, &s.error);
	else if (follow && !s.ended)
		r = fail("the service ended the stream early");
	else
		r = follow ? s.exit_code : 0;
	free(s.line.data);
	free(s.text);
	free(s.error.data);
	return r;
}

static int cmd_kill(const client *c, int argc, char **argv)
{
	const char *sig = "TERM";
	int i = 0;
	if (argc > 1 && (!strcmp(argv[0], "-s") || !strcmp(argv[0], "--signal")))
		sig = argv[1], i = 2;
	char path[512];
	int r = proc_path(argc, argv, i, "kill", path, sizeof(path), "/signal");
	if (r)
		return r;
	json_t *req = json_object();
	char *end;
	long n = strtol(sig, &end, 10);
	json_object_set_new(req, "signal", *end || end == sig ? json_string(sig) : json_integer(n));
	char *body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	buf b = {0};
	long st = body ? request(c, "POST", path, body, NULL, NULL, NULL, &b) : -1;
	free(body);
	r = st == 200 ? 0 : api_fail(st, &b);
	free(b.data);
	return r;
}

/* A download's bytes into a local file. In a regular file (not stdout) a
 * block of zeros (4 KiB, at a multiple of 4 KiB) is not written, and the
 * length is set at the end: a sparse file comes down sparse. Bytes of a
 * block split between two callbacks wait in carry. */
typedef struct sink_file {
	FILE *f;
	bool sparse;
	unsigned long long len; /* bytes received */
	char carry[4096];
	size_t carry_len;
} sink_file;

/* One block (or the last, shorter one) at offset off: written unless zeros. */
static bool put_block(sink_file *s, const char *p, size_t n, unsigned long long off)
{
	static const char zero[4096];
	if (!memcmp(p, zero, n))
		return true;
	return pwrite(fileno(s->f), p, n, (off_t)off) == (ssize_t)n;
}

static size_t to_file(char *p, size_t sz, size_t n, void *ud)
{
	sink_file *s = ud;
	size_t len = sz * n, done = 0, bs = sizeof(s->carry);
	if (!s->sparse) {
		s->len += len;
		return fwrite(p, 1, len, s->f);
	}
	while (done < len) {
		unsigned long long at = s->len + done; /* offset of p[done] */
		if (s->carry_len || len - done < bs) {
			size_t k = bs - s->carry_len < len - done ? bs - s->carry_len : len - done;
			memcpy(s->carry + s->carry_len, p + done, k);
			s->carry_len += k;
			done += k;
			if (s->carry_len == bs) {
				if (!put_block(s, s->carry, bs, at + k - bs))
					return 0;
				s->carry_len = 0;
			}
		} else {
			if (!put_block(s, p + done, bs, at))
				return 0;
			done += bs;
		}
	}
	s->len += len;
	return len;
}

/* The end of a sparse download: the last short block, the length. */
static int finish_file(sink_file *s)
{
	if (s->carry_len && !put_block(s, s->carry, s->carry_len, s->len - s->carry_len))
		return -1;
	return ftruncate(fileno(s->f), (off_t)s->len);
}

static int cmd_cp(const client *c, int argc, char **argv)
{
	if (argc != 2)
		return fail("cp: expected SRC DST, one of them ID:/path");
	const char *remote = strchr(argv[0], ':') && argv[0][0] != '/' ? argv[0] : argv[1];
	bool upload = remote == argv[1];
	const char *colon = strchr(remote, ':');
	if (!colon || colon[1] != '/')
		return fail("cp: expected ID:/absolute/path, got '%s'", remote);
	CURL *h = curl_easy_init();
	char *esc = h ? curl_easy_escape(h, colon + 1, 0) : NULL;
	char path[8192];
	snprintf(path, sizeof(path), "/v1/sandboxes/%.*s/files?path=%s", (int)(colon - remote),
		 remote, esc ? esc : "");
	curl_free(esc);
	curl_easy_cleanup(h);
	const char *local = upload ? argv[0] : argv[1];
	FILE *f = strcmp(local, "-") ? fopen(local, upload ? "rb" : "wb") : upload ? stdin : stdout;
	if (!f)
		return fail("cp: cannot open %s: %s", local, strerror(errno));
	struct stat sst;
	if (upload && (fstat(fileno(f), &sst) < 0 || !S_ISREG(sst.st_mode))) {
		/* the service wants a length: spool a pipe to a temporary file */
		FILE *tmp = tmpfile();
		char chunk[65536];
		size_t k;
		while (tmp && (k = fread(chunk, 1, sizeof(chunk), f)) > 0)
			if (fwrite(chunk, 1, k, tmp) != k)
				break;
		if (f != stdin)
			fclose(f);
		if (!tmp || ferror(tmp) || fseek(tmp, 0, SEEK_SET) < 0)
			return fail("cp: cannot spool %s: %s", local, strerror(errno));
		f = tmp;
	}
	buf b = {0};
	sink_file sink = {.f = f};
	if (!upload && f != stdout && fstat(fileno(f), &sst) == 0 && S_ISREG(sst.st_mode))
		sink.sparse = true;
	long st = upload ? request(c, "PUT", path, NULL, NULL, NULL, f, &b)
			 : request(c, "GET", path, NULL, to_file, &sink, NULL, NULL);
	if (sink.sparse && st == 200 && finish_file(&sink) < 0)
		st = -1;
	if (f != stdin && f != stdout && fclose(f) != 0 && st == 200)
		st = -1;
	int r = st == 200 || st == 201 ? 0 : 1;
	if (r && !upload && strcmp(local, "-")) {
		unlink(local); /* not a half file: the error body went there */
		r = fail("cp: cannot download %s (HTTP %ld)", remote, st);
	} else if (r) {
		r = api_fail(st, &b);
	}
	free(b.data);
	return r;
}

static int cmd_rm(const client *c, int argc, char **argv)
{
	int r = argc ? 0 : fail("rm: which sandbox?");
	for (int i = 0; i < argc; i++) {
		char path[256];
		snprintf(path, sizeof(path), "/v1/sandboxes/%s", argv[i]);
		buf b = {0};
		long st = request(c, "DELETE", path, NULL, NULL, NULL, NULL, &b);
		if (st != 200)
			r = api_fail(st, &b);
		free(b.data);
	}
	return r;
}

/* POST /v1/sandboxes/ID/WHAT for each ID (pause, resume). */
static int cmd_post_each(const client *c, const char *what, int argc, char **argv)
{
	int r = argc ? 0 : fail("%s: which sandbox?", what);
	for (int i = 0; i < argc; i++) {
		char path[256];
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/%s", argv[i], what);
		buf b = {0};
		long st = request(c, "POST", path, "{}", NULL, NULL, NULL, &b);
		if (st != 200)
			r = api_fail(st, &b);
		free(b.data);
	}
	return r;
}

static int dispatch(const client *c, const char *cmd, int argc, char **argv)
{
	if (!strcmp(cmd, "pause") || !strcmp(cmd, "resume"))
		return cmd_post_each(c, cmd, argc, argv);
	if (!strcmp(cmd, "create"))
		return cmd_create(c, argc, argv);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(c, argc, argv);
	if (!strcmp(cmd, "exec"))
		return cmd_exec(c, argc, argv);
	if (!strcmp(cmd, "code"))
		return aj_sandbox_code(c, argc, argv);
	if (!strcmp(cmd, "cp"))
		return cmd_cp(c, argc, argv);
	if (!strcmp(cmd, "rm"))
		return cmd_rm(c, argc, argv);
	if (!strcmp(cmd, "ps"))
		return cmd_ps(c, argc, argv);
	if (!strcmp(cmd, "logs"))
		return cmd_logs(c, argc, argv);
	if (!strcmp(cmd, "kill"))
		return cmd_kill(c, argc, argv);
	return fail("sandbox: unknown command '%s' (see agentjail sandbox --help)", cmd);
}

/* `agentjail sandbox CMD --help`: CMD's lines of the usage (the line
 * naming it and those that go on below it). */
static int sub_usage(const char *cmd)
{
	char head[40];
	snprintf(head, sizeof(head), "\n  %s ", cmd);
	const char *p = strstr(sandbox_usage, head);
	if (!p)
		return fail("sandbox: unknown command '%s' (see agentjail sandbox --help)", cmd);
	printf("Usage: agentjail sandbox [--socket PATH | --url URL [--token-file F]] %s ...\n\n",
	       cmd);
	for (p++;;) { /* the line, then those indented further (not "  x") */
		const char *nl = strchr(p, '\n');
		if (!nl)
			break;
		fwrite(p, 1, (size_t)(nl - p + 1), stdout);
		p = nl + 1;
		if (strncmp(p, "   ", 3) != 0)
			break;
	}
	printf("\nSee agentjail sandbox --help and docs/cli.md.\n");
	return 0;
}

int aj_cmd_sandbox(int argc, char **argv)
{
	client c;
	aj_svc_init(&c);
	int i = 1;
	for (; i + 1 < argc && argv[i][0] == '-' && strcmp(argv[i], "--help"); i += 2) {
		int k = aj_svc_option(&c, argv[i], argv[i + 1]);
		if (k < 0)
			return AJ_EXIT_INTERNAL;
		if (k == 0)
			return fail("sandbox: unknown option '%s'", argv[i]);
	}
	if (i >= argc || !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
		fputs(sandbox_usage, i >= argc ? stderr : stdout);
		return i >= argc ? AJ_EXIT_INTERNAL : 0;
	}
	for (int k = i + 1; k < argc && strcmp(argv[k], "--"); k++)
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h"))
			return sub_usage(argv[i]);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int r = dispatch(&c, argv[i], argc - i - 1, argv + i + 1);
	curl_global_cleanup();
	return r;
}
