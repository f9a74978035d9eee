/* SPDX-License-Identifier: MIT */
/* The state directory's copy of the host /etc files (etc_cache.c). */
#ifndef AJ_ETC_CACHE_H
#define AJ_ETC_CACHE_H

#include <stdbool.h>

#include "mount.h"

/* Parent, real root: use the state directory's copy of the host /etc files
 * when it is current (every file and directory it was made from still has
 * the same inode, size, mode and times), else make a new one first. On
 * success plan->etc_cached is set and *lock is the copy's manifest, locked
 * shared: keep it open until the sandbox is gone (a copy is removed only
 * when no sandbox holds it). false: no cache, bind the files one by one. */
bool aj_etc_cache_use(aj_mount_plan *plan, int *lock);

#endif
