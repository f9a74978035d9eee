/* SPDX-License-Identifier: MIT */
/* The image store under the state directory:
 *
 *   images/<hex digest>/rootfs      the tree, never changed once stored
 *   images/<hex digest>/image.json  source, size, files, created, warmup
 *   images/names/<name>             "sha256:<hex>\n"
 *
 * A build fills images/.build-<pid>-<rand>/rootfs (mmdebstrap, cp -a or
 * tar), digests it, renames it into place (or drops it when that content
 * is already stored) and then points the name at it, atomically. */
#include "image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "policy.h"
#include "util.h"

extern char **environ;

const char *aj_state_dir(void)
{
	const char *s = getenv("AGENTJAIL_STATE_DIR");
	return s && s[0] == '/' ? s : AJ_STATE_DIR_DEFAULT;
}

bool aj_image_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > AJ_IMAGE_NAME_MAX ||
	    !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

bool aj_image_package_ok(const char *p)
{
	return p && ((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= '0' && p[0] <= '9')) &&
	       strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789.+-:") == strlen(p);
}

bool aj_image_suite_ok(const char *s)
{
	return s && ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')) &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(s);
}

static int bad_name(const char *name, aj_error *err)
{
	aj_err(err, EINVAL,
	       "image name '%s': expected lowercase letters, digits, '.', '_', '-' "
	       "(up to %d, starting with a letter or digit)",
	       name, AJ_IMAGE_NAME_MAX);
	return -EINVAL;
}

