/* SPDX-License-Identifier: MIT */
/* Level 2 (`--isolation gvisor`): the policy as an OCI bundle run by runsc,
 * gVisor's user-space kernel (docs/levels.md): one-shot runs (runsc.c) and
 * persistent sandboxes (box.c). */
#ifndef AJ_GVISOR_H
#define AJ_GVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "backend.h"
#include "doctor.h"
#include "error.h"
#include "policy.h"
#include "sandbox.h"

/* The host ids the sandbox's ids map to (uidMappings/gidMappings). */
typedef struct aj_gv_ids {
	uid_t base;	   /* container id 0 -> base (an unused range, userns.c) */
	uid_t ws_uid;	   /* the sandbox user appears as this host uid ... */
	gid_t ws_gid;	   /* ... and gid in the workspace */
	bool owner_mapped; /* ws_uid is the workspace's owner (not host root) */
	/* what --net open/--allow add (net.c): NULL for --net none */
	const char *resolv_conf;
	char *const *extra_env; /* the proxy variables of --allow */
	bool runsc_netns;	/* the sandbox stays in runsc run's netns */
	const char *agent;	/* host path of agentjail-agent (bound at AJ_AGENT_PATH), or NULL */
} aj_gv_ids;

/* Host paths the bundle names as dir/binds/N: runsc's gofer, in the
 * sandbox's user namespace, cannot walk into a root-only directory on the
 * way to them (a workspace below a 0700 directory), so `runsc run` starts
 * in a mount namespace of its own where each is bound there first. */
#define AJ_GV_MAX_STAGED (AJ_MAX_BINDS + 3) /* + the workspace, /etc, the agent */
typedef struct aj_gv_staged {
	char *src[AJ_GV_MAX_STAGED]; /* src[i] is bound at dir/binds/i */
	size_t n;
	/* the state directory's copy of the host /etc files (etc_cache.c), a
	 * detached mount attached at dir/binds/etc: one mount instead of one
	 * per entry (~0.6 ms each in runsc); -1: none, bind them one by one */
	int etc_tree;
	/* src[workspace] is the workspace (-1: none): its host-run files are
	 * bound read-only there (protect.h) before runsc starts, so runsc's
	 * gofer, which serves it from the host, meets the same mounts */
	int workspace;
	/* HTTPS interception: dir/files/ca-certificates.crt is bound over the
	 * root's CA bundle, filled with netd's CA once netd made it (runsc.c) */
	bool ca;
} aj_gv_staged;
void aj_gv_staged_free(aj_gv_staged *s);

/* Is level 2 usable here? Fills path with runsc's path when it is; else
 * err says why and how to fix it (exit 125). */
int aj_gvisor_probe(char *path, size_t len, aj_error *err);
/* The `agentjail doctor` line for level 2 (not essential). */
void aj_gvisor_doctor(aj_check *c);

/* Write the bundle for p into dir (which exists, empty): dir/config.json
 * and dir/rootfs (the skeleton root with its mount points) and dir/files
 * (the synthesized /etc files and masked-file replacements). */
int aj_gvisor_bundle_write(const aj_policy *p, const aj_gv_ids *ids, const char *dir,
			   aj_gv_staged *staged, aj_error *err);

/* Level 2 behind the seam (box.c): run, and persistent sandboxes whose
 * commands and files go through agentjail-agent (agent_proto.h). */
extern const aj_backend aj_backend_gvisor;

/* agentjail run --isolation gvisor: the same contract as aj_sandbox_run. */
int aj_gvisor_run(const aj_policy *p, const aj_run_hooks *hooks, aj_run_result *res, aj_error *err);

#endif
