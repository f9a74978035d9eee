/* SPDX-License-Identifier: MIT */
/* The supervisor's ops on sandboxes themselves (sup.h): health, metrics,
 * create, list, get, patch (TTL), delete. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sup.h"
#include "util.h"

void aj_op_health(json_t *args, aj_reply *rep)
{
	(void)args;
	aj_reply_json(
	    rep, 200,
	    json_pack("{s:s, s:i}", "status", "ok", "sandboxes", (int)aj_registry_count()));
}

void aj_op_metrics(json_t *args, aj_reply *rep)
{
	(void)args;
	aj_reply_json(rep, 200, aj_metrics_json());
}

void aj_op_create(json_t *args, aj_reply *rep)
{
	aj_error err;
	aj_err_clear(&err);
	const char *peer = aj_arg_peer(args);
	json_t *body = json_object_get(args, "body");
	if (!json_is_object(body)) {
		aj_reply_error(rep, 400, "bad_request", "expected a JSON object");
		return;
	}
	json_t *req = json_deep_copy(body);
	json_t *logged = json_deep_copy(body);
	json_object_del(logged, "secret"); /* values never reach the log */
	aj_sandbox *sb = NULL;
	int rc = req ? aj_registry_create(req, peer, &sb, &err) : aj_err(&err, ENOMEM, "request");
	json_decref(req);
	if (rc < 0) {
		aj_metrics_add(&aj_stats.sandboxes_failed, 1);
		aj_audit("create_failed", json_pack("{s:s, s:o, s:s}", "peer", peer, "request",
						    logged, "error", err.msg));
		aj_reply_fail(rep,
			      rc == -EAGAIN					   ? 429
			      : err.exit == AJ_EXIT_INTERNAL && err.code == EINVAL ? 400
										   : 500,
			      rc == -EAGAIN ? "too_many_sandboxes" : "create_failed", &err);
		return;
	}
	aj_metrics_add(&aj_stats.sandboxes_created, 1);
	aj_audit("create", json_pack("{s:s, s:s, s:o, s:i}", "sandbox", sb->id, "peer", peer,
				     "request", logged, "keeper", (int)sb->box.keeper));
	aj_reply_json(rep, 201, aj_sandbox_json(sb));
	aj_sandbox_unref(sb);
}

void aj_op_list(json_t *args, aj_reply *rep)
{
	(void)args;
	aj_reply_json(rep, 200, aj_registry_list());
}

void aj_op_get(json_t *args, aj_reply *rep)
{
	aj_sandbox *sb = aj_arg_sandbox(args, rep);
	if (!sb)
		return;
	aj_reply_json(rep, 200, aj_sandbox_json(sb));
	aj_sandbox_unref(sb);
}

void aj_op_patch(json_t *args, aj_reply *rep)
{
	json_t *body = json_object_get(args, "body");
	json_t *t = json_object_get(body, "timeout");
	double s = json_number_value(t);
	if (!json_is_number(t) || s < 0 || s > AJ_DAEMON_MAX_TTL_S || json_object_size(body) != 1) {
		aj_reply_error(rep, 400, "bad_request",
			       "expected {\"timeout\": seconds from now (0: no TTL, at most %d)}",
			       AJ_DAEMON_MAX_TTL_S);
		return;
	}
	aj_sandbox *sb = aj_arg_sandbox(args, rep);
	if (!sb)
		return;
	aj_sandbox_set_ttl(sb, s);
	aj_audit("patch", json_pack("{s:s, s:s, s:f}", "sandbox", sb->id, "peer", aj_arg_peer(args),
				    "timeout", s));
	aj_reply_json(rep, 200, aj_sandbox_json(sb));
	aj_sandbox_unref(sb);
}

void aj_op_delete(json_t *args, aj_reply *rep)
{
	aj_sandbox *sb = aj_arg_sandbox(args, rep);
	if (!sb)
		return;
	char id[sizeof(sb->id)];
	snprintf(id, sizeof(id), "%s", sb->id);
	aj_registry_destroy(id);
	aj_audit("delete", json_pack("{s:s, s:s}", "sandbox", id, "peer", aj_arg_peer(args)));
	aj_sandbox_unref(sb); /* the last reference: gone before we answer */
	aj_reply_json(rep, 200, json_pack("{s:s, s:b}", "id", id, "deleted", 1));
}
