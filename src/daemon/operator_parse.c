/* SPDX-License-Identifier: MIT */
/* The operator policy and the tokens file: parsing only, no I/O (operator.h).
 * Every key is known or refused: a typo in a file that decides what
 * clients may do must not be ignored. */
#include <errno.h>
#include <math.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "operator.h"
#include "policy.h"
#include "util.h"

void aj_operator_default(aj_operator_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->images_any = true;
	p->net = (1u << AJ_NET_NONE) | (1u << AJ_NET_OPEN) | (1u << AJ_NET_ALLOW);
}

void aj_operator_free(aj_operator_policy *p)
{
	for (size_t i = 0; i < p->n_binds; i++)
		free(p->binds[i].path);
	for (size_t i = 0; i < p->n_rootfs; i++)
		free(p->rootfs[i].path);
	for (size_t i = 0; i < p->n_images; i++)
		free(p->images[i]);
	aj_operator_default(p);
}

bool aj_op_normalize(const char *path, char *out, size_t len)
{
	if (!path || path[0] != '/' || len < 2)
		return false;
	size_t o = 0;
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return false;
		if (!(n == 1 && p[0] == '.')) {
			if (o + 1 + n + 1 > len)
				return false;
			out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return true;
}

bool aj_op_under(const char *path, const char *root)
{
	size_t n = strlen(root);
	if (n == 1 && root[0] == '/')
		return true;
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void aj_token_digest(const char *token, size_t len, unsigned char out[32])
{
	SHA256((const unsigned char *)token, len, out);
}

bool aj_tenant_name_ok(const char *name)
{
	size_t n = strlen(name);
	return n > 0 && n <= AJ_TENANT_NAME_MAX &&
	       ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')) &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* A size: "512M" or a number of bytes. */
static int cap_size(json_t *v, const char *key, unsigned long long *out, aj_error *err)
{
	if (json_is_integer(v) && json_integer_value(v) > 0) {
		*out = (unsigned long long)json_integer_value(v);
		return 0;
	}
	if (json_is_string(v) && aj_parse_size(json_string_value(v), out) == 0 && *out > 0)
		return 0;
	return aj_err(err, EINVAL, "'%s': expected a size such as \"512M\" or a number of bytes",
		      key);
}

static int cap_number(json_t *v, const char *key, double min, double max, double *out,
		      aj_error *err)
{
	double d = NAN;
	if (json_is_number(v))
		d = json_number_value(v);
	else if (json_is_string(v)) {
		char *end;
		d = strtod(json_string_value(v), &end);
		if (end == json_string_value(v) || *end)
			d = NAN;
	}
	if (!isfinite(d) || d < min || d > max)
		return aj_err(err, EINVAL, "'%s': expected a number from %g to %g", key, min, max);
	*out = d;
	return 0;
}

/* One of the cap keys: 1 when key is one (set or refused), 0 when not. */
static int cap_key(aj_caps *c, const char *key, json_t *v, aj_error *err, int *r)
{
	double d;
	*r = 0;
	if (!strcmp(key, "max_memory"))
		*r = cap_size(v, key, &c->memory, err);
	else if (!strcmp(key, "max_disk"))
		*r = cap_size(v, key, &c->disk, err);
	else if (!strcmp(key, "max_pids")) {
		if ((*r = cap_number(v, key, 1, 4194304, &d, err)) == 0)
			c->pids = (unsigned long long)d;
	} else if (!strcmp(key, "max_cpus")) {
		if ((*r = cap_number(v, key, 0.01, 4096, &d, err)) == 0)
			c->cpu_millis = (unsigned long long)(d * 1000.0 + 0.5);
	} else if (!strcmp(key, "max_timeout")) {
		if ((*r = cap_number(v, key, 1, 7 * 24 * 3600, &d, err)) == 0)
			c->timeout_s = (unsigned long long)d;
	} else if (!strcmp(key, "max_sandboxes")) {
		if ((*r = cap_number(v, key, 1, 100000, &d, err)) == 0)
			c->sandboxes = (unsigned long long)d;
	} else
		return 0;
	return 1;
}

/* A root: "/path" or {"path": "/path", "rw": bool}. */
static int parse_root(json_t *v, const char *key, bool allow_rw, aj_root *out, aj_error *err)
{
	json_t *pv = json_is_object(v) ? json_object_get(v, "path") : v;
	json_t *rw = json_is_object(v) ? json_object_get(v, "rw") : NULL;
	size_t known = (json_object_get(v, "path") != NULL) + (rw != NULL);
	const char *s = json_string_value(pv);
	char norm[4096];
	if (json_is_object(v) && json_object_size(v) != known)
		return aj_err(err, EINVAL, "'%s': an entry takes only \"path\"%s", key,
			      allow_rw ? " and \"rw\"" : "");
	if (!s || strlen(s) != json_string_length(pv) || !aj_op_normalize(s, norm, sizeof(norm)))
		return aj_err(err, EINVAL,
			      "'%s': expected absolute host paths without '..' (got %s)", key,
			      s ? s : "no string");
	if (!strcmp(norm, "/"))
		return aj_err(err, EINVAL,
			      "'%s': '/' would let clients bind the whole host: name the "
			      "directories they may use",
			      key);
	if (rw && (!json_is_boolean(rw) || !allow_rw))
		return aj_err(err, EINVAL, "'%s': \"rw\" is true or false", key);
	out->path = strdup(norm);
	out->rw = rw && json_is_true(rw);
	return out->path ? 0 : aj_err(err, ENOMEM, "out of memory");
}

static int parse_roots(json_t *v, const char *key, bool allow_rw, aj_root *roots, size_t *n,
		       aj_error *err)
{
	if (!json_is_array(v) || json_array_size(v) > AJ_OP_MAX_ROOTS)
		return aj_err(err, EINVAL, "'%s': expected an array of at most %d entries", key,
			      AJ_OP_MAX_ROOTS);
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e)
	{
		int r = parse_root(e, key, allow_rw, &roots[*n], err);
		if (r < 0)
			return r;
		(*n)++;
	}
	return 0;
}

static int parse_images(json_t *v, aj_operator_policy *p, aj_error *err)
{
	if (!json_is_array(v) || json_array_size(v) > AJ_OP_MAX_IMAGES)
		return aj_err(err, EINVAL,
			      "'images': expected an array of at most %d names or patterns",
			      AJ_OP_MAX_IMAGES);
	p->images_any = false;
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e)
	{
		const char *s = json_string_value(e);
		if (!s || !*s || strlen(s) != json_string_length(e) || strlen(s) > 128 ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-*?[]") != strlen(s))
			return aj_err(err, EINVAL,
				      "'images': expected image names or patterns such as "
				      "\"debian-*\"");
		if (!(p->images[p->n_images] = strdup(s)))
			return aj_err(err, ENOMEM, "out of memory");
		p->n_images++;
	}
	return 0;
}

static int parse_net(json_t *v, aj_operator_policy *p, aj_error *err)
{
	if (!json_is_array(v))
		return aj_err(err, EINVAL,
			      "'net': expected an array of \"none\", \"open\", \"allow\"");
	p->net = 0;
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e)
	{
		const char *s = json_string_value(e);
		if (s && !strcmp(s, "none"))
			p->net |= 1u << AJ_NET_NONE;
		else if (s && !strcmp(s, "open"))
			p->net |= 1u << AJ_NET_OPEN;
		else if (s && !strcmp(s, "allow"))
			p->net |= 1u << AJ_NET_ALLOW;
		else
			return aj_err(err, EINVAL,
				      "'net': expected \"none\", \"open\" or \"allow\" (got %s)",
				      s ? s : "no string");
	}
	return 0;
}

static int parse_key(aj_operator_policy *p, const char *key, json_t *v, aj_error *err)
{
	int r;
	if (cap_key(&p->caps, key, v, err, &r))
		return r;
	if (!strcmp(key, "bind_roots"))
		return parse_roots(v, key, true, p->binds, &p->n_binds, err);
	if (!strcmp(key, "rootfs_roots"))
		return parse_roots(v, key, false, p->rootfs, &p->n_rootfs, err);
	if (!strcmp(key, "images"))
		return parse_images(v, p, err);
	if (!strcmp(key, "net"))
		return parse_net(v, p, err);
	if (!strcmp(key, "version"))
		return json_is_integer(v) && json_integer_value(v) == 1
			   ? 0
			   : aj_err(err, EINVAL, "'version': only 1 is known");
	return aj_err(err, EINVAL,
		      "unknown key '%s' (known: bind_roots, rootfs_roots, images, net, "
		      "max_memory, max_pids, max_cpus, max_disk, max_timeout, max_sandboxes)",
		      key);
}

int aj_operator_parse(const char *text, size_t len, aj_operator_policy *p, aj_error *err)
{
	aj_operator_default(p);
	json_error_t je;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return aj_err(err, EINVAL, "not JSON: %s (line %d)", je.text, je.line);
	int r = json_is_object(o) ? 0 : aj_err(err, EINVAL, "expected a JSON object");
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		if (r == 0)
			r = parse_key(p, key, v, err);
	}
	json_decref(o);
	if (r < 0)
		aj_operator_free(p);
	return r < 0 ? -EINVAL : 0;
}

