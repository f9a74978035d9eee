/* SPDX-License-Identifier: MIT */
/* The state directory's prepared /dev (dev_cache.c). */
#ifndef AJ_DEV_CACHE_H
#define AJ_DEV_CACHE_H

/* Parent, real root: a detached read-only, nosuid, noexec bind of the state
 * directory's /dev (made when missing), or -1 (then a bind per node). */
int aj_dev_cache_open(void);

#endif
