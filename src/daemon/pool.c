/* SPDX-License-Identifier: MIT */
/* Warm pools: N ready sandboxes per image, built by a refill thread (never
 * on the event loop), each handed out at most once and never returned. */
#include "pool.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends.h"
#include "audit.h"
#include "code.h"
#include "registry.h"
#include "image.h"
#include "util.h"
#include "zygote.h"

typedef struct pool {
	char image[AJ_IMAGE_NAME_MAX + 1]; /* "default": the host-root sandbox */
	char level[16];			   /* its isolation level's name */
	bool update;			   /* its level changes a built sandbox (env, limits) */
	bool cpu_build; /* built with every CPU's quota, cut at hand-out (not a VM's vCPUs) */
	json_t *req;	/* the policy its sandboxes are built with */
	unsigned want, n;
	aj_sandbox *ready[AJ_POOL_MAX_SIZE];
	unsigned long long hits, empty, built, failed;
	long long retry_at, backoff_ms; /* after a failed build (monotonic ms) */
	char last_error[256];
	char warmup[512]; /* the image's Python warm-up: a zygote per sandbox */
	bool code;	  /* ",code": a Jupyter kernel started ahead (code.c) */
} pool;

/* What a code pool's kernel runs before the sandbox is handed out. */
#define CODE_WARMUP "import pandas, matplotlib, matplotlib.pyplot"

/* A pooled sandbox thrown away: its code bridge (which holds a reference)
 * ended first, so that the last reference goes and it is destroyed. */
static void discard(aj_sandbox *sb)
{
	aj_code_drop(sb, true);
	aj_sandbox_unref(sb);
}

static pool pools[AJ_POOL_MAX];
static size_t n_pools;
static unsigned long long misses; /* creates no pool could serve */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static pthread_t thread;
static bool running, stopping;
/* When a sandbox was last handed out (monotonic ms). A refill waits until
 * POOL_QUIET_MS later unless the pool is empty: building a sandbox takes
 * a core and the kernel's mount and cgroup locks for ~20 ms, and the
 * first command of the sandbox just handed out ran twice as long beside it. */
static long long taken_at;
#define POOL_QUIET_MS 250
/* The host has a cpu controller: pooled sandboxes are built with a cpu
 * cgroup whose quota is every online CPU (no limit), so that a create that
 * asks for cpus gets its quota written at hand-out instead of a fresh
 * sandbox. Their policy forgets that quota at hand-out. */
static unsigned cpu_all;
/* The service may resize a pooled sandbox's scratch tmpfs (it is root). */
static bool disk_ok;

static long long mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* LEVEL: in front of a pool's spec; level 1 when there is none. */
static int pool_level(const char *spec, const char **rest, aj_policy *lp, aj_error *err)
{
	const char *colon = strchr(spec, ':'), *eq = strrchr(spec, '=');
	*rest = spec;
	if (!colon || (eq && colon > eq))
		return 0;
	char level[16];
	if ((size_t)(colon - spec) >= sizeof(level))
		return aj_err(err, EINVAL, "--pool '%s': expected [LEVEL:]IMAGE=N", spec);
	memcpy(level, spec, (size_t)(colon - spec));
	level[colon - spec] = '\0';
	int r = aj_policy_set_isolation(lp, level, err);
	if (r < 0) {
		aj_err_prefix(err, "--pool '%s'", spec);
		return r;
	}
	const aj_backend *be = aj_backend_of(lp->isolation);
	if (!be || !be->create) {
		r = aj_err(err, ENOTSUP,
			   "--pool '%s': level %s has no sandboxes that live across "
			   "commands in this build",
			   spec, level);
		aj_err_hint(err, "pool that image at level 1 (IMAGE=N), docs/levels.md");
		return r;
	}
	if (lp->isolation == AJ_ISO_WASM) { /* a pool is of an image */
		r = aj_err(err, ENOTSUP,
			   "--pool '%s': level wasm runs no image (the runtime runs from the "
			   "host's /usr)",
			   spec);
		aj_err_hint(err, "pool that image at level 1 (IMAGE=N), docs/levels.md");
		return r;
	}
	if (lp->isolation == AJ_ISO_MICROVM && !strncmp(colon + 1, "default=", 8)) {
		r = aj_err(err, EINVAL,
			   "--pool '%s': a level-3 pool is of an image (its VMs restored from the "
			   "image's snapshot); 'default' has none, each VM would boot",
			   spec);
		aj_err_hint(err, "pool an image (microvm:IMAGE=N), docs/levels.md");
		return r;
	}
	if ((r = be->probe(err)) < 0) { /* never a pool of another level */
		aj_err_prefix(err, "--pool '%s'", spec);
		return r;
	}
	*rest = colon + 1;
	return 0;
}