/* Run argv, its output to our stderr; 0 when it exited 0. */
static int spawn_wait(char *const argv[], aj_error *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	pid_t pid;
	int r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0) {
		aj_err(err, r, "cannot run %s", argv[0]);
		aj_err_hint(err, "install it (scripts/setup.sh installs mmdebstrap and tar)");
		return -r;
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return aj_err(err, errno, "waitpid");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return aj_err(err, EIO, "%s failed (%s %d)", argv[0],
			      WIFEXITED(st) ? "exit status" : "signal",
			      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return 0;
}

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
		return spawn_wait(argv, err);
	}
	case AJ_IMAGE_FROM_DIR: {
		_cleanup_free_ char *src = aj_asprintf("%s/.", s->from);
		char *argv[] = {"cp", "-a", "--", src, (char *)dest, NULL};
		return src ? spawn_wait(argv, err) : aj_err(err, ENOMEM, "out of memory");
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
		return spawn_wait(argv, err);
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

static int rm_rf(const char *path)
{
	char *argv[] = {"rm", "-rf", "--one-file-system", "--", (char *)path, NULL};
	return spawn_wait(argv, NULL);
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

static int read_name(const char *images, const char *name, char hex[65], aj_error *err)
{
	if (!aj_image_name_ok(name))
		return bad_name(name, err);
	_cleanup_free_ char *path = aj_asprintf("%s/names/%s", images, name);
	_cleanup_free_ char *text = NULL;
	if (!path)
		return aj_err(err, ENOMEM, "out of memory");
	if (aj_read_file(path, &text, NULL) < 0) {
		aj_err(err, ENOENT, "no image named '%s'", name);
		aj_err_hint(err,
			    "agentjail image ls lists them; agentjail image build %s ... makes it",
			    name);
		return -ENOENT;
	}
	if (strncmp(text, "sha256:", 7) != 0 || strspn(text + 7, "0123456789abcdef") != 64)
		return aj_err(err, EINVAL, "the image name %s is corrupt (%s)", name, path);
	memcpy(hex, text + 7, 64);
	hex[64] = '\0';
	return 0;
}

/* images dir of state (malloc'ed) and the hex digest name points at */
static int resolve(const char *state, const char *name, char **images, char hex[65], aj_error *err)
{
	if (!(*images = aj_asprintf("%s/images", state)))
		return aj_err(err, ENOMEM, "out of memory");
	return read_name(*images, name, hex, err);
}

static void info_from_json(json_t *j, aj_image_info *out)
{
	const char *s;
	if ((s = json_string_value(json_object_get(j, "digest"))))
		snprintf(out->digest, sizeof(out->digest), "%s", s);
	if ((s = json_string_value(json_object_get(j, "source"))))
		snprintf(out->source, sizeof(out->source), "%s", s);
	if ((s = json_string_value(json_object_get(j, "created"))))
		snprintf(out->created, sizeof(out->created), "%s", s);
	if ((s = json_string_value(json_object_get(j, "warmup"))))
		snprintf(out->warmup, sizeof(out->warmup), "%s", s);
	out->size_bytes = (unsigned long long)json_integer_value(json_object_get(j, "size_bytes"));
	out->files = (unsigned long long)json_integer_value(json_object_get(j, "files"));
}

int aj_image_inspect(const char *state, const char *name, aj_image_info *out, aj_error *err)
{
	_cleanup_free_ char *images = NULL;
	char hex[65];
	int r = resolve(state, name, &images, hex, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *meta = aj_asprintf("%s/%s/image.json", images, hex);
	json_t *j = meta ? json_load_file(meta, 0, NULL) : NULL;
	if (!j)
		return aj_err(err, EIO, "image %s: cannot read %s", name, meta ? meta : "metadata");
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	info_from_json(j, out);
	json_decref(j);
	return 0;
}

int aj_image_rootfs(const char *state, const char *name, char **path, aj_error *err)
{
	_cleanup_free_ char *images = NULL;
	char hex[65];
	int r = resolve(state, name, &images, hex, err);
	if (r < 0)
		return r;
	if (!(*path = aj_asprintf("%s/%s/rootfs", images, hex)))
		return aj_err(err, ENOMEM, "out of memory");
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
	json_t *j =
	    json_pack("{s:s,s:s,s:s,s:I,s:I,s:s}", "digest", out->digest, "source", out->source,
		      "created", out->created, "size_bytes", (json_int_t)out->size_bytes, "files",
		      (json_int_t)out->files, "warmup", out->warmup);
	_cleanup_free_ char *meta = aj_asprintf("%s/image.json", build);
	r = j && meta ? write_json(meta, j, err) : aj_err(err, ENOMEM, "out of memory");
	json_decref(j);
	if (r < 0)
		return r;
	if (rename(build, final) < 0)
		return aj_err(err, errno, "cannot store the image at %s", final);
	return 0;
}

typedef int (*fill_fn)(const aj_image_spec *s, const char *dest, void *ctx, aj_error *err);

/* A build directory under state's images, filled by fill, digested, stored
 * and named. */
static int build_with(const char *state, const aj_image_spec *s, fill_fn fill, void *ctx,
		      aj_image_info *out, aj_error *err)
{
	if (!aj_image_name_ok(s->name))
		return bad_name(s->name, err);
	if (geteuid() != 0) {
		aj_err(err, EPERM, "image build needs root (it creates files of any owner)");
		return -EPERM;
	}
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", s->name);
	_cleanup_free_ char *images = aj_asprintf("%s/images", state);
	unsigned rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (unsigned)time(NULL);
	_cleanup_free_ char *build =
	    images ? aj_asprintf("%s/.build-%d-%08x", images, (int)getpid(), rnd) : NULL;
	_cleanup_free_ char *rootfs = build ? aj_asprintf("%s/rootfs", build) : NULL;
	if (!rootfs)
		return aj_err(err, ENOMEM, "out of memory");
	if (aj_mkdir_p(images, 0755) < 0 || mkdir(build, 0700) < 0 || mkdir(rootfs, 0755) < 0)
		return aj_err(err, errno, "cannot create %s", build);
	int r = fill(s, rootfs, ctx, err);
	if (r == 0)
		r = store_tree(images, build, s, out, err);
	if (r != 0)
		(void)rm_rf(build); /* failed, or the same content was stored already */
	if (r < 0)
		return r;
	chmod(images, 0755);
	return point_name(images, s->name, out->digest, err);
}

static int fill_from_spec(const aj_image_spec *s, const char *dest, void *ctx, aj_error *err)
{
	(void)ctx;
	return fill_tree(s, dest, err);
}

int aj_image_build(const char *state, const aj_image_spec *s, aj_image_info *out, aj_error *err)
{
	return build_with(state, s, fill_from_spec, NULL, out, err);
}

typedef struct snap_ctx {
	int root;
	const aj_tree_ids *ids;
} snap_ctx;

static int fill_from_root(const aj_image_spec *s, const char *dest, void *ctx, aj_error *err)
{
	(void)s;
	const snap_ctx *c = ctx;
	_cleanup_close_ int fd = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return aj_err(err, errno, "cannot open %s", dest);
	return aj_tree_sync(c->root, fd, c->ids, err);
}

int aj_image_snapshot(const char *state, const char *name, int root, const aj_tree_ids *ids,
		      const char *from, const char *warmup, aj_image_info *out, aj_error *err)
{
	if (!aj_image_name_ok(name))
		return bad_name(name, err);
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
			   .warmup = warmup && *warmup ? warmup : NULL};
	snap_ctx c = {.root = root, .ids = ids};
	return build_with(state, &s, fill_from_root, &c, out, err);
}

static int cmp_info(const void *a, const void *b)
{
	return strcmp(((const aj_image_info *)a)->name, ((const aj_image_info *)b)->name);
}

int aj_image_list(const char *state, aj_image_info **out, size_t *n, aj_error *err)
{
	*out = NULL;
	*n = 0;
	_cleanup_free_ char *names = aj_asprintf("%s/images/names", state);
	DIR *d = names ? opendir(names) : NULL;
	if (!d)
		return errno == ENOENT ? 0 : aj_err(err, errno, "cannot list %s", names);
	size_t cap = 0;
	int r = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!aj_image_name_ok(e->d_name))
			continue; /* ".", "..", ".x.tmp" */
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			aj_image_info *nn = realloc(*out, cap * sizeof(**out));
			if (!nn) {
				r = aj_err(err, ENOMEM, "out of memory");
				break;
			}
			*out = nn;
		}
		aj_error ignored;
		if (aj_image_inspect(state, e->d_name, &(*out)[*n], &ignored) == 0)
			(*n)++;
	}
	closedir(d);
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), cmp_info);
	return r;
}

