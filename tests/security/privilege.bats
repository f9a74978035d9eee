#!/usr/bin/env bats
# Privilege walls: capability sets, securebits, no_new_privs, seccomp mode,
# uid changes, setuid and file-capability binaries, ptrace and signals to
# init, terminal injection, nested namespaces, cgroup release_agent, clone3.

load helpers

@test "privilege state: every capability set empty, NoNewPrivs 1, Seccomp 2, securebits locked (root inside)" {
    if at_level gvisor; then
        # every set empty; gVisor's /proc/self/status has no CapAmb,
        # NoNewPrivs lines, Seccomp 2 (the bundle's setid filter, applied
        # by the Sentry), PR_GET_SECUREBITS fails: no_new_privs read by prctl
        attack -- /bin/sh -c '/attack privstate; rc=$?; setpriv -d 2>/dev/null | grep no_new_privs; exit $rc'
        assert_sentry_own CapAmb NoNewPrivs securebits
        assert_held Seccomp # the bundle's setid filter (runsc --oci-seccomp)
        local k
        for k in CapInh CapPrm CapEff CapBnd; do assert_held "$k"; done
        assert_eq "$(info_of CapBnd)" 0000000000000000 CapBnd
        assert_output_has_line "no_new_privs: 1"
        return
    fi
    attack -- /attack privstate
    assert_all_blocked
    local k
    for k in CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs Seccomp securebits; do assert_held "$k"; done
    assert_eq "$(info_of securebits)" 0xef securebits
}

@test "privilege state: the same as --user 1000" {
    if at_level gvisor; then
        attack --user 1000 -- /bin/sh -c '/attack privstate; rc=$?; setpriv -d 2>/dev/null | grep -E "^(no_new_privs|euid):"; exit $rc'
        assert_sentry_own CapAmb NoNewPrivs securebits
        assert_held Seccomp # the bundle's setid filter (runsc --oci-seccomp)
        assert_eq "$(info_of CapBnd)" 0000000000000000 CapBnd
        assert_output_has_line "no_new_privs: 1"
        assert_output_has_line "euid: 1000"
        return
    fi
    attack --user 1000 -- /attack privstate
    assert_all_blocked
    assert_eq "$(info_of CapBnd)" 0000000000000000 CapBnd
    assert_eq "$(info_of NoNewPrivs)" 1 NoNewPrivs
}

@test "setuid(0), setresuid, setreuid, setgid(0), setgroups, setfsuid as --user 1000 all fail" {
    attack --user 1000 -- /attack setuid
    assert_all_blocked
    assert_blocked_each EPERM setuid0 setresuid0 setreuid0 setgid0 setgroups
    assert_held setfsuid0
}

@test "capabilities cannot be raised: capset, ambient raise, securebits, no_new_privs, keepcaps" {
    attack -- /attack caps_raise
    if at_level gvisor; then
        # PR_SET_KEEPCAPS works in the Sentry, with no capability to keep;
        # gVisor has no ambient set, no securebits (EINVAL)
        assert_sentry_own keepcaps
        assert_blocked capset_all EPERM
        assert_blocked_each EINVAL ambient_raise securebits_clear no_new_privs_clear
        return
    fi
    assert_all_blocked
    assert_blocked_each EPERM capset_all ambient_raise securebits_clear keepcaps
    assert_blocked no_new_privs_clear EINVAL # the kernel never clears it
}

