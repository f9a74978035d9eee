/* SPDX-License-Identifier: MIT */
/* Snapshots (a sandbox's filesystem into a new image) and forks (new
 * sandboxes of the same policy that start from a copy of its files). The
 * source is frozen while its files are copied: a consistent copy, and no
 * process of it changes the tree under the copy. A level that saves a
 * whole sandbox (gVisor: runsc checkpoint) forks from that instead: the
 * copies go on from its memory and processes too. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backends.h"
#include "etc.h"
#include "image.h"
#include "mount.h"
#include "net_addr.h"
#include "pool.h"
#include "registry.h"
#include "snapshot.h"
#include "userns.h"
#include "util.h"

/* The host ids of inside 0 (the sandbox's id range starts there). */
static void base_ids(const aj_sandbox *sb, uid_t *u, gid_t *g)
{
	aj_inst_info in;
	sb->be->info(sb->inst, &in);
	*u = in.uid - sb->policy.uid;
	*g = in.gid - sb->policy.gid;
}

/* Freeze sb for a copy unless it is paused; state_mu held until thaw(). */
static int hold_still(aj_sandbox *sb, bool *froze, aj_error *err)
{
	pthread_mutex_lock(&sb->state_mu);
	*froze = false;
	if (sb->paused)
		return 0;
	aj_error e;
	int r = sb->be->pause(sb->inst, true, &e);
	if (r == -ENOTSUP) /* no cgroup to freeze: copied as it runs */
		return 0;
	if (r < 0) {
		*err = e;
		pthread_mutex_unlock(&sb->state_mu);
		return r;
	}
	*froze = true;
	return 0;
}

static void thaw(aj_sandbox *sb, bool froze)
{
	if (froze)
		(void)sb->be->pause(sb->inst, false, NULL);
	pthread_mutex_unlock(&sb->state_mu);
}

/* A directory of a sandbox (rel inside its root), never through a symlink. */
static int open_in(const aj_sandbox *sb, const char *rel, aj_error *err)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
			       .resolve =
				   RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, sb->root_fd, *rel ? rel : ".", &how, sizeof(how));
	if (fd < 0)
		return aj_err(err, errno, "cannot open /%s of sandbox %s", rel, sb->id);
	return fd;
}

/* What a snapshot of sb may add up to, by apparent size: its root's
 * lower tree (the image, or the --rootfs directory) plus its --disk, all a
 * sandbox can write. More means sparse files (or files bigger than the
 * disk it was given): refused, the host's store is not a way round
 * --disk. */
static int snapshot_budget(const aj_sandbox *sb, const char *image, unsigned long long *max,
			   aj_error *err)
{
	unsigned long long base = 0;
	aj_image_info src;
	if (image && aj_image_inspect(aj_state_dir(), image, &src, NULL) == 0) {
		base = src.size_bytes;
	} else {
		int fd = open(sb->policy.rootfs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int r = fd < 0 ? -errno : aj_tree_apparent_size(fd, &base);
		if (fd >= 0)
			close(fd);
		if (r < 0)
			return aj_err(err, -r, "cannot measure the root of sandbox %s", sb->id);
	}
	*max = base + sb->policy.tmp_size;
	return 0;
}

/* sb->saving set (a fork or snapshot under way: no pause or resume, no
 * second one; state_mu not held meanwhile): 409 when it was already. */
static int saving_begin(aj_sandbox *sb, aj_error *err)
{
	pthread_mutex_lock(&sb->state_mu);
	bool busy = sb->saving;
	sb->saving = true;
	pthread_mutex_unlock(&sb->state_mu);
	if (busy) {
		aj_err(err, EBUSY, "sandbox '%s' is being forked or snapshotted already", sb->id);
		aj_err_hint(err, "try again when that has ended");
		err->status = 409;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "conflict");
		return -EBUSY;
	}
	return 0;
}

static void saving_end(aj_sandbox *sb)
{
	pthread_mutex_lock(&sb->state_mu);
	sb->saving = false;
	pthread_mutex_unlock(&sb->state_mu);
}

