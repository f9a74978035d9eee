/* SPDX-License-Identifier: MIT */
/* Images: immutable root filesystems stored under the state directory,
 * named, addressed by a content digest, used read-only by sandboxes (with a
 * per-sandbox writable tmpfs layer, as --rootfs). */
#ifndef AJ_IMAGE_H
#define AJ_IMAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "error.h"
#include "tree.h"

#define AJ_STATE_DIR_DEFAULT "/var/lib/agentjail"
#define AJ_IMAGE_NAME_MAX 64
#define AJ_MAX_PACKAGES 128

typedef enum aj_image_source {
	AJ_IMAGE_FROM_DEBIAN,  /* mmdebstrap SUITE */
	AJ_IMAGE_FROM_DIR,     /* a copy of a directory tree */
	AJ_IMAGE_FROM_TAR,     /* a tar archive of a root filesystem */
	AJ_IMAGE_FROM_OCI,     /* a container image archive (docker save, OCI layout) */
	AJ_IMAGE_FROM_SANDBOX, /* a sandbox's filesystem (aj_image_snapshot) */
} aj_image_source;

typedef struct aj_image_spec {
	const char *name;
	aj_image_source source;
	const char *from; /* suite ("bookworm"), directory or tar file */
	const char *packages[AJ_MAX_PACKAGES];
	size_t n_packages;
	const char *warmup; /* a command the service may run to warm a sandbox */
	const char *mirror; /* NULL: mmdebstrap's default */
	bool checkpoint;    /* a level-2 snapshot with its memory (image.json says so) */
} aj_image_spec;

typedef struct aj_image_info {
	char name[AJ_IMAGE_NAME_MAX + 1];
	char digest[80]; /* "sha256:" + 64 hex */
	char source[600];
	char created[32];
	char warmup[512];
	unsigned long long size_bytes, files;
	bool checkpoint; /* made by a level-2 snapshot: its memory in AJ_IMAGE_CHECKPOINT_DIR */
} aj_image_info;

/* $AGENTJAIL_STATE_DIR, else /var/lib/agentjail (read at the first call). */
const char *aj_state_dir(void);
/* Is name a valid image name: [a-z0-9][a-z0-9._-]{0,63}? */
bool aj_image_name_ok(const char *name);
/* A Debian package name ([a-z0-9][a-z0-9.+:-]*) and suite ([a-z0-9][a-z0-9-]*). */
bool aj_image_package_ok(const char *p);
bool aj_image_suite_ok(const char *s);
/* Parse a recipe (JSON: from, packages, warmup) into spec; strings live in
 * *store (free it with json_decref semantics: aj_image_recipe_free). */
int aj_image_recipe_load(const char *path, aj_image_spec *spec, void **store, aj_error *err);
void aj_image_recipe_free(void *store);
/* Build, digest and store an image, then point spec->name at it. */
int aj_image_build(const char *state, const aj_image_spec *spec, aj_image_info *out, aj_error *err);
/* A new image name from the tree at root (a sandbox's root directory, its
 * own mount only: aj_tree_sync), owners shifted by ids to the image's
 * (inside) ids; from describes the source ("sb-... (image python)"). The
 * files of own (NULL-terminated, relative: "etc/passwd"), which the
 * sandbox's level wrote and writes again at every start, are taken as the
 * image at base has them (its root; -1: none), not as the sandbox had
 * them. An existing name is refused (EEXIST). */
int aj_image_snapshot(const char *state, const char *name, int root, const aj_tree_ids *ids,
		      const char *from, const char *warmup, int base, const char *const *own,
		      aj_image_info *out, aj_error *err);
/* aj_image_snapshot from a level that streams its root itself (level 3:
 * backend.h root_stream): fill writes it into the current directory (the
 * new image's tree; the calling thread's own, the process's is not
 * changed) with an aj_tree_writer given max_bytes: the smaller of
 * max_bytes and the store's room. */
typedef int (*aj_image_fill_fn)(void *ctx, unsigned long long max_bytes, aj_error *err);
int aj_image_snapshot_from(const char *state, const char *name, aj_image_fill_fn fill, void *ctx,
			   unsigned long long max_bytes, const char *from, const char *warmup,
			   int base, const char *const *own, aj_image_info *out, aj_error *err);
