/* SPDX-License-Identifier: MIT */
/* The exec request's pieces, every addition checked: an out-of-memory in
 * jansson fails the request, it never drops an argument, a variable or the
 * user (tests/unit/test_agent_frame.c). */
#include "execreq.h"

json_t *aj_mv_json_strv(char *const *v)
{
	json_t *a = json_array();
	for (; a && v && *v; v++)
		if (json_array_append_new(a, json_string(*v)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *aj_mv_json_set(json_t *q, const char *key, json_t *v)
{
	if (!q || json_object_set_new(q, key, v) < 0) { /* set_new released v */
		if (!q)
			json_decref(v);
		json_decref(q);
		return NULL;
	}
	return q;
}

json_t *aj_mv_exec_user(json_t *q, unsigned uid, unsigned gid)
{
	q = aj_mv_json_set(q, "uid", json_integer(uid));
	return aj_mv_json_set(q, "gid", json_integer(gid));
}
