#!/usr/bin/env bats
# Workspace, extra binds, --cwd, --rootfs, ephemeral writable layers.

load helpers

# Listing of a tree with sizes, modes, owners and content hashes.
tree_state() {
    (cd "$1" && find . -printf '%p %y %s %m %u:%g %l\n' | sort &&
        find . -type f -exec md5sum {} + | sort)
}

# A tiny root filesystem made of the static probe only.
make_rootfs() {
    R=$T/rootfs
    mkdir -p "$R/bin"
    cp "$PROBE" "$R/bin/probe"
    echo original >"$R/MARKER"
    chmod -R a+rX "$R"
}

@test "default cwd is /workspace" {
    sandbox -- /bin/pwd
    assert_status 0
    assert_eq "$output" /workspace cwd
}

@test "host files in the workspace are visible inside" {
    echo "host data" >"$WS/in.txt"
    sandbox -- /probe read /workspace/in.txt
    assert_status 0
    assert_eq "$output" "host data"
}

@test "files created inside appear owned by the workspace owner (4242:4343)" {
    require_root
    chown 4242:4343 "$WS"
    sandbox -- /bin/sh -c 'echo a >/workspace/new && mkdir /workspace/d && echo b >/workspace/d/f && ln -s new /workspace/lnk'
    assert_status 0
    local f
    for f in "$WS/new" "$WS/d" "$WS/d/f" "$WS/lnk"; do
        [ -e "$f" ] || [ -L "$f" ] || fail "$f missing on host"
        assert_eq "$(stat -c %u:%g "$f")" 4242:4343 "owner of ${f#"$WS"/}"
    done
    assert_eq "$(cat "$WS/d/f")" b content
}

@test "inside, the workspace belongs to the sandbox user" {
    require_root
    chown 4242:4343 "$WS"
    echo x >"$WS/hostfile"
    chown 4242:4343 "$WS/hostfile"
    sandbox -- /probe stat /workspace
    assert_status 0
    assert_eq "$(kv uid):$(kv gid)" 0:0 "owner of /workspace seen inside"
    sandbox -- /probe write /workspace/hostfile changed
    assert_status 0
    assert_eq "$(cat "$WS/hostfile")" changed "host file rewritten inside"
    assert_eq "$(stat -c %u:%g "$WS/hostfile")" 4242:4343 "owner after rewrite"
}

@test "root-owned workspace: new files are owned by root on the host, not by the sandbox uid" {
    require_root
    sandbox -- /probe write /workspace/rootfile x
    assert_status 0
    assert_eq "$(stat -c %u:%g "$WS/rootfile")" 0:0 owner
}

@test "--ro SRC:DEST is readable and read-only" {
    mkdir "$T/rodata"
    echo readonly-content >"$T/rodata/file"
    chmod -R a+rX "$T/rodata"
    sandbox --ro "$T/rodata:/data" -- /probe read /data/file
    assert_status 0
    assert_eq "$output" readonly-content
    sandbox --ro "$T/rodata:/data" -- /probe write /data/new x
    assert_status 1
    assert_eq "$(kv error)" EROFS "write into --ro bind"
    sandbox --ro "$T/rodata:/data" -- /bin/sh -c 'rm -f /data/file; echo y >/data/file'
    [ "$status" -ne 0 ] || fail "modifying a --ro bind succeeded"
    [ ! -e "$T/rodata/new" ] || fail "file created on host through --ro bind"
    assert_eq "$(cat "$T/rodata/file")" readonly-content "host file after --ro attempts"
}

@test "--ro SRC without DEST binds at the same path" {
    mkdir "$T/rodata2"
    echo same-path >"$T/rodata2/file"
    chmod -R a+rX "$T/rodata2"
    sandbox --ro "$T/rodata2" -- /probe read "$T/rodata2/file"
    assert_status 0
    assert_eq "$output" same-path
}

@test "--rw SRC:DEST is writable and changes reach the host" {
    mkdir "$T/rwdata"
    chmod 0777 "$T/rwdata"
    sandbox --rw "$T/rwdata:/data" -- /probe write /data/out rw-content
    assert_status 0
    [ -f "$T/rwdata/out" ] || fail "file written in --rw bind missing on host"
    assert_eq "$(cat "$T/rwdata/out")" rw-content content
}

@test "--cwd sets the working directory" {
    sandbox --cwd /tmp -- /bin/pwd
    assert_status 0
    assert_eq "$output" /tmp cwd
    mkdir "$WS/sub"
    sandbox --cwd /workspace/sub -- /bin/pwd
    assert_status 0
    assert_eq "$output" /workspace/sub cwd
}