@test "setuid-root and file-capability binaries gain nothing (--ro bind, workspace, nosuid mounts)" {
    # a setuid-root copy owned by host root, bound read-only
    cp "$ATTACK" "$T/suid-root"
    chmod 4755 "$T/suid-root"
    # setuid + file capabilities in the workspace
    cp "$ATTACK" "$WS/suid"
    chmod 4755 "$WS/suid"
    cp "$ATTACK" "$WS/fcap"
    local caps=
    if command -v setcap >/dev/null && setcap cap_setuid,cap_sys_admin,cap_dac_override+ep "$WS/fcap"; then
        caps=1
    fi
    attack --user 1000 --ro "$T/suid-root:/suid-root" -- /attack suid_exec /suid-root /workspace/suid /workspace/fcap
    local m
    if at_level gvisor; then
        # the spec asks nosuid for every mount, but gVisor's mountinfo does
        # not show it: what holds is no_new_privs, and host root's files
        # appear as nobody (65534), unmapped
        assert_sentry_own nosuid_tmp nosuid_home_agent nosuid_dev_shm nosuid_workspace nosuid_usr nosuid_root
        assert_contains "$(info_of exec_0)" "owner 65534"
    else
        assert_all_blocked
        for m in tmp home_agent dev_shm workspace usr root; do assert_held "nosuid_$m"; done
    fi
    assert_held exec_0
    assert_held exec_1
    assert_held exec_2
    # they did run (the payload printed its ids), as uid 1000 with nothing effective
    [ "$(printf '%s\n' "$output" | grep -c 'ids uid=1000 euid=1000 suid=1000 capeff=0000000000000000')" -eq 3 ] ||
        { _aj_dump; fail "the setuid/fcap copies did not run as plain uid 1000"; }
    [ -n "$caps" ] || skip "setcap unavailable: file capabilities not tested"
}

@test "a setuid copy cannot be made, in /tmp or in the workspace (seccomp on the mode: EPERM)" {
    # Level 2 must show the same: the gofer makes the chmod on the host
    # file, so a setuid bit set inside is a setuid file of the workspace's
    # owner on the host (any host user who runs it becomes that owner).
    # The workspace is a user's here (a root-owned one is read-only there).
    # Known hole of level 2 until the bundle carries level 1's setid rule
    # (docs/security.md "attack x level"): this test fails at level 2 now.
    workspace_for_level
    attack -- /bin/sh -c '/attack suid_copy /tmp/suid; /attack suid_copy /workspace/suid; true'
    local n
    n=$(printf '%s\n' "$output" | grep -c '^chmod failed: EPERM' || true)
    assert_eq "$n" 2 "chmod u+s refused in /tmp and /workspace"
    # and nothing setuid/setgid reached the host
    [ -z "$(find "$WS" -perm /6000 2>/dev/null)" ] || { _aj_dump; fail "a setuid/setgid file is on the host"; }
}

@test "ptrace of init (pid 1): attach, seize, process_vm_*, /proc/1/mem, kcmp, pidfd_getfd" {
    attack -- /attack ptrace1
    assert_all_blocked
    if at_level gvisor; then
        # pid 1 is the command itself (no init); gVisor has no
        # process_vm_readv/writev and no pidfd_open (ENOSYS)
        assert_blocked_each EPERM ptrace_attach_1 ptrace_seize_1 kcmp_1
        assert_blocked_each ENOSYS process_vm_readv_1 process_vm_writev_1 pidfd_open_1
        assert_blocked proc1_mem_rdwr EACCES
        return
    fi
    assert_blocked_each EPERM ptrace_attach_1 ptrace_seize_1 process_vm_readv_1 process_vm_writev_1 \
        kcmp_1 pidfd_getfd_1
    assert_blocked proc1_mem_rdwr EACCES
}

@test "kill -9 1 and friends: signals to init fail (Landlock scope) and init survives" {
    if at_level gvisor; then
        # no agentjail init: pid 1 is the command (here sh), so kill -9 1
        # ends the sandbox and nothing else (137); kill(-1) is process.bats'
        attack -- /bin/sh -c '/attack kill1; echo survived'
        assert_status 137
        assert_output_lacks survived
        # the attack's own report races the sandbox's end (pid 1 died): it
        # is lost at times (once in CI); when it is there it must say so
        local k
        k=$(kv kill_1_SIGKILL)
        [ -z "$k" ] || assert_eq "$k" "ESCAPED returned 0" "kill(1, SIGKILL)"
        return
    fi
    attack -- /attack kill1
    assert_all_blocked
    assert_blocked_each EPERM kill_1_SIGKILL kill_1_SIGTERM kill_1_SIGSTOP tgkill_1_SIGKILL \
        rt_sigqueueinfo_1 pidfd_send_signal_1
    assert_held init_alive
}

