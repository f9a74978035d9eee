#!/usr/bin/env bats
# Filesystem walls: fds and cwd, /proc and /sys writes, mounts, root changes,
# symlinks, file handles, /proc/PID/root, device nodes, Landlock.

load helpers

@test "fds: nothing but 0,1,2 reaches the command, even host files and dirs the caller holds open" {
    echo "host secret" >"$T/host-file"
    # the caller holds a host file (rw), a host directory and bats' own fds
    exec 7<>"$T/host-file" 8<"$T"
    attack -- /attack fds
    exec 7>&- 8>&-
    assert_all_blocked
    assert_held fds
}

@test "fds: a host file the caller holds open read-write cannot be written from inside" {
    echo "original" >"$T/host-file"
    exec 7<>"$T/host-file"
    attack -- /attack fd_write 7 "written from the sandbox"
    exec 7>&-
    assert_all_blocked
    assert_blocked fd_write EBADF
    assert_eq "$(cat "$T/host-file")" original "host file content"
}

@test "fds: init's (pid 1) descriptors cannot be opened through /proc/1/fd" {
    attack -- /attack init_fds
    if at_level gvisor; then
        # no agentjail init: pid 1 is the command itself, and its fds are
        # 0, 1, 2 and the directory it is listing (fd 3), nothing of the host
        assert_sentry_own init_fd
        assert_eq "$(kv init_fd)" "ESCAPED 3 is a directory" "pid 1's fd 3"
        assert_output_has_line "info init fds listed: 4"
        return
    fi
    assert_all_blocked
    assert_blocked init_fds_list EACCES
    assert_held init_fds
}

@test "cwd: walking .. from the working directory ends at the sandbox's own root" {
    cd "$T"
    attack -- /attack cwd
    assert_all_blocked
    assert_held cwd
    assert_eq "$(info_of cwd)" /workspace cwd
    attack --cwd /tmp -- /attack cwd
    assert_all_blocked
    assert_eq "$(info_of cwd)" /tmp cwd
}

@test "/proc/self/exe, /attack and init's /proc/1/exe cannot be opened for writing" {
    local before_aj before_atk
    before_aj=$(sha256sum <"${AJ_REAL:-$AJ}")
    before_atk=$(sha256sum <"$ATTACK")
    attack -- /attack exe_write
    assert_all_blocked
    assert_blocked self_exe_wronly EACCES  # Landlock: no write right on /attack
    # read-only bind; level 2: /attack is host root's, "other" to the sandbox's ids
    assert_blocked self_exe_trunc "$(lv EROFS EACCES)"
    assert_blocked attack_wronly EACCES
    assert_blocked attack_rdwr EACCES
    assert_blocked init_exe_wronly EACCES  # init is not dumpable: no ptrace access
    if at_level gvisor; then
        # pid 1 is the command (/attack): its O_PATH fd opens, reopening it
        # for writing is refused as /attack itself is
        assert_blocked init_exe_reopen EACCES
    else
        assert_blocked init_exe_path EACCES
    fi
    assert_eq "$(sha256sum <"${AJ_REAL:-$AJ}")" "$before_aj" "agentjail binary on the host"
    assert_eq "$(sha256sum <"$ATTACK")" "$before_atk" "attack binary on the host"
}

