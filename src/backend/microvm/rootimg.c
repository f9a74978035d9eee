/* SPDX-License-Identifier: MIT */
/* --image/--rootfs at level 3 (docs/levels.md): the image's root as a
 * read-only squashfs the VM gets as a virtio-blk disk (no virtiofsd: a
 * block device migrates, a vhost-user-fs device does not, so a VM on an
 * image can be snapshotted). The squashfs is made once per image digest
 * with mksquashfs and cached in STATE/microvm (written aside, renamed);
 * a --rootfs directory's is made for each VM.
 * The files agentjail owns in /etc (etc.h) go into the VM as a layer of
 * its own: a small cpio appended to the initramfs (the kernel unpacks
 * concatenated archives), which the guest stacks over the image
 * (guest/init.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "microvm.h"
#include "rootimg.h"
#include "cache.h"
#include "etc.h"
#include "image.h"
#include "util.h"

static bool is_hex64(const char *s, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool aj_mv_rootimg_digest(const char *name, char hex[65])
{
	/* rootfs-HEX.sqfs, or its save under way: rootfs-HEX.sqfs.PID.tmp */
	if (strncmp(name, "rootfs-", 7) || !is_hex64(name + 7, strnlen(name + 7, 64)) ||
	    strncmp(name + 7 + 64, ".sqfs", 5) || (name[76] && name[76] != '.'))
		return false;
	memcpy(hex, name + 7, 64);
	hex[64] = '\0';
	return true;
}

/* A stored image's digest, from its path (STATE/images/HEX/rootfs); false
 * for another --rootfs. */
static bool store_digest(const char *rootfs, char hex[65])
{
	char pre[PATH_MAX];
	snprintf(pre, sizeof(pre), "%s/images/", aj_state_dir());
	size_t pl = strlen(pre), rl = strlen(rootfs);
	if (strncmp(rootfs, pre, pl) || rl != pl + 64 + strlen("/rootfs") ||
	    strcmp(rootfs + pl + 64, "/rootfs") || !is_hex64(rootfs + pl, 64))
		return false;
	memcpy(hex, rootfs + pl, 64);
	hex[64] = '\0';
	return true;
}

/* mksquashfs src dst, its output discarded: 0 or -errno. */
static int mksquashfs(const char *src, const char *dst)
{
	pid_t pid = fork();
	if (pid == 0) {
		int dn = open("/dev/null", O_RDWR);
		if (dn < 0 || dup2(dn, 0) < 0 || dup2(dn, 1) < 0 || dup2(dn, 2) < 0)
			_exit(127);
		/* uncompressed: the guest's emulated CPU reads it as it is */
		execlp("mksquashfs", "mksquashfs", src, dst, "-noappend", "-quiet", "-no-progress",
		       "-noI", "-noD", "-noF", "-noX", "-processors", "1", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -errno;
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		return -errno;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return -ENOENT;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int squashfs_of(const aj_policy *p, const char *vmdir, aj_mv_rootimg *m, aj_error *err)
{
	const char *rootfs = p->rootfs;
	char hex[65];
	int r;
	/* a stored image's: cached under its digest; another --rootfs (a
	 * directory that may change): made for this VM, in its directory */
	if (store_digest(rootfs, hex)) {
		_cleanup_close_ int dir = aj_cache_dir("microvm", true);
		if (dir < 0)
			return aj_err(err, EACCES,
				      "microvm: the state directory's cache is not usable");
		snprintf(m->sqfs, sizeof(m->sqfs), "%s/microvm/rootfs-%s.sqfs", aj_state_dir(),
			 hex);
		if (access(m->sqfs, R_OK) == 0)
			return 0;
	} else {
		snprintf(m->sqfs, sizeof(m->sqfs), "%s/rootfs.sqfs", vmdir);
	}
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", m->sqfs, (int)getpid());
	r = mksquashfs(rootfs, tmp);
	if (r == 0 && (chmod(tmp, 0644) < 0 || rename(tmp, m->sqfs) < 0))
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		m->sqfs[0] = '\0';
		if (r == -ENOENT) {
			aj_err(err, ENOENT, "microvm: mksquashfs is missing (the image's disk)");
			aj_err_hint(err, "apt-get install squashfs-tools (scripts/setup.sh)");
			return r;
		}
		return aj_err(err, -r, "microvm: cannot make the squashfs of %s", rootfs);
	}
	return 0;
}

/* dir/initrd: the cached initramfs and a cpio of aj-etc/etc/ (the files
 * agentjail owns in /etc) after it. */
static int etc_initrd(const aj_policy *p, const char *dir, const char *initramfs,
		      const char *resolv, aj_mv_rootimg *m, aj_error *err)
{
	char layer[PATH_MAX], etc[PATH_MAX], initrd[PATH_MAX];
	snprintf(layer, sizeof(layer), "%s/etclayer", dir);
	snprintf(etc, sizeof(etc), "%s/aj-etc/etc", layer);
	snprintf(initrd, sizeof(initrd), "%s/initrd", dir);
	int r = aj_mkdir_p(etc, 0755);
	if (r < 0)
		return aj_err(err, -r, "microvm: cannot create %s", etc);
	aj_etc_files f;
	if (aj_etc_prepare(p, resolv, &f) < 0)
		return aj_err(err, ENOMEM, "microvm: /etc");
	r = aj_etc_write_dir(etc, &f, err);
	/* a snapshot's key (snap.c): these texts and the initramfs, named
	 * after its guest init, agent and modules */
	m->etc_hash = 14695981039346656037ULL;
	for (const char *c = initramfs; *c; c++)
		m->etc_hash = (m->etc_hash ^ (unsigned char)*c) * 1099511628211ULL;
	for (size_t i = 0; i < AJ_ETC_FILES; i++)
		for (const char *c = f.text[i]; c && *c; c++)
			m->etc_hash = (m->etc_hash ^ (unsigned char)*c) * 1099511628211ULL;
	aj_etc_free(&f);
	if (r < 0)
		return r;
	char list[1024] = "aj-etc\naj-etc/etc\n";
	for (size_t i = 0; i < AJ_ETC_FILES; i++) {
		size_t n = strlen(list);
		snprintf(list + n, sizeof(list) - n, "aj-etc/etc/%s\n", aj_etc_generated[i]);
	}
	_cleanup_close_ int in = open(initramfs, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out = open(initrd, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (in < 0 || out < 0)
		return aj_err(err, errno, "microvm: cannot make %s", initrd);
	if ((r = aj_copy_fd(in, out)) < 0 || (r = aj_mv_cpio(layer, list, out)) < 0)
		return aj_err(err, -r, "microvm: cannot make %s", initrd);
	(void)aj_rm_tree_at(AT_FDCWD, layer, 8);
	snprintf(m->initrd, sizeof(m->initrd), "%s", initrd);
	return 0;
}

int aj_mv_rootimg_make(const aj_policy *p, const char *dir, const char *initramfs,
		       const char *resolv, aj_mv_rootimg *out, aj_error *err)
{
	int r = squashfs_of(p, dir, out, err);
	return r < 0 ? r : etc_initrd(p, dir, initramfs, resolv, out, err);
}
