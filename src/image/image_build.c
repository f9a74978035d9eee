/* SPDX-License-Identifier: MIT */
/* Building an image (mmdebstrap, cp -a or tar), digesting it and storing
 * it under its digest. Apart from image.c (the store's lookups) so that
 * only the programs that build images link libcrypto (image_digest.c). */
#include "image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inroot.h"
#include "userns.h"
#include "util.h"

static int fill_tree(const aj_image_spec *s, const char *dest, aj_error *err)
{
	switch (s->source) {
	case AJ_IMAGE_FROM_DEBIAN: {
		_cleanup_free_ char *inc = NULL;
		for (size_t i = 0; i < s->n_packages; i++) {
			char *j =
			    aj_asprintf("%s%s%s", inc ? inc : "", inc ? "," : "", s->packages[i]);
			free(inc);
			if (!(inc = j))
				return aj_err(err, ENOMEM, "out of memory");
		}
		_cleanup_free_ char *incopt = inc ? aj_asprintf("--include=%s", inc) : NULL;
		/* in a mount namespace of its own: the /proc, /sys and /dev
		 * mounts it makes in the target can't outlive it on the host */
		char *argv[16];
		size_t a = 0;
		argv[a++] = "unshare";
		argv[a++] = "--mount";
		argv[a++] = "--propagation";
		argv[a++] = "private";
		argv[a++] = "--";
		argv[a++] = "mmdebstrap";
		argv[a++] = "--mode=root";
		argv[a++] = "--variant=minbase";
		argv[a++] = "--format=directory";
		if (incopt)
			argv[a++] = incopt;
		argv[a++] = "--";
		argv[a++] = (char *)s->from;
		argv[a++] = (char *)dest;
		if (s->mirror)
			argv[a++] = (char *)s->mirror;
		argv[a] = NULL;
		return aj_image_spawn_wait(argv, err);
	}
	case AJ_IMAGE_FROM_DIR: {
		_cleanup_free_ char *src = aj_asprintf("%s/.", s->from);
		/* holes stay holes, and runs of zeros become holes */
		char *argv[] = {"cp", "-a", "--sparse=always", "--", src, (char *)dest, NULL};
		return src ? aj_image_spawn_wait(argv, err) : aj_err(err, ENOMEM, "out of memory");
	}
	case AJ_IMAGE_FROM_TAR: {
		/* GNU tar refuses members with ".." and strips leading "/" */
		char *argv[] = {"tar",
				"--extract",
				"--file",
				(char *)s->from,
				"--directory",
				(char *)dest,
				"--numeric-owner",
				"--same-permissions",
				"--no-overwrite-dir",
				NULL};
		return aj_image_spawn_wait(argv, err);
	}
	case AJ_IMAGE_FROM_OCI: {
		_cleanup_free_ char *work = aj_asprintf("%s.oci", dest);
		return work ? aj_image_import_oci(s->from, dest, work, err)
			    : aj_err(err, ENOMEM, "out of memory");
	}
	case AJ_IMAGE_FROM_SANDBOX: break; /* aj_image_snapshot */
	}
	return aj_err(err, EINVAL, "unknown image source");
}

static int write_json(const char *path, json_t *j, aj_error *err)
{
	_cleanup_free_ char *tmp = aj_asprintf("%s.tmp", path);
	if (!tmp || json_dump_file(j, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) < 0 ||
	    rename(tmp, path) < 0)
		return aj_err(err, errno ? errno : EIO, "cannot write %s", path);
	return 0;
}

