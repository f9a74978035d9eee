#!/usr/bin/env bats
# Namespaces, identity, filesystem view, /dev, network, PID 1 and teardown.

load helpers

NS_KINDS="user mnt pid ipc uts net cgroup"

@test "every namespace differs from the host's (user mnt pid ipc uts net cgroup)" {
    local args=() k
    for k in $NS_KINDS; do args+=("/proc/self/ns/$k"); done
    sandbox -- /probe readlink "${args[@]}"
    assert_status 0
    for k in $NS_KINDS; do
        local inside host
        inside=$(kv "/proc/self/ns/$k")
        host=$(readlink "/proc/self/ns/$k")
        [[ "$inside" == "$k:["* ]] || { _aj_dump; fail "cannot read namespace $k inside: $inside"; }
        assert_ne "$inside" "$host" "namespace $k"
    done
}

@test "inside: uid 0 / gid 0 of the sandbox's own user namespace" {
    sandbox -- /probe ids
    assert_status 0
    assert_eq "$(kv uid)" 0 uid
    assert_eq "$(kv euid)" 0 euid
    assert_eq "$(kv gid)" 0 gid
}

@test "--user UID:GID sets the identity inside" {
    sandbox --user 1000:1000 -- /probe ids
    assert_status 0
    assert_eq "$(kv uid)" 1000 uid
    assert_eq "$(kv gid)" 1000 gid
}

@test "as root: sandboxed process runs as an unprivileged host uid (>= 1e9), never 0" {
    require_root
    local tag pid
    tag=$(aj_tag s)
    "$AJ" run --workspace "$WS" --ro "$PROBE:/probe" -- /probe sleep 30 "$tag" >"$T/out" 2>"$T/err" 3>&- &
    AJ_BG_PID=$!
    pid=$(wait_for_comm "$tag" 10) || { cat "$T/out" "$T/err" >&2; fail "sandboxed probe never appeared on the host"; }
    local f u g
    for f in 1 2 3 4; do
        u=$(host_uid_of "$pid" "$f")
        [ "$u" -ge "$SANDBOX_UID_MIN" ] || fail "host uid field $f of sandboxed process is $u (< $SANDBOX_UID_MIN)"
        assert_ne "$u" "$(id -u)" "host uid equals the caller's"
    done
    g=$(awk '$1 == "Gid:" { print $2 }' "/proc/$pid/status")
    [ "$g" -ge "$SANDBOX_UID_MIN" ] || fail "host gid of sandboxed process is $g"
    # The uid map seen inside agrees with what the host sees.
    local map
    map=$(awk 'NR == 1 { print $1, $2 }' "/proc/$pid/uid_map")
    assert_eq "$map" "0 $u" "uid_map of sandboxed process"
    kill -TERM "$AJ_BG_PID"
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
}

@test "capabilities: no ambient or inheritable capabilities inside" {
    sandbox -- /probe caps
    assert_status 0
    assert_eq "$(kv CapAmb)" 0000000000000000 CapAmb
    assert_eq "$(kv CapInh)" 0000000000000000 CapInh
}

@test "/etc is synthesized: no shadow, machine-id, ssh keys; has passwd/group/hosts/resolv.conf/nsswitch.conf" {
    sandbox -- /probe exists /etc/shadow /etc/gshadow /etc/shadow- /etc/machine-id /etc/ssh \
        /etc/ssh/ssh_host_rsa_key /etc/ssh/ssh_host_ed25519_key /etc/sudoers /var/lib/dbus/machine-id \
        /etc/passwd /etc/group /etc/hosts /etc/resolv.conf /etc/nsswitch.conf
    assert_status 0
    local p
    for p in /etc/shadow /etc/gshadow /etc/shadow- /etc/machine-id /etc/ssh /etc/ssh/ssh_host_rsa_key \
        /etc/ssh/ssh_host_ed25519_key /etc/sudoers /var/lib/dbus/machine-id; do
        assert_eq "$(kv "$p")" no "$p visible inside"
    done
    for p in /etc/passwd /etc/group /etc/hosts /etc/resolv.conf /etc/nsswitch.conf; do
        assert_eq "$(kv "$p")" yes "$p present inside"
    done
}

@test "/etc/passwd names the sandbox user only, not the host's users" {
    sandbox -- /probe read /etc/passwd
    assert_status 0
    local passwd=$output
    # uid 0 inside has an entry with HOME /home/agent.
    echo "$passwd" | awk -F: '$3 == "0" && $6 == "/home/agent" { f = 1 } END { exit !f }' ||
        { _aj_dump; fail "no passwd entry for uid 0 with home /home/agent"; }
    # No host account other than root/nobody-like system names leaks.
    local u
    while IFS=: read -r u _ _ _ _ _ _; do
        case "$u" in root | nobody | agent | "") continue ;; esac
        if echo "$passwd" | grep -q "^$u:"; then
            _aj_dump
            fail "host user '$u' appears in the sandbox /etc/passwd"
        fi
    done </etc/passwd
    [ "$passwd" != "$(cat /etc/passwd)" ] || fail "sandbox /etc/passwd is the host's"
}