/* Entries of an untrusted stream (aj_root_entry) written into the current
 * directory (tree_write.c): libarchive's checks (no absolute path, "..",
 * or path through a symlink), owners outside the image's ids as nobody,
 * regular files up to max_bytes in all (else -EDQUOT). close applies the
 * directories' modes and frees (err NULL: only frees). */
typedef struct aj_tree_writer aj_tree_writer;
int aj_tree_writer_new(unsigned long long max_bytes, aj_tree_writer **out, aj_error *err);
int aj_tree_writer_entry(aj_tree_writer *t, const aj_root_entry *e, aj_error *err);
int aj_tree_writer_data(aj_tree_writer *t, const void *buf, size_t len, aj_error *err);
int aj_tree_writer_close(aj_tree_writer *t, aj_error *err);
/* The directory at the top of an image's root that holds a level-2
 * snapshot's memory (`runsc checkpoint`): a level-2 create from the image
 * restores from it (never bound into a level-2 sandbox). */
/* A member name made relative ("./a/b" and "/a/b" -> "a/b"); NULL when it
 * is empty, "." or has a ".." component (image_oci.c). */
const char *aj_image_relative(const char *p);

#define AJ_IMAGE_CHECKPOINT_DIR ".agentjail-checkpoint"
/* The checkpoint of the stored image whose root is rootfs
 * (<state>/images/<hex>/rootfs), in buf: only when its image.json (outside
 * the tree) says a level-2 snapshot made it, as every other way into the
 * store drops that directory. NULL: none, or not an image of the store. */
const char *aj_image_checkpoint_of(const char *rootfs, char *buf, size_t len);
/* aj_image_snapshot, and the regular files of directory ckpt copied into
 * the image's AJ_IMAGE_CHECKPOINT_DIR (root's, 0700/0600). */
int aj_image_snapshot_checkpoint(const char *state, const char *name, int root,
				 const aj_tree_ids *ids, const char *from, const char *ckpt,
				 aj_image_info *out, aj_error *err);
/* The store's room (image_store.c): what a snapshot may still take, by
 * apparent size. */
typedef struct aj_image_room {
	unsigned long long room;	  /* min(free - reserve, quota - used) */
	unsigned long long free, reserve; /* of the store's filesystem */
	unsigned long long quota, used;	  /* quota 0: none set (used not counted) */
	bool by_quota;			  /* the quota is what limits it */
} aj_image_room;
/* The operator's quota for the store (`serve --store-quota`); 0: none. */
void aj_image_set_store_quota(unsigned long long bytes);
unsigned long long aj_image_store_quota(void);
int aj_image_store_room(const char *images, aj_image_room *out, aj_error *err);
/* flock the store directory images (created if missing): shared or
 * exclusive. Returns the fd holding it, or a negative errno (err). */
int aj_image_store_lock(const char *images, bool exclusive, aj_error *err);
/* Remove the store's temporary directories (.build-*, .trash-*) whose
 * process is gone (they are flock'ed while used): at the service's start
 * and before a build. _locked: with the store's lock held (its fd). */
void aj_image_sweep(const char *state);
void aj_image_sweep_locked(const char *images, int images_fd);
/* Apply the layers of a container image archive (`docker save` or an OCI
 * layout tarball) to the empty directory rootfs; work is a scratch path
 * (created and removed). */
int aj_image_import_oci(const char *archive, const char *rootfs, const char *work, aj_error *err);
/* The root filesystem of image name (malloc'ed path). */
int aj_image_rootfs(const char *state, const char *name, char **path, aj_error *err);
int aj_image_inspect(const char *state, const char *name, aj_image_info *out, aj_error *err);
/* Every named image, sorted by name (malloc'ed array). */
int aj_image_list(const char *state, aj_image_info **out, size_t *n, aj_error *err);
/* Drop the name; the content goes when no other name points at it. */
int aj_image_remove(const char *state, const char *name, aj_error *err);
/* Shared by image.c and image_build.c: the "bad name" error; run argv with
 * its output on our stderr (0 when it exited 0); rm -rf --one-file-system. */
int aj_image_bad_name(const char *name, aj_error *err);
int aj_image_spawn_wait(char *const argv[], aj_error *err);
int aj_image_rm_rf(const char *path);
/* sha256 over the tree at dirfd: paths (sorted), types, modes, owners,
 * symlink targets, device numbers and file contents. */
int aj_image_digest(int dirfd, char digest[80], unsigned long long *size, unsigned long long *files,
		    aj_error *err);

#endif
