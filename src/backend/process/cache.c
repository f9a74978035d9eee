/* SPDX-License-Identifier: MIT */
/* The state directory's caches (etc_cache.c, dev_cache.c, protect.c): where
 * they are, and which of their files may be trusted. */
#include "cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"
#include "util.h"

bool aj_cache_trusted(int fd, bool dir)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_uid == 0 && !(st.st_mode & 022) &&
	       (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
}

int aj_cache_dir(const char *name, bool create)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", aj_state_dir(), name);
	int dir = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0 && errno == ENOENT && create) {
		if (aj_mkdir_p(aj_state_dir(), 0755) < 0 ||
		    (mkdir(path, 0700) < 0 && errno != EEXIST))
			return -1;
		dir = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (dir >= 0 && !aj_cache_trusted(dir, true)) {
		close(dir);
		return -1;
	}
	return dir;
}
