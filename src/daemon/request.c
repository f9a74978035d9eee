/* SPDX-License-Identifier: MIT */
#include "request.h"

#include <errno.h>
#include <string.h>

#include "policy.h"
#include "util.h"

json_t *aj_json_body(const char *body, size_t len, aj_error *err)
{
	if (!body || !len)
		return json_object();
	json_error_t je;
	/* NUL bytes may stand in a string (stdin); other fields refuse them */
	json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!o) {
		aj_err(err, EINVAL, "malformed JSON at line %d column %d: %s", je.line, je.column,
		       je.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		aj_err(err, EINVAL, "expected a JSON object");
		return NULL;
	}
	return o;
}

/* A JSON string without NUL bytes, copied. */
static int dup_string(json_t *v, const char *what, char **out, aj_error *err)
{
	if (!json_is_string(v))
		return aj_err(err, EINVAL, "'%s': expected a string", what);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return aj_err(err, EINVAL, "'%s': NUL bytes are not allowed", what);
	*out = strdup(json_string_value(v));
	return *out ? 0 : aj_err(err, ENOMEM, "%s", what);
}

static int parse_cmd(json_t *cmd, aj_exec_req *q, aj_error *err)
{
	if (json_is_string(cmd)) {
		if (!json_string_length(cmd))
			return aj_err(err, EINVAL, "'cmd': empty");
		q->argv = calloc(4, sizeof(char *));
		if (!q->argv || !(q->argv[0] = strdup("/bin/sh")) || !(q->argv[1] = strdup("-c")))
			return aj_err(err, ENOMEM, "cmd");
		return dup_string(cmd, "cmd", &q->argv[2], err);
	}
	if (!json_is_array(cmd) || !json_array_size(cmd))
		return aj_err(err, EINVAL,
			      "'cmd': expected a non-empty array of strings or a "
			      "shell command line");
	if (json_array_size(cmd) > AJ_EXEC_MAX_ARGS)
		return aj_err(err, E2BIG, "'cmd': more than %d arguments", AJ_EXEC_MAX_ARGS);
	q->argv = calloc(json_array_size(cmd) + 1, sizeof(char *));
	if (!q->argv)
		return aj_err(err, ENOMEM, "cmd");
	size_t i;
	json_t *a;
	json_array_foreach(cmd, i, a)
	{
		int r = dup_string(a, "cmd[]", &q->argv[i], err);
		if (r < 0)
			return r;
	}
	if (!q->argv[0][0])
		return aj_err(err, EINVAL, "'cmd': the command is empty");
	return 0;
}

static int parse_env(json_t *env, aj_exec_req *q, aj_error *err)
{
	if (!env || json_is_null(env))
		return 0;
	if (!json_is_object(env))
		return aj_err(err, EINVAL, "'env': expected an object {\"NAME\": \"VALUE\"}");
	if (json_object_size(env) > 1024)
		return aj_err(err, E2BIG, "'env': too many variables");
	q->env = calloc(json_object_size(env) + 1, sizeof(char *));
	if (!q->env)
		return aj_err(err, ENOMEM, "env");
	size_t n = 0;
	const char *k;
	json_t *v;
	json_object_foreach(env, k, v)
	{
		_cleanup_free_ char *val = NULL;
		int r = dup_string(v, "env", &val, err);
		if (r < 0)
			return r;
		if (!*k || strchr(k, '='))
			return aj_err(err, EINVAL, "'env': bad variable name '%s'", k);
		if (!(q->env[n++] = aj_asprintf("%s=%s", k, val)))
			return aj_err(err, ENOMEM, "env");
	}
	return 0;
}