int aj_image_remove(const char *state, const char *name, aj_error *err)
{
	_cleanup_free_ char *images = NULL;
	char hex[65];
	int r = resolve(state, name, &images, hex, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *path = aj_asprintf("%s/names/%s", images, name);
	if (!path || unlink(path) < 0)
		return aj_err(err, path ? errno : ENOMEM, "cannot remove the name %s", name);
	/* other names of the same content keep it */
	aj_image_info *all = NULL;
	size_t n = 0;
	aj_error ignored;
	(void)aj_image_list(state, &all, &n, &ignored);
	bool used = false;
	for (size_t i = 0; i < n; i++)
		used = used || strcmp(all[i].digest + 7, hex) == 0;
	free(all);
	if (used)
		return 0;
	/* out of the way first (a sandbox running on it keeps its mount),
	 * then deleted */
	_cleanup_free_ char *dir = aj_asprintf("%s/%s", images, hex);
	_cleanup_free_ char *trash = aj_asprintf("%s/.trash-%s", images, hex);
	if (!dir || !trash || rename(dir, trash) < 0)
		return aj_err(err, errno, "cannot remove the image content %s", hex);
	return rm_rf(trash) < 0 ? aj_err(err, EIO, "cannot delete %s", trash) : 0;
}

int aj_image_recipe_load(const char *path, aj_image_spec *s, void **store, aj_error *err)
{
	json_error_t je;
	json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return aj_err(err, EINVAL, "recipe %s: %s (line %d)", path, je.text, je.line);
	*store = j;
	const char *from = json_string_value(json_object_get(j, "from"));
	json_t *pk = json_object_get(j, "packages");
	json_t *wu = json_object_get(j, "warmup");
	if (!from || strncmp(from, "debian:", 7) != 0 || !aj_image_suite_ok(from + 7))
		return aj_err(err, EINVAL, "recipe %s: \"from\" must be \"debian:SUITE\"", path);
	s->source = AJ_IMAGE_FROM_DEBIAN;
	s->from = from + 7;
	if (pk && (!json_is_array(pk) || s->n_packages + json_array_size(pk) > AJ_MAX_PACKAGES))
		return aj_err(err, EINVAL, "recipe %s: \"packages\" must be a list of names", path);
	size_t i;
	json_t *v;
	json_array_foreach(pk, i, v)
	{
		const char *name = json_string_value(v);
		if (!aj_image_package_ok(name))
			return aj_err(err, EINVAL, "recipe %s: bad package name", path);
		s->packages[s->n_packages++] = name;
	}
	if (wu && !json_is_string(wu))
		return aj_err(err, EINVAL, "recipe %s: \"warmup\" must be a string", path);
	s->warmup = wu ? json_string_value(wu) : NULL;
	return 0;
}

void aj_image_recipe_free(void *store)
{
	json_decref(store);
}

int aj_policy_set_image(aj_policy *p, const char *name, aj_error *err)
{
	if (p->rootfs)
		return aj_err(err, EINVAL, "--image and --rootfs both give the root: choose one");
	_cleanup_free_ char *path = NULL;
	int r = aj_image_rootfs(aj_state_dir(), name, &path, err);
	if (r < 0)
		return r;
	return aj_policy_set_rootfs(p, path, err);
}