static int point_name(const char *images, const char *name, const char *digest, aj_error *err)
{
	_cleanup_free_ char *dir = aj_asprintf("%s/names", images);
	_cleanup_free_ char *path = aj_asprintf("%s/names/%s", images, name);
	_cleanup_free_ char *tmp = aj_asprintf("%s/names/.%s.tmp", images, name);
	_cleanup_free_ char *text = aj_asprintf("%s\n", digest);
	if (!dir || !path || !tmp || !text)
		return aj_err(err, ENOMEM, "out of memory");
	if (aj_mkdir_p(dir, 0755) < 0)
		return aj_err(err, errno, "cannot create %s", dir);
	unlink(tmp);
	int r = aj_write_file(tmp, text, 0644);
	if (r < 0 || rename(tmp, path) < 0)
		return aj_err(err, r < 0 ? -r : errno, "cannot name the image %s", name);
	return 0;
}

static void source_text(const aj_image_spec *s, char *buf, size_t len)
{
	if (s->source == AJ_IMAGE_FROM_DEBIAN) {
		int o = snprintf(buf, len, "debian:%s", s->from);
		for (size_t i = 0; i < s->n_packages && o > 0 && (size_t)o < len; i++)
			o += snprintf(buf + o, len - (size_t)o, "%s%s", i ? "," : " +",
				      s->packages[i]);
	} else {
		snprintf(buf, len, "%s:%s",
			 s->source == AJ_IMAGE_FROM_DIR	  ? "dir"
			 : s->source == AJ_IMAGE_FROM_OCI ? "oci"
			 : s->source == AJ_IMAGE_FROM_TAR ? "tar"
							  : "sandbox",
			 s->from);
	}
}

/* Move the built tree into place under its digest (or drop it when the
 * same content is stored already) and write its metadata. */
