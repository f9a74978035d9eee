/* SPDX-License-Identifier: MIT */
/* Snapshots of a level-3 VM on an image (snap.c). */
#ifndef AJ_MV_SNAP_H
#define AJ_MV_SNAP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cgroup.h"
#include "error.h"
#include "policy.h"

/* The snapshot's file for this qemu command line (dir, the VM's own
 * directory, left out), image and /etc layer. */
void aj_mv_snap_path(const char *dir, char *const *argv, size_t n, const char *rootimg,
		     unsigned long long etc_hash, char *out, size_t len);
/* The ready VM whose QMP socket is vmdir/qmp.sock saved to file (written
 * aside, renamed into place) while stopped, then let go on: its whole RAM
 * in the stream (restored with `-incoming fd:`); bounded in time, refused
 * (ENOSPC) where the guest's RAM would not fit. -ENOTRECOVERABLE: the VM
 * did not go on (its caller kills it). */
int aj_mv_snap_save(const char *vmdir, const char *file, aj_error *err);
/* The same for a VM whose RAM is ramfd, a memfd it maps shared (booted
 * with it as its memory-backend-file, share=on): the stream carries the
 * devices only (x-ignore-shared) and the RAM's data goes to
 * aj_mv_snap_ram_path(file), both written aside and renamed into place
 * (RAM first; an existing pair is kept: this save then fails, EEXIST). */
int aj_mv_snap_save_ram(const char *vmdir, const char *file, int ramfd, aj_error *err);
/* FILE's RAM file: snap-KEY.vmstate -> snap-KEY.ram. */
void aj_mv_snap_ram_path(const char *file, char *out, size_t len);
/* A NIC hotplug into a VM of snapshot FILE (its save, or a restore from
 * it) that worked (ok) or failed: the failures in a row since its last
 * success or removal (0 when ok). */
unsigned aj_mv_snap_nic_result(const char *file, bool ok);
/* Both files of a snapshot removed (a restore that failed, eviction). */
void aj_mv_snap_remove(const char *file);
/* A saved pair opened for a restore: *statefd the device state (qemu's fd
 * 3), *ramfd a sealed memfd of the RAM (fd 4, mapped share=off: no one
 * can write it; loaded once per process and file, then shared). 0, or
 * -ENOENT without a pair, or -errno with err. */
int aj_mv_snap_open(const char *file, int *statefd, int *ramfd, aj_error *err);
/* A restore's qemu (-incoming defer) told over vmdir/qmp.sock to load fd
 * 3 with x-ignore-shared, as the save had it. */
int aj_mv_snap_incoming(const char *vmdir, aj_error *err);
/* A private copy of a restore's sealed RAM (its non-zero pages) for a VM
 * that shares it with a vhost-user device: a new memfd, or -errno. With
 * cg (the VMM's host cgroups), written by a child in them: the copy's
 * pages are charged to the VM, not to the caller. */
int aj_mv_snap_ram_copy(int sealed, const aj_cgroup *cg, aj_error *err);
/* The snapshot machine's PCIe root ports, one per device a restored VM
 * gets hot-plugged (boot.c adds them in this order, chassis k + 1; the
 * machine, and so the snapshot's key, changes with this list). */
#define AJ_MV_PORT_WS "rp0"	/* the workspace's virtiofs */
#define AJ_MV_PORT_NET "rp-net" /* the NIC (--net open, --allow) */
extern const char *const aj_mv_snap_ports[];
extern const size_t aj_mv_snap_n_ports;
/* The workspace's virtiofs hot-plugged into a running snapshot VM over
 * vmdir/qmp.sock: vmdir/ws.sock's vhost-user-fs-pci, tag "ws", on its
 * PCIe root port. */
int aj_mv_snap_plug_ws(const char *vmdir, aj_error *err);
/* The NIC hot-plugged the same way: the tap (tapfd, in the VM's network
 * namespace, passed over QMP) as netdev "net0", a virtio-net-pci on
 * AJ_MV_PORT_NET; the guest's agent then addresses it (op "net"). */
int aj_mv_snap_plug_net(const char *vmdir, int tapfd, aj_error *err);
/* The agent's request giving a restored VM its own identity: fresh
 * entropy, the time, the hostname (a new reference, or NULL). */
json_t *aj_mv_identity_req(const aj_policy *p);
/* A bound in ms: def, or the test knob env (a number of ms) when it is
 * shorter; never longer (docs/levels.md, "Test knobs"). */
unsigned long long aj_mv_test_ms(const char *env, unsigned long long def);

#endif