/* What a new image keeps of its base: the warm-up, the base's root (-1:
 * none) and, in own, the files agentjail writes at each start (etc.h),
 * which come back as the base had them; with HTTPS interception, the CA
 * bundle (bound over the image's, or the copy with this sandbox's CA in
 * the guest's /etc layer or AJ_ETC_GENERATED_DIR), which no other trusts. */
typedef struct snap_base {
	char warmup[sizeof(((aj_image_info *)0)->warmup)];
	char paths[AJ_ETC_FILES][32];
	const char *own[AJ_ETC_FILES + 3];
	int base;
} snap_base;

static void snap_base_open(aj_sandbox *sb, const char *image, snap_base *b)
{
	memset(b, 0, sizeof(*b));
	b->base = -1;
	aj_image_info src;
	if (image && aj_image_inspect(aj_state_dir(), image, &src, NULL) == 0)
		snprintf(b->warmup, sizeof(b->warmup), "%s", src.warmup);
	for (size_t i = 0; i < AJ_ETC_FILES; i++) {
		snprintf(b->paths[i], sizeof(b->paths[i]), "etc/%s", aj_etc_generated[i]);
		b->own[i] = b->paths[i];
	}
	if (aj_net_tls_wanted(&sb->policy)) {
		b->own[AJ_ETC_FILES] = &AJ_NET_CA_BUNDLE[1];
		b->own[AJ_ETC_FILES + 1] = &AJ_ETC_GENERATED_DIR "/ca-certificates.crt"[1];
	}
	_cleanup_free_ char *path = NULL;
	if (image && aj_image_rootfs(aj_state_dir(), image, &path, NULL) == 0)
		b->base = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void snap_base_close(snap_base *b)
{
	if (b->base >= 0)
		close(b->base);
}

/* The sandbox's root (its own mount) into a new image, sb frozen meanwhile. */
static int snapshot_files(aj_sandbox *sb, const char *name, const char *image, const char *from,
			  aj_image_info *info, aj_error *err)
{
	aj_tree_ids ids = {.range = AJ_UID_RANGE};
	base_ids(sb, &ids.from_uid, &ids.from_gid);
	int r;
	if ((r = snapshot_budget(sb, image, &ids.max_bytes, err)) < 0)
		return r;
	bool froze;
	r = hold_still(sb, &froze, err);
	if (r < 0)
		return r;
	snap_base b;
	snap_base_open(sb, image, &b);
	int root = open_in(sb, "", err);
	if (root >= 0)
		r = aj_image_snapshot(aj_state_dir(), name, root, &ids, from, b.warmup, b.base,
				      b.own, info, err);
	else
		r = root;
	if (root >= 0)
		close(root);
	snap_base_close(&b);
	thaw(sb, froze);
	return r;
}

/* The level's stream of its root into the new tree (aj_image_fill_fn). */
typedef struct stream_ctx {
	aj_sandbox *sb;
	aj_tree_writer *w;
} stream_ctx;

static int sink_entry(void *ctx, const aj_root_entry *e, aj_error *err)
{
	return aj_tree_writer_entry(((stream_ctx *)ctx)->w, e, err);
}

static int sink_data(void *ctx, const void *buf, size_t len, aj_error *err)
{
	return aj_tree_writer_data(((stream_ctx *)ctx)->w, buf, len, err);
}

static int stream_fill(void *ctx, unsigned long long max, aj_error *err)
{
	stream_ctx *c = ctx;
	int r = aj_tree_writer_new(max, &c->w, err);
	if (r < 0)
		return r;
	aj_root_sink sink = {.entry = sink_entry, .data = sink_data, .ctx = c, .max_bytes = max};
	r = c->sb->be->root_stream(c->sb->inst, &sink, err);
	int k = aj_tree_writer_close(c->w, r < 0 ? NULL : err);
	return r < 0 ? r : k;
}

/* A level that streams its root (level 3: the VM's agent walks it, the
 * guest's processes stopped meanwhile): no pause or resume while it runs
 * (aj_sandbox_pause refuses); a paused one stays paused (backend.h). */
static int snapshot_stream(aj_sandbox *sb, const char *name, const char *image, const char *from,
			   aj_image_info *info, aj_error *err)
{
	unsigned long long max;
	int r = snapshot_budget(sb, image, &max, err);
	if (r < 0)
		return r;
	r = saving_begin(sb, err);
	if (r < 0)
		return r;
	snap_base b;
	snap_base_open(sb, image, &b);
	stream_ctx c = {.sb = sb};
	r = aj_image_snapshot_from(aj_state_dir(), name, stream_fill, &c, max, from, b.warmup,
				   b.base, b.own, info, err);
	snap_base_close(&b);
	saving_end(sb);
	return r;
}

/* A level without root_fd (gVisor) copies the whole sandbox itself: a
 * checkpoint of it (memory, processes, files) that each fork starts from. */
static int checkpoint(aj_sandbox *sb, char **ckpt, aj_error *err)
{
	/* no pause or resume meanwhile (refused: aj_sandbox_pause); state_mu
	 * not held through the save, which the sandbox's JSON (a list) takes */
	int r = saving_begin(sb, err);
	if (r < 0)
		return r;
	r = sb->be->checkpoint(sb->inst, ckpt, err);
	saving_end(sb);
	return r;
}

/* A level that saves a whole sandbox (gVisor): its image's files and, in
 * the image's AJ_IMAGE_CHECKPOINT_DIR, a checkpoint of it (memory,
 * processes, /tmp and home) that a create of that level restores. Its
 * root is the image, read-only: no files of it change. */
static int snapshot_whole(aj_sandbox *sb, const char *name, const char *from, aj_image_info *info,
			  aj_error *err)
{
	if (sb->policy.n_secrets) {
		aj_err(err, EBUSY,
		       "a snapshot of isolation '%s' holds the sandbox's memory, and its memory "
		       "holds the secrets' values",
		       sb->be->name);
		aj_err_hint(err, "snapshot a sandbox without \"secret\" (give them to the "
				 "sandboxes made from the snapshot), or use \"isolation\": "
				 "\"process\", whose snapshot is files only");
		err->status = 409;
		snprintf(err->api_code, sizeof(err->api_code), "%s", "conflict");
		return -EBUSY;
	}
	aj_tree_ids ids = {.range = AJ_UID_RANGE}; /* the image's own ids */
	int r = snapshot_budget(sb, NULL, &ids.max_bytes, err);
	int root = r < 0 ? -1 : open(sb->policy.rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r == 0 && root < 0)
		r = aj_err(err, errno, "cannot open the image of sandbox %s", sb->id);
	char *ckpt = NULL;
	if (r == 0)
		r = checkpoint(sb, &ckpt, err);
	if (r == 0)
		r = aj_image_snapshot_checkpoint(aj_state_dir(), name, root, &ids, from, ckpt, info,
						 err);
	if (root >= 0)
		close(root);
	if (ckpt)
		sb->be->checkpoint_drop(ckpt);
	return r;
}

int aj_sandbox_snapshot(aj_sandbox *sb, const char *name, json_t **out, aj_error *err)
{
	bool stream = sb->be->root_stream != NULL;
	bool whole = sb->be->checkpoint != NULL && !stream;
	if (!aj_backend_can(sb->be, AJ_CAP_SNAPSHOT | (whole || stream ? 0 : AJ_CAP_ROOT_FD), err))
		return -ENOTSUP;
	if (!sb->policy.rootfs) {
		int r = aj_err(err, EINVAL,
			       "sandbox '%s' has the host's minimal root: a snapshot needs a "
			       "sandbox made from an image",
			       sb->id);
		aj_err_hint(err, "create it with {\"image\": NAME}");
		return r;
	}
	if (!aj_image_name_ok(name))
		return aj_err(
		    err, EINVAL,
		    "'name': expected lowercase letters, digits, '.', '_', '-' (up to %d, "
		    "starting with a letter or digit)",
		    AJ_IMAGE_NAME_MAX);
	const char *image = json_string_value(json_object_get(sb->req, "image"));
	char from[256];
	snprintf(from, sizeof(from), "%s%s%s%s", sb->id, image ? " (image " : "",
		 image ? image : "", image ? ")" : "");
	aj_image_info info;
	int r = stream	? snapshot_stream(sb, name, image, from, &info, err)
		: whole ? snapshot_whole(sb, name, from, &info, err)
			: snapshot_files(sb, name, image, from, &info, err);
	if (r < 0)
		return r;
	*out = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:s}", "name", info.name, "digest",
			 info.digest, "source", info.source, "created", info.created, "size_bytes",
			 (json_int_t)info.size_bytes, "files", (json_int_t)info.files, "warmup",
			 info.warmup);
	return *out ? 0 : aj_err(err, ENOMEM, "out of memory");
}

