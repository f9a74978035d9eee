#!/usr/bin/env bats
# The seccomp wall: 32-bit ABIs, io_uring, keyrings, bpf, perf, userfaultfd,
# the privileged-syscall sweep, raw/packet/vsock/netlink sockets, kernel
# info leaks, host unix sockets.

load helpers

@test "i386 int \$0x80 system call: the process is killed (SIGSYS, exit 159)" {
    # What does this kernel do with int $0x80 outside any sandbox?
    run "$ATTACK" int80
    local host=$status
    attack -- /attack int80
    if at_level gvisor; then
        # the Sentry does not run 32-bit code's system calls: getpid over
        # int $0x80 returns an error (not a pid) and the process lives on;
        # once (a CI run on 2026-12-02, ptrace platform) the Sentry took
        # the trap for a fault instead and killed the process with
        # SIGSEGV: contained too, the host kernel ran nothing
        if [ "$status" -eq 139 ]; then
            assert_output_lacks "=ESCAPED"
            assert_eq "$(kv attempt)" int80 "the attack ran"
            return
        fi
        assert_sentry_own int80
        assert_eq "$(kv int80)" "ESCAPED i386 getpid returned -9" "int \$0x80 getpid (-EBADF)"
        return
    fi
    assert_output_lacks "=ESCAPED"
    assert_eq "$(kv attempt)" int80 "the attack ran"
    if [ "$host" -eq 139 ]; then
        # IA-32 emulation is off in this kernel (int $0x80 faults with
        # SIGSEGV even on the host): seccomp's arch check cannot be reached.
        assert_status 139
        finding "int \$0x80 faults on this kernel itself (ia32 emulation disabled): exit 139, seccomp arch check not exercised"
    else
        assert_status 159
    fi
}

@test "x32 system call (nr | 0x40000000): the process is killed (SIGSYS, exit 159)" {
    attack -- /attack x32
    if at_level gvisor; then
        # the Sentry has no x32 ABI: ENOSYS, the process lives on
        assert_sentry_own x32
        assert_eq "$(kv x32)" "ESCAPED survived an x32 syscall (errno ENOSYS)" x32
        return
    fi
    assert_output_lacks "=ESCAPED"
    assert_eq "$(kv attempt)" x32 "the attack ran"
    assert_status 159
}

@test "io_uring_setup, io_uring_enter, io_uring_register: EPERM" {
    attack -- /attack io_uring
    if at_level gvisor; then
        # io_uring_setup gives an io_uring the Sentry implements itself (its
        # rings are Sentry memory; no host io_uring is set up for the sandbox)
        assert_sentry_own io_uring_setup
        assert_blocked io_uring_enter EBADF
        assert_blocked io_uring_register ENOSYS
        return
    fi
    assert_all_blocked
    assert_blocked_each EPERM io_uring_setup io_uring_enter io_uring_register
}

@test "keyrings: add_key, keyctl, request_key: EPERM" {
    attack -- /attack keyring
    assert_all_blocked
    # level 2: the Sentry's keyrings refuse (EACCES) without reaching the host's
    assert_blocked_each "$(lv EPERM EACCES)" add_key keyctl_get_id keyctl_join request_key
}

@test "bpf: map create and socket-filter program load: EPERM" {
    attack -- /attack bpf
    assert_all_blocked
    assert_blocked_each EPERM bpf_map_create bpf_prog_load
}

@test "perf_event_open (self and system-wide): EPERM" {
    attack -- /attack perf
    assert_all_blocked
    # level 2: the Sentry has no perf events (ENODEV)
    assert_blocked_each "$(lv EPERM ENODEV)" perf_self perf_cpu0
}

@test "userfaultfd (syscall and /dev/userfaultfd): refused" {
    attack -- /attack userfaultfd
    assert_all_blocked
    # level 2: not implemented by gVisor (ENOSYS)
    assert_blocked_each "$(lv EPERM ENOSYS)" userfaultfd_user userfaultfd
    assert_blocked dev_userfaultfd ENOENT
}

