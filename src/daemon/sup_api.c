/* SPDX-License-Identifier: MIT */
/* The supervisor's ops on sandboxes themselves (sup_api.h): health, metrics,
 * create, list, get, patch (TTL), delete. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "metrics.h"
#include "pool.h"
#include "registry.h"
#include "snapshot.h"
#include "sup_api.h"
#include "tenant.h"
#include "util.h"

/* The name of a tenant that sees only its own counters and pools, or NULL
 * for the operator, who sees the service's. */
static const char *own_view(json_t *args)
{
	aj_tenant *t = aj_tenant_of(args);
	return t && aj_tenant_is_operator(t) ? NULL : t ? t->name : "";
}

/* Whose sandboxes: every tenant sees its own only, the operator too. */
static const char *tenant_name(json_t *args)
{
	aj_tenant *t = aj_tenant_of(args);
	return t ? t->name : "";
}

/* The probes answer without a token: the state and nothing else. */
void aj_op_health(json_t *args, aj_reply *rep)
{
	(void)args;
	aj_reply_json(rep, 200, json_pack("{s:s}", "status", "ok"));
}

/* Ready once every pool (--pool) has been full once: a service that
 * just started (or restarted) builds its pools first. Latched: a pool
 * that a burst of creates empties later leaves the service ready (it
 * still serves, building sandboxes at hand). */
void aj_op_ready(json_t *args, aj_reply *rep)
{
	(void)args;
	static bool ready;
	if (!ready) {
		json_t *o = aj_pool_json();
		size_t i;
		json_t *pl;
		bool full = o != NULL;
		json_array_foreach(json_object_get(o, "pools"), i, pl)
		{
			full &= json_integer_value(json_object_get(pl, "ready")) >=
				json_integer_value(json_object_get(pl, "size"));
		}
		json_decref(o);
		ready = full;
	}
	aj_reply_json(rep, ready ? 200 : 503,
		      json_pack("{s:s}", "status", ready ? "ok" : "starting"));
}

void aj_op_metrics(json_t *args, aj_reply *rep)
{
	const char *own = own_view(args);
	aj_tenant *t = aj_tenant_of(args);
	if (!own || !t) {
		json_t *o = aj_metrics_json(aj_registry_count());
		if (aj_tenant_at(1)) { /* the operator's view: each tenant's sandboxes */
			json_t *tn = json_object();
			for (size_t i = 0; aj_tenant_at(i); i++)
				json_object_set_new(
				    tn, aj_tenant_at(i)->name,
				    json_integer((json_int_t)aj_registry_count_tenant(
					aj_tenant_at(i)->name)));
			json_object_set_new(o, "tenants", tn);
		}
		_cleanup_free_ char *pools = aj_pool_metrics(); /* the pools' lines, as text */
		if (pools)
			json_object_set_new(o, "pools_text", json_string(pools));
		aj_reply_json(rep, 200, o);
		return;
	}
	/* a tenant's own counters, none of the others' (nor the pools') */
	aj_reply_json(
	    rep, 200,
	    json_pack("{s:I, s:I, s:I, s:I, s:I, s:b}", "sandboxes_active",
		      (json_int_t)aj_registry_count_tenant(own), "sandboxes_created",
		      (json_int_t)__atomic_load_n(&t->created, __ATOMIC_RELAXED),
		      "sandboxes_failed", (json_int_t)__atomic_load_n(&t->failed, __ATOMIC_RELAXED),
		      "sandboxes_destroyed",
		      (json_int_t)__atomic_load_n(&t->destroyed, __ATOMIC_RELAXED), "execs",
		      (json_int_t)__atomic_load_n(&t->execs, __ATOMIC_RELAXED), "tenant_view", 1));
}

/* A sandbox for a create request: a pool's, or a new one; into the
 * registry, with a reference for the caller. */
static int create(json_t *req, const char *owner, aj_sandbox **out, aj_error *err)
{
	double ttl;
	int r = aj_registry_admit(req, &ttl, err);
	if (r < 0)
		return r;
	aj_sandbox *sb = NULL;
	if ((r = aj_pool_take(req, &sb, err)) < 0)
		return r;
	/* a pool's that does not take its own identity at once (a VM wedged
	 * while it waited): dropped, a new one built instead */
	if (sb && sb->be->claim) {
		aj_error cerr;
		aj_err_clear(&cerr);
		if (sb->be->claim(sb->inst, &cerr) == 0) {
			sb->claimed = true;
		} else {
			fprintf(stderr,
				"agentjail: a pooled sandbox failed its hand-out (%s): "
				"building a new one\n",
				cerr.msg);
			aj_sandbox_unref(sb);
			sb = NULL;
		}
	}
	if (!sb && !(sb = aj_sandbox_build(req, err)))
		return -(err->code ? err->code : EINVAL);
	if ((r = aj_registry_add(sb, ttl, owner, err)) < 0)
		return r;
	aj_sandbox_ref(sb);
	*out = sb;
	return 0;
}

