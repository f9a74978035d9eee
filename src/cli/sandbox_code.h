/* SPDX-License-Identifier: MIT */
/* agentjail sandbox code: Python from stdin run in a sandbox's code
 * context (POST /v1/sandboxes/ID/code), its results printed, its images
 * written to files. */
#ifndef AJ_SANDBOX_CODE_H
#define AJ_SANDBOX_CODE_H

#include "svc_client.h"

/* argv: [OPTIONS] ID. Returns 0, 1 when the code raised, 124 at its
 * timeout, 137 when it ran out of memory, 125 on a usage or service error. */
int aj_sandbox_code(const aj_svc *c, int argc, char **argv);

#endif
