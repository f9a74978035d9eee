/* SPDX-License-Identifier: MIT */
/* The state directory's caches: the /etc copy (etc_cache.c), /dev
 * (dev_cache.c), the workspace's placeholders (protect.c). */
#ifndef AJ_CACHE_H
#define AJ_CACHE_H

#include <stdbool.h>

/* STATE/name (made, 0700, when create), if root's own and not writable by
 * others; -1 otherwise. */
int aj_cache_dir(const char *name, bool create);
/* fd is root's own, not group- or world-writable, a directory (dir) or a
 * regular file. */
bool aj_cache_trusted(int fd, bool dir);

#endif
