/* SPDX-License-Identifier: MIT */
/* Copy a sandbox's file tree (snapshots and forks): from one directory to
 * another, staying on the source's mount, never following a symlink, owners
 * shifted from one sandbox's host id range to another's. */
#ifndef AJ_TREE_H
#define AJ_TREE_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

typedef struct aj_tree_ids {
	uid_t from_uid, to_uid; /* host id of inside 0, in the source and the destination */
	gid_t from_gid, to_gid;
	unsigned range;		      /* ids from_uid .. from_uid+range-1 are shifted; others
				       * become to_uid + 65534 (nobody) */
	unsigned long long max_bytes; /* the regular files copied may add up to
				       * this apparent size (st_size, holes
				       * too), else the copy stops with
				       * -EDQUOT before the file that passes
				       * it; 0: no limit */
} aj_tree_ids;

/* Make dst's tree the same as src's (both directories): entries missing in
 * dst are created, changed ones replaced, extra ones removed (on dst's own
 * mount only). A regular file that is the same inode with the same change
 * time on both sides (both an overlay's unchanged lower file) is kept.
 * Directories that are mount points in src are created empty in dst;
 * other mount points (files bound over) are left out. Regular files,
 * directories, symlinks and FIFOs are copied (owners, modes, times; no
 * xattrs); sockets and devices are not. A file's holes stay holes
 * (aj_copy_fd). */
int aj_tree_sync(int src, int dst, const aj_tree_ids *ids, aj_error *err);

/* The apparent size (st_size) of the regular files below dir, on its own
 * mount, never following a symlink. 0 or a negative errno. */
int aj_tree_apparent_size(int dir, unsigned long long *bytes);

#endif