@test "privileged-syscall sweep: reboot, swap, kexec, modules, time, acct, syslog, quotactl, iopl, ioperm, personality..." {
    attack -- /attack privsweep
    if at_level gvisor; then
        # syslog reads the Sentry's own boot log, nice -20 sets a priority in
        # the Sentry's scheduler (the host threads keep theirs); gVisor has
        # no personality flags (EINVAL; the read-back "0xff..." is the
        # query's -1), no fanotify (ENOSYS), no SCHED_FIFO (EINVAL)
        assert_sentry_own syslog_size syslog_read_all personality_state nice_minus_20
        assert_blocked_each EPERM reboot swapon swapoff kexec_load kexec_file_load init_module finit_module \
            delete_module settimeofday clock_settime acct quotactl_sync iopl ioperm sethostname vhangup \
            migrate_pages_1
        assert_blocked_each EINVAL personality_rie personality_addr_no_randomize sched_fifo
        assert_blocked fanotify_init ENOSYS
        return
    fi
    assert_all_blocked
    assert_blocked_each EPERM reboot swapon swapoff kexec_load kexec_file_load init_module finit_module \
        delete_module settimeofday clock_settime acct syslog_size syslog_read_all quotactl_sync iopl ioperm \
        personality_rie personality_addr_no_randomize sethostname vhangup fanotify_init migrate_pages_1 sched_fifo
    assert_blocked nice_minus_20 EACCES
    assert_eq "$(info_of personality)" "now 0x0" "personality after the attempts"
}

@test "raw and packet sockets: AF_PACKET (also high bits), SOCK_PACKET, SOCK_RAW inet/inet6: EPERM" {
    attack -- /attack rawsock
    assert_all_blocked
    assert_blocked_each EPERM packet_raw packet_dgram packet_raw_hi32 inet_raw_icmp inet_raw_raw inet6_raw_icmpv6
    # level 2: the Sentry's netstack has no SOCK_PACKET
    assert_blocked inet_sock_packet "$(lv EPERM EPROTONOSUPPORT)"
}

@test "AF_VSOCK sockets (stream, dgram, seqpacket, high bits): EPERM" {
    attack -- /attack vsock
    assert_all_blocked
    # level 2: the Sentry has no AF_VSOCK
    assert_blocked_each "$(lv EPERM EAFNOSUPPORT)" vsock_stream vsock_dgram vsock_seqpacket vsock_stream_hi32
}

@test "AF_NETLINK other than ROUTE (audit, uevent, diag, netfilter, ..., high bits): EPERM; ROUTE allowed" {
    attack -- /attack netlink
    if at_level gvisor; then
        # the Sentry implements NETLINK_ROUTE and its own (silent)
        # KOBJECT_UEVENT socket, no host kobject events; the rest EPROTONOSUPPORT
        assert_sentry_own netlink_kobject_uevent
    else
        assert_all_blocked
    fi
    assert_blocked_each "$(lv EPERM EPROTONOSUPPORT)" netlink_sock_diag netlink_audit netlink_netfilter \
        netlink_generic netlink_xfrm netlink_connector netlink_selinux netlink_crypto netlink_rdma \
        netlink_audit_hi32 netlink_audit_fam_hi32 netlink_audit_dgram
    if at_level process; then assert_blocked netlink_kobject_uevent EPERM; fi
    assert_eq "$(info_of netlink_route)" allowed "NETLINK_ROUTE (ip addr etc.)"
}

@test "kernel info leaks: kallsyms addresses zeroed, /proc/kmsg, kcore, kpagecount refused" {
    attack -- /attack kinfo
    assert_all_blocked
    if at_level gvisor; then
        # the Sentry's procfs has none of them
        assert_blocked_each ENOENT kallsyms kmsg kcore kpagecount
        return
    fi
    assert_held kallsyms
    assert_blocked kmsg EACCES
    assert_blocked kpagecount EACCES
    if [ -e /proc/kcore ]; then assert_blocked kcore EACCES; else assert_blocked kcore ENOENT; fi
}

@test "host unix sockets: /run absent, host abstract sockets (a live listener, agentjail's uid slots) unreachable" {
    local name="ajsec-$BASHPID-$RANDOM"
    "$ATTACK" listen_abstract "$name" 20 >"$T/listener" 2>&1 &
    local lpid=$!
    wait_for_file_line "$T/listener" '^listening$' 5 || { kill "$lpid"; fail "host listener did not start"; }
    attack -- /attack hostsock "$name"
    kill "$lpid" 2>/dev/null || true
    wait "$lpid" 2>/dev/null || true
    assert_all_blocked
    assert_blocked_each ENOENT stat_run stat_var_run stat_run_systemd_private stat_run_dbus_system_bus_socket \
        stat_var_run_docker_sock stat_tmp__X11_unix_X0 connect_systemd_private
    assert_blocked_each ECONNREFUSED abstract_uid_slot_0 abstract_uid_slot_1 abstract_arg0 connect_dbus
    assert_held proc_net_unix
    ! grep -q accepted "$T/listener" || fail "the host listener accepted a connection from the sandbox"
}