int aj_pool_add(const char *spec, aj_error *err)
{
	aj_policy lp;
	aj_policy_init(&lp);
	const char *rest;
	int lr = pool_level(spec, &rest, &lp, err);
	aj_isolation iso = lp.isolation;
	aj_policy_free(&lp);
	if (lr < 0)
		return lr;
	const char *level = aj_backend_of(iso)->name;
	char body[AJ_IMAGE_NAME_MAX + 32];
	size_t rl = strlen(rest);
	bool code = rl > 5 && !strcmp(rest + rl - 5, ",code") && rl - 5 < sizeof(body);
	if (code) { /* IMAGE=N,code: a kernel started ahead */
		memcpy(body, rest, rl - 5);
		body[rl - 5] = '\0';
		rest = body;
	}
	const char *eq = strrchr(rest, '=');
	unsigned long long n = 0;
	char image[AJ_IMAGE_NAME_MAX + 1];
	size_t il = eq ? (size_t)(eq - rest) : 0;
	if (!eq || il == 0 || il >= sizeof(image) ||
	    aj_parse_uint(eq + 1, AJ_POOL_MAX_SIZE, &n) < 0 || n == 0)
		return aj_err(err, EINVAL,
			      "--pool '%s': expected [LEVEL:]IMAGE=N[,code] (N from 1 to %d)", spec,
			      AJ_POOL_MAX_SIZE);
	memcpy(image, rest, il);
	image[il] = '\0';
	if (code && iso == AJ_ISO_MICROVM) {
		int e = aj_err(err, ENOTSUP,
			       "--pool '%s': ',code' is not supported at level microvm (a Jupyter "
			       "kernel in a pooled VM is untried)",
			       spec);
		aj_err_hint(err, "pool it without ',code' (microvm:IMAGE=N), or use a ,code pool "
				 "at level process or gvisor");
		return e;
	}
	bool dflt = strcmp(image, "default") == 0;
	if (!dflt && !aj_image_name_ok(image))
		return aj_err(err, EINVAL, "--pool '%s': '%s' is not an image name", spec, image);
	if (n_pools >= AJ_POOL_MAX)
		return aj_err(err, E2BIG, "--pool: at most %d pools", AJ_POOL_MAX);
	for (size_t i = 0; i < n_pools; i++)
		if (strcmp(pools[i].image, image) == 0 && strcmp(pools[i].level, level) == 0)
			return aj_err(err, EEXIST, "--pool: two pools of '%s' at level %s", image,
				      level);
	json_t *req = dflt ? json_object() : json_pack("{s:s}", "image", image);
	if (req && iso != AJ_ISO_PROCESS)
		json_object_set_new(req, "isolation", json_string(level));
	if (!req)
		return aj_err(err, ENOMEM, "pool");
	aj_policy p;
	aj_policy_init(&p);
	p.quiet = true;
	int r = aj_policy_from_json(&p, req, err); /* e.g. no such image */
	aj_policy_free(&p);
	if (r < 0) {
		json_decref(req);
		aj_err_prefix(err, "--pool '%s'", spec);
		return r;
	}
	pool *pl = &pools[n_pools++];
	memset(pl, 0, sizeof(*pl));
	snprintf(pl->image, sizeof(pl->image), "%s", image);
	snprintf(pl->level, sizeof(pl->level), "%s", level);
	pl->update = (aj_backend_of(iso)->caps & AJ_CAP_UPDATE) != 0;
	pl->cpu_build = pl->update && iso != AJ_ISO_MICROVM;
	aj_image_info info;
	char interp[64];
	if (!dflt && aj_image_inspect(aj_state_dir(), image, &info, NULL) == 0 &&
	    aj_zygote_interp(info.warmup, interp, sizeof(interp)))
		snprintf(pl->warmup, sizeof(pl->warmup), "%s", info.warmup);
	pl->req = req;
	pl->want = (unsigned)n;
	pl->code = code;
	return 0;
}

/* The first pool short of sandboxes that may be built now; else when to
 * look again (0: when signalled). Called locked. */
static pool *next_to_fill(long long *wake)
{
	long long now = mono_ms();
	*wake = 0;
	for (size_t i = 0; i < n_pools; i++) {
		pool *pl = &pools[i];
		if (pl->n >= pl->want)
			continue;
		long long at = pl->retry_at;
		if (pl->n > 0 && taken_at + POOL_QUIET_MS > at)
			at = taken_at + POOL_QUIET_MS;
		if (at <= now)
			return pl;
		if (!*wake || at < *wake)
			*wake = at;
	}
	return NULL;
}

