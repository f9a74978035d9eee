/* SPDX-License-Identifier: MIT */
/* agentjail doctor: probe which kernel features this host lets a sandbox
 * use. Every probe really tries the operation (in a short-lived child where
 * it has side effects) and leaves nothing behind: no mounts, directories,
 * cgroups or processes. Results are data; the caller decides how to show
 * them. */
#ifndef AJ_DOCTOR_H
#define AJ_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>

/* Upper bound on the number of checks aj_doctor_run() produces. */
#define AJ_DOCTOR_MAX_CHECKS 16

typedef enum aj_check_status {
	AJ_CHECK_OK = 0,
	AJ_CHECK_WARN, /* works, but a feature is missing or degraded */
	AJ_CHECK_FAIL, /* does not work */
} aj_check_status;

typedef struct aj_check {
	const char *name; /* static string, e.g. "user namespaces" */
	aj_check_status status;
	bool essential;	  /* a FAIL here means sandboxes cannot run */
	char detail[512]; /* what was found, one line */
	char fix[1024];	  /* how to fix it; empty when status is OK */
} aj_check;

/* Run every check and fill up to max entries of out, in a fixed order.
 * Returns the number filled. Forks (and reaps) short-lived probe children. */
size_t aj_doctor_run(aj_check *out, size_t max);
/* False if any essential check failed. */
bool aj_doctor_can_run(const aj_check *c, size_t n);
/* "ok", "warn" or "fail". */
const char *aj_doctor_status_name(aj_check_status s);

#endif
