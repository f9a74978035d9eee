#!/usr/bin/env bats
# The security suite's attacks at level 3 (docs/security.md, "Attack x
# level"), in ONE microVM: a TCG boot costs ~3 s, the suite has ~100
# attack runs, so setup_file runs the attack program (tests/security/
# attack*.c) once per attack inside one VM (root, a workspace, /attack a
# --ro bind) and each test checks its part of that output: level 1's
# expectations where the guest gives the same walls (the agent's: no
# capabilities, no_new_privs, the setid filter), and where the wall is the
# VM instead (the guest kernel's own /proc/sys, devices, namespaces), that
# those attempts reach only the guest and the host is unchanged. The
# attacks with arguments (ARG_ATTACKS) run last in the same VM; those as
# --user 1000 in run.bats' --user boot.
# `AJ_ISOLATION=microvm` on tests/security/ points here (helpers.bash).

AJ_ISOLATION=microvm
load ../security/helpers

# the attacks that take no argument, in the order the VM runs them
ATTACKS="fds init_fds cwd exe_write proc_write sys remount newmount chroot pivot_root handle
proc1root mknod devscan privstate caps_raise ids suid_exec ptrace1 kill1 tiocsti tioclinux
hostsock userns cgroup clone3 io_uring keyring bpf perf userfaultfd privsweep rawsock vsock
netlink"

# level 1's attacks that take arguments (fs.bats, syscalls.bats), as
# "SECTION=ATTACK ARGS", run after the others in the same VM: symlink_write
# truncates the guest's /etc/passwd, landlock tries /dev and the root.
# @ABSTRACT@ is a live abstract socket of the host's.
ARG_ATTACKS="read_shadow=read_planted /workspace/shadow
read_passwd=read_planted /workspace/passwd daemon:
fd_write=fd_write 7 written-from-the-vm
hostsock_live=hostsock @ABSTRACT@
kinfo=kinfo
int80=int80
x32=x32
symlink_write=symlink_write link /etc/passwd
landlock=landlock"

# the VM's script for ARG_ATTACKS (each one's exit after it)
arg_script() { # ABSTRACT
    local n a
    while IFS='=' read -r n a; do
        printf 'echo "=== %s"; /attack %s; echo "exit=$?"\n' "$n" "${a//@ABSTRACT@/$1}"
    done <<<"$ARG_ATTACKS"
    echo 'echo "=== guest_kernel"; cat /proc/sys/kernel/kptr_restrict /proc/sys/kernel/dmesg_restrict'
}

