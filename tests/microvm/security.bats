#!/usr/bin/env bats
# The security suite's attacks at level 3 (docs/security.md, "Attack x
# level"), in ONE microVM: a TCG boot costs ~3 s, the suite has ~100
# attack runs, so setup_file runs the attack program (tests/security/
# attack*.c) once per attack inside one VM (root, a workspace, /attack a
# --ro bind) and each test checks its part of that output: level 1's
# expectations where the guest gives the same walls (the agent's: no
# capabilities, no_new_privs, the setid filter), and where the wall is the
# VM instead (the guest kernel's own /proc/sys, devices, namespaces), that
# those attempts reach only the guest and the host is unchanged.
# `AJ_ISOLATION=microvm` on tests/security/ points here (helpers.bash).

AJ_ISOLATION=microvm
load ../security/helpers

# the attacks that take no argument, in the order the VM runs them
ATTACKS="fds init_fds cwd exe_write proc_write sys remount newmount chroot pivot_root handle
proc1root mknod devscan privstate caps_raise ids suid_exec ptrace1 kill1 tiocsti tioclinux
hostsock userns cgroup clone3 io_uring keyring bpf perf userfaultfd privsweep rawsock vsock
netlink"

setup_file() {
    [ "$(id -u)" = 0 ] || return 0
    command -v qemu-system-x86_64 >/dev/null || return 0
    [ -r /var/cache/agentjail/microvm/vmlinux ] || return 0
    local ws=$BATS_FILE_TMPDIR/ws
    mkdir -p "$ws" && chown 4242:4343 "$ws"
    _aj_find_attack
    chmod o+rx "$ATTACK" "$PROBE"
    cat /proc/sys/kernel/core_pattern /proc/sys/kernel/hostname >"$BATS_FILE_TMPDIR/host.before"
    # each attack's output after a "=== NAME" line; then what guest root
    # writes into the guest kernel's /proc/sys (the host's must not change)
    local t0=$EPOCHREALTIME
    AGENTJAIL_MICROVM_ACCEL=tcg timeout -k 5 120 "$AJ" run -q --isolation microvm \
        --workspace "$ws" --ro "$ATTACK:/attack" --ro "$PROBE:/probe" -- /bin/sh -c '
        for a in '"$(echo $ATTACKS)"'; do echo "=== $a"; /attack "$a"; echo "exit=$?"; done
        for p in ids caps net hostname; do echo "=== probe_$p"; /probe "$p"; done
        echo "=== guest_sysctl"
        echo "|/bin/false aj-w46" >/proc/sys/kernel/core_pattern && echo core_pattern=written
        echo aj-guest-name >/proc/sys/kernel/hostname && echo hostname=written
        echo x >/usr/aj-microvm-usr && echo usr=written' \
        </dev/null >"$BATS_FILE_TMPDIR/out" 2>"$BATS_FILE_TMPDIR/err"
    echo "$?" >"$BATS_FILE_TMPDIR/rc"
    elapsed_since "$t0" >"$BATS_FILE_TMPDIR/secs"
}

setup() {
    require_root
    command -v qemu-system-x86_64 >/dev/null || skip "qemu is not installed (scripts/setup.sh)"
    [ -r /var/cache/agentjail/microvm/vmlinux ] || skip "no guest kernel (scripts/setup.sh)"
    aj_setup
}

# $output and $lines: the part of the VM's output for attack NAME
section() { # NAME
    output=$(awk -v n="=== $1" '$0 == n { on = 1; next } /^=== / { on = 0 } on' "$BATS_FILE_TMPDIR/out")
    mapfile -t lines <<<"$output"
    [ -n "$output" ] || fail "no output for $1 (the run: rc $(cat "$BATS_FILE_TMPDIR/rc"), $(head -c 600 "$BATS_FILE_TMPDIR/err"))"
}

