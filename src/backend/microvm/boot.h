/* SPDX-License-Identifier: MIT */
/* The boot of a level-3 microVM (boot.c), shared by the one-shot run
 * (run.c) and the sandbox that lives across commands (box.c): its private
 * directory and staged root, the VMM's host cgroup, the two virtiofsd and
 * qemu (all confined, vm.c), and the host's ends of the guest agent's
 * virtio-serial ports (agent_proto.h), one request at a time on each. */
#ifndef AJ_MV_BOOT_H
#define AJ_MV_BOOT_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "console.h"
#include "microvm.h"
#include "protect.h"
#include "vmnet.h"

/* the most agent ports a VM has (concurrent requests of a box) */
#define AJ_MV_MAX_PORTS 8
/* the most --rw binds a VM has (a virtiofsd each; --ro ones share the root's) */
#define AJ_MV_MAX_RW 8

typedef struct aj_mv_vm {
	const aj_policy *p;
	const aj_run_hooks *hooks; /* warnings (the one-shot run's), or NULL */
	aj_mv_host h;
	char dir[64];	    /* the private directory (root's, 0711) */
	char root[96];	    /* dir/root: the staged root */
	char vm[96];	    /* dir/vm: qemu's (the unused uid's) */
	char wsd[96];	    /* dir/ws: the workspace's virtiofsd's root (its owner's) */
	char wsws[112];	    /* dir/ws/workspace: the workspace bound there */
	aj_mv_spawn rootfs; /* the root's virtiofsd and its binds */
	char *holders[160]; /* the binds' sources and places (malloc'ed) */
	size_t n_holders;
	uid_t base;	/* the unused uid (and gid) of qemu and the root's virtiofsd */
	gid_t base_gid; /* base, or -1: a non-root caller's (files stay its own) */
	uid_t ws_uid;	/* the workspace's virtiofsd: its owner (or base) */
	gid_t ws_gid;
	/* qemu, virtiofsd root, virtiofsd workspace, a virtiofsd per --rw bind */
	pid_t pids[3 + AJ_MV_MAX_RW];
	unsigned n_rw;		    /* --rw binds: tags b0, b1 ... (aj.binds= says where) */
	unsigned nports;	    /* agent ports: aj.agent, aj.agent.1 ... */
	int ports[AJ_MV_MAX_PORTS]; /* the host's end of each (a socket) */
	int console;		    /* the console's pipe: qemu's serial, virtiofsd's stderr */
	aj_mv_console *con;	    /* its keeper: dir/vm/console, bounded (console.c) */
	aj_protect *prot;	    /* the workspace's host-run files (protect.h), or NULL */
	aj_cgroup cg;		    /* qemu's and virtiofsd's, on the host */
	bool have_cg;
	bool freezer;		     /* set before the boot: cg gets a freezer (a box's pause) */
	char rootimg[PATH_MAX];	     /* --image/--rootfs: its squashfs (rootimg.c), or "" */
	unsigned long long etc_hash; /* the /etc layer's texts (rootimg.c) */
	/* snapshots (snap.c): set before the boot when the VM may be saved and
	 * restored (an image, no NIC); then its file and, when it exists, the
	 * fd qemu restores from. A workspace is hot-plugged after (box.c). */
	bool snap;
	bool restored;
	bool pair; /* restored from a snapshot's pair: its state over QMP */
	bool cow;  /* and its RAM mapped private (without a workspace) */
	int snapfd;
	/* the VM's RAM (snap.c): a boot's memfd, shared with qemu (what a save
	 * copies), or a restore's sealed snapshot RAM, mapped private */
	int ramfd;
	char snapfile[PATH_MAX];
	/* a fork's copy (box.c): restored from the save of its source in this
	 * directory (the same file name: the same configuration), never booted */
	char restore_dir[PATH_MAX];
	aj_mv_net *net; /* --net open/--allow (vmnet.c), or NULL */
	bool ca;	/* the staged root has the CA bundle for HTTPS interception */
	char *profile;	/* --seccomp-profile compiled: its BPF in hex (boot.c), or NULL */
} aj_mv_vm;

/* The fields a boot needs set before aj_mv_boot (p, hooks, nports). */
void aj_mv_vm_init(aj_mv_vm *m, const aj_policy *p, const aj_run_hooks *hooks, unsigned nports);
/* What level 3 does not do yet (125/501 with a fix), the host's tools, the
 * ids, then the boot up to connected agent ports. need_argv: a one-shot
 * run (p->argv is its command). On failure the caller still calls
 * aj_mv_teardown. */
int aj_mv_boot(aj_mv_vm *m, bool need_argv, aj_error *err);
/* Every process of the VM killed and reaped, its cgroup and directory
 * removed (AGENTJAIL_MICROVM_DEBUG=1 keeps the directory). */
void aj_mv_teardown(aj_mv_vm *m);
/* The console's last lines (for an error): the guest init's fatal line if
 * it said one. */
void aj_mv_console_tail(aj_mv_vm *m, char *out, size_t len);
void aj_mv_warn(aj_mv_vm *m, const char *msg);
/* An exec request q with its "rlimits" (the guest's agent sets them before
 * the command): level 1's, core 0, --nofile and --fsize. NULL (q freed)
 * when they could not be added: never a request without them. */
json_t *aj_mv_exec_rlimits(const aj_policy *p, json_t *q);
/* q with the --seccomp-profile's program ("seccomp_profile"), which the
 * agent loads on top of its own filter last before the exec; q as it is
 * without a profile. NULL (q freed) when it could not be added. */
json_t *aj_mv_exec_profile(const aj_mv_vm *m, json_t *q);
#endif
