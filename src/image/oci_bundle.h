/* SPDX-License-Identifier: MIT */
/* An OCI runtime bundle's config.json (runtime-spec 1.x) as an aj_policy:
 * what `agentjail oci create` runs (docs/oci.md has the table of what is
 * taken, what agentjail provides itself and what is refused). */
#ifndef AJ_OCI_BUNDLE_H
#define AJ_OCI_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "policy.h"

typedef struct aj_oci_config {
	aj_policy policy;    /* policy.argv points into argv */
	char **argv;	     /* process.args, owned */
	bool terminal;	     /* process.terminal */
	bool user;	     /* process.user had a uid and gid (policy.uid, gid) */
	unsigned rows, cols; /* process.consoleSize, 0: none */
	char *netns;	     /* linux.namespaces: a network namespace to join, or NULL */
	bool netns_open;     /* ... without agentjail's wall (run.agentjail.net open) */
	char *ipcns, *utsns; /* ... an ipc and a uts namespace to join (a pod's), or NULL */
	char *hooks;	     /* the checked hooks object as JSON, or NULL */
	char *sysctl;	     /* linux.sysctl's to set (checked) as a JSON object, or NULL */
} aj_oci_config;

/* text: config.json's bytes; bundle: the bundle's absolute directory (a
 * relative root.path is taken below it). 0, or a negative errno with err
 * naming the field (exit 125); c is then already freed. */
int aj_oci_config_parse(const char *text, size_t len, const char *bundle, aj_oci_config *c,
			aj_error *err);
void aj_oci_config_free(aj_oci_config *c);

/* `oci exec --process FILE`: a runtime-spec process object alone, into
 * c's argv, policy.env, cwd, uid and gid, terminal, user, rows and cols
 * (its rlimits and capabilities are the container's). As above. */
int aj_oci_process_parse(const char *text, size_t len, aj_oci_config *c, aj_error *err);

/* `oci update --resources`: a runtime-spec linux.resources object, its
 * memory.limit and reservation, pids.limit, cpu quota/period, shares, cpus
 * and mems into p's memory, memory_low, pids, cpu_millis, cpu_shares,
 * cpuset_cpus and cpuset_mems (0 / NULL: not given); anything else set is
 * refused. As above. */
int aj_oci_resources_parse(const char *text, size_t len, aj_policy *p, aj_error *err);

#endif
