/* SPDX-License-Identifier: MIT */
/* Snapshots of a level-3 VM on an image (snap.c). */
#ifndef AJ_MV_SNAP_H
#define AJ_MV_SNAP_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"
#include "policy.h"

/* The snapshot's file for this qemu command line (dir, the VM's own
 * directory, left out), image and /etc layer. */
void aj_mv_snap_path(const char *dir, char *const *argv, size_t n, const char *rootimg,
		     unsigned long long etc_hash, char *out, size_t len);
/* The ready VM whose QMP socket is vmdir/qmp.sock saved to file (written
 * aside, renamed into place) while stopped, then let go on; bounded in
 * time, refused (ENOSPC) where the guest's RAM would not fit.
 * -ENOTRECOVERABLE: the VM did not go on (its caller kills it). */
int aj_mv_snap_save(const char *vmdir, const char *file, aj_error *err);
/* The agent's request giving a restored VM its own identity: fresh
 * entropy, the time, the hostname (a new reference, or NULL). */
json_t *aj_mv_identity_req(const aj_policy *p);

#endif
