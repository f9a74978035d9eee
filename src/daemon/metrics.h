/* SPDX-License-Identifier: MIT */
/* Counters and the exec latency histogram, in the Prometheus text format
 * (metrics.c). */
#ifndef AJ_METRICS_H
#define AJ_METRICS_H

#include <jansson.h>

typedef struct aj_metrics {
	unsigned long long sandboxes_created, sandboxes_failed, sandboxes_destroyed,
	    sandboxes_expired;
	unsigned long long execs, exec_failed, timeouts, oom_kills, bytes_out, requests, errors;
	unsigned long long latency_buckets[12]; /* exec duration histogram */
	double latency_sum;
} aj_metrics;
extern aj_metrics aj_stats;
void aj_metrics_add(unsigned long long *counter, unsigned long long n);
void aj_metrics_exec(double seconds);
/* The supervisor's counters as JSON (the "metrics" op, sup_api.c, adds
 * the tenants and the pools), active: the sandboxes alive now. */
json_t *aj_metrics_json(unsigned active);
/* The Prometheus text exposition (malloc'ed) of the supervisor's counters
 * (sup: aj_metrics_json's) and the front's own (requests, errors, bytes). */
char *aj_metrics_text(json_t *sup);

#endif
