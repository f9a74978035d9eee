/* SPDX-License-Identifier: MIT */
/* The answers of the supervisor's ops and the checks of their arguments
 * (reply.h). */
#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

void aj_reply_json(aj_reply *rep, int status, json_t *o)
{
	json_decref(rep->body);
	rep->body = o ? o : json_object();
	rep->status = status;
}

void aj_reply_error(aj_reply *rep, int status, const char *code, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	aj_reply_json(rep, status,
		      json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
}

void aj_reply_denial(aj_reply *rep, const aj_denial *d)
{
	aj_reply_json(rep, 403,
		      json_pack("{s:{s:s, s:s, s:s?, s:s?}}", "error", "code", "forbidden",
				"message", d->msg, "policy_key", d->key, "policy_file", d->file));
}

void aj_reply_fail(aj_reply *rep, int status, const char *code, const aj_error *err)
{
	char msg[AJ_ERR_MSG_MAX + AJ_ERR_HINT_MAX + 64];
	aj_err_format(err, msg, sizeof(msg));
	/* the error's own status wins (e.g. 501 for what a level lacks) */
	if (err->status && err->api_code[0])
		status = err->status, code = err->api_code;
	aj_reply_error(rep, status, code, "%s", msg);
}

const char *aj_arg_str(json_t *args, const char *key, size_t max, bool optional, aj_reply *rep)
{
	json_t *v = json_object_get(args, key);
	if (!v && optional)
		return NULL;
	const char *s = json_string_value(v);
	if (!s || strlen(s) != json_string_length(v) || strlen(s) > max) {
		aj_reply_error(rep, 400, "bad_request",
			       "'%s': expected a string of at most %zu bytes", key, max);
		return NULL;
	}
	return s;
}

aj_sandbox *aj_arg_sandbox(json_t *args, aj_reply *rep)
{
	const char *id = aj_arg_str(args, "sandbox", 39, false, rep);
	if (!id)
		return NULL;
	aj_sandbox *sb = aj_registry_get(id);
	/* another tenant's sandbox is not there for this one (the same 404) */
	const char *tenant = json_string_value(json_object_get(args, "tenant"));
	if (sb && (!tenant || strcmp(sb->tenant, tenant) != 0)) {
		aj_sandbox_unref(sb);
		sb = NULL;
	}
	if (!sb)
		aj_reply_error(rep, 404, "not_found", "no sandbox '%s'", id);
	return sb;
}

aj_sandbox *aj_arg_running(json_t *args, aj_reply *rep)
{
	aj_sandbox *sb = aj_arg_sandbox(args, rep);
	if (sb && aj_sandbox_paused(sb)) {
		aj_reply_error(
		    rep, 409, "sandbox_paused",
		    "sandbox '%s' is paused: resume it first (POST /v1/sandboxes/%s/resume)",
		    sb->id, sb->id);
		aj_sandbox_unref(sb);
		return NULL;
	}
	return sb;
}

const char *aj_arg_peer(json_t *args)
{
	const char *p = json_string_value(json_object_get(args, "peer"));
	return p && strlen(p) < 80 && strspn(p, "0123456789abcdefABCDEF.:[]uid") == strlen(p) ? p
											      : "?";
}

bool aj_arg_bool(json_t *args, const char *key)
{
	return json_is_true(json_object_get(args, key));
}
