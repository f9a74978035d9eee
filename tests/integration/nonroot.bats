#!/usr/bin/env bats
# agentjail run by an unprivileged caller (uid 65534 via setpriv).

load helpers

NR_UID=65534

# Run agentjail as nobody, in the nobody-owned workspace (exec chain: the
# subshell's pid becomes agentjail's).
nr_exec() {
    cd "$NRWS" && exec setpriv --reuid="$NR_UID" --regid="$NR_UID" --clear-groups --inh-caps=-all \
        env -i PATH=/usr/bin:/bin HOME="$NRWS" LANG=C "$NRDIR/agentjail" "$@"
}

nr_aj() {
    (nr_exec_timeout "$@")
}

nr_exec_timeout() {
    cd "$NRWS" && exec timeout -k 5 60 setpriv --reuid="$NR_UID" --regid="$NR_UID" --clear-groups --inh-caps=-all \
        env -i PATH=/usr/bin:/bin HOME="$NRWS" LANG=C "$NRDIR/agentjail" "$@" </dev/null
}

# nobody has no delegated cgroup here: limits fail closed (the tests
# "limits fail closed" below); the other tests run with --limits best-effort
nr_run() { # OPTIONS... -- CMD...
    run --separate-stderr nr_aj run --limits best-effort --workspace "$NRWS" --ro "$NRDIR/ajprobe:/probe" "$@"
}

setup() {
    require_root # we need root to become nobody; the product itself runs unprivileged
    aj_setup
    command -v setpriv >/dev/null || skip "setpriv not installed"
    AJ_EXTRA_UID=$NR_UID
    # A tree nobody can traverse: every parent 0755, workspace owned by nobody.
    NRDIR=$(mktemp -d /tmp/ajtest-nonroot.XXXXXX)
    AJ_MARKERS+=("$(basename "$NRDIR")")
    chmod 0755 "$NRDIR"
    NRWS=$NRDIR/ws
    mkdir "$NRWS"
    chown "$NR_UID:$NR_UID" "$NRWS"
    aj_copy_programs "$NRDIR"
    cp "$PROBE" "$NRDIR/ajprobe"
    chmod 0755 "$NRDIR/ajprobe"
    if ! setpriv --reuid="$NR_UID" --regid="$NR_UID" --clear-groups --inh-caps=-all unshare --user --map-root-user true 2>/dev/null; then
        skip "unprivileged user namespaces are not available on this host"
    fi
}

teardown() {
    local rc=0 d
    aj_teardown || rc=1
    for d in "${NR_DELEGATED[@]}"; do rmdir "$d" 2>/dev/null || true; done
    [ -n "${NRDIR:-}" ] && [ -d "$NRDIR" ] && rm -rf --one-file-system "$NRDIR"
    return $rc
}

@test "nonroot: a sandbox runs, uid 0 inside" {
    nr_run -- /probe ids
    assert_status 0
    assert_eq "$(kv uid)" 0 uid
    assert_eq "$(kv gid)" 0 gid
}

@test "nonroot: exit status and signals pass through" {
    nr_run -- /probe exit 7
    assert_status 7
    nr_run -- /probe signal-self TERM
    assert_status 143
}

@test "nonroot: files written in the workspace are owned by the caller (65534)" {
    nr_run -- /bin/sh -c 'echo hi >/workspace/f && mkdir /workspace/d'
    assert_status 0
    assert_eq "$(stat -c %u:%g "$NRWS/f")" "$NR_UID:$NR_UID" "owner of f"
    assert_eq "$(stat -c %u:%g "$NRWS/d")" "$NR_UID:$NR_UID" "owner of d"
    assert_eq "$(cat "$NRWS/f")" hi content
}

@test "nonroot: the cgroup-limits warning appears exactly once on stderr" {
    nr_run -- /bin/sh -c 'echo out'
    assert_status 0
    assert_eq "$output" out stdout
    local n=0 l
    for l in "${stderr_lines[@]}"; do
        [[ "$l" == *cgroup* ]] && n=$((n + 1))
        [[ "$l" == "agentjail: "* ]] || { _aj_dump; fail "unexpected stderr line: $l"; }
    done
    assert_eq "$n" 1 "number of cgroup warning lines"
    assert_eq "${#stderr_lines[@]}" 1 "number of stderr lines"
}

@test "nonroot: --quiet silences the warning" {
    nr_run --quiet -- /bin/sh -c 'echo out'
    assert_status 0
    assert_eq "$output" out stdout
    assert_eq "$stderr" "" stderr
}

