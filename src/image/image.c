/* SPDX-License-Identifier: MIT */
/* The image store under the state directory:
 *
 *   images/<hex digest>/rootfs      the tree, never changed once stored
 *   images/<hex digest>/image.json  source, size, files, created, warmup
 *   images/names/<name>             "sha256:<hex>\n"
 *
 * A build fills images/.build-<pid>-<rand>/rootfs (mmdebstrap, cp -a or
 * tar), digests it, renames it into place (or drops it when that content
 * is already stored) and then points the name at it, atomically
 * (image_build.c: only `agentjail image` links it and libcrypto). */
#include "image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "policy.h"
#include "util.h"

extern char **environ;

static char state_dir[PATH_MAX];

static void read_state_dir(void)
{
	const char *s = getenv("AGENTJAIL_STATE_DIR");
	if (!s || s[0] != '/' || strlen(s) >= sizeof(state_dir))
		s = AJ_STATE_DIR_DEFAULT;
	memcpy(state_dir, s, strlen(s) + 1);
}

/* Read once: a process title set later wipes the environment's strings
 * (the service's keepers set theirs after the policy, util.c). */
const char *aj_state_dir(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, read_state_dir);
	return state_dir;
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

int aj_image_bad_name(const char *name, aj_error *err)
{
	aj_err(err, EINVAL,
	       "image name '%s': expected lowercase letters, digits, '.', '_', '-' "
	       "(up to %d, starting with a letter or digit)",
	       name, AJ_IMAGE_NAME_MAX);
	return -EINVAL;
}

/* Run argv, its output to our stderr; 0 when it exited 0. */
int aj_image_spawn_wait(char *const argv[], aj_error *err)
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

int aj_image_rm_rf(const char *path)
{
	char *argv[] = {"rm", "-rf", "--one-file-system", "--", (char *)path, NULL};
	return aj_image_spawn_wait(argv, NULL);
}

static int read_name(const char *images, const char *name, char hex[65], aj_error *err)
{
	if (!aj_image_name_ok(name))
		return aj_image_bad_name(name, err);
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
	out->checkpoint = json_is_true(json_object_get(j, "checkpoint"));
}

const char *aj_image_checkpoint_of(const char *rootfs, char *buf, size_t len)
{
	/* the store's own path, not a directory that only looks like one */
	_cleanup_free_ char *images = aj_asprintf("%s/images/", aj_state_dir());
	size_t n = images ? strlen(images) : 0;
	if (!rootfs || !images || strncmp(rootfs, images, n) != 0 ||
	    strspn(rootfs + n, "0123456789abcdef") != 64 || strcmp(rootfs + n + 64, "/rootfs") != 0)
		return NULL;
	_cleanup_free_ char *meta = aj_asprintf("%.*s/image.json", (int)(n + 64), rootfs);
	json_t *j = meta ? json_load_file(meta, 0, NULL) : NULL;
	bool made = json_is_true(json_object_get(j, "checkpoint"));
	json_decref(j);
	struct stat d, f;
	char img[PATH_MAX + 32];
	snprintf(buf, len, "%s/%s", rootfs, AJ_IMAGE_CHECKPOINT_DIR);
	snprintf(img, sizeof(img), "%s/checkpoint.img", buf);
	return made && lstat(buf, &d) == 0 && S_ISDIR(d.st_mode) && d.st_uid == 0 &&
		       lstat(img, &f) == 0 && S_ISREG(f.st_mode) && f.st_uid == 0
		   ? buf
		   : NULL;
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
	/* flock'ed while it goes: the sweep removes a .trash-* only when its
	 * remover is gone (image_store.c) */
	_cleanup_close_ int hold =
	    dir ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (hold < 0 || flock(hold, LOCK_EX) < 0 || !trash || rename(dir, trash) < 0)
		return aj_err(err, errno, "cannot remove the image content %s", hex);
	return aj_image_rm_rf(trash) < 0 ? aj_err(err, EIO, "cannot delete %s", trash) : 0;
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