@test "host directories are invisible: /root /var /run /srv /mnt /opt /sys /boot /media /work, the workspace's host path" {
    local paths=(/root /var /run /srv /mnt /opt /sys /boot /media /work /old_root /lost+found "$WS" "$BATS_TEST_TMPDIR")
    sandbox -- /probe exists "${paths[@]}"
    assert_status 0
    local p
    for p in "${paths[@]}"; do
        assert_eq "$(kv "$p")" no "$p visible inside"
    done
}

@test "/home contains only agent" {
    sandbox -- /probe ls /home
    assert_status 0
    assert_eq "$output" agent "/home listing"
}

@test "/usr /bin /etc are read-only inside; nothing reaches the host" {
    local name=aj-test-$BASHPID d
    for d in /usr /bin /etc; do [ ! -e "$d/$name" ] || skip "$d/$name already exists on the host"; done
    sandbox -- /probe write "/usr/$name" x
    assert_status 1
    [[ "$(kv error)" =~ ^(EROFS|EACCES|EPERM)$ ]] || { _aj_dump; fail "write to /usr did not fail as expected"; }
    sandbox -- /bin/sh -c "echo x > /bin/$name"
    [ "$status" -ne 0 ] || fail "write to /bin succeeded"
    sandbox -- /bin/sh -c "echo x > /etc/$name"
    for d in /usr /bin /etc; do
        [ ! -e "$d/$name" ] || { rm -f "${d:?}/$name"; fail "write reached host $d"; }
    done
}

@test "/dev holds exactly the allowed nodes" {
    sandbox -- /probe ls /dev
    assert_status 0
    local allowed=" null zero full random urandom tty ptmx pts shm fd stdin stdout stderr " d
    for d in "${lines[@]}"; do
        [[ "$allowed" == *" $d "* ]] || { _aj_dump; fail "unexpected /dev entry: $d"; }
    done
    for d in null zero full random urandom tty ptmx pts shm; do
        assert_output_has_line "$d"
    done
}

@test "/dev nodes work; /dev/pts is a fresh devpts instance" {
    sandbox -- /bin/sh -c 'echo x >/dev/null && head -c 4 /dev/zero | od -An -tx1 && head -c 8 /dev/urandom | wc -c && ! echo x 2>/dev/null >/dev/full && echo full-ok'
    assert_status 0
    assert_eq "$(echo "${lines[0]}" | tr -d ' ')" 00000000 "/dev/zero"
    assert_eq "${lines[1]}" 8 "/dev/urandom"
    assert_eq "${lines[2]}" full-ok "/dev/full"
    sandbox -- /probe ls /dev/pts
    assert_status 0
    assert_eq "$output" ptmx "/dev/pts content without a tty"
}

