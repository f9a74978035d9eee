/* SPDX-License-Identifier: MIT */
/* Records of minted secrets (docs/network.md, "the mint hook"): before the
 * hook mints for a sandbox (a service's or a run's), a record naming its
 * scoped secrets (names and hosts, never a value), the hook and the owner
 * (boot, pid namespace, pids with start times) is written to a 0700
 * directory; it is removed once they are revoked. A record whose owner is
 * gone is revoked by the next run or serve that starts (aj_mintrec_sweep),
 * one of them only (an flock on the record is the claim). */
#ifndef AJ_MINTREC_H
#define AJ_MINTREC_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "policy.h"

/* Where the sweep says what it did: an error line, an audit event (takes
 * the object), what the revokes come "after" (the audit's word; NULL:
 * said per record: a reboot, a killed run, the service's crash), and a
 * flag that, once non-zero, ends the sweep early (the rest is left for
 * the next start). */
typedef struct aj_mintrec_out {
	void (*say)(void *ctx, const char *msg);
	void (*event)(void *ctx, const char *event, json_t *fields);
	void *ctx;
	const char *after;
	const int *stop;
} aj_mintrec_out;

/* Open dir, checked: its parent (the state directory) owned by the euid
 * or root, not group/other-writable; dir a directory (not a symbolic link)
 * of this user, no group or other permission; with create, made 0700 when
 * absent. An fd or
 * -errno with err set (what is wrong, the fix). */
int aj_mintrec_dir_open(const char *dir, bool create, aj_error *err);
/* Write (rename over) dir/ID.json for sandbox id: the scoped secrets of p
 * (only_minted: those still marked minted), hook, and as owner this
 * process and also (if > 0). 0 or -errno with err set. */
int aj_mintrec_write(const char *dir, const char *id, const aj_policy *p, bool only_minted,
		     const char *hook, pid_t also, aj_error *err);
/* Remove dir/ID.json (its secrets revoked). */
void aj_mintrec_remove(const char *dir, const char *id);
/* Revoke what each record of dir whose owner is gone names, with hook (the
 * one this process was configured with; NULL: none) when the record's hook
 * is that file (aj_mint_hook_id's dev/ino), else keep it (said once), and
 * an empty stdin; remove the record when all were revoked, else keep
 * those that were not. 10 s at most, the rest left for the next start.
 * Records that can't be trusted are set aside as .bad-NAME[.N]; temporary
 * files of writers that are gone are removed. Returns how many records
 * are left to revoke by a later start. */
int aj_mintrec_sweep(const char *dir, const char *hook, const aj_mintrec_out *out);
/* For doctor: records of dir whose owner lives, whose owner is gone, and
 * set aside (.bad-). 0, or -errno (dir is not usable) with err set. */
int aj_mintrec_scan(const char *dir, unsigned *live, unsigned *lost, unsigned *bad, aj_error *err);

#endif
