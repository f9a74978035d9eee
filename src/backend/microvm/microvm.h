/* SPDX-License-Identifier: MIT */
/* Level 3 (`--isolation microvm`): each sandbox a qemu microVM with its own
 * Linux kernel (docs/levels.md). The guest kernel and its modules come from
 * Debian's linux-image package, unpacked at setup (scripts/setup.sh) into
 * AJ_MV_ASSETS; agentjail builds the initramfs (guest/init.c as PID 1 and
 * agentjail-agent, which serves the agent protocol on virtio-serial). */
#ifndef AJ_MICROVM_H
#define AJ_MICROVM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "backend.h"
#include "doctor.h"
#include "cgroup.h"
#include "error.h"
#include "policy.h"

/* where setup puts vmlinux and modules/ (AGENTJAIL_MICROVM_DIR names another) */
#define AJ_MV_ASSETS "/var/cache/agentjail/microvm"
#define AJ_MV_QEMU "qemu-system-x86_64"
#define AJ_MV_VIRTIOFSD "/usr/lib/qemu/virtiofsd"
#define AJ_MV_DIR_PREFIX "/tmp/agentjail-microvm-"

/* What a boot needs, found by aj_mv_host_find. */
typedef struct aj_mv_host {
	char qemu[PATH_MAX];
	char virtiofsd[PATH_MAX];
	char kernel[PATH_MAX];	  /* the uncompressed vmlinux (PVH entry) */
	char initramfs[PATH_MAX]; /* built and cached by aj_mv_initramfs */
	bool kvm;		  /* the accelerator: KVM, else TCG */
	char accel_why[256];	  /* why TCG (or "forced") */
	unsigned long tsc_khz;	  /* the host's TSC in kHz (tsc_early_khz=) */
} aj_mv_host;

/* qemu, virtiofsd, the kernel, modules and the initramfs; the accelerator
 * (AGENTJAIL_MICROVM_ACCEL=kvm|tcg forces it, else the cached verdict of a
 * canary boot). 0, or -errno with err saying what is missing (exit 125). */
int aj_mv_host_find(aj_mv_host *h, aj_error *err);
/* What a non-root caller's VM does not have yet (a workspace, a network,
 * binds, an image, --publish, the service: run false): -EPERM with the
 * reason and a fix (exit 125), before anything is made; 0 for root. */
int aj_mv_nonroot_refuse(const aj_policy *p, bool run, aj_error *err);
/* The `agentjail doctor` line for level 3. */
void aj_microvm_doctor(aj_check *c);

/* A process of the VM (qemu or virtiofsd) confined: its own user (inside
 * uid 0 is host uid/gid), mount, network and IPC namespaces. Before the
 * exec, bind[i] is bound read-only (ro[i]) or read-write at onto[i] in its
 * mount namespace (made as host root, so the confined process cannot undo
 * them). Its stdout and stderr go to log (an fd, or -1: /dev/null). */
typedef struct aj_mv_spawn {
	char *const *argv;
	uid_t uid;
	gid_t gid;
	const char *bind[80], *onto[80];
	bool ro[80];
	size_t n;
	int log;
	mode_t umask;
	/* >= 0: a user namespace the read-only binds are idmapped through
	 * (host root's files appear as the process's own, as at level 1) */
	int idmap;
	/* > 0: bind[i]'s source as an O_PATH fd, opened once with no symlink
	 * followed (a --ro bind's: boot.c ro_open), bound from it, not by its
	 * path, read-only and not idmapped: host root's files there are the
	 * overflow uid's to the process, as to level 1's sandbox */
	int src_fd[80];
	/* > 0: a user namespace the read-write binds are idmapped through (a
	 * root-owned share: its files appear as the process's own) */
	int rw_idmap;
	/* != 0: the read-write binds' source (opened again in the process,
	 * no symlink followed) must be this directory, the one the owner and
	 * the idmap were decided on (aj_mv_share_open) */
	dev_t rw_dev;
	ino_t rw_ino;
	/* > 0: an fd the process gets as fd 3 (virtiofsd's listening socket) */
	int pass_fd;
	/* > 0: an fd it gets as fd 4 (a snapshot VM's RAM, a memfd: snap.c) */
	int pass_fd4;
	/* > 0: a network namespace it joins instead of a new empty one (the
	 * VM's with its tap, owned by host root: qemu cannot change it) */
	int netns;
	/* called in the child after the binds, as host root (the workspace's
	 * masks and guard); non-zero: an errno, the start fails */
	int (*prepare)(void *ctx);
	void *ctx;
	/* non-NULL: the process is moved into these cgroups before it execs */
	const aj_cgroup *cg;
	/* in_uid > 0: one more id mapped, in_uid/in_gid inside to out_uid/out_gid
	 * (a virtiofsd's share for --user: the guest user's files the owner's) */
	uid_t in_uid, out_uid;
	gid_t in_gid, out_gid;
	/* a virtiofsd: it may make no setuid/setgid file on the host, whatever
	 * the guest's kernel asks (the setid filter, loaded before it execs) */
	bool no_setid;
	/* a non-root caller's process (no unused uid: it runs as the caller):
	 * non-NULL, the one directory of the host its root shows (besides the
	 * host's programs and libraries, read-only), in a pid namespace of its
	 * own (qemu: the VM's directory); NULL, the host's view (virtiofsd,
	 * which makes its own root of its share) */
	const char *jail;
} aj_mv_spawn;
/* A share (--workspace, a --rw directory) as an O_PATH fd, no symlink
 * followed anywhere in its path (as level 1's binds), or -errno. */
int aj_mv_share_open(const char *path);
pid_t aj_mv_spawn_confined(const aj_mv_spawn *s, aj_error *err);

/* The level's cached files of images no longer in the store: the root's
 * squashfs (rootimg.c) and the snapshots made on it (snap.c), in
 * STATE/microvm. After `agentjail image rm`. */
void aj_microvm_image_gc(void);

/* `cpio -o -H newc -R 0:0` of the files list names (in dir) onto out. */
int aj_mv_cpio(const char *dir, const char *list, int out);

extern const aj_backend aj_backend_microvm;

/* agentjail run --isolation microvm: the same contract as aj_sandbox_run. */
int aj_microvm_run(const aj_policy *p, const aj_run_hooks *hooks, aj_run_result *res,
		   aj_error *err);

#endif
