/* SPDX-License-Identifier: MIT */
/* The front's routing of the API (docs/api.md): each request is checked
 * here (route, method, JSON body) and becomes an op for the supervisor
 * (sup.h), through front_call.h, whose reply is the answer, or gives an fd to stream. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "code_req.h"
#include "api.h"
#include "front_call.h"
#include "http.h"
#include "metrics.h"
#include "request.h"
#include "stream.h"
#include "util.h"

#define PREFIX "/v1/sandboxes"

typedef struct route {
	char id[AJ_SANDBOX_ID_SIZE]; /* "" for the collection */
	const char *sub; /* "" for the sandbox itself, "exec", "files", "mkdir", "processes" */
	char proc[16];	 /* processes/{proc}[/output|/signal] */
	const char *proc_sub;
	char ctx[40]; /* code/contexts/{ctx}[/restart|/interrupt] */
	const char *ctx_sub;
	bool ok;
} route;

/* "processes[/ID[/output|/signal]]" after the sandbox's id */
static bool parse_procs(const char *p, route *rt)
{
	if (!aj_startswith(p, "processes"))
		return false;
	p += strlen("processes");
	rt->sub = "processes";
	rt->proc_sub = "";
	if (*p == '\0')
		return true;
	size_t n = strspn(++p, "p0123456789");
	if (p[-1] != '/' || n == 0 || n >= sizeof(rt->proc))
		return false;
	memcpy(rt->proc, p, n);
	p += n;
	if (*p == '\0')
		return true;
	if (!strcmp(p, "/output") || !strcmp(p, "/signal")) {
		rt->proc_sub = p + 1;
		return true;
	}
	return false;
}

/* "code" or "code/contexts[/NAME[/restart|/interrupt]]" (code.c) */
static bool parse_code(const char *p, route *rt)
{
	if (!strcmp(p, "code"))
		return rt->sub = "code", true;
	if (!aj_startswith(p, "code/contexts"))
		return false;
	p += strlen("code/contexts");
	rt->sub = "code/contexts";
	rt->ctx_sub = "";
	if (*p == '\0')
		return true;
	size_t n = strspn(++p, "abcdefghijklmnopqrstuvwxyz0123456789_-");
	if (p[-1] != '/' || n == 0 || n > AJ_CODE_CTX_NAME_MAX)
		return false;
	memcpy(rt->ctx, p, n);
	p += n;
	if (*p == '\0')
		return true;
	if (!strcmp(p, "/restart") || !strcmp(p, "/interrupt")) {
		rt->ctx_sub = p + 1;
		return true;
	}
	return false;
}

static route parse_route(const char *path)
{
	route rt = {.sub = ""};
	if (strncmp(path, PREFIX, strlen(PREFIX)) != 0)
		return rt;
	const char *p = path + strlen(PREFIX);
	if (*p == '\0' || !strcmp(p, "/"))
		return rt.ok = true, rt;
	if (*p++ != '/')
		return rt;
	size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789-");
	if (n == 0 || n >= sizeof(rt.id) || (p[n] != '\0' && p[n] != '/'))
		return rt;
	memcpy(rt.id, p, n);
	p += n;
	static const char *const subs[] = {"exec",   "files",	 "mkdir", "pause",
					   "resume", "snapshot", "fork"};
	if (*p == '\0' || !strcmp(p, "/"))
		return rt.ok = true, rt;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(subs); i++)
		if (!strcmp(p + 1, subs[i]))
			return rt.sub = subs[i], rt.ok = true, rt;
	rt.ok = *p == '/' && (parse_procs(p + 1, &rt) || parse_code(p + 1, &rt));
	return rt;
}

/* The request's JSON object, or NULL with a 400 answered. */
static json_t *body_or_fail(aj_req *r)
{
	aj_error err;
	aj_err_clear(&err);
	json_t *body = aj_json_body(r->body, r->body_len, &err);
	if (!body)
		aj_http_fail(r, 400, "bad_request", &err);
	return body;
}

/* {"sandbox": id} plus more */
static json_t *args_of(aj_req *r)
{
	return json_pack("{s:s}", "sandbox", r->sb_id);
}