@test "old root unreachable: only sandbox mounts are listed; /proc/1/root is /" {
    sandbox -- /probe mounts
    assert_status 0
    local l mp
    for l in "${lines[@]}"; do
        mp=${l#mount=}
        case "$mp" in
        / | /usr | /usr/* | /bin | /bin/* | /sbin | /sbin/* | /lib | /lib/* | /lib32 | /lib32/* | /lib64 | /lib64/* | \
            /etc | /etc/* | /proc | /proc/* | /dev | /dev/* | /tmp | /home | /home/agent | /workspace | /probe) ;;
        /workspace/*) ;; # masks and the host-run files kept read-only (protect.c)
        *) _aj_dump; fail "unexpected mount point inside: $mp" ;;
        esac
    done
    # /proc/1/root is either the sandbox root or not accessible at all.
    sandbox -- /probe readlink /proc/1/root /proc/self/root
    [[ "$(kv /proc/1/root)" =~ ^(/|error:EACCES|error:EPERM)$ ]] || { _aj_dump; fail "/proc/1/root leads elsewhere"; }
    assert_eq "$(kv /proc/self/root)" / "/proc/self/root"
    sandbox -- /probe exists /proc/1/root/work /proc/1/root/old_root /proc/1/root/root /proc/1/root/var
    assert_status 0
    [[ "$output" != *=yes* ]] || { _aj_dump; fail "host paths reachable through /proc/1/root"; }
}

@test "hostname is 'agentjail' by default, --hostname sets it, host's is untouched" {
    local before
    before=$(hostname)
    sandbox -- /probe hostname
    assert_status 0
    assert_eq "$(kv hostname)" agentjail hostname
    sandbox --hostname box-42 -- /probe hostname
    assert_status 0
    assert_eq "$(kv hostname)" box-42 hostname
    assert_eq "$(hostname)" "$before" "host hostname"
}

@test "network: only lo; 192.0.2.1 unreachable (ENETUNREACH)" {
    sandbox -- /probe net
    assert_status 0
    local ifaces
    ifaces=$(printf '%s\n' "${lines[@]}" | sed -n 's/^iface=//p' | tr '\n' ' ')
    assert_eq "$ifaces" "lo " "interfaces"
    assert_eq "$(kv connect)" ENETUNREACH "connect to 192.0.2.1:80"
}

@test "network: loopback is up (connect to a closed port is refused, not unreachable)" {
    sandbox -- /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/9'
    [ "$status" -ne 0 ] || fail "connect to 127.0.0.1:9 unexpectedly succeeded"
    [[ "$stderr" == *"Connection refused"* ]] || { _aj_dump; fail "loopback not usable"; }
}

@test "PID 1 is agentjail's init, the command is not PID 1, host processes invisible" {
    sandbox -- /probe pidns
    assert_status 0
    local pid n
    pid=$(kv pid)
    n=$(kv nprocs)
    [ "$pid" -gt 1 ] || { _aj_dump; fail "command runs as PID $pid"; }
    assert_ne "$(kv pid1_comm)" "" "comm of PID 1"
    assert_ne "$(kv pid1_comm)" probe "comm of PID 1"
    [ "$n" -ge 2 ] && [ "$n" -le 3 ] || { _aj_dump; fail "expected 2-3 processes in the sandbox's /proc, saw $n"; }
}

@test "a double-forked, setsid'd orphan is killed when the command exits" {
    local tag
    tag=$(aj_tag o)
    sandbox -- /probe orphan "$tag"
    assert_status 0
    [ -n "$(kv orphan_pid)" ] || fail "probe did not report an orphan"
    wait_gone_comm "$tag" 1 || fail "orphan '$tag' still running on the host: $(host_pids_by_comm "$tag")"
}

@test "orphans are killed even when the command dies by a signal" {
    local tag
    tag=$(aj_tag k)
    sandbox -- /bin/sh -c "/probe orphan $tag && kill -KILL \$\$"
    assert_status 137
    [ -n "$(kv orphan_pid)" ] || fail "probe did not report an orphan"
    wait_gone_comm "$tag" 1 || fail "orphan '$tag' still running on the host: $(host_pids_by_comm "$tag")"
}

@test "zombies reparented to PID 1 are reaped" {
    sandbox -- /probe spin-children 5
    assert_status 0
    assert_eq "$(kv own_zombies)" 5 "probe's own unreaped children"
    assert_eq "$(kv orphan_zombies)" 0 "zombies left with PID 1"
}

@test "host file descriptors other than 0-2 are not inherited by the sandbox" {
    echo "host-secret-$BASHPID" >"$T/secret"
    chmod 0600 "$T/secret"
    run --separate-stderr bash -c 'f=$1; shift; exec 7<"$f" 9>>"$f" </dev/null; exec "$@"' _ "$T/secret" \
        timeout -k 5 60 "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --ro "$PROBE:/probe" -- /probe exists /proc/self/fd/7 /proc/self/fd/9
    assert_status 0
    assert_eq "$(kv /proc/self/fd/7)" no "host fd 7 (read) visible inside"
    assert_eq "$(kv /proc/self/fd/9)" no "host fd 9 (write) visible inside"
    run --separate-stderr bash -c 'f=$1; shift; exec 7<"$f" </dev/null; exec "$@"' _ "$T/secret" \
        timeout -k 5 60 "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" -- /bin/sh -c 'cat <&7'
    assert_output_lacks "host-secret-$BASHPID"
}

@test "as root: concurrent sandboxes run as distinct host uids" {
    require_root
    local a b pa pb
    a=$(aj_tag a)
    b=$(aj_tag b)
    "$AJ" run --workspace "$WS" --ro "$PROBE:/probe" -- /probe sleep 30 "$a" >"$T/out.a" 2>&1 3>&- &
    local ja=$!
    "$AJ" run --workspace "$WS" --ro "$PROBE:/probe" -- /probe sleep 30 "$b" >"$T/out.b" 2>&1 3>&- &
    local jb=$!
    pa=$(wait_for_comm "$a" 10) || fail "first sandbox did not start: $(cat "$T/out.a")"
    pb=$(wait_for_comm "$b" 10) || fail "second sandbox did not start: $(cat "$T/out.b")"
    local ua ub
    ua=$(host_uid_of "$pa")
    ub=$(host_uid_of "$pb")
    kill -TERM "$ja" "$jb"
    wait "$ja" "$jb" || true
    assert_ne "$ua" "$ub" "host uid shared by two concurrent sandboxes"
}