static int parse_tenant(json_t *e, size_t i, aj_tenant *t, aj_error *err)
{
	memset(t, 0, sizeof(*t));
	if (!json_is_object(e))
		return aj_err(err, EINVAL, "entry %zu: expected an object {\"tenant\", \"token\"}",
			      i);
	const char *name = json_string_value(json_object_get(e, "tenant"));
	json_t *tv = json_object_get(e, "token");
	const char *tok = json_string_value(tv);
	if (!name || !aj_tenant_name_ok(name))
		return aj_err(err, EINVAL,
			      "entry %zu: 'tenant': expected a name of 1 to %d characters "
			      "[a-z0-9_-], starting with a letter or digit",
			      i, AJ_TENANT_NAME_MAX);
	size_t tl = tok ? strlen(tok) : 0;
	bool printable = tok && tl == json_string_length(tv);
	for (size_t k = 0; printable && k < tl; k++)
		printable = tok[k] > ' ' && tok[k] < 0x7f;
	if (!printable || tl < AJ_TOKEN_MIN || tl > AJ_TOKEN_MAX)
		return aj_err(err, EINVAL,
			      "tenant %s: 'token': expected %d to %d printable characters "
			      "without spaces",
			      name, AJ_TOKEN_MIN, AJ_TOKEN_MAX);
	snprintf(t->name, sizeof(t->name), "%s", name);
	aj_token_digest(tok, tl, t->digest);
	t->has_token = true;
	const char *key;
	json_t *v;
	json_object_foreach(e, key, v)
	{
		int r;
		if (!strcmp(key, "tenant") || !strcmp(key, "token"))
			continue;
		if (!cap_key(&t->caps, key, v, err, &r))
			return aj_err(err, EINVAL,
				      "tenant %s: unknown key '%s' (known: tenant, token, "
				      "max_memory, max_pids, max_cpus, max_disk, max_timeout, "
				      "max_sandboxes)",
				      name, key);
		if (r < 0) {
			char m[AJ_ERR_MSG_MAX];
			snprintf(m, sizeof(m), "%s", err->msg);
			return aj_err(err, EINVAL, "tenant %s: %s", name, m);
		}
	}
	return 0;
}

int aj_tenants_parse(const char *text, size_t len, aj_tenant *out, size_t max, size_t *n,
		     aj_error *err)
{
	*n = 0;
	json_error_t je;
	json_t *a = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!a)
		return aj_err(err, EINVAL, "not JSON: %s (line %d)", je.text, je.line);
	int r = 0;
	if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > max)
		r = aj_err(err, EINVAL,
			   "expected a JSON array of 1 to %zu objects {\"tenant\", \"token\"}",
			   max);
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
	{
		if (r < 0)
			break;
		r = parse_tenant(e, i, &out[i], err);
		for (size_t k = 0; r == 0 && k < i; k++) {
			if (!strcmp(out[k].name, out[i].name))
				r = aj_err(err, EINVAL, "tenant %s is named twice", out[i].name);
			else if (!memcmp(out[k].digest, out[i].digest, 32))
				r = aj_err(err, EINVAL, "tenants %s and %s have the same token",
					   out[k].name, out[i].name);
		}
		if (r == 0)
			*n = i + 1;
	}
	json_decref(a);
	if (r < 0) {
		explicit_bzero(out, max * sizeof(*out));
		*n = 0;
	}
	return r < 0 ? -EINVAL : 0;
}
