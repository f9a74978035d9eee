/* SPDX-License-Identifier: MIT */
/* Routing of the API (docs/api.md) to its handlers. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "http.h"
#include "pool.h"
#include "procs.h"
#include "request.h"
#include "util.h"

#define PREFIX "/v1/sandboxes"

typedef struct route {
	char id[40];	 /* "" for the collection */
	const char *sub; /* "" for the sandbox itself, "exec", "files", "mkdir", "processes" */
	char proc[16];	 /* processes/{proc}[/output|/signal] */
	const char *proc_sub;
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
	rt.ok = *p == '/' && parse_procs(p + 1, &rt);
	return rt;
}

static void text(aj_req *r, const char *ctype, char *body)
{
	free(r->resp);
	r->resp = body;
	r->resp_len = body ? strlen(body) : 0;
	r->status = body ? 200 : 500;
	r->ctype = ctype;
	lws_callback_on_writable(r->wsi);
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

static void create(aj_req *r)
{
	aj_error err;
	aj_err_clear(&err);
	json_t *body = body_or_fail(r);
	if (!body)
		return;
	json_t *logged = json_deep_copy(body);
	json_object_del(logged, "secret"); /* values never reach the log */
	aj_sandbox *sb = NULL;
	int rc = aj_registry_create(body, r->peer, &sb, &err);
	json_decref(body);
	if (rc < 0) {
		aj_metrics_add(&aj_stats.sandboxes_failed, 1);
		aj_audit("create_failed", json_pack("{s:s, s:o, s:s}", "peer", r->peer, "request",
						    logged, "error", err.msg));
		aj_http_fail(r,
			     rc == -EAGAIN					  ? 429
			     : err.exit == AJ_EXIT_INTERNAL && err.code == EINVAL ? 400
										  : 500,
			     rc == -EAGAIN ? "too_many_sandboxes" : "create_failed", &err);
		return;
	}
	aj_metrics_add(&aj_stats.sandboxes_created, 1);
	aj_audit("create", json_pack("{s:s, s:s, s:o, s:i}", "sandbox", sb->id, "peer", r->peer,
				     "request", logged, "keeper", (int)sb->box.keeper));
	aj_http_json(r, 201, aj_sandbox_json(sb));
	aj_sandbox_unref(sb);
}

static void patch(aj_req *r, aj_sandbox *sb)
{
	json_t *body = body_or_fail(r);
	if (!body)
		return;
	json_t *t = json_object_get(body, "timeout");
	double s = json_number_value(t);
	if (!json_is_number(t) || s < 0 || s > AJ_DAEMON_MAX_TTL_S || json_object_size(body) != 1) {
		json_decref(body);
		aj_http_error(r, 400, "bad_request",
			      "expected {\"timeout\": seconds from now (0: no TTL, at most %d)}",
			      AJ_DAEMON_MAX_TTL_S);
		return;
	}
	json_decref(body);
	aj_sandbox_set_ttl(sb, s);
	aj_audit("patch",
		 json_pack("{s:s, s:s, s:f}", "sandbox", sb->id, "peer", r->peer, "timeout", s));
	aj_http_json(r, 200, aj_sandbox_json(sb));
}

/* An exec body asking for a background process (parsed again by its handler). */
static bool wants_background(aj_req *r)
{
	json_t *o = r->body ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
	bool bg = json_is_true(json_object_get(o, "background"));
	json_decref(o);
	return bg;
}

/* POST pause / resume */
static void pause_resume(aj_req *r, aj_sandbox *sb, bool pause)
{
	aj_error err;
	aj_err_clear(&err);
	int rc = aj_sandbox_pause(sb, pause, &err);
	if (rc < 0) {
		aj_http_fail(r, rc == -EALREADY ? 409 : 500,
			     rc == -EALREADY ? "conflict"
			     : pause	     ? "pause_failed"
					     : "resume_failed",
			     &err);
		return;
	}
	aj_audit(pause ? "pause" : "resume",
		 json_pack("{s:s, s:s}", "sandbox", sb->id, "peer", r->peer));
	aj_http_json(r, 200, aj_sandbox_json(sb));
}

/* POST snapshot {"name": NAME} */
static void snapshot(aj_req *r, aj_sandbox *sb)
{
	json_t *body = body_or_fail(r);
	if (!body)
		return;
	const char *name = json_string_value(json_object_get(body, "name"));
	aj_error err;
	aj_err_clear(&err);
	json_t *img = NULL;
	int rc = !name || json_object_size(body) != 1
		     ? aj_err(&err, EINVAL, "expected {\"name\": IMAGE-NAME}")
		     : aj_sandbox_snapshot(sb, name, &img, &err);
	if (rc < 0)
		aj_http_fail(r,
			     rc == -EINVAL   ? 400
			     : rc == -EEXIST ? 409
					     : 500,
			     rc == -EINVAL   ? "bad_request"
			     : rc == -EEXIST ? "conflict"
					     : "snapshot_failed",
			     &err);
	else {
		aj_audit("snapshot", json_pack("{s:s, s:s, s:s, s:s}", "sandbox", sb->id, "peer",
					       r->peer, "image", name, "digest",
					       json_string_value(json_object_get(img, "digest"))));
		aj_http_json(r, 201, img);
	}
	json_decref(body);
}

/* POST fork {"count": N, "timeout": S} */
static void fork_sandbox(aj_req *r, aj_sandbox *sb)
{
	json_t *body = body_or_fail(r);
	if (!body)
		return;
	json_t *c = json_object_get(body, "count"), *t = json_object_get(body, "timeout");
	json_int_t n = c ? json_integer_value(c) : 1;
	double ttl = t ? json_number_value(t) : AJ_DAEMON_DEFAULT_TTL_S;
	aj_error err;
	aj_err_clear(&err);
	json_t *list = NULL;
	size_t known = (c != NULL) + (t != NULL);
	int rc = (c && !json_is_integer(c)) || n < 1 || n > AJ_FORK_MAX
		     ? aj_err(&err, EINVAL, "'count': expected 1 to %d", AJ_FORK_MAX)
		 : (t && !json_is_number(t)) || ttl < 0 || ttl > AJ_DAEMON_MAX_TTL_S
		     ? aj_err(&err, EINVAL, "'timeout': expected 0 (no TTL) to %d seconds",
			      AJ_DAEMON_MAX_TTL_S)
		 : json_object_size(body) != known
		     ? aj_err(&err, EINVAL, "fork takes only 'count' and 'timeout'")
		     : aj_sandbox_fork(sb, (unsigned)n, ttl, r->peer, &list, &err);
	json_decref(body);
	if (rc < 0) {
		aj_http_fail(r,
			     rc == -EINVAL   ? 400
			     : rc == -EAGAIN ? 429
					     : 500,
			     rc == -EINVAL   ? "bad_request"
			     : rc == -EAGAIN ? "too_many_sandboxes"
					     : "fork_failed",
			     &err);
		return;
	}
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(list, "sandboxes"), i, v)
	{
		aj_sandbox *f = aj_registry_get(json_string_value(json_object_get(v, "id")));
		aj_metrics_add(&aj_stats.sandboxes_created, 1);
		if (f)
			aj_audit("fork",
				 json_pack("{s:s, s:s, s:s, s:i}", "sandbox", f->id, "fork_of",
					   sb->id, "peer", r->peer, "keeper", (int)f->box.keeper));
		aj_sandbox_unref(f);
	}
	aj_http_json(r, 201, list);
}

