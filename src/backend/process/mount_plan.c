/* SPDX-License-Identifier: MIT */
/* Which host paths the sandbox sees, and where: the mount plan. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount.h"
#include "dev_cache.h"
#include "etc.h"
#include "etc_cache.h"
#include "util.h"

/* Host directories that make up the default root, read-only. */
static const char *const system_dirs[] = {"/usr",   "/bin",   "/sbin",	"/lib",
					  "/lib32", "/lib64", "/libx32"};

static const char *const dev_nodes[] = {"/dev/null",   "/dev/zero",    "/dev/full",
					"/dev/random", "/dev/urandom", "/dev/tty"};

static aj_mount_op *plan_add(aj_mount_plan *plan, aj_mount_kind kind, const char *src,
			     const char *dest, aj_error *err)
{
	if (plan->n >= AJ_MAX_MOUNT_OPS) {
		aj_err(err, E2BIG, "too many mounts (at most %d)", AJ_MAX_MOUNT_OPS);
		return NULL;
	}
	aj_mount_op *op = &plan->ops[plan->n];
	memset(op, 0, sizeof(*op));
	op->kind = kind;
	op->fd = -1;
	op->src = strdup(src);
	op->dest = strdup(dest);
	if (!op->src || !op->dest) {
		free(op->src);
		free(op->dest);
		aj_err(err, ENOMEM, "mount plan");
		return NULL;
	}
	plan->n++;
	return op;
}

/* A host path that may be a symlink (usrmerge /bin -> usr/bin): replicate
 * the link, otherwise bind it read-only. Missing paths are skipped. */
static int plan_host_path(aj_mount_plan *plan, const char *path, bool recursive, aj_error *err)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			return 0;
		target[n] = '\0';
		return plan_add(plan, AJ_MOUNT_SYMLINK, target, path, err) ? 0 : -ENOMEM;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return 0;
	aj_mount_op *op = plan_add(plan, AJ_MOUNT_BIND, path, path, err);
	if (!op)
		return -ENOMEM;
	op->recursive = recursive;
	op->optional = true;
	return 0;
}

static int plan_etc_python(aj_mount_plan *plan, aj_error *err)
{
	DIR *d = opendir("/etc");
	if (!d)
		return 0;
	int r = 0;
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		if (!aj_etc_allowed_name(de->d_name))
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "/etc/%s", de->d_name);
		r = plan_host_path(plan, path, false, err);
	}
	closedir(d);
	return r;
}

static int plan_owned_bind(aj_mount_plan *plan, const char *src, const char *dest, bool writable,
			   aj_error *err)
{
	struct stat st;
	if (stat(src, &st) < 0)
		return aj_err(err, errno, "cannot access '%s'", src);
	aj_mount_op *op = plan_add(plan, AJ_MOUNT_BIND, src, dest, err);
	if (!op)
		return -ENOMEM;
	op->writable = writable;
	op->recursive = !writable;
	op->idmap = writable ? AJ_IDMAP_OWNER : AJ_IDMAP_NONE;
	op->owner_uid = st.st_uid;
	op->owner_gid = st.st_gid;
	return 0;
}

int aj_mount_plan_build(const aj_policy *p, aj_mount_plan *plan, int *etc_lock, aj_error *err)
{
	int r = 0;
	memset(plan, 0, sizeof(*plan));
	plan->etc_tree = plan->dev_tree = -1;
	if (p->rootfs) {
		aj_mount_op *op = plan_add(plan, AJ_MOUNT_LOWER, p->rootfs, "/", err);
		if (!op)
			return -ENOMEM;
		op->idmap = AJ_IDMAP_SANDBOX;
	} else {
		for (size_t i = 0; r == 0 && i < AJ_ARRAY_SIZE(system_dirs); i++)
			r = plan_host_path(plan, system_dirs[i], true, err);
		bool cached = r == 0 && etc_lock && aj_etc_cache_use(plan, etc_lock);
		for (size_t i = 0; r == 0 && !cached && i < aj_etc_allowed_n; i++)
			r = plan_host_path(plan, aj_etc_allowed[i], false, err);
		if (r == 0 && !cached)
			r = plan_etc_python(plan, err);
	}
	if (r == 0 && etc_lock && (plan->dev_tree = aj_dev_cache_open()) >= 0)
		plan->dev_cached = true;
	for (size_t i = 0; r == 0 && !plan->dev_cached && i < AJ_ARRAY_SIZE(dev_nodes); i++) {
		aj_mount_op *op = plan_add(plan, AJ_MOUNT_BIND, dev_nodes[i], dev_nodes[i], err);
		if (!op)
			return -ENOMEM;
		op->writable = true;
		op->optional = true;
	}
	if (r == 0 && p->workspace)
		r = plan_owned_bind(plan, p->workspace, AJ_WORKSPACE_DIR, true, err);
	for (size_t i = 0; r == 0 && i < p->n_binds; i++)
		r = plan_owned_bind(plan, p->binds[i].src, p->binds[i].dest, p->binds[i].writable,
				    err);
	if (r < 0)
		aj_mount_plan_free(plan);
	return r;
}

void aj_mount_plan_free(aj_mount_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++) {
		free(plan->ops[i].src);
		free(plan->ops[i].dest);
		if (plan->ops[i].fd >= 0)
			close(plan->ops[i].fd);
	}
	plan->n = 0;
	free(plan->resolv_conf);
	plan->resolv_conf = NULL;
	if (plan->etc_cached && plan->etc_tree >= 0)
		close(plan->etc_tree);
	plan->etc_cached = false;
	plan->etc_tree = -1;
	if (plan->dev_cached && plan->dev_tree >= 0)
		close(plan->dev_tree);
	plan->dev_cached = false;
	plan->dev_tree = -1;
	aj_etc_free(&plan->etc);
}