static void built(pool *pl, aj_sandbox *sb, const aj_error *err)
{
	if (sb) {
		pl->ready[pl->n++] = sb;
		pl->built++;
		pl->backoff_ms = 0;
		pl->retry_at = 0;
		return;
	}
	pl->failed++;
	snprintf(pl->last_error, sizeof(pl->last_error), "%s", err->msg);
	pl->backoff_ms =
	    pl->backoff_ms ? (pl->backoff_ms * 2 > 30000 ? 30000 : pl->backoff_ms * 2) : 500;
	pl->retry_at = mono_ms() + pl->backoff_ms;
}

/* The refill thread. It must live as long as any sandbox it built: a
 * keeper dies with the thread that forked it (PR_SET_PDEATHSIG). */
static void *refill(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	while (!stopping) {
		long long wake;
		pool *pl = next_to_fill(&wake);
		if (!pl) {
			if (!wake) {
				pthread_cond_wait(&cond, &mu);
			} else {
				struct timespec ts = {(time_t)(wake / 1000),
						      (long)(wake % 1000) * 1000000};
				pthread_cond_timedwait(&cond, &mu, &ts);
			}
			continue;
		}
		json_t *req = json_deep_copy(pl->req);
		/* (not where it can't be changed at hand-out: a microVM's vCPUs) */
		if (req && cpu_all && pl->cpu_build && !json_object_get(req, "cpus"))
			json_object_set_new(req, "cpus", json_integer(cpu_all));
		char warmup[sizeof(pl->warmup)];
		snprintf(warmup, sizeof(warmup), "%s", pl->warmup);
		bool code = pl->code;
		pthread_mutex_unlock(&mu);
		aj_error err;
		aj_err_clear(&err);
		aj_sandbox *sb = req ? aj_sandbox_build(req, &err) : NULL;
		if (!req)
			aj_err(&err, ENOMEM, "pool");
		json_decref(req);
		aj_error zerr;
		aj_err_clear(&zerr);
		if (sb && warmup[0] && aj_backend_can(sb->be, AJ_CAP_WARM, &zerr) &&
		    sb->be->warm(sb->inst, warmup, &zerr) < 0)
			aj_audit("zygote_failed",
				 json_pack("{s:s, s:s}", "sandbox", sb->id, "error", zerr.msg));
		aj_err_clear(&zerr);
		if (sb && code && aj_code_warm(sb, CODE_WARMUP, &zerr) < 0) {
			aj_audit("code_warm_failed",
				 json_pack("{s:s, s:s}", "sandbox", sb->id, "error", zerr.msg));
			aj_code_drop(sb, false); /* its first run starts a kernel, cold */
		}
		pthread_mutex_lock(&mu);
		if (sb) /* the keeper: the tests' residue check attributes its cgroups */
			aj_audit("pool_build",
				 json_pack("{s:s, s:s, s:i}", "sandbox", sb->id, "image", pl->image,
					   "keeper", aj_sandbox_holder(sb)));
		else
			aj_audit("pool_build_failed",
				 json_pack("{s:s, s:s}", "image", pl->image, "error", err.msg));
		if (sb && (stopping || pl->n >= pl->want)) {
			pthread_mutex_unlock(&mu);
			discard(sb);
			pthread_mutex_lock(&mu);
			continue;
		}
		built(pl, sb, &err);
	}
	/* drained here, by the thread their keepers die with */
	for (size_t i = 0; i < n_pools; i++)
		while (pools[i].n) {
			aj_sandbox *sb = pools[i].ready[--pools[i].n];
			pthread_mutex_unlock(&mu);
			discard(sb);
			pthread_mutex_lock(&mu);
		}
	pthread_mutex_unlock(&mu);
	return NULL;
}

int aj_pool_start(aj_error *err)
{
	if (!n_pools)
		return 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_all = aj_cgroup_cpu_available() && cpus > 0 && cpus <= 4096 ? (unsigned)cpus : 0;
	disk_ok = geteuid() == 0;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &ca);
	pthread_condattr_destroy(&ca);
	stopping = false;
	int e = pthread_create(&thread, NULL, refill, NULL);
	if (e)
		return aj_err(err, e, "cannot start the pool's thread");
	running = true;
	return 0;
}

void aj_pool_stop(void)
{
	pthread_mutex_lock(&mu);
	stopping = true;
	if (running)
		pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&mu);
	if (running)
		pthread_join(thread, NULL);
	for (size_t i = 0; i < n_pools; i++) {
		for (unsigned k = 0; k < pools[i].n; k++)
			discard(pools[i].ready[k]);
		pools[i].n = 0;
		json_decref(pools[i].req);
		pools[i].req = NULL;
	}
	if (running)
		pthread_cond_destroy(&cond);
	running = false;
	n_pools = 0;
}

