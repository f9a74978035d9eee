/* SPDX-License-Identifier: MIT */
/* The code interpreter's request bodies (code_req.h): strict, as every
 * body of the API (docs/api.md, "Strictness"): unknown fields and wrong
 * types are refused, never coerced. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "code_req.h"
#include "request.h"

bool aj_code_ctx_name_ok(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n <= AJ_CODE_CTX_NAME_MAX &&
	       strchr("abcdefghijklmnopqrstuvwxyz0123456789", s[0]) &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* A string field without NUL bytes (absent: NULL, 0). */
static int str_field(json_t *o, const char *key, const char **out, aj_error *err)
{
	json_t *v = json_object_get(o, key);
	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return aj_err(err, EINVAL, "'%s': expected a string", key);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return aj_err(err, EINVAL, "'%s': NUL bytes are not allowed", key);
	*out = json_string_value(v);
	return 0;
}

static int check_keys(json_t *o, const char *const *known, size_t n, aj_error *err)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		size_t i = 0;
		while (i < n && strcmp(known[i], k))
			i++;
		if (i == n)
			return aj_err(err, EINVAL, "unknown field '%s'", k);
	}
	return 0;
}

static int language(json_t *o, aj_error *err)
{
	const char *lang;
	int r = str_field(o, "language", &lang, err);
	if (r == 0 && lang && strcmp(lang, "python"))
		return aj_err(err, EINVAL, "'language': only \"python\" is supported, not '%s'",
			      lang);
	return r;
}

static int ctx_name(json_t *o, const char *key, char *out, aj_error *err)
{
	const char *s;
	int r = str_field(o, key, &s, err);
	if (r < 0 || !s)
		return r;
	if (!aj_code_ctx_name_ok(s))
		return aj_err(err, EINVAL,
			      "'%s': a context's name is [a-z0-9][a-z0-9_-]*, at most %d bytes",
			      key, AJ_CODE_CTX_NAME_MAX);
	strcpy(out, s);
	return 0;
}

int aj_code_req_parse(const char *body, size_t len, aj_code_req *q, aj_error *err)
{
	static const char *const known[] = {"code", "context", "language", "timeout"};
	memset(q, 0, sizeof(*q));
	strcpy(q->context, "default");
	q->timeout_s = AJ_CODE_DEFAULT_TIMEOUT_S;
	json_t *o = aj_json_body(body, len, err);
	if (!o)
		return -EINVAL;
	const char *code = NULL;
	json_t *t = json_object_get(o, "timeout");
	int r = check_keys(o, known, sizeof(known) / sizeof(known[0]), err);
	if (r == 0)
		r = str_field(o, "code", &code, err);
	if (r == 0 && !code)
		r = aj_err(err, EINVAL, "'code': required (the Python source to run)");
	if (r == 0)
		r = ctx_name(o, "context", q->context, err);
	if (r == 0)
		r = language(o, err);
	if (r == 0 && t &&
	    (!json_is_number(t) || !isfinite(json_number_value(t)) || json_number_value(t) <= 0 ||
	     json_number_value(t) > AJ_CODE_MAX_TIMEOUT_S))
		r = aj_err(err, EINVAL, "'timeout': expected a number of seconds, > 0 and <= %d",
			   AJ_CODE_MAX_TIMEOUT_S);
	if (r == 0 && t)
		q->timeout_s = json_number_value(t);
	if (r == 0 && !(q->code = strdup(code)))
		r = aj_err(err, ENOMEM, "code");
	json_decref(o);
	if (r < 0)
		aj_code_req_free(q);
	return r;
}

void aj_code_req_free(aj_code_req *q)
{
	free(q->code);
	q->code = NULL;
}

int aj_code_ctx_req_parse(const char *body, size_t len, aj_code_ctx_req *q, aj_error *err)
{
	static const char *const known[] = {"id", "language", "cwd"};
	memset(q, 0, sizeof(*q));
	json_t *o = aj_json_body(body, len, err);
	if (!o)
		return -EINVAL;
	const char *cwd = NULL;
	int r = check_keys(o, known, sizeof(known) / sizeof(known[0]), err);
	if (r == 0)
		r = ctx_name(o, "id", q->id, err);
	if (r == 0)
		r = language(o, err);
	if (r == 0)
		r = str_field(o, "cwd", &cwd, err);
	if (r == 0 && cwd && (cwd[0] != '/' || strlen(cwd) > 4096))
		r = aj_err(err, EINVAL, "'cwd': expected an absolute path inside the sandbox");
	if (r == 0 && cwd && !(q->cwd = strdup(cwd)))
		r = aj_err(err, ENOMEM, "cwd");
	json_decref(o);
	if (r < 0)
		aj_code_ctx_req_free(q);
	return r;
}

void aj_code_ctx_req_free(aj_code_ctx_req *q)
{
	free(q->cwd);
	q->cwd = NULL;
}

/* A MIME bundle: string values only (application/json: any JSON value). */
static json_t *clean_bundle(json_t *d)
{
	json_t *out = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(d, k, v)
	{
		if (json_is_string(v) || (!strcmp(k, "application/json") && !json_is_null(v)))
			json_object_set(out, k, v);
	}
	return out;
}

/* The strings of an array (anything else dropped). */
static json_t *strings_of(json_t *a)
{
	json_t *out = json_array();
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		if (json_is_string(v))
			json_array_append(out, v);
	}
	return out;
}

json_t *aj_code_event(json_t *m, const char *ctx, bool oom)
{
	const char *type = json_string_value(json_object_get(m, "type"));
	json_t *v;
	if (!type)
		return NULL;
	if (!strcmp(type, "stdout") || !strcmp(type, "stderr"))
		return json_is_string(v = json_object_get(m, "data"))
			   ? json_pack("{s:s, s:O}", "type", type, "data", v)
			   : NULL;
	if (!strcmp(type, "display") || !strcmp(type, "result")) {
		json_t *o = json_pack("{s:s, s:o}", "type", type, "data",
				      clean_bundle(json_object_get(m, "data")));
		if (o && json_is_integer(v = json_object_get(m, "execution_count")))
			json_object_set(o, "execution_count", v);
		return o;
	}
	if (!strcmp(type, "error")) {
		const char *name = json_string_value(json_object_get(m, "name"));
		const char *val = json_string_value(json_object_get(m, "value"));
		return json_pack("{s:s, s:s, s:s, s:o}", "type", "error", "name", name ? name : "",
				 "value", val ? val : "", "traceback",
				 strings_of(json_object_get(m, "traceback")));
	}
	if (!strcmp(type, "end"))
		return json_pack(
		    "{s:s, s:s, s:O, s:b, s:b, s:b, s:I}", "type", "end", "context", ctx,
		    "execution_count",
		    json_is_integer(v = json_object_get(m, "execution_count")) ? v : json_null(),
		    "timed_out", json_is_true(json_object_get(m, "timed_out")), "oom_killed", oom,
		    "restarted", json_is_true(json_object_get(m, "restarted")), "duration_ms",
		    json_integer_value(json_object_get(m, "duration_ms")));
	return NULL;
}