/* src's files into dst: the root's own mount (for an image sandbox), /tmp
 * and the home directory. */
static int copy_files(aj_sandbox *src, aj_sandbox *dst, aj_error *err)
{
	aj_tree_ids ids = {.range = AJ_UID_RANGE};
	base_ids(src, &ids.from_uid, &ids.from_gid);
	base_ids(dst, &ids.to_uid, &ids.to_gid);
	static const char *const dirs[] = {"", "tmp", &AJ_SANDBOX_HOME[1]};
	int r = 0;
	for (size_t i = src->policy.rootfs ? 0 : 1; i < AJ_ARRAY_SIZE(dirs) && r == 0; i++) {
		int s = open_in(src, dirs[i], err);
		int d = s < 0 ? -1 : open_in(dst, dirs[i], err);
		r = s < 0 ? s : d < 0 ? d : aj_tree_sync(s, d, &ids, err);
		if (s >= 0)
			close(s);
		if (d >= 0)
			close(d);
		if (r == -ENOSPC || r == -EDQUOT)
			aj_err_hint(err, "the fork's disk is full: give the source a larger "
					 "\"disk\" or remove files in it first");
		if (r < 0)
			aj_err_prefix(err, "fork of %s: /%s", src->id, dirs[i]);
	}
	return r;
}