/* Work that needs the sandbox's processes running. */
static bool needs_running(const route *rt, int m)
{
	return !strcmp(rt->sub, "exec") || !strcmp(rt->sub, "files") || !strcmp(rt->sub, "mkdir") ||
	       (!strcmp(rt->sub, "processes") && m == AJ_POST);
}

static void on_sandbox(aj_req *r, const route *rt, aj_sandbox *sb)
{
	const char *sub = rt->sub;
	int m = r->method;
	if (needs_running(rt, m) && aj_sandbox_paused(sb))
		aj_http_error(r, 409, "sandbox_paused",
			      "sandbox '%s' is paused: resume it first (POST %s/%s/resume)", sb->id,
			      PREFIX, sb->id);
	else if (!strcmp(sub, "pause") && m == AJ_POST)
		pause_resume(r, sb, true);
	else if (!strcmp(sub, "resume") && m == AJ_POST)
		pause_resume(r, sb, false);
	else if (!strcmp(sub, "snapshot") && m == AJ_POST)
		snapshot(r, sb);
	else if (!strcmp(sub, "fork") && m == AJ_POST)
		fork_sandbox(r, sb);
	else if (!*sub && m == AJ_GET)
		aj_http_json(r, 200, aj_sandbox_json(sb));
	else if (!*sub && m == AJ_PATCH)
		patch(r, sb);
	else if (!*sub && m == AJ_DELETE) {
		aj_registry_destroy(sb->id);
		aj_audit("delete", json_pack("{s:s, s:s}", "sandbox", sb->id, "peer", r->peer));
		aj_http_json(r, 200, json_pack("{s:s, s:b}", "id", sb->id, "deleted", 1));
		r->sb = NULL;
		aj_sandbox_unref(sb); /* the last reference: gone before we answer */
	} else if (!strcmp(sub, "exec") && m == AJ_POST && wants_background(r))
		aj_procs_start(r, sb);
	else if (!strcmp(sub, "exec") && m == AJ_POST)
		aj_exec_start(r, sb);
	else if (!strcmp(sub, "processes") && m == AJ_GET && !*rt->proc_sub)
		aj_procs_list(r, sb, rt->proc[0] ? rt->proc : NULL);
	else if (!strcmp(sub, "processes") && m == AJ_GET && !strcmp(rt->proc_sub, "output"))
		aj_procs_output(r, sb, rt->proc);
	else if (!strcmp(sub, "processes") && m == AJ_POST && !strcmp(rt->proc_sub, "signal"))
		aj_procs_signal(r, sb, rt->proc);
	else if (!strcmp(sub, "files") && m == AJ_GET)
		aj_files_get(r, sb);
	else if (!strcmp(sub, "files") && m == AJ_DELETE)
		aj_files_delete(r, sb);
	else if (!strcmp(sub, "files") && m == AJ_PUT) { /* an empty file */
		if (aj_files_open_upload(r, sb) == 0)
			aj_files_finish_upload(r);
	} else if (!strcmp(sub, "mkdir") && m == AJ_POST)
		aj_files_mkdir(r, sb);
	else
		aj_http_error(r, 405, "method_not_allowed", "%s does not take this method",
			      r->path);
}