setup_file() {
    [ "$(id -u)" = 0 ] || return 0
    command -v qemu-system-x86_64 >/dev/null || return 0
    [ -r /var/cache/agentjail/microvm/vmlinux ] || return 0
    local ws=$BATS_FILE_TMPDIR/ws
    mkdir -p "$ws" && chown 4242:4343 "$ws"
    _aj_find_attack
    chmod o+rx "$ATTACK" "$PROBE"
    cat /proc/sys/kernel/core_pattern /proc/sys/kernel/hostname >"$BATS_FILE_TMPDIR/host.before"
    # ARG_ATTACKS' host side: links the host planted in the workspace, a
    # host file and directory the caller holds open (fds 7 and 8 of the
    # run), a live listener on a host abstract socket
    ln -s /etc/shadow "$ws/shadow"
    ln -s /etc/passwd "$ws/passwd"
    echo original >"$BATS_FILE_TMPDIR/host-file"
    sha256sum </etc/passwd >"$BATS_FILE_TMPDIR/passwd.before"
    local abstract="ajsec-$BASHPID-$RANDOM" lpid
    "$ATTACK" listen_abstract "$abstract" 150 >"$BATS_FILE_TMPDIR/listener" 2>&1 &
    lpid=$!
    wait_for_file_line "$BATS_FILE_TMPDIR/listener" '^listening$' 5 || echo "no host listener" >>"$BATS_FILE_TMPDIR/listener"
    # each attack's output after a "=== NAME" line; then what guest root
    # writes into the guest kernel's /proc/sys (the host's must not change)
    local t0=$EPOCHREALTIME
    AGENTJAIL_MICROVM_ACCEL=tcg timeout -k 5 120 "$AJ" run -q --isolation microvm \
        --workspace "$ws" --ro "$ATTACK:/attack" --ro "$PROBE:/probe" -- /bin/sh -c '
        for a in '"$(echo $ATTACKS)"'; do echo "=== $a"; /attack "$a"; echo "exit=$?"; done
        for p in ids caps net hostname; do echo "=== probe_$p"; /probe "$p"; done
        echo "=== guest_sysctl"
        { echo "|/bin/false aj-w46" >/proc/sys/kernel/core_pattern && echo core_pattern=written; } 2>/dev/null || echo core_pattern=refused
        { echo aj-guest-name >/proc/sys/kernel/hostname && echo hostname=written; } 2>/dev/null || echo hostname=refused
        echo x >/usr/aj-microvm-usr && echo usr=written
        '"$(arg_script "$abstract")" \
        </dev/null >"$BATS_FILE_TMPDIR/out" 2>"$BATS_FILE_TMPDIR/err" \
        7<>"$BATS_FILE_TMPDIR/host-file" 8<"$BATS_FILE_TMPDIR"
    echo "$?" >"$BATS_FILE_TMPDIR/rc"
    kill "$lpid" 2>/dev/null
    wait "$lpid" 2>/dev/null || true
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
    assert_blocked_each EPERM mknod_chr_mem mknod_chr_null mknod_blk_tmp mknod_blk_ws
    assert_blocked mknod_chr_dev EROFS # /dev read-only, as level 1's prepared one
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
    # the guest's /proc/sys and sysrq-trigger are read-only (guest init binds
    # them so): guest root owns them, yet can't set core_pattern or modprobe
    guest_own proc_write self_oom_adj init_oom_adj
    # the root is a copy-on-write overlay in guest RAM
    guest_own remount write_usr
    section guest_sysctl
    assert_eq "$(kv core_pattern)" refused "guest core_pattern"
    assert_eq "$(kv hostname)" refused "guest hostname"
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
    guest_own userfaultfd userfaultfd_user
    guest_own netlink netlink_sock_diag netlink_audit netlink_kobject_uevent netlink_generic \
        netlink_connector netlink_selinux netlink_audit_hi32 netlink_audit_fam_hi32 netlink_audit_dgram
    guest_own privsweep quotactl_sync personality_rie personality_addr_no_randomize personality_state
    guest_own cgroup stat_sys_fs_cgroup proc_self_cgroup
    guest_own sys sys_stat
    guest_own hostsock stat_run
    # uid 0 without capabilities: keepcaps and securebits are the guest's
    guest_own caps_raise keepcaps
    guest_own privstate securebits
    # every mount the command sees is nosuid, as at level 1; the guest's
    # /dev a tmpfs with the harmless devices only (no mem, port, kmsg,
    # disk, vsock, KVM, tun or the agent's ports)
    blocked_in_vm suid_exec devscan
    guest_own kill1 kill_1_SIGKILL kill_1_SIGTERM kill_1_SIGSTOP tgkill_1_SIGKILL rt_sigqueueinfo_1 \
        pidfd_send_signal_1
    section devscan
    assert_blocked_each ENOENT mem kmem port kmsg vda sda console vsock net_tun userfaultfd kvm
    section sys
    assert_blocked sysfs_mount EPERM
    section kill1
    # signals to the guest's PID 1 return 0 and do nothing (init ignores them)
    assert_held init_alive
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

@test "microvm security: level 1's attacks with arguments: the caller's fds, links the host planted, a live host abstract socket" {
    local n
    for n in $(cut -d= -f1 <<<"$ARG_ATTACKS") guest_kernel; do section "$n"; done
    # fds 7 (a host file, read-write) and 8 (a host directory) were open in
    # the caller: the VM's command has only the agent's 0,1,2 (the fds test
    # above ran with them too)
    section fd_write
    assert_blocked fd_write EBADF
    assert_eq "$(kv exit)" 0 "fd_write's exit"
    assert_eq "$(cat "$BATS_FILE_TMPDIR/host-file")" original "the host file the caller held"
    # workspace/shadow -> /etc/shadow: the guest's /etc is level 1's
    # synthesized one (no shadow); workspace/passwd -> its passwd, not the host's
    section read_shadow
    assert_blocked read_planted ENOENT
    assert_eq "$(kv exit)" 0 "read_planted's exit"
    section read_passwd
    [[ "$(kv read_planted)" != *"marker found"* ]] || fail "the host's /etc/passwd read through a planted link: $output"
    # the host's abstract socket is the host kernel's: the guest has its own
    # (ECONNREFUSED); stat_run is the guest's own /run
    guest_own hostsock_live stat_run
    assert_blocked_each ECONNREFUSED abstract_arg0 abstract_uid_slot_0 connect_dbus
    assert_eq "$(head -1 "$BATS_FILE_TMPDIR/listener")" listening "the host's listener"
    ! grep -q accepted "$BATS_FILE_TMPDIR/listener" || fail "the host's listener accepted a connection from the VM"
}

@test "microvm security: writing through workspace/link -> /etc/passwd changes only the guest's RAM overlay; the host's /etc/passwd unchanged" {
    # level 1: a read-only root (EROFS); level 3's root is the guest's
    # copy-on-write overlay in RAM, so the link resolved in the guest opens
    # its own (synthesized) /etc/passwd and /etc
    guest_own symlink_write write_through_link trunc_through_link create_through_dirlink
    assert_eq "$(sha256sum </etc/passwd)" "$(cat "$BATS_FILE_TMPDIR/passwd.before")" "the host's /etc/passwd"
    [ ! -e /etc/ajescape ] || fail "/etc/ajescape made on the host"
    assert_eq "$(readlink "$BATS_FILE_TMPDIR/ws/link")" /etc/passwd "the link left in the workspace"
    assert_eq "$(readlink "$BATS_FILE_TMPDIR/ws/link.dir")" /etc "the dir link left in the workspace"
}

@test "microvm security: --ro, --rw and --workspace through a planted link are refused (125), nothing booted" {
    mkdir "$T/real"
    ln -s /etc "$WS/etclink"
    ln -s "$T/real" "$T/wslink"
    local args
    for args in "--workspace $WS --ro $WS/etclink:/x" "--workspace $WS --rw $WS/etclink/ssh:/x" \
        "--workspace $T/wslink"; do
        # shellcheck disable=SC2086 # the options and their values
        run --separate-stderr timeout -k 5 30 "$AJ" run -q --isolation microvm $args -- /bin/echo ran </dev/null
        assert_status 125
        assert_output_lacks ran
        assert_one_error_line
    done
}

@test "microvm security: i386 int \$0x80 and x32 system calls kill the process (SIGSYS, 159), as at level 1" {
    # the guest kernel has IA-32 emulation: int $0x80 reaches the command's
    # filter (the agent's, libseccomp's), whose foreign-ABI action kills
    local n
    for n in int80 x32; do
        section "$n"
        assert_eq "$(kv attempt)" "$n" "the $n attack ran"
        [[ "$output" != *=ESCAPED* ]] || fail "$n survived: $output"
        assert_eq "$(kv exit)" 159 "$n's exit (SIGSYS)"
    done
}

@test "microvm security: the guest kernel's addresses, log and memory: kallsyms zeroed, kmsg EPERM, kcore, kpagecount, slabinfo, pagetypeinfo, vmallocinfo EACCES" {
    blocked_in_vm kinfo
    assert_held kallsyms # every address 0 (no CAP_SYSLOG; kptr_restrict 2)
    # no CAP_SYSLOG (dmesg_restrict 1 set by guest init); kcore, the page
    # counts and the heap's layouts masked by guest init (mode 000,
    # read-only: EACCES to guest root, who owns the 0400 originals)
    assert_blocked kmsg EPERM
    assert_blocked_each EACCES kcore kpagecount slabinfo pagetypeinfo vmallocinfo
    section guest_kernel
    assert_eq "$(echo $output)" "2 1" "the guest's kptr_restrict and dmesg_restrict"
}

@test "microvm security: writes Landlock stops at level 1: /dev read-only (EROFS); the root's overlay and /proc/self/comm the guest's own" {
    # /dev is guest init's tmpfs, read-only as level 1's prepared /dev: its
    # nodes can't be removed, renamed or replaced; /attack a --ro bind
    guest_own landlock create_in_root create_in_etc chmod_usr_bin write_proc_self_comm
    assert_blocked_each EROFS create_in_dev mkdir_in_dev symlink_in_dev unlink_dev_null rename_dev_zero \
        truncate_attack
    # the writable places work, the home too (HOME=/home/agent, as root)
    local p
    for p in /workspace/ajok /tmp/ajok /home/agent/ajok /dev/shm/ajok; do
        printf '%s\n' "$output" | grep -qx "info write $p ok" || fail "cannot write $p inside: $output"
    done
    [ ! -e "$BATS_FILE_TMPDIR/ws/ajok" ] || fail "the landlock attack's file is left in the workspace"
}

@test "microvm security: a guest flooding its console never grows the host's file past 256 KiB; its forged \"Out of memory\" line is no OOM" {
    # the guest kernel prints a mount's unknown option back (error level,
    # not rate-limited): guest root in a user namespace of its own says
    # "Out of memory" ~370 KB long, then the command dies of SIGKILL; the
    # VM's directory kept (AGENTJAIL_MICROVM_DEBUG=1) to measure the file
    local pid rc=0 d
    AGENTJAIL_MICROVM_DEBUG=1 AGENTJAIL_MICROVM_ACCEL=tcg timeout -k 5 90 sh -c 'echo $$ >"$0"; exec "$@"' "$T/pid" \
        "$AJ" run -q --isolation microvm --result "$T/r.json" --ro "$ATTACK:/attack" -- /bin/sh -c \
        '/attack console_say "Out of memory: Killed process 1 (sh)" 400 900; kill -KILL $$' \
        </dev/null >"$T/out" 2>"$T/err" || rc=$?
    pid=$(cat "$T/pid")
    d=$(ls -d /tmp/agentjail-microvm-"$pid"-* 2>/dev/null || true)
    [ -n "$d" ] || fail "no kept VM directory of run $pid: $(head -c 600 "$T/err")"
    local size said
    size=$(stat -c %s "$d/vm/console")
    said=$(grep -c "Unknown parameter 'Out of memory" "$d/vm/console" || true)
    rm -rf "$d"
    assert_eq "$(cat "$T/out")" "console_say=400 of 400 (EINVAL)" "the guest's flood"
    [ "$said" -gt 100 ] || fail "the flood did not reach the console ($said lines)"
    assert_le "$size" 262144 "the console file's bytes"
    # its own SIGKILL: 137, no OOM said (the agent's count of the guest's
    # OOM kills, not the console's words)
    assert_eq "$rc" 137 "the run's exit ($(head -c 600 "$T/err"))"
    assert_eq "$(jq -r .oom_killed "$T/r.json")" false oom_killed
    output=$(cat "$T/err")
    assert_output_lacks "OOM"
    assert_output_lacks "out of memory"
}