# every attempt of NAME blocked, the attack's exit 0
blocked_in_vm() { # NAME...
    local n l
    for n in "$@"; do
        section "$n"
        for l in "${lines[@]}"; do
            [[ "$l" != *=ESCAPED* ]] || fail "$n: ESCAPED: $l"
        done
        assert_eq "$(kv result)" blocked "$n's summary"
        assert_eq "$(kv exit)" 0 "$n's exit"
    done
}

# level 3: exactly these attempts of NAME succeed, inside the guest's own
# kernel (as assert_sentry_own at level 2); every other one is blocked
guest_own() { # NAME ATTEMPT...
    section "$1"
    shift
    local want got
    want=$(printf '%s\n' "$@" | sort -u)
    got=$(printf '%s\n' "${lines[@]}" | awk -F= '$1 != "result" && $2 ~ /^ESCAPED/ { print $1 }' | sort -u)
    [ "$got" = "$want" ] || fail "ESCAPED inside the guest: expected [$(echo $want)], got [$(echo $got)]"
    assert_eq "$(kv exit)" 1 "the attack's exit"
}

@test "microvm security: one VM ran every attack and left nothing behind" {
    assert_eq "$(cat "$BATS_FILE_TMPDIR/rc")" 0 "the run's exit ($(head -c 600 "$BATS_FILE_TMPDIR/err"))"
    local n
    for n in $ATTACKS probe_ids probe_caps probe_net probe_hostname guest_sysctl; do section "$n"; done
    echo "# one TCG boot and $(echo $ATTACKS | wc -w) attacks: $(cat "$BATS_FILE_TMPDIR/secs") s" >&3
    [ -z "$(pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm')" ] || fail "a qemu is left"
    [ -z "$(pgrep -x virtiofsd)" ] || fail "a virtiofsd is left"
    [ -z "$(ls -d /tmp/agentjail-microvm-* 2>/dev/null)" ] || fail "a VM directory is left"
}

@test "microvm security: level 1's walls inside the guest (fds, exe, mounts, roots, ptrace, ttys, bpf, raw sockets)" {
    blocked_in_vm fds init_fds cwd newmount chroot pivot_root handle proc1root mknod ptrace1 \
        tiocsti tioclinux bpf perf rawsock vsock
    section fds
    assert_eq "$(info_of fds)" 0,1,2,3 "the command's fds"
    section exe_write
    # /attack is a --ro bind: read-only in the guest and in its virtiofsd
    assert_blocked_each EROFS self_exe_wronly self_exe_trunc attack_wronly attack_rdwr
    assert_blocked_each EACCES init_exe_wronly init_exe_path
    section newmount
    assert_blocked_each EPERM fsopen fspick open_tree move_mount fsmount mount_setattr_usr mount_setattr_tmp
    section remount
    # no capability: the mount family is EPERM, as level 1's seccomp
    assert_blocked_each EPERM remount_usr_rw remount_root_rw bind_over_usr umount_workspace \
        umount_proc tmpfs_mount make_shared
    section mknod
    assert_blocked_each EPERM mknod_chr_mem mknod_chr_null mknod_blk_tmp mknod_blk_ws mknod_chr_dev
    section proc1root
    assert_blocked_each EACCES 1_root 1_cwd proc1_shadow
    section handle
    # virtiofs has no file handles; opening one needs a capability
    assert_blocked name_to_handle_at EOPNOTSUPP
    assert_blocked open_by_handle_at EPERM
    section privstate
    local c
    for c in CapInh CapPrm CapEff CapBnd CapAmb; do assert_eq "$(info_of "$c")" 0000000000000000 "$c"; done
    assert_eq "$(info_of NoNewPrivs)" 1 NoNewPrivs
    assert_eq "$(info_of Seccomp)" 2 "the setid filter"
}