static bool flag(aj_req *r, const char *name)
{
	char b[64];
	const char *v = aj_http_arg(r, name, b, sizeof(b));
	return v && (!strcmp(v, "true") || !strcmp(v, "1"));
}

static void metrics_done(aj_req *r, int status, json_t *reply, int fd)
{
	if (fd >= 0)
		close(fd);
	if (status != 200) {
		aj_front_reply(r, status, reply, -1);
		return;
	}
	free(r->resp);
	r->resp = aj_metrics_text(reply);
	json_decref(reply);
	r->resp_len = r->resp ? strlen(r->resp) : 0;
	r->status = r->resp ? 200 : 500;
	r->ctype = "text/plain; version=0.0.4";
	lws_callback_on_writable(r->wsi);
}

static void stream_done(aj_req *r, int status, json_t *reply, int fd)
{
	if (fd < 0 || status != 200) {
		aj_front_reply(r, status == 200 ? 500 : status, reply, fd);
		return;
	}
	json_decref(reply);
	int e = aj_stream_start(r, fd, false);
	if (e < 0)
		aj_http_error(r, 503, "busy", "cannot read the stream: %s", strerror(-e));
	else
		aj_http_stream(r, 200, "application/x-ndjson");
}

static void download_done(aj_req *r, int status, json_t *reply, int fd)
{
	json_int_t size = json_integer_value(json_object_get(reply, "size"));
	if (fd < 0 || status != 200 || size < 0) {
		aj_front_reply(r, status, reply, fd);
		return;
	}
	json_decref(reply);
	r->dl_fd = fd;
	r->dl_left = (unsigned long long)size;
	r->status = 200;
	r->ctype = "application/octet-stream";
	lws_callback_on_writable(r->wsi);
}

/* An exec, in the foreground (a stream) or the background (a JSON reply). */
static void exec(aj_req *r)
{
	json_t *body = body_or_fail(r);
	if (!body)
		return;
	aj_error err;
	aj_err_clear(&err);
	aj_exec_req q; /* checked here, again by the supervisor */
	if (aj_exec_req_parse(r->body, r->body_len, &q, &err) < 0) {
		json_decref(body);
		aj_http_fail(r, 400, "bad_request", &err);
		return;
	}
	bool bg = q.background;
	aj_exec_req_free(&q);
	json_t *a = args_of(r);
	json_object_set_new(a, "req", body);
	aj_front_call(r, "exec", a, bg ? aj_front_reply : stream_done);
}

/* The file's path into a: "path" when it is UTF-8, else (bytes given
 * %-escaped, or "path_b64") "path_b64"; false when there is none (400
 * answered). The same form in r->file_path (r->file_path_b64). */
static bool path_args(aj_req *r, json_t *a)
{
	char buf[4096], b64[5600];
	const char *path = aj_http_arg(r, "path", buf, sizeof(buf));
	const char *pb = aj_http_arg(r, "path_b64", b64, sizeof(b64));
	if (!pb && path && !aj_utf8_valid(path, strlen(path)) &&
	    lws_b64_encode_string(path, (int)strlen(path), b64, (int)sizeof(b64)) > 0)
		pb = b64; /* bytes that are not UTF-8: JSON cannot carry them */
	if (!pb && !path) {
		aj_http_error(r, 400, "bad_path",
			      "'path' (or 'path_b64') must be an absolute path in the sandbox");
		return false;
	}
	r->file_path_b64 = pb != NULL;
	snprintf(r->file_path, sizeof(r->file_path), "%s", pb ? pb : path);
	json_object_set_new(a, pb ? "path_b64" : "path", json_string(r->file_path));
	return true;
}

/* An op whose arguments are the sandbox, the path and the named flags. */
static void files_op(aj_req *r, const char *op, const char *flag1, aj_call_done done)
{
	json_t *a = args_of(r);
	if (!path_args(r, a)) {
		json_decref(a);
		return;
	}
	if (flag1)
		json_object_set_new(a, flag1, json_boolean(flag(r, flag1)));
	char lb[64], cb[128];
	const char *limit = aj_http_arg(r, "limit", lb, sizeof(lb));
	const char *cursor = aj_http_arg(r, "cursor", cb, sizeof(cb));
	unsigned long long n = 0;
	if (limit && aj_parse_uint(limit, 1u << 30, &n) < 0) {
		json_decref(a);
		aj_http_error(r, 400, "bad_request", "'limit' must be a number of entries");
		return;
	}
	if (limit)
		json_object_set_new(a, "limit", json_integer((json_int_t)n));
	if (cursor)
		json_object_set_new(a, "cursor", json_string(cursor));
	aj_front_call(r, op, a, done);
}

