/* SPDX-License-Identifier: MIT */
/* The command's environment: a fixed minimal set plus --env, nothing of the
 * caller's environment unless asked for by name. */
#include <errno.h>
#include <string.h>

#include "policy.h"
#include "util.h"

void aj_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

/* Set NAME=VALUE in v (n entries used), replacing an existing NAME. */
static int strv_set(char **v, size_t *n, const char *entry)
{
	size_t nl = strcspn(entry, "=");
	char *dup = strdup(entry);
	if (!dup)
		return -ENOMEM;
	for (size_t i = 0; i < *n; i++) {
		if (strncmp(v[i], entry, nl) == 0 && v[i][nl] == '=') {
			free(v[i]);
			v[i] = dup;
			return 0;
		}
	}
	v[(*n)++] = dup;
	return 0;
}

char **aj_policy_build_env(const aj_policy *p, const char *term, char *const *extra)
{
	size_t n_extra = 0;
	while (extra && extra[n_extra])
		n_extra++;
	size_t cap = p->n_env + p->n_secrets + n_extra + 5, n = 0;
	char **v = calloc(cap, sizeof(char *));
	if (!v)
		return NULL;
	_cleanup_free_ char *t = aj_asprintf("TERM=%s", term && *term ? term : "dumb");
	const char *base[] = {"PATH=" AJ_DEFAULT_PATH, "HOME=" AJ_SANDBOX_HOME, t, "LANG=C.UTF-8"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(base); i++)
		if (!base[i] || strv_set(v, &n, base[i]) < 0)
			goto fail;
	for (size_t i = 0; i < n_extra; i++)
		if (strv_set(v, &n, extra[i]) < 0)
			goto fail;
	for (size_t i = 0; i < p->n_env; i++)
		if (strv_set(v, &n, p->env[i]) < 0)
			goto fail;
	/* secrets: the sandbox sees placeholders, never the values */
	for (size_t i = 0; i < p->n_secrets; i++) {
		_cleanup_free_ char *e =
		    aj_asprintf("%s=%s", p->secrets[i].name, p->secrets[i].placeholder);
		if (!e || strv_set(v, &n, e) < 0)
			goto fail;
	}
	v[n] = NULL;
	return v;
fail:
	aj_strv_free(v);
	return NULL;
}
