/* SPDX-License-Identifier: MIT */
/* --image/--rootfs at level 3: the root's squashfs and the /etc layer
 * (rootimg.c). */
#ifndef AJ_MV_ROOTIMG_H
#define AJ_MV_ROOTIMG_H

#include <limits.h>
#include <stdbool.h>

#include "error.h"
#include "policy.h"

typedef struct aj_mv_rootimg {
	char sqfs[PATH_MAX];	     /* the squashfs (cached per digest, or in dir) */
	char initrd[PATH_MAX];	     /* dir/initrd: the initramfs and the /etc layer */
	unsigned long long etc_hash; /* the /etc layer's texts (a snapshot's key) */
} aj_mv_rootimg;

/* A file name of STATE/microvm that is a stored image's squashfs (or one
 * being made): true with the image's digest (64 hex digits). */
bool aj_mv_rootimg_digest(const char *name, char hex[65]);
/* For p->rootfs, the VM's private directory dir and the cached initramfs;
 * resolv: the guest's resolv.conf (a booted VM's NIC), NULL: no network's
 * (a snapshot's VM: its agent writes the sandbox's after the NIC's plug). */
int aj_mv_rootimg_make(const aj_policy *p, const char *dir, const char *initramfs,
		       const char *resolv, aj_mv_rootimg *out, aj_error *err);

#endif