/* An op with the request's JSON body as "body". */
static void with_body(aj_req *r, const char *op, json_t *a)
{
	json_t *body = body_or_fail(r);
	if (!body) {
		json_decref(a);
		return;
	}
	json_object_set_new(a, "body", body);
	aj_front_forward(r, op, a);
}

/* The code interpreter: a run (a stream) and its contexts (docs/api.md). */
static void code(aj_req *r, const route *rt)
{
	aj_error err;
	aj_err_clear(&err);
	json_t *a = args_of(r), *body = NULL;
	int m = r->method;
	const char *action = NULL;
	if (!strcmp(rt->sub, "code")) {
		aj_code_req q; /* checked here, again by the supervisor */
		if (!(body = body_or_fail(r)) ||
		    aj_code_req_parse(r->body, r->body_len, &q, &err) < 0) {
			if (body)
				aj_http_fail(r, 400, "bad_request", &err);
			json_decref(body);
			json_decref(a);
			return;
		}
		aj_code_req_free(&q);
		json_object_set_new(a, "body", body);
		aj_front_call(r, "code.run", a, stream_done);
		return;
	}
	if (!rt->ctx[0] && m == AJ_POST) {
		aj_code_ctx_req q;
		if (!(body = body_or_fail(r)) ||
		    aj_code_ctx_req_parse(r->body, r->body_len, &q, &err) < 0) {
			if (body)
				aj_http_fail(r, 400, "bad_request", &err);
			json_decref(body);
			json_decref(a);
			return;
		}
		aj_code_ctx_req_free(&q);
		json_object_set_new(a, "body", body);
		action = "create";
	} else if (!rt->ctx[0]) {
		action = "list";
	} else if (m == AJ_DELETE) {
		action = "delete";
	} else {
		action = rt->ctx_sub; /* restart, interrupt */
	}
	json_object_set_new(a, "action", json_string(action));
	if (rt->ctx[0])
		json_object_set_new(a, "context", json_string(rt->ctx));
	aj_front_forward(r, "code.ctx", a);
}

static void on_sandbox(aj_req *r, const route *rt)
{
	const char *sub = rt->sub;
	int m = r->method;
	json_t *a;
	if (!strcmp(sub, "pause") && m == AJ_POST)
		aj_front_forward(r, "pause", args_of(r));
	else if (!strcmp(sub, "resume") && m == AJ_POST)
		aj_front_forward(r, "resume", args_of(r));
	else if (!strcmp(sub, "snapshot") && m == AJ_POST)
		with_body(r, "snapshot", args_of(r));
	else if (!strcmp(sub, "fork") && m == AJ_POST)
		with_body(r, "fork", args_of(r));
	else if (!*sub && m == AJ_GET)
		aj_front_forward(r, "get", args_of(r));
	else if (!*sub && m == AJ_PATCH)
		with_body(r, "patch", args_of(r));
	else if (!*sub && m == AJ_DELETE)
		aj_front_forward(r, "delete", args_of(r));
	else if (!strcmp(sub, "exec") && m == AJ_POST)
		exec(r);
	else if (!strncmp(sub, "code", 4))
		code(r, rt);
	else if (!strcmp(sub, "exec") && m == AJ_GET)
		aj_http_error(r, 400, "bad_request",
			      "GET %s is the WebSocket exec: it needs 'Upgrade: websocket'",
			      r->path);
	else if (!strcmp(sub, "processes") && m == AJ_GET && !*rt->proc_sub) {
		a = args_of(r);
		if (rt->proc[0])
			json_object_set_new(a, "process", json_string(rt->proc));
		aj_front_forward(r, "procs.list", a);
	} else if (!strcmp(sub, "processes") && m == AJ_GET && !strcmp(rt->proc_sub, "output")) {
		char ob[96];
		const char *o = aj_http_arg(r, "offset", ob, sizeof(ob));
		unsigned long long off = 0;
		if (o && aj_parse_uint(o, ~0ULL >> 2, &off) < 0) {
			aj_http_error(r, 400, "bad_request", "'offset' must be a byte offset");
			return;
		}
		a = json_pack("{s:s, s:s, s:I, s:b}", "sandbox", r->sb_id, "process", rt->proc,
			      "offset", (json_int_t)off, "follow", flag(r, "follow"));
		aj_front_call(r, "procs.output", a, stream_done);
	} else if (!strcmp(sub, "processes") && m == AJ_POST && !strcmp(rt->proc_sub, "signal")) {
		a = args_of(r);
		json_object_set_new(a, "process", json_string(rt->proc));
		with_body(r, "procs.signal", a);
	} else if (!strcmp(sub, "files") && m == AJ_GET)
		files_op(r, "files.get", NULL, download_done);
	else if (!strcmp(sub, "files") && m == AJ_DELETE)
		files_op(r, "files.delete", "recursive", aj_front_reply);
	else if (!strcmp(sub, "files") && m == AJ_PUT) { /* an empty file */
		if (aj_api_begin_upload(r))
			aj_api_upload_done(r);
	} else if (!strcmp(sub, "mkdir") && m == AJ_POST)
		files_op(r, "files.mkdir", "parents", aj_front_reply);
	else
		aj_http_error(r, 405, "method_not_allowed", "%s does not take this method",
			      r->path);
}