@test "TIOCSTI on stdio pipes: EPERM, also with high bits set in the request" {
    attack -- /attack tiocsti
    assert_all_blocked
    local fd v
    for fd in fd0 fd1 fd2; do
        # level 2: gVisor's pipes are no terminal (ENOTTY)
        for v in "" _hi32 _hiall; do assert_blocked "tiocsti_$fd$v" "$(lv EPERM ENOTTY)"; done
    done
}

@test "TIOCSTI on the sandbox's own pty (-t) and /dev/tty: EPERM, also with high bits" {
    attack -t -- /attack tiocsti </dev/null
    if at_level gvisor; then
        # no pty at level 2 yet: refused before anything runs
        assert_status 125
        assert_contains "$stderr" "--tty: not available with --isolation gvisor yet"
        return
    fi
    assert_all_blocked
    assert_eq "$(info_of isatty)" "0:1 1:1 2:1" "stdio is a terminal inside"
    local fd v
    for fd in fd0 fd1 fd2 devtty; do
        for v in "" _hi32 _hiall; do assert_blocked "tiocsti_$fd$v" EPERM; done
    done
}

@test "TIOCLINUX (paste selection): EPERM on pipes and pty, also with high bits" {
    attack -- /attack tioclinux
    assert_all_blocked
    local fd v
    for fd in fd0 fd1 fd2; do
        for v in "" _hi32 _hiall; do assert_blocked "tioclinux_$fd$v" "$(lv EPERM ENOTTY)"; done
    done
    attack -t -- /attack tioclinux </dev/null
    if at_level gvisor; then
        assert_status 125
        assert_contains "$stderr" "--tty: not available with --isolation gvisor yet"
        return
    fi
    assert_all_blocked
    for v in "" _hi32 _hiall; do assert_blocked "tioclinux_devtty$v" EPERM; done
}

@test "nested namespaces: unshare, clone with CLONE_NEW* (also high bits), setns all fail" {
    attack -- /attack userns
    if at_level gvisor; then
        # namespaces of the Sentry's own (no host namespace is made);
        # clone(CLONE_NEWUSER) EPERM, setns into pid 1's (the command's
        # own) or our namespaces EOPNOTSUPP/ENOENT
        assert_sentry_own unshare_user unshare_mnt unshare_pid unshare_net unshare_ipc unshare_uts \
            unshare_cgroup unshare_time clone_newns
        assert_blocked_each EPERM clone_newuser clone_newuser_hi32
        assert_blocked_each EOPNOTSUPP setns_init_user setns_init_net setns_init_pid setns_self_user setns_self_mnt
        return
    fi
    assert_all_blocked
    assert_blocked_each EPERM unshare_user unshare_mnt unshare_pid unshare_net unshare_ipc unshare_uts \
        unshare_cgroup unshare_time clone_newuser clone_newuser_hi32 clone_newns clone_newpid clone_newnet \
        setns_self_user setns_self_mnt
    # init's namespace files are not even openable (not dumpable)
    assert_blocked_each EACCES setns_init_user setns_init_mnt setns_init_net setns_init_pid setns_init_cgroup
}

@test "cgroup release_agent: no cgroup v1/v2 mount, no /sys/fs/cgroup, /proc/self/cgroup is the namespace root" {
    attack -- /attack cgroup
    if at_level gvisor; then
        # /sys/fs/cgroup is a directory of the Sentry's sysfs, with no
        # release_agent or cgroup.procs in it; mounts refused
        assert_sentry_own stat_sys_fs_cgroup
    else
        assert_all_blocked
        assert_blocked stat_sys_fs_cgroup ENOENT
    fi
    assert_blocked_each EPERM mount_cgroup_v1_memory mount_cgroup_v1_named mount_cgroup_v1_rdma mount_cgroup2
    assert_blocked_each ENOENT release_agent cgroup_procs_write
    assert_held proc_self_cgroup
}

@test "clone3 returns ENOSYS (with and without CLONE_NEWUSER); fork and threads still work" {
    attack -- /attack clone3
    assert_all_blocked
    assert_blocked clone3 ENOSYS
    assert_blocked clone3_newuser ENOSYS
    assert_eq "$(info_of fork)" ok fork
    assert_eq "$(info_of pthread)" ok pthread
}