static int parse_fields(json_t *o, aj_exec_req *q, aj_error *err)
{
	static const char *const known[] = {"cmd", "env", "cwd", "timeout", "stdin", "background"};
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		bool ok = false;
		for (size_t i = 0; i < AJ_ARRAY_SIZE(known); i++)
			ok |= strcmp(k, known[i]) == 0;
		if (!ok)
			return aj_err(err, EINVAL, "unknown field '%s'", k);
	}
	json_t *cmd = json_object_get(o, "cmd");
	if (!cmd)
		return aj_err(err, EINVAL, "'cmd' is required");
	int r = parse_cmd(cmd, q, err);
	if (r == 0)
		r = parse_env(json_object_get(o, "env"), q, err);
	json_t *v2 = json_object_get(o, "cwd");
	if (r == 0 && v2 && !json_is_null(v2)) {
		r = dup_string(v2, "cwd", &q->cwd, err);
		if (r == 0 && q->cwd[0] != '/')
			r = aj_err(err, EINVAL, "'cwd': expected an absolute path");
	}
	v2 = json_object_get(o, "timeout");
	if (r == 0 && v2 && !json_is_null(v2)) {
		double t = json_number_value(v2);
		if (!json_is_number(v2) || t < 0 || t > AJ_EXEC_MAX_TIMEOUT_S)
			return aj_err(err, EINVAL, "'timeout': expected 0 to %d seconds",
				      AJ_EXEC_MAX_TIMEOUT_S);
		q->timeout_ms = (unsigned long long)(t * 1000.0);
	}
	v2 = json_object_get(o, "background");
	if (r == 0 && v2 && !json_is_boolean(v2))
		return aj_err(err, EINVAL, "'background': expected true or false");
	q->background = json_is_true(v2);
	v2 = json_object_get(o, "stdin");
	if (r == 0 && v2 && !json_is_null(v2)) {
		if (!json_is_string(v2))
			return aj_err(err, EINVAL, "'stdin': expected a string");
		q->stdin_len = json_string_length(v2);
		q->stdin_data = malloc(q->stdin_len + 1);
		if (!q->stdin_data)
			return aj_err(err, ENOMEM, "stdin");
		memcpy(q->stdin_data, json_string_value(v2), q->stdin_len + 1);
	}
	return r;
}

int aj_exec_req_parse(const char *body, size_t len, aj_exec_req *q, aj_error *err)
{
	memset(q, 0, sizeof(*q));
	json_t *o = aj_json_body(body, len, err);
	if (!o)
		return -EINVAL;
	int r = parse_fields(o, q, err);
	if (r == 0)
		q->cmd = json_incref(json_object_get(o, "cmd"));
	json_decref(o);
	if (r < 0)
		aj_exec_req_free(q);
	return r;
}

void aj_exec_req_free(aj_exec_req *q)
{
	aj_strv_free(q->argv);
	aj_strv_free(q->env);
	free(q->cwd);
	free(q->stdin_data);
	json_decref(q->cmd);
	memset(q, 0, sizeof(*q));
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-' || c == ' ') /* ' ': a '+' that a query string turned */
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int aj_b64_decode(const char *in, size_t len, unsigned char *out, size_t cap, size_t *out_len)
{
	while (len && in[len - 1] == '=') /* padding: optional */
		len--;
	if (len % 4 == 1)
		return -EINVAL;
	size_t n = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < len; i++) {
		int v = b64_value((unsigned char)in[i]);
		if (v < 0)
			return -EINVAL;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n >= cap)
				return -ENAMETOOLONG;
			out[n++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0) /* bits left over that are not zero: not canonical */
		return -EINVAL;
	*out_len = n;
	return 0;
}

size_t aj_utf8_prefix(const unsigned char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned char c = s[i];
		size_t need = c < 0x80		   ? 1
			      : (c & 0xE0) == 0xC0 ? 2
			      : (c & 0xF0) == 0xE0 ? 3
			      : (c & 0xF8) == 0xF0 ? 4
						   : 0;
		if (c == 0 || need == 0 || i + need > len || (need == 2 && c < 0xC2) ||
		    (need == 4 && c > 0xF4))
			return i;
		for (size_t k = 1; k < need; k++)
			if ((s[i + k] & 0xC0) != 0x80)
				return i;
		unsigned cp = need == 1 ? c : c & (0x7F >> need);
		for (size_t k = 1; k < need; k++)
			cp = (cp << 6) | (s[i + k] & 0x3F);
		if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return i; /* overlong, out of range, a surrogate */
		i += need;
	}
	return i;
}

bool aj_utf8_valid(const char *s, size_t len)
{
	return aj_utf8_prefix((const unsigned char *)s, len) == len;
}