@test "nonroot: the sandboxed process runs as the caller's host uid" {
    local tag pid
    tag=$(aj_tag n)
    (nr_exec run --limits best-effort --workspace "$NRWS" --ro "$NRDIR/ajprobe:/probe" -- /probe sleep 30 "$tag") </dev/null >"$T/out" 2>"$T/err" 3>&- &
    AJ_BG_PID=$!
    pid=$(wait_for_comm "$tag" 10) || { cat "$T/out" "$T/err" >&2; fail "sandboxed probe never appeared"; }
    assert_eq "$(host_uid_of "$pid" 1)" "$NR_UID" "host uid of the sandboxed process"
    assert_eq "$(host_uid_of "$pid" 2)" "$NR_UID" "host euid of the sandboxed process"
    kill -TERM "$AJ_BG_PID"
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
}

@test "nonroot: isolation holds (network, hostname, host paths, environment)" {
    nr_run -- /probe net
    assert_status 0
    assert_eq "$(printf '%s\n' "${lines[@]}" | sed -n 's/^iface=//p' | tr '\n' ' ')" "lo " interfaces
    assert_eq "$(kv connect)" ENETUNREACH connect
    nr_run -- /probe hostname
    assert_eq "$(kv hostname)" agentjail hostname
    nr_run -- /probe exists /root /var /run /srv /mnt /opt /sys "$NRDIR" /etc/shadow
    assert_status 0
    local p
    for p in /root /var /run /srv /mnt /opt /sys "$NRDIR" /etc/shadow; do
        assert_eq "$(kv "$p")" no "$p visible inside"
    done
    nr_run -- /probe env
    assert_eq "$(kv HOME)" /home/agent HOME
}

@test "nonroot: a double-forked orphan is killed when the command exits" {
    local tag
    tag=$(aj_tag o)
    nr_run -- /probe orphan "$tag"
    assert_status 0
    wait_gone_comm "$tag" 1 || fail "orphan '$tag' still running: $(host_pids_by_comm "$tag")"
}

@test "nonroot: PID 1 is init and zombies are reaped" {
    nr_run -- /probe spin-children 3
    assert_status 0
    assert_eq "$(kv orphan_zombies)" 0 "zombies left with PID 1"
    nr_run -- /probe pidns
    [ "$(kv pid)" -gt 1 ] || { _aj_dump; fail "command is PID 1"; }
}

@test "nonroot: bad input still gives 125 with one line" {
    nr_aj run --workspace "$NRWS" --bogus -- /bin/true >"$T/out" 2>"$T/err" && st=0 || st=$?
    assert_eq "$st" 125 "exit status"
    assert_eq "$(wc -l <"$T/err")" 1 "stderr lines"
    grep -q '^agentjail: ' "$T/err" || fail "stderr does not start with 'agentjail: '"
}

@test "nonroot: every namespace differs from the host's (including cgroup)" {
    local k args=()
    for k in user mnt pid ipc uts net cgroup; do args+=("/proc/self/ns/$k"); done
    nr_run -- /probe readlink "${args[@]}"
    assert_status 0
    for k in user mnt pid ipc uts net cgroup; do
        assert_ne "$(kv "/proc/self/ns/$k")" "$(readlink "/proc/self/ns/$k")" "namespace $k"
    done
}

@test "nonroot: --user UID:GID works (the caller's uid can be mapped to any one uid)" {
    nr_run --user 1000:1000 -- /probe ids
    assert_status 0
    assert_eq "$(kv uid)" 1000 uid
    assert_eq "$(kv gid)" 1000 gid
}

@test "nonroot: a failure during sandbox setup is still one stderr line" {
    nr_aj run --workspace "$NRWS" --cwd /no/such/dir -- /bin/true >"$T/out" 2>"$T/err" && st=0 || st=$?
    assert_eq "$st" 125 "exit status"
    cat "$T/err" >&2
    assert_eq "$(wc -l <"$T/err")" 1 "stderr lines"
}

# ---------------------------------------------------------------- limits fail closed

@test "nonroot: limits fail closed: no delegated cgroup, exit 125, the fix line says how to get one, nothing ran" {
    run --separate-stderr nr_aj run --workspace "$NRWS" -- /bin/sh -c 'echo ran >/workspace/ran'
    assert_status 125
    [ ! -e "$NRWS/ran" ] || fail "the command ran without its limits"
    [[ "$stderr" == *"cannot enforce the sandbox's limits (--memory 1024M --pids 256)"* ]] || fail "stderr: $stderr"
    # the fix line: root, the exact delegation commands, or best-effort
    [[ "$stderr" == *"run as root"* ]] || fail "no 'run as root' in: $stderr"
    [[ "$stderr" == *"chown -R $NR_UID"*"cgroup.procs"* || "$stderr" == *"Delegate=yes"* ]] ||
        fail "no delegation commands in: $stderr"
    [[ "$stderr" == *"--limits best-effort"* ]] || fail "no --limits best-effort in: $stderr"
    # an explicit limit too
    run --separate-stderr nr_aj run --memory 0 --pids 8 --workspace "$NRWS" -- /bin/true
    assert_status 125
    [[ "$stderr" == *"(--pids 8)"* ]] || fail "stderr: $stderr"
}