/* ---- strictness: methods (405 with Allow), query arguments, bodies ---- */

/* The methods of the route at path (docs/openapi.json), as an Allow
 * header says them; NULL: no such route. */
static const char *route_allow(const char *path, const route *rt)
{
	static const char *const top[][2] = {
	    {"/healthz", "GET"}, {"/readyz", "GET"}, {"/metrics", "GET"}, {"/v1/pools", "GET"}};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(top); i++)
		if (!strcmp(path, top[i][0]))
			return top[i][1];
	if (!rt->ok)
		return NULL;
	if (!rt->id[0])
		return "GET, POST";
	const char *sub = rt->sub;
	if (!*sub)
		return "GET, PATCH, DELETE";
	if (!strcmp(sub, "exec"))
		return "GET, POST";
	if (!strcmp(sub, "files"))
		return "GET, PUT, DELETE";
	if (!strcmp(sub, "processes"))
		return !strcmp(rt->proc_sub, "signal") ? "POST" : "GET";
	if (!strcmp(sub, "code/contexts"))
		return !rt->ctx[0] ? "GET, POST" : *rt->ctx_sub ? "POST" : "DELETE";
	return "POST"; /* mkdir, pause, resume, snapshot, fork */
}

static const char *method_name(int m)
{
	static const char *const names[] = {
	    [AJ_GET] = "GET",	  [AJ_POST] = "POST",	  [AJ_PUT] = "PUT",
	    [AJ_PATCH] = "PATCH", [AJ_DELETE] = "DELETE", [AJ_OTHER] = "?"};
	return m >= 0 && m < (int)AJ_ARRAY_SIZE(names) ? names[m] : "?";
}