# ---- host uid ranges (issue 20, section 8)

load uid_ranges

# What the test below starts, ended also when it fails half-way.
teardown() {
    if [ -n "${UIDNS_PIDS:-}" ]; then
        UIDNS_PIDS="$UIDNS_PIDS ${AJ_BG_PID:-}"
        # shellcheck disable=SC2086
        kill -TERM $UIDNS_PIDS 2>/dev/null || true
        # shellcheck disable=SC2086
        wait $UIDNS_PIDS 2>/dev/null || true
    fi
    [ -z "${UIDNS_NS:-}" ] || ip netns del "$UIDNS_NS" 2>/dev/null || true
    aj_teardown
}

@test "host uid ranges are reserved host-wide: a sandbox under ip netns exec and one on the host never share one; a SIGKILLed holder frees its range" {
    require_root
    # the test finds each sandbox's host uid by its command's name on the
    # host; at level 2 the host sees only runsc's processes (same userns.c
    # reservation: tests/gvisor/run.bats checks the unused host uid)
    not_at_level gvisor "the command's processes are the Sentry's, not host processes"
    command -v ip >/dev/null && command -v python3 >/dev/null || skip "needs ip and python3"
    local ns=aj-uidns-$$ ta tb tc pa pb pc sa sb sc free held
    ip netns add "$ns"
    UIDNS_NS=$ns
    ta=$(aj_tag a)
    ip netns exec "$ns" "$AJ" run "${AJ_LEVEL[@]}" --ro "$PROBE:/probe" -- /probe sleep 60 "$ta" >"$T/a.out" 2>"$T/a.err" 3>&- &
    UIDNS_PIDS=$!
    pa=$(wait_for_comm "$ta" 10) || { cat "$T/a.err" >&2; fail "the sandbox in $ns never started"; }
    sa=$(uid_slot_of "$pa")
    # every other range is taken on the host, but one: the host's run must
    # get that one, never the range of the sandbox in the other netns
    free=$(((sa + 1 + RANDOM % 16000) % 16384))
    coproc HOLD { hold_ranges_but "$free" "$sa"; }
    UIDNS_PIDS="$UIDNS_PIDS $HOLD_PID"
    read -r held <&"${HOLD[0]}"
    [ "$held" -gt 16000 ] || fail "the stand-in held only $held ranges"
    tb=$(aj_tag b)
    "$AJ" run "${AJ_LEVEL[@]}" --ro "$PROBE:/probe" -- /probe sleep 60 "$tb" >"$T/b.out" 2>"$T/b.err" 3>&- &
    AJ_BG_PID=$!
    pb=$(wait_for_comm "$tb" 10) || { cat "$T/b.err" >&2; fail "the host's sandbox never started"; }
    sb=$(uid_slot_of "$pb")
    assert_ne "$sb" "$sa" "the host's sandbox got the range of the sandbox in $ns"
    assert_eq "$sb" "$free" "the host's sandbox took a range held on the host"
    assert_ne "$(host_uid_of "$pb")" "$(host_uid_of "$pa")"
    # SIGKILL the holder: its range is free again, and the next run gets it
    kill -KILL "$AJ_BG_PID"
    wait "$AJ_BG_PID" 2>/dev/null || true
    local i
    for i in $(seq 100); do kill -0 "$pb" 2>/dev/null || break; sleep 0.05; done
    tc=$(aj_tag c)
    "$AJ" run "${AJ_LEVEL[@]}" --ro "$PROBE:/probe" -- /probe sleep 60 "$tc" >"$T/c.out" 2>"$T/c.err" 3>&- &
    AJ_BG_PID=$!
    pc=$(wait_for_comm "$tc" 10) || { cat "$T/c.err" >&2; fail "no range after the holder was killed"; }
    sc=$(uid_slot_of "$pc")
    assert_eq "$sc" "$free" "the killed holder's range"
    kill -TERM "$AJ_BG_PID"
    wait "$AJ_BG_PID" 2>/dev/null || true
    AJ_BG_PID=
}
