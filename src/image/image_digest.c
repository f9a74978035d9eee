/* SPDX-License-Identifier: MIT */
/* The content digest of an image: one sha256 (OpenSSL EVP) over a
 * canonical walk of the tree, entries sorted by name, never following a
 * symlink. Two trees with the same files, owners, modes and links have the
 * same digest, whatever their timestamps or inode numbers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "image.h"
#include "util.h"

typedef struct walk {
	EVP_MD_CTX *md;
	unsigned long long size, files;
	char path[4096];
	int depth;
} walk;

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void feed(walk *w, const void *p, size_t n)
{
	EVP_DigestUpdate(w->md, p, n);
}

static int hash_file(walk *w, int dirfd, const char *name)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	char buf[65536];
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		feed(w, buf, (size_t)r);
		w->size += (unsigned long long)r;
	}
}

static int walk_dir(walk *w, int dirfd);

/* Extended attributes count (file capabilities live there): names sorted,
 * each with its value. */
static int hash_xattrs(walk *w, int dirfd, const char *name)
{
	char path[4200], list[4096], *names[256];
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dirfd, name);
	ssize_t len = llistxattr(path, list, sizeof(list));
	if (len < 0)
		return errno == ENOTSUP ? 0 : -errno;
	size_t n = 0;
	for (char *a = list; a < list + len && n < AJ_ARRAY_SIZE(names); a += strlen(a) + 1)
		names[n++] = a;
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		char value[4096];
		ssize_t vl = lgetxattr(path, names[i], value, sizeof(value));
		if (vl < 0)
			return -errno;
		char head[32];
		int hl = snprintf(head, sizeof(head), " %zd:", vl);
		feed(w, names[i], strlen(names[i]) + 1);
		feed(w, head, (size_t)hl);
		feed(w, value, (size_t)vl);
	}
	return 0;
}

static int walk_entry(walk *w, int dirfd, const char *name)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	size_t plen = strlen(w->path);
	if (plen + strlen(name) + 2 >= sizeof(w->path))
		return -ENAMETOOLONG;
	snprintf(w->path + plen, sizeof(w->path) - plen, "/%s", name);
	char head[256];
	int n = snprintf(head, sizeof(head), "%o %u %u ", (unsigned)st.st_mode, (unsigned)st.st_uid,
			 (unsigned)st.st_gid);
	feed(w, w->path, strlen(w->path) + 1);
	feed(w, head, (size_t)n);
	w->files++;
	int r = hash_xattrs(w, dirfd, name);
	if (r < 0)
		return r;
	if (S_ISREG(st.st_mode)) {
		n = snprintf(head, sizeof(head), "%lld\n", (long long)st.st_size);
		feed(w, head, (size_t)n);
		r = hash_file(w, dirfd, name);
	} else if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t l = readlinkat(dirfd, name, target, sizeof(target));
		if (l < 0)
			r = -errno;
		else
			feed(w, target, (size_t)l), feed(w, "\n", 1);
	} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		n = snprintf(head, sizeof(head), "%u:%u\n", major(st.st_rdev), minor(st.st_rdev));
		feed(w, head, (size_t)n);
	} else if (S_ISDIR(st.st_mode)) {
		feed(w, "\n", 1);
		_cleanup_close_ int sub =
		    openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = sub < 0 ? -errno : w->depth > 256 ? -ELOOP : 0;
		if (r == 0) {
			w->depth++;
			r = walk_dir(w, sub);
			w->depth--;
		}
	} else {
		feed(w, "\n", 1); /* fifo, socket: the name and mode say it all */
	}
	w->path[plen] = '\0';
	return r;
}

static int walk_dir(walk *w, int dirfd)
{
	int dup = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		if (dup >= 0)
			close(dup);
		return -errno;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				r = -ENOMEM;
				break;
			}
			names = nn;
		}
		if (!(names[n] = strdup(e->d_name))) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (r == 0 && n > 1) /* an empty directory has no array at all */
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (r == 0)
			r = walk_entry(w, dirfd, names[i]);
		free(names[i]);
	}
	free(names);
	return r;
}

int aj_image_digest(int dirfd, char digest[80], unsigned long long *size, unsigned long long *files,
		    aj_error *err)
{
	walk w = {.md = EVP_MD_CTX_new()};
	if (!w.md || EVP_DigestInit_ex(w.md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(w.md);
		return aj_err(err, ENOMEM, "cannot start a sha256 digest");
	}
	int r = walk_dir(&w, dirfd);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	if (r == 0 && EVP_DigestFinal_ex(w.md, md, &len) != 1)
		r = -EIO;
	EVP_MD_CTX_free(w.md);
	if (r < 0)
		return aj_err(err, -r, "cannot read the image tree at %s",
			      w.path[0] ? w.path : "/");
	strcpy(digest, "sha256:");
	for (unsigned i = 0; i < len; i++)
		snprintf(digest + 7 + 2 * i, 3, "%02x", md[i]);
	*size = w.size;
	*files = w.files;
	return 0;
}
