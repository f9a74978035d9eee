/* SPDX-License-Identifier: MIT */
/* Which backend serves each isolation level (backend.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "backend.h"
#include "backend_process.h"
#include "backends.h"
#include "cgroup.h"
#include "gvisor.h"
#include "microvm.h"
#include "protect.h"
#include "wasm.h"

const aj_backend *aj_backend_of(aj_isolation level)
{
	switch (level) {
	case AJ_ISO_PROCESS: return &aj_backend_process;
	case AJ_ISO_GVISOR: return &aj_backend_gvisor;
	case AJ_ISO_MICROVM: return &aj_backend_microvm;
	case AJ_ISO_WASM: return &aj_backend_wasm;
	}
	return NULL;
}

static const char *cap_name(unsigned cap)
{
	switch (cap) {
	case AJ_CAP_PTY: return "a terminal (tty)";
	case AJ_CAP_FILES: return "the files API";
	case AJ_CAP_PAUSE: return "pause and resume";
	case AJ_CAP_SNAPSHOT: return "snapshots";
	case AJ_CAP_FORK: return "forks";
	case AJ_CAP_WARM: return "warm interpreters";
	case AJ_CAP_UPDATE: return "changing limits of a live sandbox";
	case AJ_CAP_ROOT_FD: return "host access to the sandbox's root";
	case AJ_CAP_PORTS: return "connections to its ports (the ports proxy)";
	case AJ_CAP_HOST_RW:
		return "a workspace or --rw bind in a sandbox of the service (every command "
		       "under the filter that keeps host files from becoming setuid)";
	}
	return "this operation";
}

bool aj_backend_can(const aj_backend *b, unsigned cap, aj_error *err)
{
	if (b && (b->caps & cap) == cap)
		return true;
	unsigned lack = b ? cap & ~b->caps : cap;
	aj_err(err, ENOTSUP, "isolation '%s' does not support %s", b ? b->name : "?",
	       cap_name(lack & -lack));
	if (err) {
		err->status = 501;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "not_supported");
	}
	aj_err_hint(err,
		    "use \"isolation\": \"process\" for it (docs/levels.md lists what each level "
		    "supports)");
	return false;
}

void aj_backends_prepare(void)
{
	(void)aj_cgroup_ensure_mounted(NULL);
}

void aj_backends_sweep(void)
{
	aj_protect_sweep();
}