static bool allows(const char *allow, int m)
{
	const char *name = method_name(m);
	size_t n = strlen(name);
	for (const char *p = allow; (p = strstr(p, name)); p += n)
		if ((p == allow || p[-1] == ' ') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

/* The query arguments a request takes: "name:type ..." (b: true/false,
 * i: an unsigned integer, n: a number, s: a string). */
static const char *route_args(const route *rt, int m)
{
	const char *sub = rt->sub;
	if (!rt->id[0] || !sub)
		return "";
	if (!strcmp(sub, "files"))
		return m == AJ_GET	? "path:s path_b64:s limit:i cursor:s"
		       : m == AJ_PUT	? "path:s path_b64:s mode:s"
		       : m == AJ_DELETE ? "path:s path_b64:s recursive:b"
					: "";
	if (!strcmp(sub, "mkdir"))
		return "path:s path_b64:s parents:b";
	if (!strcmp(sub, "processes") && !strcmp(rt->proc_sub, "output"))
		return "offset:i follow:b";
	return "";
}

static bool arg_fits(char type, const char *v)
{
	unsigned long long n;
	char *end;
	switch (type) {
	case 'b':
		return !strcmp(v, "true") || !strcmp(v, "false") || !strcmp(v, "1") ||
		       !strcmp(v, "0");
	case 'i': return aj_parse_uint(v, ~0ULL >> 2, &n) == 0;
	case 'n': return *v && (strtod(v, &end), !*end);
	default: return true;
	}
}

/* Every query argument is one the request takes, of its type; else a 400
 * is answered and false returned. */
static bool check_args(aj_req *r, const char *known)
{
	char frag[8192];
	for (int i = 0;; i++) {
		int n =
		    lws_hdr_copy_fragment(r->wsi, frag, sizeof(frag), WSI_TOKEN_HTTP_URI_ARGS, i);
		if (n < 0)
			return true;
		char *eq = strchr(frag, '=');
		const char *v = eq ? eq + 1 : "";
		if (eq)
			*eq = '\0';
		size_t kl = strlen(frag);
		const char *k = known;
		while (k && *k) {
			const char *colon = strchr(k, ':');
			if (colon && (size_t)(colon - k) == kl && !strncmp(k, frag, kl))
				break;
			k = strchr(k, ' ');
			k = k ? k + 1 : NULL;
		}
		if (!k || !*k) {
			aj_http_error(r, 400, "bad_request",
				      "unknown query argument '%s' for %s %s", frag,
				      method_name(r->method), r->path);
			return false;
		}
		if (!arg_fits(strchr(k, ':')[1], v)) {
			char t = strchr(k, ':')[1];
			aj_http_error(r, 400, "bad_request", "'%s': expected %s", frag,
				      t == 'b'	 ? "true or false"
				      : t == 'i' ? "an unsigned integer"
						 : "a number");
			return false;
		}
	}
}

/* A request that takes no JSON body: none, or an empty object. */
static bool check_no_body(aj_req *r)
{
	if (!r->body_len)
		return true;
	json_t *b = body_or_fail(r);
	if (!b)
		return false;
	const char *k = NULL;
	json_t *v;
	json_object_foreach(b, k, v) break;
	if (k)
		aj_http_error(r, 400, "bad_request", "unknown field '%s': %s %s takes no body", k,
			      method_name(r->method), r->path);
	json_decref(b);
	return k == NULL;
}

/* Route, method, query arguments and body checked: false when an error
 * was answered. */
static bool check_request(aj_req *r, const route *rt)
{
	const char *allow = route_allow(r->path, rt);
	if (!allow) {
		aj_http_error(r, 404, "not_found", "no such endpoint: %s", r->path);
		return false;
	}
	if (!allows(allow, r->method)) {
		r->allow = allow;
		aj_http_error(r, 405, "method_not_allowed", "%s takes %s, not %s", r->path, allow,
			      method_name(r->method));
		return false;
	}
	if (!check_args(r, route_args(rt, r->method)))
		return false;
	bool json_body =
	    r->method == AJ_PATCH ||
	    (r->method == AJ_POST &&
	     (!rt->ok || !rt->id[0] || !strcmp(rt->sub, "exec") || !strcmp(rt->sub, "snapshot") ||
	      !strcmp(rt->sub, "fork") || !strcmp(rt->sub, "processes") ||
	      !strcmp(rt->sub, "code") || (!strcmp(rt->sub, "code/contexts") && !rt->ctx[0])));
	return json_body || r->method == AJ_PUT || check_no_body(r);
}

void aj_api_dispatch(aj_req *r)
{
	route rt = parse_route(r->path);
	if (!check_request(r, &rt))
		return;
	if (!strcmp(r->path, "/healthz") || !strcmp(r->path, "/readyz")) {
		aj_front_forward(r, r->path[1] == 'h' ? "health" : "ready", NULL);
		return;
	}
	if (!strcmp(r->path, "/metrics")) {
		aj_front_call(r, "metrics", NULL, metrics_done);
		return;
	}
	if (!strcmp(r->path, "/v1/pools")) {
		aj_front_forward(r, "pools", NULL);
		return;
	}
	if (!rt.id[0]) {
		if (r->method == AJ_POST)
			with_body(r, "create", json_object());
		else
			aj_front_forward(r, "list", NULL);
		return;
	}
	snprintf(r->sb_id, sizeof(r->sb_id), "%s", rt.id);
	on_sandbox(r, &rt);
}

/* ---- uploads: the supervisor opens the file, we fill it ---- */

static void upload_answer(aj_req *r)
{
	json_t *o = json_pack("{s:I}", "size", (json_int_t)r->uploaded);
	json_object_set_new(o, r->file_path_b64 ? "path_b64" : "path", json_string(r->file_path));
	if (r->file_path_b64)
		json_object_set_new(o, "path", json_null());
	aj_http_json(r, 201, o);
}

/* files.put_done's answer: the sandbox has the whole file (or an error). */
static void upload_written(aj_req *r, int status, json_t *reply, int fd)
{
	if (fd >= 0)
		close(fd);
	if (status != 200) {
		aj_front_reply(r, status, reply, -1);
		return;
	}
	json_decref(reply);
	upload_answer(r);
}

static void upload_finish(aj_req *r)
{
	int fd = r->upload_fd;
	r->upload_fd = -1;
	if (close(fd) < 0) {
		aj_http_error(r, 507, "write_failed", "cannot write %s: %s", r->file_path,
			      strerror(errno));
		return;
	}
	if (r->upload_wait) { /* a level's ops write it: answered when they end */
		json_t *a = args_of(r);
		json_object_set_new(a, "upload", json_integer((json_int_t)r->upload_wait));
		r->upload_wait = 0;
		aj_front_call(r, "files.put_done", a, upload_written);
		return;
	}
	upload_answer(r);
}

static int upload_write(aj_req *r, const void *buf, size_t len)
{
	int e = aj_write_all(r->upload_fd, buf, len);
	if (e < 0) {
		close(r->upload_fd);
		r->upload_fd = -1;
		aj_http_error(r, 507, "write_failed", "cannot write %s: %s", r->file_path,
			      strerror(-e));
		return e;
	}
	r->uploaded += len;
	return 0;
}

static void upload_opened(aj_req *r, int status, json_t *reply, int fd)
{
	lws_rx_flow_control(r->wsi, 1); /* the body comes (or is dropped) */
	if (r->status && fd >= 0) {	/* answered meanwhile (an error) */
		json_decref(reply);
		close(fd);
		return;
	}
	if (fd < 0 || status != 200) {
		aj_front_reply(r, status == 200 ? 500 : status, reply, fd);
		return;
	}
	r->upload_wait = (unsigned long long)json_integer_value(json_object_get(reply, "upload"));
	json_decref(reply);
	r->upload_fd = fd;
	/* what came while the file was being opened */
	if (r->body_len && upload_write(r, r->body, r->body_len) < 0)
		return;
	free(r->body);
	r->body = NULL;
	r->body_len = 0;
	if (r->body_done)
		upload_finish(r);
}

bool aj_api_begin_upload(aj_req *r)
{
	route rt = parse_route(r->path);
	if (!check_request(r, &rt))
		return false;
	char mb[64];
	snprintf(r->sb_id, sizeof(r->sb_id), "%s", rt.id);
	json_t *a = args_of(r);
	if (!path_args(r, a)) {
		json_decref(a);
		return false;
	}
	const char *mode = aj_http_arg(r, "mode", mb, sizeof(mb));
	if (mode)
		json_object_set_new(a, "mode", json_string(mode));
	r->upload = true;
	if (aj_front_call(r, "files.put", a, upload_opened) < 0)
		return false;
	lws_rx_flow_control(r->wsi, 0); /* the body waits for the file */
	return true;
}

int aj_api_upload_data(aj_req *r, const void *buf, size_t len)
{
	if (r->upload_fd >= 0)
		return upload_write(r, buf, len);
	/* the file is not open yet: keep (bounded) what still arrives */
	if (r->body_len + len > AJ_HTTP_MAX_BODY) {
		aj_http_error(r, 503, "busy", "the upload came faster than its file opened");
		return -EAGAIN;
	}
	char *b = realloc(r->body, r->body_len + len + 1);
	if (!b)
		return -ENOMEM;
	r->body = b;
	memcpy(r->body + r->body_len, buf, len);
	r->body_len += len;
	return 0;
}

void aj_api_upload_done(aj_req *r)
{
	r->body_done = true;
	if (r->upload_fd >= 0)
		upload_finish(r);
	/* else: when the file is open (upload_opened) */
}