@test "nonroot: --limits best-effort runs, says which limits were not applied (stderr and --result)" {
    nr_run --result "$NRWS/r.json" -- /bin/sh -c 'echo out'
    assert_status 0
    assert_eq "$output" out stdout
    [[ "$stderr" == *"limits NOT enforced (--limits best-effort): memory, pids"* ]] || fail "stderr: $stderr"
    assert_eq "$(jq -c .limits_not_applied "$NRWS/r.json")" '["memory","pids"]' "limits_not_applied"
    nr_run --cpus 0.5 --result "$NRWS/r.json" -- /bin/true
    assert_eq "$(jq -c .limits_not_applied "$NRWS/r.json")" '["memory","pids","cpus"]' "limits_not_applied with --cpus"
}

@test "nonroot: agentjail doctor says how to get a delegated cgroup" {
    run --separate-stderr nr_aj doctor
    local l
    l=$(printf '%s\n' "$output" | grep -A1 '^\[....\] cgroups' | tail -1)
    [[ "$l" == *"delegated cgroup"* ]] || fail "doctor's cgroups fix: $l"
    [[ "$l" == *"chown -R $NR_UID"*"cgroup.procs"* || "$l" == *"Delegate=yes"* ]] || fail "no delegation commands: $l"
    [[ "$l" == *"--limits best-effort"* ]] || fail "no --limits best-effort: $l"
}

# Root delegates a cgroup v1 subtree to nobody as doctor says (a directory
# below our own cgroup in each hierarchy, chowned), nobody's shell moves
# itself into it, then runs agentjail.
_nr_delegate() {
    local c own d
    NR_DELEGATED=()
    for c in memory pids; do
        own=$(awk -F: -v c="$c" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' /proc/self/cgroup)
        [ -n "$own" ] || skip "no cgroup v1 $c hierarchy (this test is for v1 delegation)"
        d=/sys/fs/cgroup/$c${own%/}/ajtdeleg$$
        [ -d "/sys/fs/cgroup/$c" ] || skip "no /sys/fs/cgroup/$c"
        mkdir "$d"
        NR_DELEGATED+=("$d")
        chown -R "$NR_UID" "$d"
    done
}

nr_delegated() { # agentjail ARGS...
    cd "$NRWS" && timeout -k 5 60 setpriv --reuid="$NR_UID" --regid="$NR_UID" --clear-groups --inh-caps=-all \
        env -i PATH=/usr/bin:/bin HOME="$NRWS" LANG=C DIRS="${NR_DELEGATED[*]}" sh -c \
        'for d in $DIRS; do echo $$ >"$d/cgroup.procs" || exit 99; done; exec "$@"' sh "$NRDIR/agentjail" "$@" </dev/null
}

@test "nonroot: in a cgroup v1 subtree delegated to the caller, --pids stops a fork bomb and --memory OOM-kills" {
    _nr_delegate
    run --separate-stderr nr_delegated run --workspace "$NRWS" --pids 16 -- /bin/sh -c \
        'for i in $(seq 40); do /bin/sleep 1 & done; echo started-all; wait'
    [ "$status" -ne 99 ] || fail "nobody could not move into the delegated cgroup"
    [ "$output" != started-all ] || { _aj_dump; fail "40 processes started under --pids 16"; }
    [[ "$stderr" == *fork* ]] || { _aj_dump; fail "no fork failure under --pids 16"; }
    [[ "$stderr" != *"NOT enforced"* ]] || { _aj_dump; fail "limits not enforced in a delegated cgroup"; }
    run --separate-stderr nr_delegated run --workspace "$NRWS" --memory 48M -- /bin/sh -c \
        'x=$(head -c 300000000 /dev/zero | tr "\0" a); echo survived ${#x}'
    assert_output_lacks survived
    [ "$status" -eq 137 ] || { _aj_dump; fail "expected 137 (OOM kill under --memory 48M), got $status"; }
    [[ "$stderr" == *"out of memory"* ]] || fail "stderr: $stderr"
}