int aj_sandbox_fork(aj_sandbox *sb, unsigned count, double ttl, const char *owner, json_t **out,
		    aj_error *err)
{
	bool whole = sb->be->checkpoint != NULL;
	if (!aj_backend_can(sb->be, AJ_CAP_FORK | (whole ? 0 : AJ_CAP_ROOT_FD), err))
		return -ENOTSUP;
	if (count < 1 || count > AJ_FORK_MAX)
		return aj_err(err, EINVAL, "'count': expected 1 to %d", AJ_FORK_MAX);
	if (geteuid() != 0)
		return aj_err(err, EPERM,
			      "fork needs a service running as root (files of any owner)");
	aj_sandbox *made[AJ_FORK_MAX] = {0};
	bool froze = false;
	char *ckpt = NULL;
	int r = whole ? checkpoint(sb, &ckpt, err) : hold_still(sb, &froze, err);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < count && r == 0; i++) {
		json_t *req = json_deep_copy(sb->req);
		if (!req) {
			r = aj_err(err, ENOMEM, "out of memory");
			break;
		}
		if ((r = whole ? 0 : aj_pool_take(req, &made[i], err)) == 0 && !made[i] &&
		    !(made[i] = aj_sandbox_build_from(req, ckpt, err)))
			r = -(err->code ? err->code : EINVAL);
		json_decref(req);
		if (r == 0 && !whole)
			r = copy_files(sb, made[i], err);
	}
	if (whole)
		sb->be->checkpoint_drop(ckpt);
	else
		thaw(sb, froze);
	json_t *list = json_array();
	for (unsigned i = 0; i < count && r == 0; i++) {
		r = aj_registry_add(made[i], ttl, owner, err);
		aj_sandbox *added = made[i];
		made[i] = NULL; /* the registry's now (or gone) */
		if (r == 0)
			json_array_append_new(list, aj_sandbox_json(added));
		else /* all or nothing: the ones added go again */
			for (size_t k = 0; k < json_array_size(list); k++)
				aj_registry_destroy(json_string_value(
				    json_object_get(json_array_get(list, k), "id")));
	}
	for (unsigned i = 0; i < count; i++)
		aj_sandbox_unref(made[i]);
	if (r < 0) {
		json_decref(list);
		return r;
	}
	*out = json_pack("{s:o}", "sandboxes", list);
	return 0;
}
