/* SPDX-License-Identifier: MIT */
/* The image store's room and its temporary directories.
 *
 * Room: a snapshot (an image a sandbox's files make, through the service)
 * may take at most what the store has room for, by apparent size (a
 * sparse file counts by its length: the copy keeps its holes, but a later
 * copy of the image by another tool may not). The room is the free space
 * of the store's filesystem minus a reserve (5% of the filesystem, at
 * least 1 GiB), and, when the operator set a quota (`agentjail serve
 * --store-quota SIZE`), at most the quota minus what the stored images
 * take (their apparent sizes, image.json's size_bytes).
 *
 * Temporary directories: a build fills images/.build-*, a removal moves
 * the content to images/.trash-* first. Each is flock'ed by the process
 * working on it, so the sweep (aj_image_sweep: at the service's start and
 * before every build) removes exactly those whose process is gone, also
 * after a crash or a SIGKILL. The store directory itself is flock'ed:
 * shared while a build directory is made and locked (the sweep never sees
 * one unlocked), exclusively by the sweep and by a snapshot for its whole
 * copy (two snapshots never count the same room). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "image.h"
#include "util.h"

#define RESERVE_MIN (1ULL << 30)

static unsigned long long quota; /* 0: none (the free space decides) */

void aj_image_set_store_quota(unsigned long long bytes)
{
	quota = bytes;
}

unsigned long long aj_image_store_quota(void)
{
	return quota;
}

int aj_image_store_lock(const char *images, bool exclusive, aj_error *err)
{
	int r = aj_mkdir_p(images, 0755);
	int fd = r < 0 ? r : open(images, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return aj_err(err, r < 0 ? -r : errno, "cannot open the image store %s", images);
	while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0)
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return aj_err(err, e, "cannot lock the image store %s", images);
		}
	return fd;
}

/* Stored images' apparent sizes (content directories: 64 hex digits). */
static unsigned long long used_bytes(const char *images)
{
	DIR *d = opendir(images);
	if (!d)
		return 0;
	unsigned long long sum = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (strlen(e->d_name) != 64 || strspn(e->d_name, "0123456789abcdef") != 64)
			continue;
		_cleanup_free_ char *meta = aj_asprintf("%s/%s/image.json", images, e->d_name);
		json_t *j = meta ? json_load_file(meta, 0, NULL) : NULL;
		json_int_t n = json_integer_value(json_object_get(j, "size_bytes"));
		sum += n > 0 ? (unsigned long long)n : 0;
		json_decref(j);
	}
	closedir(d);
	return sum;
}

int aj_image_store_room(const char *images, aj_image_room *out, aj_error *err)
{
	memset(out, 0, sizeof(*out));
	struct statvfs vs;
	if (statvfs(images, &vs) < 0)
		return aj_err(err, errno, "cannot see the free space of %s", images);
	unsigned long long size = (unsigned long long)vs.f_blocks * vs.f_frsize;
	out->free = (unsigned long long)vs.f_bavail * vs.f_frsize;
	out->reserve = size / 20 > RESERVE_MIN ? size / 20 : RESERVE_MIN;
	out->room = out->free > out->reserve ? out->free - out->reserve : 0;
	out->quota = quota;
	if (quota) {
		out->used = used_bytes(images);
		unsigned long long q = quota > out->used ? quota - out->used : 0;
		if (q <= out->room) {
			out->room = q;
			out->by_quota = true;
		}
	}
	return 0;
}

/* Remove images/NAME when no process holds its lock. */
static void sweep_one(int images_fd, const char *images, const char *name)
{
	int fd = openat(images_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		_cleanup_free_ char *path = aj_asprintf("%s/%s", images, name);
		if (path)
			(void)aj_image_rm_rf(path);
	}
	close(fd);
}

void aj_image_sweep_locked(const char *images, int images_fd)
{
	int dup = fcntl(images_fd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		if (dup >= 0)
			close(dup);
		return;
	}
	for (struct dirent *e; (e = readdir(d));)
		if (!strncmp(e->d_name, ".build-", 7) || !strncmp(e->d_name, ".trash-", 7))
			sweep_one(dirfd(d), images, e->d_name);
	closedir(d);
}

void aj_image_sweep(const char *state)
{
	_cleanup_free_ char *images = aj_asprintf("%s/images", state);
	struct stat st;
	if (!images || stat(images, &st) < 0)
		return; /* no store yet: nothing to sweep */
	int fd = aj_image_store_lock(images, true, NULL);
	if (fd < 0)
		return;
	aj_image_sweep_locked(images, fd);
	close(fd);
}
