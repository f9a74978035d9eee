/* SPDX-License-Identifier: MIT */
/* Counters and the exec latency histogram, in the Prometheus text format. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "pool.h"
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

static void counter(text *t, const char *name, const char *help, unsigned long long *v)
{
	add(t, "# HELP agentjail_%s %s\n# TYPE agentjail_%s counter\nagentjail_%s %llu\n", name,
	    help, name, name, __atomic_load_n(v, __ATOMIC_RELAXED));
}

char *aj_metrics_text(void)
{
	text t = {0};
	add(&t,
	    "# HELP agentjail_sandboxes_active Sandboxes alive now.\n"
	    "# TYPE agentjail_sandboxes_active gauge\nagentjail_sandboxes_active %u\n",
	    aj_registry_count());
	counter(&t, "sandboxes_created_total", "Sandboxes created.", &aj_stats.sandboxes_created);
	counter(&t, "sandboxes_failed_total", "Sandbox creations that failed.",
		&aj_stats.sandboxes_failed);
	counter(&t, "sandboxes_destroyed_total", "Sandboxes destroyed (deleted or expired).",
		&aj_stats.sandboxes_destroyed);
	counter(&t, "sandboxes_expired_total", "Sandboxes destroyed by their TTL.",
		&aj_stats.sandboxes_expired);
	counter(&t, "execs_total", "Commands run.", &aj_stats.execs);
	counter(&t, "exec_failures_total", "Commands that could not start.", &aj_stats.exec_failed);
	counter(&t, "exec_timeouts_total", "Commands stopped by their timeout.",
		&aj_stats.timeouts);
	counter(&t, "oom_kills_total", "Commands killed by the OOM killer.", &aj_stats.oom_kills);
	counter(&t, "streamed_bytes_total", "Output bytes streamed to clients.",
		&aj_stats.bytes_out);
	counter(&t, "http_requests_total", "HTTP requests.", &aj_stats.requests);
	counter(&t, "http_errors_total", "HTTP requests answered with an error.", &aj_stats.errors);
	add(&t, "# HELP agentjail_exec_duration_seconds Duration of commands.\n"
		"# TYPE agentjail_exec_duration_seconds histogram\n");
	pthread_mutex_lock(&lat_mu);
	unsigned long long cum = 0;
	for (size_t i = 0; i <= AJ_ARRAY_SIZE(bounds); i++) {
		cum += aj_stats.latency_buckets[i];
		if (i < AJ_ARRAY_SIZE(bounds))
			add(&t, "agentjail_exec_duration_seconds_bucket{le=\"%g\"} %llu\n",
			    bounds[i], cum);
		else
			add(&t, "agentjail_exec_duration_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
	}
	add(&t,
	    "agentjail_exec_duration_seconds_sum %.6f\nagentjail_exec_duration_seconds_count "
	    "%llu\n",
	    aj_stats.latency_sum, cum);
	pthread_mutex_unlock(&lat_mu);
	_cleanup_free_ char *pools = aj_pool_metrics();
	if (pools)
		add(&t, "%s", pools);
	return t.buf;
}
