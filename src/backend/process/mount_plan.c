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
#include "plan.h"
#include "util.h"

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

/* A device node of the plan (when /dev is not the state directory's). */
static int plan_dev_node(aj_mount_plan *plan, const char *path, aj_error *err)
{
	aj_mount_op *op = plan_add(plan, AJ_MOUNT_BIND, path, path, err);
	if (!op)
		return -ENOMEM;
	op->writable = true;
	op->optional = true;
	return 0;
}

/* The binds are the compiled plan's (plan.c), in its order; the /etc and
 * /dev entries give way to the state directory's copies when etc_lock. */
int aj_mount_plan_build(const aj_policy *p, aj_mount_plan *plan, int *etc_lock, aj_error *err)
{
	memset(plan, 0, sizeof(*plan));
	plan->etc_tree = plan->dev_tree = -1;
	aj_plan pl;
	int r = aj_plan_mounts(p, &pl, err);
	bool etc_tried = false, dev_tried = false, cached = false;
	for (size_t i = 0; r == 0 && i < pl.n; i++) {
		const aj_plan_mount *m = &pl.m[i];
		if ((m->role == AJ_PLAN_ETC_HOST || m->role == AJ_PLAN_ETC_GLOB) && !etc_tried) {
			etc_tried = true;
			cached = etc_lock && aj_etc_cache_use(plan, etc_lock);
		}
		if (m->role == AJ_PLAN_DEV_NODE && !dev_tried) {
			dev_tried = true;
			if (etc_lock && (plan->dev_tree = aj_dev_cache_open()) >= 0)
				plan->dev_cached = true;
		}
		switch (m->role) {
		case AJ_PLAN_ROOTFS: {
			aj_mount_op *op = plan_add(plan, AJ_MOUNT_LOWER, m->source, "/", err);
			if (!op)
				return -ENOMEM;
			op->idmap = AJ_IDMAP_SANDBOX;
			break;
		}
		case AJ_PLAN_SYSTEM: r = plan_host_path(plan, m->source, true, err); break;
		case AJ_PLAN_ETC_HOST:
			r = cached ? 0 : plan_host_path(plan, m->source, false, err);
			break;
		case AJ_PLAN_ETC_GLOB: r = cached ? 0 : plan_etc_python(plan, err); break;
		case AJ_PLAN_DEV_NODE:
			r = plan->dev_cached ? 0 : plan_dev_node(plan, m->source, err);
			break;
		case AJ_PLAN_WORKSPACE:
		case AJ_PLAN_BIND:
			r = plan_owned_bind(plan, m->source, m->target, !m->ro, err);
			break;
		}
	}
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
	free(plan->ca_pem);
	plan->ca_pem = NULL;
}