/* 403 for a request the operator policy or the tenant's caps refuse. */
static bool refused(json_t *args, const char *event, json_t *req, aj_denial *d, aj_reply *rep)
{
	aj_metrics_add(&aj_stats.sandboxes_failed, 1);
	aj_tenant *t = aj_tenant_of(args);
	if (t)
		aj_metrics_add(&t->failed, 1);
	aj_audit(event, json_pack("{s:s, s:O?, s:s, s:s?}", "peer", aj_arg_peer(args), "request",
				  req, "error", d->msg, "policy_key", d->key));
	aj_reply_denial(rep, d);
	return true;
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
	aj_tenant *t = aj_tenant_of(args);
	aj_denial d;
	if (req && t && aj_tenant_check_create(t, req, &d)) {
		refused(args, "create_refused", logged, &d, rep);
		json_decref(req);
		json_decref(logged);
		return;
	}
	int rc = req ? create(req, peer, &sb, &err) : aj_err(&err, ENOMEM, "request");
	json_decref(req);
	if (rc == -EDQUOT) { /* the tenant's sandbox cap */
		const char *file;
		aj_tenant_max_sandboxes(t, &d.key, &file);
		d.file = file;
		aj_err_format(&err, d.msg, sizeof(d.msg));
		refused(args, "create_refused", logged, &d, rep);
		json_decref(logged);
		return;
	}
	if (rc < 0) {
		aj_metrics_add(&aj_stats.sandboxes_failed, 1);
		if (t)
			aj_metrics_add(&t->failed, 1);
		aj_audit("create_failed", json_pack("{s:s, s:o, s:s}", "peer", peer, "request",
						    logged, "error", err.msg));
		/* 409: limits that cannot be enforced here (cgroup.h), a level
		 * not usable here; 501: a level without persistent sandboxes */
		aj_reply_fail(rep,
			      rc == -EAGAIN					   ? 429
			      : err.status					   ? err.status
			      : err.exit == AJ_EXIT_INTERNAL && err.code == EINVAL ? 400
										   : 500,
			      rc == -EAGAIN	  ? "too_many_sandboxes"
			      : err.status == 409 ? "limits_unenforceable"
			      : err.status == 400 || (!err.status && err.exit == AJ_EXIT_INTERNAL &&
						      err.code == EINVAL)
				  ? "bad_request"
				  : "create_failed",
			      &err);
		return;
	}
	aj_metrics_add(&aj_stats.sandboxes_created, 1);
	if (t)
		aj_metrics_add(&t->created, 1);
	aj_audit("create", json_pack("{s:s, s:s, s:o, s:i}", "sandbox", sb->id, "peer", peer,
				     "request", logged, "keeper", aj_sandbox_holder(sb)));
	aj_reply_json(rep, 201, aj_sandbox_json(sb));
	aj_sandbox_unref(sb);
}

void aj_op_list(json_t *args, aj_reply *rep)
{
	aj_reply_json(rep, 200, aj_registry_list(tenant_name(args)));
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
	aj_denial d;
	if (aj_tenant_check_ttl(aj_tenant_of(args), s, &d)) {
		aj_reply_denial(rep, &d);
		aj_sandbox_unref(sb);
		return;
	}
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

void aj_op_pools(json_t *args, aj_reply *rep)
{
	json_t *o = aj_pool_json();
	if (own_view(args)) { /* another tenant's use of a pool is not this one's business */
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(o, "pools"), i, p)
		{
			static const char *const used[] = {"ready", "hits",   "empty",
							   "built", "failed", "warm"};
			for (size_t k = 0; k < AJ_ARRAY_SIZE(used); k++)
				json_object_del(p, used[k]);
		}
		json_object_del(o, "misses");
	}
	aj_reply_json(rep, 200, o);
}

/* pause / resume {sandbox} */
static void pause_resume(json_t *args, aj_reply *rep, bool pause)
{
	aj_sandbox *sb = aj_arg_sandbox(args, rep);
	if (!sb)
		return;
	aj_error err;
	aj_err_clear(&err);
	int rc = aj_sandbox_pause(sb, pause, &err);
	if (rc < 0) {
		aj_reply_fail(rep, rc == -EALREADY ? 409 : 500,
			      rc == -EALREADY ? "conflict"
			      : pause	      ? "pause_failed"
					      : "resume_failed",
			      &err);
	} else {
		aj_audit(pause ? "pause" : "resume",
			 json_pack("{s:s, s:s}", "sandbox", sb->id, "peer", aj_arg_peer(args)));
		aj_reply_json(rep, 200, aj_sandbox_json(sb));
	}
	aj_sandbox_unref(sb);
}

void aj_op_pause(json_t *args, aj_reply *rep)
{
	pause_resume(args, rep, true);
}

void aj_op_resume(json_t *args, aj_reply *rep)
{
	pause_resume(args, rep, false);
}

