/* SPDX-License-Identifier: MIT */
/* Counters and the exec latency histogram, in the Prometheus text format. */
#include "metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "operator.h"
#include "util.h"

aj_metrics aj_stats;

static const double bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

void aj_metrics_add(unsigned long long *counter, unsigned long long n)
{
	__atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
}

static pthread_mutex_t lat_mu = PTHREAD_MUTEX_INITIALIZER;

void aj_metrics_exec(double seconds)
{
	size_t i = 0;
	while (i < AJ_ARRAY_SIZE(bounds) && seconds > bounds[i])
		i++;
	pthread_mutex_lock(&lat_mu);
	aj_stats.latency_buckets[i]++;
	aj_stats.latency_sum += seconds;
	pthread_mutex_unlock(&lat_mu);
}

typedef struct text {
	char *buf;
	size_t len, cap;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = t->buf ? vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap) : -1;
		va_end(ap);
		if (n >= 0 && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap * 2 : 4096;
		char *b = realloc(t->buf, cap);
		if (!b)
			return;
		t->buf = b;
		t->cap = cap;
	}
}

static const char *const names[] = {
    "sandboxes_created",
    "sandboxes_failed",
    "sandboxes_destroyed",
    "sandboxes_expired",
    "execs",
    "exec_failed",
    "timeouts",
    "oom_kills",
    "bytes_out",
    "requests",
    "errors",
};

static unsigned long long *field(aj_metrics *m, size_t i)
{
	unsigned long long *f[] = {
	    &m->sandboxes_created,
	    &m->sandboxes_failed,
	    &m->sandboxes_destroyed,
	    &m->sandboxes_expired,
	    &m->execs,
	    &m->exec_failed,
	    &m->timeouts,
	    &m->oom_kills,
	    &m->bytes_out,
	    &m->requests,
	    &m->errors,
	};
	return f[i];
}

json_t *aj_metrics_json(unsigned active)
{
	json_t *o = json_pack("{s:I}", "sandboxes_active", (json_int_t)active);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(names); i++)
		json_object_set_new(o, names[i],
				    json_integer((json_int_t)__atomic_load_n(field(&aj_stats, i),
									     __ATOMIC_RELAXED)));
	json_t *b = json_array();
	pthread_mutex_lock(&lat_mu);
	for (size_t i = 0; i <= AJ_ARRAY_SIZE(bounds); i++)
		json_array_append_new(b, json_integer((json_int_t)aj_stats.latency_buckets[i]));
	json_object_set_new(o, "latency_sum", json_real(aj_stats.latency_sum));
	pthread_mutex_unlock(&lat_mu);
	json_object_set_new(o, "latency_buckets", b);
	return o;
}

static void counter(text *t, const char *name, const char *help, unsigned long long v)
{
	add(t, "# HELP agentjail_%s %s\n# TYPE agentjail_%s counter\nagentjail_%s %llu\n", name,
	    help, name, name, v);
}

static unsigned long long num(json_t *o, const char *k)
{
	json_int_t v = json_integer_value(json_object_get(o, k));
	return v > 0 ? (unsigned long long)v : 0;
}

char *aj_metrics_text(json_t *sup)
{
	aj_metrics m;
	memset(&m, 0, sizeof(m));
	for (size_t i = 0; i < AJ_ARRAY_SIZE(names); i++)
		*field(&m, i) = num(sup, names[i]);
	/* the front counts requests, errors and the bytes of downloads (all
	 * tenants': not in a tenant's own view) */
	bool own = json_is_true(json_object_get(sup, "tenant_view"));
	m.requests = own ? 0 : __atomic_load_n(&aj_stats.requests, __ATOMIC_RELAXED);
	m.errors = own ? 0 : __atomic_load_n(&aj_stats.errors, __ATOMIC_RELAXED);
	m.bytes_out += own ? 0 : __atomic_load_n(&aj_stats.bytes_out, __ATOMIC_RELAXED);
	text t = {0};
	add(&t,
	    "# HELP agentjail_sandboxes_active Sandboxes alive now.\n"
	    "# TYPE agentjail_sandboxes_active gauge\nagentjail_sandboxes_active %llu\n",
	    num(sup, "sandboxes_active"));
	counter(&t, "sandboxes_created_total", "Sandboxes created.", m.sandboxes_created);
	counter(&t, "sandboxes_failed_total", "Sandbox creations that failed.", m.sandboxes_failed);
	counter(&t, "sandboxes_destroyed_total", "Sandboxes destroyed (deleted or expired).",
		m.sandboxes_destroyed);
	counter(&t, "sandboxes_expired_total", "Sandboxes destroyed by their TTL.",
		m.sandboxes_expired);
	counter(&t, "execs_total", "Commands run.", m.execs);
	counter(&t, "exec_failures_total", "Commands that could not start.", m.exec_failed);
	counter(&t, "exec_timeouts_total", "Commands stopped by their timeout.", m.timeouts);
	counter(&t, "oom_kills_total", "Commands killed by the OOM killer.", m.oom_kills);
	counter(&t, "streamed_bytes_total", "Output bytes streamed to clients.", m.bytes_out);
	counter(&t, "http_requests_total", "HTTP requests.", m.requests);
	counter(&t, "http_errors_total", "HTTP requests answered with an error.", m.errors);
	add(&t, "# HELP agentjail_exec_duration_seconds Duration of commands.\n"
		"# TYPE agentjail_exec_duration_seconds histogram\n");
	json_t *b = json_object_get(sup, "latency_buckets");
	unsigned long long cum = 0;
	for (size_t i = 0; i <= AJ_ARRAY_SIZE(bounds); i++) {
		json_int_t v = json_integer_value(json_array_get(b, i));
		cum += v > 0 ? (unsigned long long)v : 0;
		if (i < AJ_ARRAY_SIZE(bounds))
			add(&t, "agentjail_exec_duration_seconds_bucket{le=\"%g\"} %llu\n",
			    bounds[i], cum);
		else
			add(&t, "agentjail_exec_duration_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
	}
	add(&t,
	    "agentjail_exec_duration_seconds_sum %.6f\nagentjail_exec_duration_seconds_count "
	    "%llu\n",
	    json_number_value(json_object_get(sup, "latency_sum")), cum);
	json_t *tenants = json_object_get(sup, "tenants");
	if (json_is_object(tenants)) {
		add(&t, "# HELP agentjail_tenant_sandboxes_active Sandboxes alive now, by tenant.\n"
			"# TYPE agentjail_tenant_sandboxes_active gauge\n");
		const char *k;
		json_t *v;
		json_object_foreach(tenants, k, v)
		{
			if (aj_tenant_name_ok(k))
				add(&t, "agentjail_tenant_sandboxes_active{tenant=\"%s\"} %lld\n",
				    k, (long long)json_integer_value(v));
		}
	}
	const char *pools = json_string_value(json_object_get(sup, "pools_text"));
	if (pools)
		add(&t, "%s", pools);
	return t.buf;
}