@test "/proc writes: core_pattern, sysrq-trigger, sysctls, oom_score_adj are refused" {
    local core
    core=$(cat /proc/sys/kernel/core_pattern)
    attack -- /attack proc_write
    if at_level gvisor; then
        # the Sentry's procfs: no core_pattern, modprobe, sysrq, drop_caches,
        # panic at all; its sysctls read-only; oom_score_adj is the Sentry's
        # own bookkeeping of its tasks (pid 1 is the command), no host task's
        assert_sentry_own self_oom_adj init_oom_adj
        assert_blocked_each ENOENT core_pattern modprobe sysrq_trigger sysrq drop_caches panic
        assert_blocked_each EACCES hostname ip_forward
        assert_eq "$(cat /proc/sys/kernel/core_pattern)" "$core" "host core_pattern"
        return
    fi
    assert_all_blocked
    assert_blocked_each EACCES core_pattern drop_caches panic hostname ip_forward self_oom_adj init_oom_adj
    local f n
    for n in sysrq_trigger:/proc/sysrq-trigger modprobe:/proc/sys/kernel/modprobe sysrq:/proc/sys/kernel/sysrq; do
        f=${n#*:}
        n=${n%%:*}
        # this kernel may lack the file altogether
        if [ -e "$f" ]; then assert_blocked "$n" EACCES; else assert_blocked "$n" ENOENT; fi
    done
    assert_eq "$(cat /proc/sys/kernel/core_pattern)" "$core" "host core_pattern"
}

@test "/sys is absent and sysfs cannot be mounted" {
    attack -- /attack sys
    if at_level gvisor; then
        # /sys is the Sentry's synthetic sysfs (no host kobject), no cgroupfs in it
        assert_sentry_own sys_stat
    else
        assert_all_blocked
        assert_blocked sys_stat ENOENT
    fi
    assert_blocked sys_cgroup_procs ENOENT
    assert_blocked sysfs_mount EPERM
}

@test "remount: read-only binds stay read-only (MS_REMOUNT, bind over, umount, make-shared)" {
    attack -- /attack remount
    assert_all_blocked
    assert_blocked_each EPERM remount_usr_rw remount_root_rw bind_over_usr umount_workspace \
        umount_proc tmpfs_mount make_shared
    # level 2: host /usr is host root's, "other" to the sandbox's ids
    assert_blocked write_usr "$(lv EROFS EACCES)"
    [ ! -e /usr/ajescape ] || fail "/usr/ajescape appeared on the host"
}

@test "new mount API: fsopen, fspick, open_tree, move_mount, fsconfig, fsmount, mount_setattr" {
    attack -- /attack newmount
    assert_all_blocked
    # level 1: seccomp; level 2: gVisor does not implement the new mount API
    assert_blocked_each "$(lv EPERM ENOSYS)" fsopen fspick open_tree move_mount fsconfig fsmount \
        mount_setattr_usr mount_setattr_tmp
}

@test "chroot breakout: chroot is refused and chdir(..) stops at the root" {
    attack -- /attack chroot
    assert_all_blocked
    assert_blocked chroot EPERM
    assert_blocked fchdir_chroot_dot EPERM
    assert_held chdir_dotdot
}

@test "pivot_root is refused" {
    attack -- /attack pivot_root
    assert_all_blocked
    assert_blocked pivot_root_dot EPERM
    assert_blocked pivot_root_tmp EPERM
}

@test "symlink planted in the workspace: writing through workspace/link -> /etc/passwd never reaches the host" {
    local before
    before=$(sha256sum </etc/passwd)
    workspace_for_level
    attack -- /attack symlink_write link /etc/passwd
    assert_all_blocked
    # level 2: the link resolves in the sandbox's /etc, read-only and host
    # root's ("other" to the sandbox's ids)
    assert_blocked write_through_link "$(lv EROFS EACCES)"
    assert_blocked trunc_through_link "$(lv EROFS EACCES)"
    assert_blocked create_through_dirlink "$(lv EROFS EACCES)"
    assert_eq "$(sha256sum </etc/passwd)" "$before" "host /etc/passwd"
    [ ! -e /etc/ajescape ] || fail "/etc/ajescape created on the host"
    # the link is left in the workspace as a plain symlink, nothing more
    assert_eq "$(readlink "$WS/link")" /etc/passwd "link left in the workspace"
}

@test "symlink planted by the host: workspace links to /etc/shadow and /etc/passwd show nothing of the host" {
    ln -s /etc/shadow "$WS/shadow"
    ln -s /etc/passwd "$WS/passwd"
    attack -- /attack read_planted /workspace/shadow
    assert_all_blocked
    assert_blocked read_planted ENOENT
    # /etc/passwd inside is synthesized: the host's "daemon" user is not there
    grep -q '^daemon:' /etc/passwd || skip "host /etc/passwd has no daemon user"
    attack -- /attack read_planted /workspace/passwd daemon:
    [[ "$(kv read_planted)" != *"marker found"* ]] || { _aj_dump; fail "host /etc/passwd read through a planted link"; }
}

@test "symlink planted for a bind: --ro/--rw/--workspace through a link are refused (exit 125)" {
    mkdir "$T/real"
    ln -s /etc "$WS/etclink"
    ln -s "$T/real" "$T/wslink"
    run --separate-stderr "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" --ro "$WS/etclink:/x" -- /bin/true
    assert_status 125
    assert_one_error_line
    run --separate-stderr "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" --rw "$WS/etclink/ssh:/x" -- /bin/true
    assert_status 125
    run --separate-stderr "$AJ" run "${AJ_LEVEL[@]}" --workspace "$T/wslink" -- /bin/true
    assert_status 125
}

@test "open_by_handle_at (shocker) and name_to_handle_at are refused" {
    attack -- /attack handle
    assert_all_blocked
    # level 2: the Sentry has no file handles (EOPNOTSUPP)
    assert_blocked name_to_handle_at "$(lv EPERM EOPNOTSUPP)"
    assert_blocked open_by_handle_at "$(lv EPERM EOPNOTSUPP)"
}

@test "/proc/1/root and /proc/1/cwd lead nowhere outside (init is not dumpable)" {
    attack -- /attack proc1root
    assert_all_blocked
    if at_level gvisor; then
        # pid 1 is the command: /proc/1/root and cwd are its own (/ and
        # /workspace), and the root has no shadow; there is no pid 2
        assert_held 1_root
        assert_held 1_cwd
        assert_held self_root
        assert_eq "$(info_of /proc/1/root)" "-> /" "/proc/1/root"
        assert_blocked 2_root ENOENT
        assert_blocked proc1_shadow ENOENT
        return
    fi
    assert_blocked 1_root EACCES
    assert_blocked 1_cwd EACCES
    assert_held self_root
    assert_held 2_root
    assert_blocked proc1_shadow EACCES
}

@test "mknod: no character or block device can be created (tmp, workspace, /dev)" {
    if at_level gvisor; then
        # the Sentry makes the nodes in its own tmpfs and /dev, but they lead
        # to no device (ENXIO); in the workspace (the host's) the gofer refuses
        workspace_for_level
        attack -- /bin/sh -c '/attack mknod; rc=$?
            mknod /tmp/mem c 1 1 && mknod /tmp/kmsg c 1 11 && mknod /tmp/vda b 254 0 && mknod /dev/mem c 1 1
            for n in /tmp/mem /tmp/kmsg /tmp/vda /dev/mem; do
                if head -c 1 "$n" >/dev/null; then echo "open_$n=ESCAPED"; fi
            done 2>&1
            exit $rc'
        assert_sentry_own mknod_chr_mem mknod_chr_null mknod_blk_tmp mknod_chr_dev
        assert_blocked mknod_blk_ws EPERM
        [ "$(printf '%s\n' "$output" | grep -c 'No such device or address')" -eq 4 ] ||
            { _aj_dump; fail "a node made inside did not fail with ENXIO"; }
        [ ! -e "$WS/ajvda" ] || fail "block device node left in the workspace"
        return
    fi
    attack -- /attack mknod
    assert_all_blocked
    assert_blocked_each EACCES mknod_chr_mem mknod_chr_null mknod_blk_tmp mknod_blk_ws
    # /dev: the prepared read-only one (root, dev_cache.c) refuses first
    assert_blocked mknod_chr_dev EROFS
    [ ! -e "$WS/ajvda" ] || fail "block device node left in the workspace"
    # a writable /dev tmpfs (no usable state directory): Landlock refuses
    AGENTJAIL_STATE_DIR=/proc/agentjail-none attack -- /attack mknod
    assert_all_blocked
    assert_blocked_each EACCES mknod_chr_mem mknod_chr_null mknod_blk_tmp mknod_blk_ws mknod_chr_dev
}

@test "/dev holds only null, zero, full, random, urandom, tty, ptmx and pts" {
    attack -- /attack devscan
    if at_level gvisor; then
        # gVisor's /dev: its tun is a device of the Sentry's netstack (with
        # --net none no host link is behind it), its fuse is the Sentry's
        assert_sentry_own dev_char fuse net_tun
        assert_blocked_each ENOENT mem kmem port kmsg vda sda console tty0 vsock userfaultfd kvm hwrng
        return
    fi
    assert_all_blocked
    assert_blocked_each ENOENT mem kmem port kmsg vda sda console tty0 vsock fuse net_tun userfaultfd kvm hwrng
}

@test "Landlock: no writes outside workspace/tmp/home/shm, even where the mount is writable (/dev, /proc)" {
    # /dev a writable tmpfs (no usable state directory for the prepared,
    # read-only one): only Landlock says no there
    workspace_for_level
    AGENTJAIL_STATE_DIR=/proc/agentjail-none attack -- /attack landlock
    if at_level gvisor; then
        # no Landlock: /dev is the Sentry's own tmpfs (per sandbox, in its
        # memory) and /proc/self/comm its own task's name; the host's
        # read-only trees are "other" to the sandbox's ids
        assert_sentry_own create_in_dev mkdir_in_dev symlink_in_dev unlink_dev_null \
            rename_dev_zero write_proc_self_comm
        assert_blocked_each EACCES create_in_root create_in_etc truncate_attack
        assert_blocked chmod_usr_bin EPERM
    else
        assert_all_blocked
        assert_blocked create_in_root EROFS
        assert_blocked create_in_etc EROFS
        assert_blocked chmod_usr_bin EROFS
    fi
    # /dev is a writable tmpfs and /proc/self/comm a writable file: only Landlock says no
    at_level gvisor || assert_blocked_each EACCES create_in_dev mkdir_in_dev symlink_in_dev unlink_dev_null \
        rename_dev_zero write_proc_self_comm truncate_attack
    local p
    for p in /workspace/ajok /tmp/ajok /home/agent/ajok /dev/shm/ajok; do
        printf '%s\n' "$output" | grep -qx "info write $p ok" || { _aj_dump; fail "cannot write $p inside"; }
    done
}

@test "workspace writes land on the host owned by the workspace's owner, not a sandbox or root uid" {
    chown 1234:1234 "$WS"
    attack -- /bin/sh -c 'echo hi >/workspace/made && mkdir /workspace/d'
    assert_status 0
    assert_eq "$(stat -c %u:%g "$WS/made")" 1234:1234 "owner of a file made inside"
    assert_eq "$(stat -c %u:%g "$WS/d")" 1234:1234 "owner of a dir made inside"
    assert_eq "$(stat -c %a "$WS/made")" "$(printf '%o' $((0666 & ~0022)))" "mode (no setuid bits)"
}