/* snapshot {sandbox, body: {"name": NAME}} */
void aj_op_snapshot(json_t *args, aj_reply *rep)
{
	json_t *body = json_object_get(args, "body");
	const char *name = json_string_value(json_object_get(body, "name"));
	aj_error err;
	aj_err_clear(&err);
	if (!name || json_object_size(body) != 1) {
		aj_reply_error(rep, 400, "bad_request", "expected {\"name\": IMAGE-NAME}");
		return;
	}
	aj_sandbox *sb = aj_arg_sandbox(args, rep);
	if (!sb)
		return;
	aj_denial d;
	if (aj_tenant_check_snapshot(aj_tenant_of(args), name, &d)) {
		aj_reply_denial(rep, &d);
		aj_sandbox_unref(sb);
		return;
	}
	json_t *img = NULL;
	int rc = aj_sandbox_snapshot(sb, name, &img, &err);
	bool full = rc == -ENOSPC || rc == -EDQUOT; /* --disk, the store's room */
	if (rc < 0)
		aj_reply_fail(rep,
			      full	      ? 507
			      : rc == -EINVAL ? 400
			      : rc == -EEXIST ? 409
					      : 500,
			      full	      ? "insufficient_storage"
			      : rc == -EINVAL ? "bad_request"
			      : rc == -EEXIST ? "conflict"
					      : "snapshot_failed",
			      &err);
	else {
		aj_audit("snapshot", json_pack("{s:s, s:s, s:s, s:s}", "sandbox", sb->id, "peer",
					       aj_arg_peer(args), "image", name, "digest",
					       json_string_value(json_object_get(img, "digest"))));
		aj_reply_json(rep, 201, img);
	}
	aj_sandbox_unref(sb);
}

/* fork {sandbox, body: {"count": N, "timeout": S}} */
void aj_op_fork(json_t *args, aj_reply *rep)
{
	json_t *body = json_object_get(args, "body");
	json_t *c = json_object_get(body, "count"), *t = json_object_get(body, "timeout");
	json_int_t n = c ? json_integer_value(c) : 1;
	double ttl = t ? json_number_value(t) : AJ_DAEMON_DEFAULT_TTL_S;
	size_t known = (c != NULL) + (t != NULL);
	if ((c && !json_is_integer(c)) || n < 1 || n > AJ_FORK_MAX) {
		aj_reply_error(rep, 400, "bad_request", "'count': expected 1 to %d", AJ_FORK_MAX);
		return;
	}
	if ((t && !json_is_number(t)) || ttl < 0 || ttl > AJ_DAEMON_MAX_TTL_S) {
		aj_reply_error(rep, 400, "bad_request",
			       "'timeout': expected 0 (no TTL) to %d seconds", AJ_DAEMON_MAX_TTL_S);
		return;
	}
	if (!json_is_object(body) || json_object_size(body) != known) {
		aj_reply_error(rep, 400, "bad_request", "fork takes only 'count' and 'timeout'");
		return;
	}
	aj_sandbox *sb = aj_arg_sandbox(args, rep);
	if (!sb)
		return;
	aj_tenant *tn = aj_tenant_of(args);
	aj_denial d;
	const char *file;
	unsigned long long cap = aj_tenant_max_sandboxes(tn, &d.key, &file);
	unsigned mine = aj_registry_count_tenant(sb->tenant);
	bool over = cap && mine + (unsigned long long)n > cap;
	if (over) {
		d.file = file;
		snprintf(d.msg, sizeof(d.msg),
			 "%lld more sandboxes: tenant %s has %u, '%s' of the %s is %llu",
			 (long long)n, sb->tenant, mine, d.key, file, cap);
	}
	if (over || aj_tenant_check_ttl(tn, ttl, &d)) {
		aj_reply_denial(rep, &d);
		aj_sandbox_unref(sb);
		return;
	}
	aj_error err;
	aj_err_clear(&err);
	json_t *list = NULL;
	const char *peer = aj_arg_peer(args);
	int rc = aj_sandbox_fork(sb, (unsigned)n, ttl, peer, &list, &err);
	if (rc == -EDQUOT) {
		aj_tenant_max_sandboxes(tn, &d.key, &file);
		d.file = file;
		aj_err_format(&err, d.msg, sizeof(d.msg));
		aj_reply_denial(rep, &d);
		aj_sandbox_unref(sb);
		return;
	}
	if (rc < 0) {
		bool full = rc == -ENOSPC || rc == -EDQUOT; /* a fork's disk */
		aj_reply_fail(rep,
			      full	      ? 507
			      : rc == -EINVAL ? 400
			      : rc == -EAGAIN ? 429
					      : 500,
			      full	      ? "insufficient_storage"
			      : rc == -EINVAL ? "bad_request"
			      : rc == -EAGAIN ? "too_many_sandboxes"
					      : "fork_failed",
			      &err);
		aj_sandbox_unref(sb);
		return;
	}
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(list, "sandboxes"), i, v)
	{
		aj_sandbox *f = aj_registry_get(json_string_value(json_object_get(v, "id")));
		aj_metrics_add(&aj_stats.sandboxes_created, 1);
		if (tn)
			aj_metrics_add(&tn->created, 1);
		if (f)
			aj_audit("fork",
				 json_pack("{s:s, s:s, s:s, s:i}", "sandbox", f->id, "fork_of",
					   sb->id, "peer", peer, "keeper", aj_sandbox_holder(f)));
		aj_sandbox_unref(f);
	}
	aj_sandbox_unref(sb);
	aj_reply_json(rep, 201, list);
}
