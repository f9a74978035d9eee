/* SPDX-License-Identifier: MIT */
/* Import of a container image archive into an image's tree: a `docker save`
 * tarball (manifest.json + layer tars) or an OCI image layout archive
 * (index.json + blobs/sha256/...), layers gzip'ed or not.
 *
 * The archive is not trusted. Layers are applied in order with libarchive,
 * refusing absolute paths, "..", and any entry whose path passes through a
 * symlink on disk (ARCHIVE_EXTRACT_SECURE_SYMLINKS): a layer that plants
 * `etc -> /etc` cannot make a later layer write the host's /etc. Whiteouts
 * (`.wh.NAME`, `.wh..wh..opq`) remove what earlier layers made, through
 * descriptors that never follow a symlink. Device nodes are skipped (the
 * sandbox mounts images nodev anyway). */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "image.h"
#include "policy.h"
#include "util.h"

#define OCI_MAX_LAYERS 256
#define OCI_JSON_MAX (4 << 20)
#define OCI_RM_DEPTH 512

static const int secure = ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
			  ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS;

static int open_beneath(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how = {.flags = (unsigned long long)flags | O_CLOEXEC,
			       .resolve = resolve | RESOLVE_NO_MAGICLINKS};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

const char *aj_image_relative(const char *p)
{
	while (*p == '/' || (p[0] == '.' && p[1] == '/'))
		p += p[0] == '/' ? 1 : 2;
	if (!*p || (p[0] == '.' && !p[1]))
		return NULL;
	for (const char *c = p; c;) {
		if (c[0] == '.' && c[1] == '.' && (c[2] == '/' || !c[2]))
			return NULL;
		c = strchr(c, '/');
		c = c ? c + 1 : NULL;
	}
	return p;
}

static struct archive *reader(int fd)
{
	struct archive *a = archive_read_new();
	if (!a)
		return NULL;
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_fd(a, fd, 1 << 16) != ARCHIVE_OK) {
		archive_read_free(a);
		return NULL;
	}
	return a;
}

/* Data of the current entry, from a to the disk writer w. */
static int copy_data(struct archive *a, struct archive *w)
{
	const void *buf;
	size_t size;
	la_int64_t off;
	int r;
	while ((r = archive_read_data_block(a, &buf, &size, &off)) == ARCHIVE_OK)
		if (archive_write_data_block(w, buf, size, off) < ARCHIVE_WARN)
			return -1;
	return r == ARCHIVE_EOF ? 0 : -1;
}

static const char *why(struct archive *a)
{
	const char *m = archive_error_string(a);
	return m ? m : "unknown error";
}

/* ---- the outer archive ---- */

/* Unpack the outer archive into the current directory (an empty one):
 * only files, directories and symlinks (docker save links repeated
 * layers). */