@test "microvm security: what reaches only the guest's own kernel; the host's /proc/sys, hostname and /usr unchanged" {
    # guest root owns the guest's /proc/sys (owner bits, no capability needed)
    guest_own proc_write core_pattern modprobe sysrq_trigger sysrq drop_caches panic hostname \
        ip_forward self_oom_adj init_oom_adj
    # the root is a copy-on-write overlay in guest RAM
    guest_own remount write_usr
    section guest_sysctl
    assert_eq "$(kv core_pattern)" written "guest core_pattern"
    assert_eq "$(kv hostname)" written "guest hostname"
    assert_eq "$(kv usr)" written "the guest's /usr"
    cat /proc/sys/kernel/core_pattern /proc/sys/kernel/hostname >"$T/host.after"
    assert_eq "$(cat "$T/host.after")" "$(cat "$BATS_FILE_TMPDIR/host.before")" "the host's core_pattern and hostname"
    [ ! -e /usr/aj-microvm-usr ] && [ ! -e /usr/ajescape ] || fail "the guest wrote the host's /usr"
    # the guest's own namespaces, keyrings, io_uring, netlink, devices
    guest_own userns unshare_user unshare_mnt unshare_pid unshare_net unshare_ipc unshare_uts \
        unshare_cgroup unshare_time clone_newns setns_self_mnt
    guest_own keyring add_key keyctl_get_id keyctl_join
    guest_own io_uring io_uring_setup
    guest_own clone3 clone3 clone3_newuser
    guest_own userfaultfd userfaultfd_user dev_userfaultfd
    guest_own netlink netlink_sock_diag netlink_audit netlink_kobject_uevent netlink_generic \
        netlink_connector netlink_selinux netlink_audit_hi32 netlink_audit_fam_hi32 netlink_audit_dgram
    guest_own privsweep quotactl_sync personality_rie personality_addr_no_randomize personality_state
    guest_own cgroup stat_sys_fs_cgroup proc_self_cgroup
    guest_own sys sys_stat
    guest_own hostsock stat_run
    # uid 0 without capabilities: keepcaps and securebits are the guest's
    guest_own caps_raise keepcaps
    guest_own privstate securebits
    # no nosuid on the guest's /, /tmp, /workspace: no_new_privs and the
    # setid filter stop setuid files (privilege.bats' suid_copy)
    guest_own suid_exec nosuid_tmp nosuid_workspace nosuid_usr nosuid_root
    guest_own kill1 kill_1_SIGKILL kill_1_SIGTERM kill_1_SIGSTOP tgkill_1_SIGKILL rt_sigqueueinfo_1 \
        pidfd_send_signal_1
    section devscan
    # the guest's devtmpfs: no disk, no vsock, no KVM, no tun in the VM at all
    assert_blocked_each ENOENT vda sda vsock net_tun kvm
    section sys
    assert_blocked sysfs_mount EPERM
    section kill1
    # signals to the guest's PID 1 return 0 and do nothing (init ignores them)
    assert_held init_alive
    finding "level 3: guest root (no capabilities) still writes the guest kernel's /proc/sys" \
        "(core_pattern, modprobe): a way to full root in the guest, not out of the VM"
    finding "level 3: the guest's /dev is a full devtmpfs (/dev/mem, /dev/port, the agent's" \
        "virtio ports); /tmp, /workspace, / lack nosuid (no_new_privs and the setid filter hold)"
}

@test "microvm security: the probe in the VM: guest root without capabilities, no network but lo, its hostname" {
    section probe_ids
    assert_eq "$(kv uid):$(kv gid):$(kv euid)" 0:0:0 "the command's ids"
    section probe_caps
    local c
    for c in CapInh CapPrm CapEff CapBnd CapAmb; do assert_eq "$(kv "$c")" 0000000000000000 "$c"; done
    assert_eq "$(kv NoNewPrivs)" 1 NoNewPrivs
    section probe_net
    assert_eq "$(printf '%s\n' "${lines[@]}" | awk -F= '$1 == "iface" { printf "%s ", $2 }')" "lo " "the VM's interfaces"
    assert_eq "$(kv connect)" ENETUNREACH "a connection out"
    section probe_hostname
    assert_eq "$(kv hostname)" agentjail "the guest's hostname"
}
