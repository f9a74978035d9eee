/* SPDX-License-Identifier: MIT */
/* User namespace identity: which host ids the sandbox runs as. */
#ifndef AJ_USERNS_H
#define AJ_USERNS_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

#define AJ_UID_BASE 1000000000u /* host uids the sandbox may map to */
#define AJ_UID_SLOTS 16384u
#define AJ_UID_RANGE 65536u
/* Host-wide reservations of the ranges: byte S of this file is locked
 * (an OFD write lock) by the process whose sandbox maps range S. */
#define AJ_UID_LOCK_DIR "/var/lib/agentjail"
#define AJ_UID_LOCK_DIR_FALLBACK "/run/agentjail"
#define AJ_UID_LOCK_FILE "uid-ranges.lock"

typedef struct aj_idmap {
	bool privileged;  /* real root: map a whole range of unused host ids */
	uid_t host_base;  /* inside id 0 maps here (privileged) */
	uid_t caller_uid; /* unprivileged: the caller's uid and gid */
	gid_t caller_gid;
	uid_t inside_uid; /* the command's uid/gid inside */
	gid_t inside_gid;
} aj_idmap;

/* Choose the identity for a new sandbox. */
int aj_userns_plan(aj_idmap *m, uid_t inside_uid, gid_t inside_gid, aj_error *err);
/* Reserve a free host uid range host-wide (its slot in *slot): returns
 * the fd whose lock holds it (closing it frees the range), -EBUSY when
 * every range is taken, or another negative errno; err filled. */
int aj_userns_reserve(unsigned *slot, aj_error *err);
/* Host uid/gid the sandbox user appears as. */
uid_t aj_userns_host_uid(const aj_idmap *m);
gid_t aj_userns_host_gid(const aj_idmap *m);
/* Write uid_map, setgroups and gid_map of process pid. */
int aj_userns_write_maps(const aj_idmap *m, pid_t pid, aj_error *err);
/* Format the uid_map/gid_map text (for tests). */
int aj_userns_format_map(const aj_idmap *m, bool gid, char *buf, size_t len);

/* Create a user namespace whose map is "inside_id host_id 1" for uid and
 * gid (used for idmapped mounts) and return an fd to it. */
int aj_userns_make_fd(const char *uid_map, const char *gid_map, aj_error *err);

#endif
