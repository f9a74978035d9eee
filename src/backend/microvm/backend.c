/* SPDX-License-Identifier: MIT */
/* Level 3 behind the seam (backend.h): one-shot runs for now; sandboxes
 * that live across commands, snapshots, pools and forks are issue 24's
 * next steps (docs/levels.md). */
#include "microvm.h"

static int mv_probe(aj_error *err)
{
	aj_mv_host h;
	return aj_mv_host_find(&h, err);
}

const aj_backend aj_backend_microvm = {
    .name = "microvm",
    .level = AJ_ISO_MICROVM,
    .caps = 0,
    .probe = mv_probe,
    .run = aj_microvm_run,
};