/* env, secret, memory, pids, disk and cpus of a request, applied to a
 * pooled sandbox at hand-out: the policy's lists grow, the commands' base
 * environment is rebuilt, the cgroup's limits change, the scratch tmpfs is
 * resized. */
static int apply_extra(aj_sandbox *sb, json_t *extra, aj_error *err)
{
	int r = aj_policy_from_json(&sb->policy, extra, err);
	if (r < 0 || !aj_backend_can(sb->be, AJ_CAP_UPDATE, err))
		return r < 0 ? r : -ENOTSUP;
	unsigned what =
	    (json_object_get(extra, "memory") || json_object_get(extra, "pids") ? AJ_UPDATE_LIMITS
										: 0) |
	    (json_object_get(extra, "cpus") ? AJ_UPDATE_CPU : 0) |
	    (json_object_get(extra, "disk") ? AJ_UPDATE_DISK : 0);
	return sb->be->update(sb->inst, &sb->policy, what, err);
}

/* The pool whose sandboxes fit req (NULL: none), with in extra what is
 * applied at hand-out (env, secrets, limits). *r < 0: extra is bad input. */
static pool *match(json_t *req, json_t *extra, int *r, aj_error *err)
{
	*r = 0;
	json_t *rest = json_copy(req);
	if (!rest) {
		*r = aj_err(err, ENOMEM, "pool");
		return NULL;
	}
	json_object_del(rest, "timeout"); /* the registry's, not the sandbox's */
	const char *iso = json_string_value(json_object_get(rest, "isolation"));
	if (iso && !strcmp(iso, "process")) /* the default, as pools spell it */
		json_object_del(rest, "isolation");
	static const char *const at_handout[] = {"env", "secret", "memory", "pids", "disk", "cpus"};
	for (size_t i = 0; i < AJ_ARRAY_SIZE(at_handout); i++) {
		/* cpus: where the pool's sandboxes have a cpu cgroup; disk: where
		 * the service may reconfigure their tmpfs (root) */
		if ((!cpu_all && strcmp(at_handout[i], "cpus") == 0) ||
		    (!disk_ok && strcmp(at_handout[i], "disk") == 0))
			continue;
		json_t *v = json_object_get(rest, at_handout[i]);
		if (v) {
			json_object_set(extra, at_handout[i], v);
			json_object_del(rest, at_handout[i]);
		}
	}
	/* the rest is the pool's own policy or nothing: e.g. a "seccomp-profile"
	 * (no pool has one) is never dropped for a pooled sandbox */
	pool *pl = NULL;
	for (size_t i = 0; i < n_pools && !pl; i++)
		if (json_equal(rest, pools[i].req))
			pl = &pools[i];
	json_decref(rest);
	/* a level that cannot change a built sandbox: only the pool's exact
	 * policy is served from it (a level that can refuses in update) */
	if (pl && !pl->update && json_object_size(extra))
		pl = NULL;
	if (pl && json_object_size(extra)) { /* bad input: an error, the pool untouched */
		aj_policy p;
		aj_policy_init(&p);
		*r = aj_policy_from_json(&p, extra, err);
		/* no limit (0) cannot be applied to a built sandbox: a fresh one */
		if (*r == 0 && (!p.memory || !p.pids))
			pl = NULL;
		/* a secret scoped to hosts (or an inspect list) lives in the
		 * sandbox's netd, started with the sandbox, and is checked
		 * against its --allow list: a fresh one */
		for (size_t i = 0; *r == 0 && pl && i < p.n_secrets; i++)
			if (p.secrets[i].n_hosts)
				pl = NULL;
		if (p.n_inspect)
			pl = NULL;
		aj_policy_free(&p);
	}
	return pl;
}

bool aj_pool_ready(json_t *req)
{
	json_t *extra = n_pools ? json_object() : NULL;
	if (!extra)
		return false;
	aj_error err;
	int r;
	pool *pl = match(req, extra, &r, &err);
	json_decref(extra);
	pthread_mutex_lock(&mu);
	bool ready = r == 0 && pl && pl->n > 0;
	pthread_mutex_unlock(&mu);
	return ready;
}