static int unpack_outer(const char *archive, aj_error *err)
{
	_cleanup_close_ int fd = open(archive, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return aj_err(err, errno, "cannot open --from-oci %s", archive);
	struct archive *a = reader(fd);
	if (!a)
		return aj_err(err, EINVAL, "--from-oci %s is not a tar archive", archive);
	struct archive *w = archive_write_disk_new();
	if (!w) {
		archive_read_free(a);
		return aj_err(err, ENOMEM, "out of memory");
	}
	archive_write_disk_set_options(w, secure | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SPARSE);
	int r = 0, n = 0, rc;
	struct archive_entry *e;
	while (!r && (rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *rel = aj_image_relative(archive_entry_pathname(e));
		mode_t t = archive_entry_filetype(e);
		if (!rel || (t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK) ||
		    archive_entry_hardlink(e)) {
			r = aj_err(err, EINVAL, "--from-oci %s: unexpected member '%s'", archive,
				   archive_entry_pathname(e));
			break;
		}
		archive_entry_set_pathname(e, rel);
		archive_entry_set_perm(e, t == AE_IFDIR ? 0700 : 0600);
		if (archive_write_header(w, e) < ARCHIVE_WARN ||
		    (t == AE_IFREG && copy_data(a, w) < 0) ||
		    archive_write_finish_entry(w) < ARCHIVE_WARN)
			r = aj_err(err, EIO, "--from-oci %s: cannot unpack '%s': %s", archive, rel,
				   why(w));
		n++;
	}
	if (!r && rc != ARCHIVE_EOF)
		r = aj_err(err, EINVAL, "--from-oci %s: %s", archive, why(a));
	if (!r && !n)
		r = aj_err(err, EINVAL, "--from-oci %s is empty", archive);
	archive_write_free(w);
	archive_read_free(a);
	return r;
}

/* ---- which layers ---- */

static json_t *read_json(int workfd, const char *path, const char *archive, aj_error *err)
{
	int fd = open_beneath(workfd, path, O_RDONLY | O_NOCTTY, RESOLVE_BENEATH);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > OCI_JSON_MAX) {
		aj_err(err, fd < 0 ? -fd : EINVAL,
		       "--from-oci %s: no usable %s (is it a `docker save` or OCI image archive?)",
		       archive, path);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	json_error_t je;
	json_t *j = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	close(fd);
	if (!j)
		aj_err(err, EINVAL, "--from-oci %s: %s is not JSON: %s", archive, path, je.text);
	return j;
}

/* "sha256:<64 hex>" → "blobs/sha256/<hex>" */
static char *blob_path(json_t *desc)
{
	const char *d = json_string_value(json_object_get(desc, "digest"));
	if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 71 ||
	    strspn(d + 7, "0123456789abcdef") != 64)
		return NULL;
	return aj_asprintf("blobs/sha256/%s", d + 7);
}

static const char *our_arch(void)
{
#if defined(__x86_64__)
	return "amd64";
#elif defined(__aarch64__)
	return "arm64";
#else
	return "";
#endif
}

/* Of an index's manifests: the only one, or the one for linux/our arch. */
static json_t *pick_manifest(json_t *list)
{
	if (json_array_size(list) == 1)
		return json_array_get(list, 0);
	size_t i;
	json_t *m, *found = NULL;
	json_array_foreach(list, i, m)
	{
		json_t *pf = json_object_get(m, "platform");
		const char *os = json_string_value(json_object_get(pf, "os"));
		const char *arch = json_string_value(json_object_get(pf, "architecture"));
		if (os && arch && !strcmp(os, "linux") && !strcmp(arch, our_arch())) {
			if (found)
				return NULL;
			found = m;
		}
	}
	return found;
}

static int add_layer(char ***v, size_t *n, char *path, const char *archive, aj_error *err)
{
	if (!path)
		return aj_err(err, EINVAL, "--from-oci %s: a layer has no valid name or digest",
			      archive);
	if (*n >= OCI_MAX_LAYERS) {
		free(path);
		return aj_err(err, E2BIG, "--from-oci %s: more than %d layers", archive,
			      OCI_MAX_LAYERS);
	}
	char **nv = realloc(*v, (*n + 2) * sizeof(char *));
	if (!nv) {
		free(path);
		return aj_err(err, ENOMEM, "out of memory");
	}
	*v = nv;
	nv[(*n)++] = path;
	nv[*n] = NULL;
	return 0;
}

/* The layer files (paths under work), bottom first. */
static int find_layers(int workfd, const char *archive, char ***layers, size_t *n, aj_error *err)
{
	*layers = NULL;
	*n = 0;
	int r = 0;
	struct stat st;
	if (fstatat(workfd, "manifest.json", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* docker save: [{"Config": ..., "RepoTags": [...], "Layers": [...]}] */
		json_t *m = read_json(workfd, "manifest.json", archive, err);
		if (!m)
			return -EINVAL;
		json_t *l = json_object_get(json_array_get(m, 0), "Layers");
		if (json_array_size(m) != 1 || !json_is_array(l)) {
			r = aj_err(err, EINVAL,
				   "--from-oci %s: expected one image in manifest.json, found %zu",
				   archive, json_array_size(m));
		}
		size_t i;
		json_t *p;
		json_array_foreach(l, i, p)
		{
			if (r)
				break;
			const char *s = json_string_value(p);
			r = add_layer(layers, n,
				      s && aj_image_relative(s) ? strdup(aj_image_relative(s))
								: NULL,
				      archive, err);
		}
		json_decref(m);
	} else {
		/* OCI layout: index.json → manifest (maybe via a nested index) */
		json_t *j = read_json(workfd, "index.json", archive, err);
		for (int depth = 0; j && !r && depth < 3; depth++) {
			json_t *layer_list = json_object_get(j, "layers");
			if (json_is_array(layer_list)) {
				size_t i;
				json_t *d;
				json_array_foreach(layer_list, i, d)
				{
					if (r)
						break;
					r = add_layer(layers, n, blob_path(d), archive, err);
				}
				break;
			}
			json_t *m = pick_manifest(json_object_get(j, "manifests"));
			_cleanup_free_ char *path = m ? blob_path(m) : NULL;
			json_t *next = path ? read_json(workfd, path, archive, err) : NULL;
			if (!path)
				r = aj_err(
				    err, EINVAL,
				    "--from-oci %s: expected one image (for linux/%s) in its "
				    "index, found %zu",
				    archive, our_arch(),
				    json_array_size(json_object_get(j, "manifests")));
			else if (!next)
				r = -EINVAL;
			json_decref(j);
			j = next;
		}
		if (!j && !r)
			r = -EINVAL;
		json_decref(j);
	}
	if (!r && !*n)
		r = aj_err(err, EINVAL, "--from-oci %s: the image has no layers", archive);
	return r;
}

/* ---- applying a layer ---- */

/* Remove name in parent and everything below it; nothing there is fine. */
static int rm_at(int parent, const char *name)
{
	int r = aj_rm_tree_at(parent, name, OCI_RM_DEPTH);
	return r == -ENOENT ? 0 : r;
}

/* The directory dir (relative, may be "") of the tree, without following
 * links: -ENOENT/-ENOTDIR when there is none, -ELOOP through a symlink. */
static int open_dir(int rootfd, const char *dir)
{
	return open_beneath(rootfd, *dir ? dir : ".", O_RDONLY | O_DIRECTORY,
			    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
}

/* One whiteout: `DIR/.wh.NAME` removes DIR/NAME, `DIR/.wh..wh..opq`
 * everything earlier layers put in DIR. */
static int whiteout(int rootfd, const char *rel, const char *base)
{
	_cleanup_free_ char *dir = strndup(rel, (size_t)(base - rel));
	if (!dir)
		return -ENOMEM;
	const char *victim = base + 4;
	bool opaque = !strcmp(base, ".wh..wh..opq");
	if (!opaque && (!*victim || !strcmp(victim, ".") || !strcmp(victim, "..")))
		return -EINVAL;
	int fd = open_dir(rootfd, dir);
	if (fd == -ENOENT || fd == -ENOTDIR)
		return 0;
	if (fd < 0)
		return fd;
	int r = 0;
	if (opaque) {
		DIR *d = fdopendir(fd);
		if (!d) {
			close(fd);
			return -errno;
		}
		for (struct dirent *e; !r && (e = readdir(d));)
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				r = rm_at(dirfd(d), e->d_name);
		closedir(d);
	} else {
		r = rm_at(fd, victim);
		close(fd);
	}
	return r;
}

static const char *basename_of(const char *rel)
{
	size_t n = strlen(rel);
	while (n > 0 && rel[n - 1] == '/')
		n--; /* "dir/" */
	const char *b = memrchr(rel, '/', n);
	return b ? b + 1 : rel;
}

/* Pass 1: the layer's whiteouts, applied to the tree so far. */
static int layer_whiteouts(int rootfd, int fd, const char *name, aj_error *err)
{
	struct archive *a = reader(fd);
	if (!a)
		return aj_err(err, EINVAL, "layer %s is not a tar archive", name);
	int r = 0, rc;
	struct archive_entry *e;
	while (!r && (rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *rel = aj_image_relative(archive_entry_pathname(e));
		if (!rel) {
			r = aj_err(err, EINVAL, "layer %s: unsafe member '%s'", name,
				   archive_entry_pathname(e));
			break;
		}
		const char *base = basename_of(rel);
		if (strncmp(base, ".wh.", 4) != 0)
			continue;
		int w = whiteout(rootfd, rel, base);
		if (w < 0)
			r = aj_err(err, -w, "layer %s: cannot apply the whiteout '%s'", name, rel);
	}
	if (!r && rc != ARCHIVE_EOF)
		r = aj_err(err, EINVAL, "layer %s: %s", name, why(a));
	archive_read_free(a);
	return r;
}

/* Pass 2: the layer's files, written into the tree (the current
 * directory) by libarchive with its symlink and ".." checks. */
static int layer_files(int fd, const char *name, unsigned *devices, aj_error *err)
{
	struct archive *a = reader(fd);
	if (!a)
		return aj_err(err, EINVAL, "layer %s is not a tar archive", name);
	struct archive *w = archive_write_disk_new();
	if (!w) {
		archive_read_free(a);
		return aj_err(err, ENOMEM, "out of memory");
	}
	/* SPARSE: runs of zeros are written as holes (a sparse member's are
	 * anyway: its data blocks come with their offsets) */
	archive_write_disk_set_options(w, secure | ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM |
					      ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_XATTR |
					      ARCHIVE_EXTRACT_SPARSE);
	int r = 0, rc;
	struct archive_entry *e;
	while (!r && (rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *rel = aj_image_relative(archive_entry_pathname(e));
		const char *link = archive_entry_hardlink(e);
		mode_t t = archive_entry_filetype(e);
		if (!rel || (link && !aj_image_relative(link))) {
			r = aj_err(err, EINVAL, "layer %s: unsafe member '%s'", name,
				   archive_entry_pathname(e));
			break;
		}
		if (!strncmp(basename_of(rel), ".wh.", 4))
			continue; /* pass 1 */
		if (t == AE_IFCHR || t == AE_IFBLK) {
			(*devices)++;
			continue;
		}
		archive_entry_set_pathname(e, rel);
		if (link)
			archive_entry_set_hardlink(e, aj_image_relative(link));
		if (archive_write_header(w, e) < ARCHIVE_WARN ||
		    (archive_entry_size(e) > 0 && copy_data(a, w) < 0) ||
		    archive_write_finish_entry(w) < ARCHIVE_WARN)
			r = aj_err(err, EPERM, "layer %s: refused or failed '%s': %s", name, rel,
				   why(w));
	}
	if (!r && rc != ARCHIVE_EOF)
		r = aj_err(err, EINVAL, "layer %s: %s", name, why(a));
	archive_write_free(w);
	archive_read_free(a);
	return r;
}

static int apply_layer(int workfd, int rootfd, const char *path, unsigned *devices, aj_error *err)
{
	_cleanup_close_ int fd = open_beneath(workfd, path, O_RDONLY | O_NOCTTY, RESOLVE_BENEATH);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return aj_err(err, fd < 0 ? -fd : EINVAL,
			      "the layer %s is missing from the archive", path);
	int r = layer_whiteouts(rootfd, fd, path, err);
	if (!r && lseek(fd, 0, SEEK_SET) < 0)
		r = aj_err(err, errno, "cannot read the layer %s again", path);
	if (!r && fchdir(rootfd) < 0)
		r = aj_err(err, errno, "cannot enter the image's tree");
	return r ? r : layer_files(fd, path, devices, err);
}

int aj_image_import_oci(const char *archive, const char *rootfs, const char *work, aj_error *err)
{
	_cleanup_close_ int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || rootfd < 0 || mkdir(work, 0700) < 0)
		return aj_err(err, errno, "cannot prepare %s", cwd < 0 ? "." : work);
	_cleanup_close_ int workfd = open(work, O_PATH | O_DIRECTORY | O_CLOEXEC);
	char **layers = NULL;
	size_t n = 0;
	unsigned devices = 0;
	int r = workfd < 0	     ? aj_err(err, errno, "cannot open %s", work)
		: fchdir(workfd) < 0 ? aj_err(err, errno, "cannot enter %s", work)
				     : unpack_outer(archive, err);
	if (!r)
		r = find_layers(workfd, archive, &layers, &n, err);
	for (size_t i = 0; !r && i < n; i++)
		r = apply_layer(workfd, rootfd, layers[i], &devices, err);
	if (fchdir(cwd) < 0 && !r)
		r = aj_err(err, errno, "cannot return to the working directory");
	aj_strv_free(layers);
	int w = workfd >= 0 ? rm_at(AT_FDCWD, work) : 0;
	if (!r && w < 0)
		r = aj_err(err, -w, "cannot remove %s", work);
	if (!r && devices)
		fprintf(stderr,
			"agentjail: %s: %u device nodes skipped (sandboxes get their own /dev)\n",
			archive, devices);
	return r;
}