static int store_tree(const char *images, const char *build, const aj_image_spec *s,
		      aj_image_info *out, aj_error *err)
{
	_cleanup_free_ char *rootfs = aj_asprintf("%s/rootfs", build);
	_cleanup_close_ int fd =
	    rootfs ? open(rootfs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (fd < 0)
		return aj_err(err, errno, "the built tree %s is missing", rootfs ? rootfs : build);
	int r = aj_image_digest(fd, out->digest, &out->size_bytes, &out->files, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *final = aj_asprintf("%s/%s", images, out->digest + 7);
	if (!final)
		return aj_err(err, ENOMEM, "out of memory");
	source_text(s, out->source, sizeof(out->source));
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out->created, sizeof(out->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(out->warmup, sizeof(out->warmup), "%s", s->warmup ? s->warmup : "");
	if (access(final, F_OK) == 0)
		return 1; /* the same content is stored: reuse it */
	out->checkpoint = s->checkpoint;
	json_t *j =
	    json_pack("{s:s,s:s,s:s,s:I,s:I,s:s,s:b}", "digest", out->digest, "source", out->source,
		      "created", out->created, "size_bytes", (json_int_t)out->size_bytes, "files",
		      (json_int_t)out->files, "warmup", out->warmup, "checkpoint", s->checkpoint);
	_cleanup_free_ char *meta = aj_asprintf("%s/image.json", build);
	r = j && meta ? write_json(meta, j, err) : aj_err(err, ENOMEM, "out of memory");
	json_decref(j);
	if (r < 0)
		return r;
	if (rename(build, final) < 0)
		return aj_err(err, errno, "cannot store the image at %s", final);
	return 0;
}

/* Only a level-2 snapshot's checkpoint may be at AJ_IMAGE_CHECKPOINT_DIR
 * (image_build.c copies it there; a level-2 create restores from it): a
 * tree made any other way (a sandbox's files, a stream, an archive, a
 * directory) loses what is there, or the build fails. */
static int drop_checkpoint_dir(const char *rootfs, aj_error *err)
{
	_cleanup_close_ int fd = open(rootfs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return aj_err(err, errno, "cannot open %s", rootfs);
	(void)aj_rm_tree_at(fd, AJ_IMAGE_CHECKPOINT_DIR, 256);
	if (faccessat(fd, AJ_IMAGE_CHECKPOINT_DIR, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
	    errno != ENOENT) {
		aj_err(err, EPERM,
		       "the image's tree has /%s, which only a level-2 snapshot makes, "
		       "and it cannot be removed",
		       AJ_IMAGE_CHECKPOINT_DIR);
		aj_err_hint(err, "remove /%s from the source (it is reserved)",
			    AJ_IMAGE_CHECKPOINT_DIR);
		return -EPERM;
	}
	return 0;
}

typedef int (*fill_fn)(const aj_image_spec *s, const char *dest, void *ctx, aj_error *err);

/* A new build directory under images, flock'ed (fd in *hold: the sweep
 * leaves it alone while we live), with the store's lock held (store). */
static int make_build_dir(const char *images, int store, char **build, int *hold, aj_error *err)
{
	aj_image_sweep_locked(images, store);
	unsigned rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (unsigned)time(NULL);
	*build = aj_asprintf("%s/.build-%d-%08x", images, (int)getpid(), rnd);
	_cleanup_free_ char *rootfs = *build ? aj_asprintf("%s/rootfs", *build) : NULL;
	if (!rootfs)
		return aj_err(err, ENOMEM, "out of memory");
	if (mkdir(*build, 0700) < 0)
		return aj_err(err, errno, "cannot create %s", *build);
	*hold = open(*build, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*hold < 0 || flock(*hold, LOCK_EX | LOCK_NB) < 0 || mkdir(rootfs, 0755) < 0) {
		int e = errno;
		(void)aj_image_rm_rf(*build);
		return aj_err(err, e, "cannot create %s", rootfs);
	}
	return 0;
}

/* A build directory under state's images, filled by fill, digested, stored
 * and named; nothing of it stays when any step fails. hold_store: the
 * store's lock is held until the end (a snapshot: its room is counted
 * while nothing else takes any), else only while the directory is made. */
static int build_with(const char *state, const aj_image_spec *s, fill_fn fill, void *ctx,
		      bool hold_store, aj_image_info *out, aj_error *err)
{
	if (!aj_image_name_ok(s->name))
		return aj_image_bad_name(s->name, err);
	if (geteuid() != 0) {
		aj_err(err, EPERM, "image build needs root (it creates files of any owner)");
		return -EPERM;
	}
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", s->name);
	_cleanup_free_ char *images = aj_asprintf("%s/images", state);
	if (!images)
		return aj_err(err, ENOMEM, "out of memory");
	_cleanup_close_ int store = aj_image_store_lock(images, true, err);
	if (store < 0)
		return store;
	_cleanup_free_ char *build = NULL;
	_cleanup_close_ int hold = -1;
	int r = make_build_dir(images, store, &build, &hold, err);
	if (r < 0)
		return r;
	if (!hold_store) {
		close(store);
		store = -1;
	}
	_cleanup_free_ char *rootfs = aj_asprintf("%s/rootfs", build);
	r = rootfs ? fill(s, rootfs, ctx, err) : aj_err(err, ENOMEM, "out of memory");
	if (r == 0 && !s->checkpoint)
		r = drop_checkpoint_dir(rootfs, err);
	if (r == 0)
		r = store_tree(images, build, s, out, err);
	if (r != 0)
		(void)aj_image_rm_rf(build); /* failed, or the same content was stored already */
	if (r < 0)
		return r;
	bool stored = r == 0;
	chmod(images, 0755);
	r = point_name(images, s->name, out->digest, err);
	if (r < 0 && stored) { /* not an unnamed image either */
		_cleanup_free_ char *final = aj_asprintf("%s/%s", images, out->digest + 7);
		if (final)
			(void)aj_image_rm_rf(final);
	}
	return r;
}

static int fill_from_spec(const aj_image_spec *s, const char *dest, void *ctx, aj_error *err)
{
	(void)ctx;
	return fill_tree(s, dest, err);
}

int aj_image_build(const char *state, const aj_image_spec *s, aj_image_info *out, aj_error *err)
{
	return build_with(state, s, fill_from_spec, NULL, false, out, err);
}

typedef struct snap_ctx {
	int root;
	const aj_tree_ids *ids;
	const char *state;
	const char *ckpt;	/* a checkpoint's directory, or NULL */
	int base;		/* the sandbox's image's root, or -1 */
	const char *const *own; /* files the sandbox's level writes (aj_image_snapshot) */
	aj_image_fill_fn fill;	/* a level that streams its root (root: -1) */
	void *fill_ctx;
} snap_ctx;

typedef struct fill_job {
	const snap_ctx *c;
	int dest;
	unsigned long long max;
	aj_error *err;
	int r;
} fill_job;

/* The level's fill in a thread of its own: its own working directory (the
 * new tree: libarchive writes relative to it), the process's unchanged. */
static void *fill_thread(void *arg)
{
	fill_job *j = arg;
	if (unshare(CLONE_FS) < 0 || fchdir(j->dest) < 0)
		j->r = aj_err(j->err, errno, "snapshot: cannot enter the new image's tree");
	else
		j->r = j->c->fill(j->c->fill_ctx, j->max, j->err);
	return NULL;
}

static int run_fill(const snap_ctx *c, int dest, unsigned long long max, aj_error *err)
{
	fill_job j = {.c = c, .dest = dest, .max = max, .err = err};
	pthread_t t;
	int e = pthread_create(&t, NULL, fill_thread, &j);
	if (e)
		return aj_err(err, e, "snapshot: cannot start the copy");
	pthread_join(t, NULL);
	return j.r;
}

static void human(unsigned long long b, char *buf, size_t len)
{
	if (b >= (1ULL << 30))
		snprintf(buf, len, "%.1f GiB", (double)b / (1ULL << 30));
	else if (b >= (1ULL << 20))
		snprintf(buf, len, "%.1f MiB", (double)b / (1ULL << 20));
	else
		snprintf(buf, len, "%llu bytes", b);
}

/* A copy stopped by a limit, or by a full filesystem: say which. */
static int refused(unsigned long long disk, const aj_image_room *room, int r, aj_error *err)
{
	char a[32], b[32], c[32];
	if (r == -ENOSPC || r == -EDQUOT) {
		bool store = r == -ENOSPC || !disk || room->room < disk;
		human(store ? room->room : disk, a, sizeof(a));
		aj_err_clear(err);
		if (!store) {
			aj_err(
			    err, EDQUOT,
			    "the snapshot's files are bigger than the sandbox's disk allows (%s: "
			    "its \"disk\" plus its image, by apparent size: a sparse file "
			    "counts by its length)",
			    a);
			aj_err_hint(err, "remove or shrink big files in the sandbox first (du "
					 "--apparent-size), or create it with a larger \"disk\"");
		} else if (room->by_quota) {
			human(room->quota, b, sizeof(b));
			human(room->used, c, sizeof(c));
			aj_err(err, ENOSPC,
			       "the image store has no room for the snapshot (%s left of its quota "
			       "%s, %s used; by apparent size)",
			       a, b, c);
			aj_err_hint(err, "remove images (agentjail image rm NAME), or the operator "
					 "raises agentjail serve --store-quota");
		} else {
			human(room->free, b, sizeof(b));
			human(room->reserve, c, sizeof(c));
			aj_err(err, ENOSPC,
			       "the image store has no room for the snapshot (%s: %s free minus "
			       "a reserve of %s; by apparent size)",
			       a, b, c);
			aj_err_hint(err, "remove images (agentjail image rm NAME) or free space on "
					 "the store's filesystem");
		}
		return r == -EDQUOT && store ? -ENOSPC : r;
	}
	return r;
}

/* The apparent size of the regular files in directory fd. */
static unsigned long long files_size(int fd)
{
	unsigned long long n = 0;
	DIR *d = fdopendir(dup(fd)); /* a dup shares the offset: from the start */
	struct dirent *de;
	struct stat st;
	if (d)
		rewinddir(d);
	while (d && (de = readdir(d)))
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			n += (unsigned long long)st.st_size;
	if (d)
		closedir(d);
	return n;
}

/* The regular files of directory src into a new AJ_IMAGE_CHECKPOINT_DIR in
 * dest. */
static int copy_checkpoint(int src, int dest, aj_error *err)
{
	/* an older one (the source image was a level-2 snapshot) */
	(void)aj_rm_tree_at(dest, AJ_IMAGE_CHECKPOINT_DIR, 256);
	if (mkdirat(dest, AJ_IMAGE_CHECKPOINT_DIR, 0700) < 0)
		return aj_err(err, errno, "cannot create the image's %s", AJ_IMAGE_CHECKPOINT_DIR);
	_cleanup_close_ int to =
	    openat(dest, AJ_IMAGE_CHECKPOINT_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = to < 0 ? NULL : fdopendir(dup(src));
	if (!d)
		return aj_err(err, errno, "cannot read the checkpoint");
	rewinddir(d);
	int r = 0;
	struct dirent *de;
	struct stat st;
	while (r == 0 && (de = readdir(d))) {
		if (fstatat(src, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		_cleanup_close_ int in = openat(src, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_close_ int out = openat(
		    to, de->d_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (in < 0 || out < 0) {
			r = aj_err(err, errno, "cannot copy the checkpoint's %s", de->d_name);
			break;
		}
		off_t left = st.st_size;
		while (left > 0) {
			ssize_t k = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
			if (k <= 0) {
				r = aj_err(err, k < 0 ? errno : EIO,
					   "cannot copy the checkpoint's %s", de->d_name);
				break;
			}
			left -= k;
		}
	}
	closedir(d);
	return r;
}

/* One file agentjail wrote into the sandbox (own: "etc/passwd") as the base
 * image has it (owner, mode, times, a symlink as one), or none. Both trees
 * are looked up in their own root: a link in the copy can't lead out. */
static int restore_owned(int base, int dst, const char *own, aj_error *err)
{
	const char *slash = strrchr(own, '/');
	_cleanup_free_ char *dir = slash ? strndup(own, (size_t)(slash - own)) : strdup(".");
	const char *file = slash ? slash + 1 : own;
	if (!dir)
		return aj_err(err, ENOMEM, "out of memory");
	_cleanup_close_ int d = aj_open_in_root(dst, dir, O_PATH | O_DIRECTORY, 0);
	if (d < 0 || (unlinkat(d, file, 0) < 0 && errno != ENOENT))
		return 0; /* no such directory, or a directory made there: not agentjail's */
	_cleanup_close_ int bd =
	    base >= 0 ? aj_open_in_root(base, dir, O_PATH | O_DIRECTORY, 0) : -1;
	struct stat st;
	if (bd < 0 || fstatat(bd, file, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		char t[PATH_MAX];
		ssize_t n = readlinkat(bd, file, t, sizeof(t) - 1);
		if (n < 0)
			return aj_err(err, errno, "snapshot: cannot read the image's /%s", own);
		t[n] = '\0';
		if (symlinkat(t, d, file) < 0 ||
		    fchownat(d, file, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
			return aj_err(err, errno, "snapshot: cannot restore the image's /%s", own);
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return 0;
	_cleanup_close_ int in = openat(bd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int out =
	    openat(d, file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	if (in < 0 || out < 0 || aj_copy_fd(in, out) < 0 || fchown(out, st.st_uid, st.st_gid) < 0 ||
	    fchmod(out, st.st_mode & 07777) < 0 || futimens(out, ts) < 0)
		return aj_err(err, errno ? errno : EIO, "snapshot: cannot restore the image's /%s",
			      own);
	return 0;
}

static int fill_from_root(const aj_image_spec *s, const char *dest, void *ctx, aj_error *err)
{
	(void)s;
	const snap_ctx *c = ctx;
	_cleanup_close_ int fd = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return aj_err(err, errno, "cannot open %s", dest);
	_cleanup_free_ char *images = aj_asprintf("%s/images", c->state);
	aj_image_room room;
	int r =
	    images ? aj_image_store_room(images, &room, err) : aj_err(err, ENOMEM, "out of memory");
	if (r < 0)
		return r;
	aj_tree_ids ids = *c->ids;
	_cleanup_close_ int ckpt =
	    c->ckpt ? open(c->ckpt, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (c->ckpt && ckpt < 0)
		return aj_err(err, errno, "cannot open the checkpoint %s", c->ckpt);
	unsigned long long extra = ckpt >= 0 ? files_size(ckpt) : 0;
	if (room.room < extra)
		return refused(0, &room, -ENOSPC, err);
	room.room -= extra;
	if (!ids.max_bytes || room.room < ids.max_bytes)
		ids.max_bytes = room.room;
	if (ids.max_bytes == 0) /* not even an empty file fits */
		return refused(c->ids->max_bytes, &room, -ENOSPC, err);
	r = c->fill ? run_fill(c, fd, ids.max_bytes, err) : aj_tree_sync(c->root, fd, &ids, err);
	for (const char *const *o = c->own; r == 0 && o && *o; o++)
		r = restore_owned(c->base, fd, *o, err);
	if (r == 0 && ckpt >= 0)
		r = copy_checkpoint(ckpt, fd, err);
	return r < 0 ? refused(c->ids->max_bytes, &room, r, err) : 0;
}

static int snapshot(const char *state, const char *name, int root, const aj_tree_ids *ids,
		    const char *from, const char *warmup, const char *ckpt, int base,
		    const char *const *own, const snap_ctx *fill, aj_image_info *out, aj_error *err)
{
	if (!aj_image_name_ok(name))
		return aj_image_bad_name(name, err);
	_cleanup_free_ char *path = aj_asprintf("%s/images/names/%s", state, name);
	if (!path)
		return aj_err(err, ENOMEM, "out of memory");
	if (access(path, F_OK) == 0) {
		int r = aj_err(err, EEXIST, "an image named '%s' exists already", name);
		aj_err_hint(err, "choose another name, or remove it first: agentjail image rm %s",
			    name);
		return r;
	}
	aj_image_spec s = {.name = name,
			   .source = AJ_IMAGE_FROM_SANDBOX,
			   .from = from,
			   .warmup = warmup && *warmup ? warmup : NULL,
			   .checkpoint = ckpt != NULL};
	snap_ctx c = {.root = root,
		      .ids = ids,
		      .state = state,
		      .ckpt = ckpt,
		      .base = base,
		      .own = own,
		      .fill = fill ? fill->fill : NULL,
		      .fill_ctx = fill ? fill->fill_ctx : NULL};
	return build_with(state, &s, fill_from_root, &c, true, out, err);
}

int aj_image_snapshot(const char *state, const char *name, int root, const aj_tree_ids *ids,
		      const char *from, const char *warmup, int base, const char *const *own,
		      aj_image_info *out, aj_error *err)
{
	return snapshot(state, name, root, ids, from, warmup, NULL, base, own, NULL, out, err);
}

int aj_image_snapshot_from(const char *state, const char *name, aj_image_fill_fn fill, void *ctx,
			   unsigned long long max_bytes, const char *from, const char *warmup,
			   int base, const char *const *own, aj_image_info *out, aj_error *err)
{
	aj_tree_ids ids = {.range = AJ_UID_RANGE, .max_bytes = max_bytes};
	snap_ctx f = {.fill = fill, .fill_ctx = ctx};
	return snapshot(state, name, -1, &ids, from, warmup, NULL, base, own, &f, out, err);
}

int aj_image_snapshot_checkpoint(const char *state, const char *name, int root,
				 const aj_tree_ids *ids, const char *from, const char *ckpt,
				 aj_image_info *out, aj_error *err)
{
	return snapshot(state, name, root, ids, from, NULL, ckpt, -1, NULL, NULL, out, err);
}