int aj_pool_take(json_t *req, aj_sandbox **out, aj_error *err)
{
	*out = NULL;
	if (!n_pools)
		return 0;
	json_t *extra = json_object();
	if (!extra)
		return aj_err(err, ENOMEM, "pool");
	int r;
	pool *pl = match(req, extra, &r, err);
	aj_sandbox *sb = NULL;
	pthread_mutex_lock(&mu);
	while (r == 0 && pl && pl->n && !sb) {
		sb = pl->ready[--pl->n];
		aj_inst_info in;
		sb->be->info(sb->inst, &in);
		if (!in.alive) { /* died while waiting */
			pthread_mutex_unlock(&mu);
			discard(sb);
			pthread_mutex_lock(&mu);
			sb = NULL;
		}
	}
	aj_inst_info in = {0};
	if (sb)
		sb->be->info(sb->inst, &in);
	if (sb && json_object_get(extra, "cpus") && !in.cpu_quota) {
		pl->ready[pl->n++] = sb; /* no cpu cgroup to set (no cgroups): a fresh one */
		sb = NULL;
		pl = NULL;
	}
	if (sb) {
		pl->hits++;
		taken_at = mono_ms();
		if (cpu_all && pl->cpu_build && !json_object_get(pl->req, "cpus"))
			sb->policy.cpu_millis = 0; /* the build's every-CPU quota: no limit */
	} else if (r == 0 && pl)
		pl->empty++;
	if (r == 0 && !sb)
		misses++;
	bool refill = pl && running;
	pthread_mutex_unlock(&mu);
	if (refill) /* after the unlock: threads.c says why */
		pthread_cond_signal(&cond);
	/* a warm kernel has the pool's environment: with other env or secrets
	 * it is ended, and the first run starts one with the sandbox's */
	if (sb && (json_object_get(extra, "env") || json_object_get(extra, "secret")))
		aj_code_drop(sb, false);
	if (sb && json_object_size(extra) && (r = apply_extra(sb, extra, err)) < 0) {
		discard(sb); /* never back into the pool; built fresh instead */
		sb = NULL;
		r = 0;
		aj_err_clear(err);
	}
	json_decref(extra);
	*out = sb;
	return r;
}

json_t *aj_pool_json(void)
{
	json_t *a = json_array();
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_pools; i++) {
		const pool *pl = &pools[i];
		json_int_t warm = 0, kernels = 0; /* ready ones whose zygote / kernel is ready */
		for (unsigned k = 0; k < pl->n; k++) {
			aj_inst_info in;
			pl->ready[k]->be->info(pl->ready[k]->inst, &in);
			warm += in.warm != NULL;
			kernels += pl->code && aj_code_warm_ready(pl->ready[k]);
		}
		json_t *po;
		json_array_append_new(
		    a, po = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:s?, s:s?, s:I}",
				      "image", pl->image, "isolation", pl->level, "size",
				      (json_int_t)pl->want, "ready", (json_int_t)pl->n, "hits",
				      (json_int_t)pl->hits, "empty", (json_int_t)pl->empty, "built",
				      (json_int_t)pl->built, "failed", (json_int_t)pl->failed,
				      "last_error", pl->last_error[0] ? pl->last_error : NULL,
				      "warmup", pl->warmup[0] ? pl->warmup : NULL, "warm", warm));
		if (pl->code) /* ",code" pools: how many have their kernel running */
			json_object_set_new(po, "code_kernels", json_integer(kernels));
	}
	json_t *o = json_pack("{s:o, s:I}", "pools", a, "misses", (json_int_t)misses);
	pthread_mutex_unlock(&mu);
	return o;
}

char *aj_pool_metrics(void)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	pthread_mutex_lock(&mu);
	fprintf(f, "# HELP agentjail_pool_ready Ready sandboxes in the warm pool.\n"
		   "# TYPE agentjail_pool_ready gauge\n");
	for (size_t i = 0; i < n_pools; i++)
		fprintf(f, "agentjail_pool_ready{image=\"%s\",isolation=\"%s\"} %u\n",
			pools[i].image, pools[i].level, pools[i].n);
	fprintf(f, "# HELP agentjail_pool_hits_total Creates served from the warm pool.\n"
		   "# TYPE agentjail_pool_hits_total counter\n");
	for (size_t i = 0; i < n_pools; i++)
		fprintf(f, "agentjail_pool_hits_total{image=\"%s\",isolation=\"%s\"} %llu\n",
			pools[i].image, pools[i].level, pools[i].hits);
	fprintf(f,
		"# HELP agentjail_pool_misses_total Creates no pool could serve (no pool of "
		"that policy, or it was empty).\n# TYPE agentjail_pool_misses_total counter\n"
		"agentjail_pool_misses_total %llu\n",
		misses);
	pthread_mutex_unlock(&mu);
	fclose(f);
	return out;
}