/* The sandbox of a route, with a reference held by the request. */
static aj_sandbox *find(aj_req *r, const route *rt)
{
	aj_sandbox *sb = aj_registry_get(rt->id);
	if (!sb) {
		aj_http_error(r, 404, "not_found", "no sandbox '%s'", rt->id);
		return NULL;
	}
	aj_sandbox_unref(r->sb);
	r->sb = sb;
	return sb;
}

void aj_api_dispatch(aj_req *r)
{
	if (!strcmp(r->path, "/healthz") && r->method == AJ_GET) {
		aj_http_json(
		    r, 200,
		    json_pack("{s:s, s:i}", "status", "ok", "sandboxes", (int)aj_registry_count()));
		return;
	}
	if (!strcmp(r->path, "/metrics") && r->method == AJ_GET) {
		text(r, "text/plain; version=0.0.4", aj_metrics_text());
		return;
	}
	if (!strcmp(r->path, "/v1/pools") && r->method == AJ_GET) {
		aj_http_json(r, 200, aj_pool_json());
		return;
	}
	route rt = parse_route(r->path);
	if (!rt.ok) {
		aj_http_error(r, 404, "not_found", "no such endpoint: %s", r->path);
		return;
	}
	if (!rt.id[0]) {
		if (r->method == AJ_POST)
			create(r);
		else if (r->method == AJ_GET)
			aj_http_json(r, 200, aj_registry_list());
		else
			aj_http_error(r, 405, "method_not_allowed", "use GET or POST on %s",
				      PREFIX);
		return;
	}
	aj_sandbox *sb = r->sb ? r->sb : find(r, &rt);
	if (sb)
		on_sandbox(r, &rt, sb);
}

bool aj_api_begin_upload(aj_req *r)
{
	route rt = parse_route(r->path);
	if (!rt.ok || !rt.id[0] || strcmp(rt.sub, "files") != 0) {
		aj_http_error(r, rt.ok ? 405 : 404, rt.ok ? "method_not_allowed" : "not_found",
			      "PUT is for %s/{id}/files", PREFIX);
		return false;
	}
	aj_sandbox *sb = find(r, &rt);
	if (sb && aj_sandbox_paused(sb)) {
		aj_http_error(r, 409, "sandbox_paused",
			      "sandbox '%s' is paused: resume it first (POST %s/%s/resume)", sb->id,
			      PREFIX, sb->id);
		return false;
	}
	return sb && aj_files_open_upload(r, sb) == 0;
}

int aj_api_upload_data(aj_req *r, const void *buf, size_t len)
{
	int e = aj_write_all(r->upload_fd, buf, len);
	if (e < 0) {
		errno = -e;
		close(r->upload_fd);
		r->upload_fd = -1;
		return e;
	}
	r->uploaded += len;
	return 0;
}