@test "workspace path containing spaces" {
    mkdir "$T/my ws"
    chmod 0755 "$T/my ws"
    run --separate-stderr aj_timeout "$AJ" run "${AJ_QUIET[@]}" --workspace "$T/my ws" --ro "$PROBE:/probe" -- /probe write /workspace/f ok
    assert_status 0
    assert_eq "$(cat "$T/my ws/f")" ok content
}

@test "writes to /tmp and HOME do not persist; workspace writes do" {
    sandbox -- /bin/sh -c 'echo 1 >/tmp/x && echo 2 >"$HOME/x" && echo 3 >/workspace/keep'
    assert_status 0
    sandbox -- /probe exists /tmp/x /home/agent/x /workspace/keep
    assert_status 0
    assert_eq "$(kv /tmp/x)" no "/tmp/x in a second run"
    assert_eq "$(kv /home/agent/x)" no "/home/agent/x in a second run"
    assert_eq "$(kv /workspace/keep)" yes "/workspace/keep in a second run"
}

@test "--tmp-size caps /tmp" {
    sandbox --tmp-size 1M -- /bin/sh -c 'head -c 4194304 /dev/zero >/tmp/big'
    [ "$status" -ne 0 ] || { _aj_dump; fail "wrote 4 MiB into a 1 MiB /tmp"; }
    [[ "$stderr" == *"No space left"* ]] || { _aj_dump; fail "expected ENOSPC"; }
}

@test "--rootfs: the directory is the root (no host /usr)" {
    make_rootfs
    run --separate-stderr aj_timeout "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --rootfs "$R" -- /bin/probe exists /MARKER /bin/probe /usr/bin/sh /etc/shadow
    assert_status 0
    assert_eq "$(kv /MARKER)" yes /MARKER
    assert_eq "$(kv /bin/probe)" yes /bin/probe
    assert_eq "$(kv /usr/bin/sh)" no "host /usr/bin/sh"
}

@test "--rootfs: writes anywhere succeed, nothing persists on the host" {
    make_rootfs
    local before
    before=$(tree_state "$R")
    run --separate-stderr aj_timeout "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --rootfs "$R" -- /bin/probe write /MARKER changed
    assert_status 0
    run --separate-stderr aj_timeout "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --rootfs "$R" -- /bin/probe write /newfile x
    assert_status 0
    run --separate-stderr aj_timeout "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --rootfs "$R" -- /bin/probe write /bin/newbin y
    assert_status 0
    assert_eq "$(tree_state "$R")" "$before" "rootfs tree on the host"
    # A second run starts from the pristine tree.
    run --separate-stderr aj_timeout "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --rootfs "$R" -- /bin/probe read /MARKER
    assert_status 0
    assert_eq "$output" original "/MARKER in a fresh run"
}

@test "--rootfs: the workspace is still mounted at /workspace" {
    make_rootfs
    run --separate-stderr aj_timeout "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --rootfs "$R" -- /bin/probe write /workspace/from-rootfs z
    assert_status 0
    assert_eq "$(cat "$WS/from-rootfs")" z content
}

# A sandbox must not be able to leave set-user-ID / set-group-ID executables
# owned by a host user (here root) for others on the host to run.
assert_no_suid_planted() { # HOST_DIR INSIDE_DIR [OPTIONS...]
    local host=$1 inside=$2
    shift 2
    sandbox "$@" -- /bin/sh -c "cp /probe $inside/suid; chmod 4755 $inside/suid; cp /probe $inside/sgid; chmod 2755 $inside/sgid; true"
    local f m
    for f in suid sgid; do
        [ -e "$host/$f" ] || continue
        m=$(stat -c %a "$host/$f")
        if [ $((8#$m & 8#6000)) -ne 0 ]; then
            echo "host: $(stat -c '%A %U:%G %n' "$host/$f")" >&2
            rm -f "${host:?}/$f"
            fail "sandbox planted a set-id executable on the host ($f mode $m)"
        fi
    done
}

@test "no setuid/setgid files can be planted in a root-owned workspace" {
    require_root
    assert_no_suid_planted "$WS" /workspace
}

@test "no setuid/setgid files can be planted through --rw" {
    require_root
    mkdir "$T/rw"
    chmod 0777 "$T/rw"
    assert_no_suid_planted "$T/rw" /data --rw "$T/rw:/data"
}
