#!/usr/bin/env bats
# Level 3 for a non-root caller (uid 65534 via setpriv): the VMM runs as the
# caller, jailed in namespaces of its own with only the files it needs
# (docs/security.md); what such a VM does not have yet is 125 with the
# reason. One TCG boot (~10-15 s).

load ../integration/helpers

NR_UID=65534

nr_aj() { # agentjail ARGS... as nobody, HOME its own directory
    (cd "$NRHOME" && exec timeout -k 5 90 setpriv --reuid="$NR_UID" --regid="$NR_UID" --clear-groups \
        --inh-caps=-all env -i PATH=/usr/bin:/bin HOME="$NRHOME" LANG=C AGENTJAIL_MICROVM_ACCEL=tcg \
        "$NRDIR/agentjail" "$@")
}

# nobody's VMM processes and VM directories (by owner, and the VM's path in
# a process's command line or mounts)
nr_residue() {
    local p
    for p in $(pgrep -u "$NR_UID" -f 'qemu-system|virtiofsd'); do echo "process $p: $(tr '\0' ' ' </proc/$p/cmdline)"; done
    find /tmp -maxdepth 1 -name 'agentjail*' -user "$NR_UID" 2>/dev/null | sed 's/^/dir /'
    grep -l agentjail-microvm /proc/[0-9]*/mountinfo 2>/dev/null | while read -r f; do
        p=${f#/proc/}; p=${p%%/*}
        [ "$(stat -c %u "/proc/$p" 2>/dev/null)" = "$NR_UID" ] && echo "mounts of $p"
    done
    true
}

setup() {
    require_root # to become nobody; the run itself is unprivileged
    command -v qemu-system-x86_64 >/dev/null || skip "qemu is not installed (scripts/setup.sh)"
    [ -r /var/cache/agentjail/microvm/vmlinux ] || skip "no guest kernel (scripts/setup.sh)"
    command -v setpriv >/dev/null || skip "setpriv not installed"
    aj_setup
    AJ_EXTRA_UID=$NR_UID
    NRDIR=$(mktemp -d /tmp/ajtest-mvnonroot.XXXXXX)
    AJ_MARKERS+=("$(basename "$NRDIR")")
    chmod 0755 "$NRDIR"
    NRHOME=$NRDIR/home
    mkdir -m 0700 "$NRHOME"
    chown "$NR_UID:$NR_UID" "$NRHOME"
    aj_copy_programs "$NRDIR"
    setpriv --reuid="$NR_UID" --regid="$NR_UID" --clear-groups --inh-caps=-all unshare --user --map-root-user true 2>/dev/null ||
        skip "unprivileged user namespaces are not available on this host"
}

teardown() {
    local rc=0 left i
    [ -z "${NR_BG:-}" ] || { kill -TERM "$NR_BG" 2>/dev/null; wait "$NR_BG" 2>/dev/null; }
    for i in 1 2 3 4 5 6 7 8 9 10; do # the VMM's last process ends with its holder
        left=$(nr_residue)
        [ -z "$left" ] && break
        sleep 0.2
    done
    [ -z "$left" ] || { echo "RESIDUE (nobody's): $left" >&2; rc=1; }
    aj_teardown || rc=1
    [ -n "${NRDIR:-}" ] && [ -d "$NRDIR" ] && rm -rf --one-file-system "$NRDIR"
    return $rc
}

@test "microvm nonroot: a command runs in the guest's own kernel; the VMM is the caller's, jailed, and cannot see its files; nothing left" {
    # a file of the caller's that its VMM must not reach
    echo caller-secret >"$NRHOME/secret"
    chown "$NR_UID:$NR_UID" "$NRHOME/secret"
    chmod 0600 "$NRHOME/secret"
    nr_aj run -q --isolation microvm --limits best-effort -- /bin/sh -c \
        'uname -r; id -u; echo in-vm >/tmp/f; cat /tmp/f; sleep 4; exit 7' </dev/null >"$T/out" 2>"$T/err" 8<"$NRHOME" 9<"$NRHOME/secret" &
    local bg=$! qemu='' i
    NR_BG=$bg # a failure below: teardown ends the run (SIGTERM: it cleans up)
    for i in $(seq 300); do
        qemu=$(pgrep -u "$NR_UID" -f qemu-system | head -1)
        kill -0 $bg 2>/dev/null || break # the run ended (main: refused)
        [ -n "$qemu" ] && grep -q ' /proc ' "/proc/$qemu/mountinfo" 2>/dev/null && break
        sleep 0.1
    done
    [ -n "$qemu" ] || { wait $bg; cat "$T/err" >&2; fail "no qemu of uid $NR_UID"; }
    # the caller's uid, namespaces of its own
    assert_eq "$(awk '/^Uid:/ { print $2 }' "/proc/$qemu/status")" "$NR_UID" "qemu's host uid"
    local n
    for n in user mnt pid net ipc; do
        assert_ne "$(readlink "/proc/$qemu/ns/$n")" "$(readlink "/proc/self/ns/$n")" "qemu's $n namespace"
    done
    # its root: the system's programs, a few devices, the VM's directory; not
    # the caller's home, not the host's /etc or /home
    [ ! -e "/proc/$qemu/root$NRHOME/secret" ] || fail "qemu's root shows the caller's file"
    # nor by an fd the caller gave agentjail (8, 9 above)
    ! ls -l "/proc/$qemu/fd" | grep -F "$NRHOME" || fail "qemu holds the caller's fds"
    [ -n "$(ls "/proc/$qemu/fd")" ] || fail "qemu's fds unseen"
    [ ! -e "/proc/$qemu/root$NRHOME" ] || fail "qemu's root shows the caller's home"
    [ ! -e "/proc/$qemu/root/etc/passwd" ] || fail "qemu's root shows the host's /etc"
    [ ! -e "/proc/$qemu/root/home" ] || fail "qemu's root shows /home"
    [ -x "/proc/$qemu/root/usr/bin/qemu-system-x86_64" ] || fail "qemu's root lacks /usr"
    assert_eq "$(ls "/proc/$qemu/root/tmp")" "$(basename "$(ls -d /tmp/agentjail-microvm-* | head -1)")" "qemu's /tmp: the VM's directory only"
    # and it cannot write the system's files it sees
    grep -Eq '^[0-9]+ [0-9]+ [0-9:]+ /usr /usr ro,' "/proc/$qemu/mountinfo" || fail "qemu's /usr is not read-only: $(cat "/proc/$qemu/mountinfo")"
    local st=0
    wait $bg || st=$?
    NR_BG=
    assert_eq "$st" 7 "exit status ($(cat "$T/err"))"
    assert_eq "$(sed -n 2,3p "$T/out")" "0
in-vm" "the guest's uid and its writable /tmp"
    local guest
    guest=$(sed -n 1p "$T/out")
    assert_ne "$guest" "$(uname -r)" "the guest's kernel release"
    assert_eq "$guest" "$(sed 's/^linux-image-//' /var/cache/agentjail/microvm/kernel)" "Debian's kernel"
    assert_eq "$(cat "$T/err")" "" stderr
    # the level's cache is the caller's own, closed to others
    assert_eq "$(stat -c %U:%a "$NRHOME/.local/state/agentjail/microvm")" nobody:700 "the caller's cache"
}

@test "microvm nonroot: a workspace, a network, binds, a root image are 125 with the reason; limits fail closed; nothing left" {
    local what
    for what in "--workspace $NRHOME" "--net open" "--ro /usr/bin:/mnt/bin" "--rootfs $NRDIR"; do
        # shellcheck disable=SC2086
        run --separate-stderr nr_aj run --isolation microvm --limits best-effort $what -- /bin/true </dev/null
        assert_status 125
        [[ "$stderr" == *"not for a non-root caller yet"*"fix: run it as root"* ]] || fail "$what: $stderr"
        assert_eq "$(wc -l <<<"$stderr")" 1 "$what: stderr lines"
        assert_eq "$(nr_residue)" "" "$what: residue"
    done
    # the VMM's cgroup: no delegated one here, so its limits fail closed
    # as level 1's do, with how to get one
    run --separate-stderr nr_aj run -q --isolation microvm -- /bin/sh -c 'echo ran' </dev/null
    assert_status 125
    assert_output_lacks ran
    [[ "$stderr" == *"cannot enforce the sandbox's limits"*"delegated"*"--limits best-effort"* ]] || fail "stderr: $stderr"
    assert_eq "$(nr_residue)" "" "residue"
}
