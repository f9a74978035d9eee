#!/usr/bin/env bats
# What the state directory prepares for the default root (as root): /etc, one
# bind of a copy of the allowed host files, current with the host at every
# run (src/backend/process/etc_cache.c); /dev, one bind of a prepared tree of six device
# nodes (src/backend/process/dev_cache.c). Without them, a bind per file and per node.

load helpers

# /etc/papersize is on the allow-list and absent from a fresh Debian; the
# tests that change it put back what was there.
PAPER=/etc/papersize

setup() {
    aj_setup
    require_root
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/state
    CACHE=$AGENTJAIL_STATE_DIR/etc-cache
    if [ -e "$PAPER" ]; then cp -a "$PAPER" "$BATS_TEST_TMPDIR/papersize.saved"; fi
}

teardown() {
    if mountpoint -q "$BATS_TEST_TMPDIR/nodev" 2>/dev/null; then umount "$BATS_TEST_TMPDIR/nodev"; fi
    if [ -e "$BATS_TEST_TMPDIR/papersize.saved" ]; then
        cp -a "$BATS_TEST_TMPDIR/papersize.saved" "$PAPER"
    else
        rm -f "$PAPER"
    fi
    aj_teardown
}

# What the sandbox's /etc is: the mounts at and below it, a file's digest,
# the paper size, where passwd points.
etc_view() {
    sandbox -- /bin/sh -c '
        echo "below=$(awk '\''$5 ~ "^/etc/"'\'' /proc/self/mountinfo | wc -l)"
        echo "root=$(awk '\''$5 == "/etc" { print $4 }'\'' /proc/self/mountinfo)"
        echo "opts=$(awk '\''$5 == "/etc" { print $6 }'\'' /proc/self/mountinfo)"
        echo "ldcache=$(sha256sum </etc/ld.so.cache | cut -c1-64)"
        echo "certs=$(ls /etc/ssl/certs | wc -l)"
        echo "paper=$(cat /etc/papersize 2>/dev/null || echo -)"
        echo "passwd=$(readlink /etc/passwd)"
        echo "home=$(awk -F: '\''$3 == 0 { print $6 }'\'' /etc/passwd)"
        touch /etc/x 2>/dev/null && echo "write=yes" || echo "write=no"'
    assert_status 0
}

copies() { find "$CACHE" -mindepth 1 -maxdepth 1 -type d -name '????????????????' | wc -l; }

# A change must be over a second old before a copy is kept (a second change
# in the same clock tick could keep the file's times): wait that out, until
# the clock's second is 2 past the newest ctime below /etc (etc_cache.c keeps
# a copy when ctime < start - 1; was a fixed 2.2 s), 3 s at most.
settle() {
    local newest i
    newest=$(find /etc -xdev -printf '%C@\n' 2>/dev/null | sort -n | tail -n 1)
    for ((i = 0; i < 60; i++)); do
        [ "${EPOCHREALTIME%.*}" -ge $((${newest%.*} + 2)) ] && return 0
        sleep 0.05
    done
}

@test "/etc is one read-only bind of the state directory's copy, with the host's files" {
    etc_view
    assert_eq "$(kv below)" 0 "mounts below /etc"
    local key
    key=$(cat "$CACHE/current")
    assert_eq "$(kv root)" "$CACHE/$key" "what /etc is"
    [[ ",$(kv opts)," == *,ro,* && ",$(kv opts)," == *,nosuid,* && ",$(kv opts)," == *,nodev,* ]] ||
        fail "/etc mount options: $(kv opts)"
    assert_eq "$(kv write)" no "a file written in /etc"
    assert_eq "$(kv ldcache)" "$(sha256sum </etc/ld.so.cache | cut -c1-64)" "/etc/ld.so.cache"
    assert_eq "$(kv certs)" "$(ls /etc/ssl/certs | wc -l)" "entries of /etc/ssl/certs"
    # the generated files: links into the sandbox's own root
    assert_eq "$(kv passwd)" /.agentjail/passwd "/etc/passwd"
    assert_eq "$(kv home)" /home/agent "root's home in /etc/passwd"
    # the copy: root's, 0700 above it; what it holds is on the allow-list
    assert_eq "$(stat -c %U:%a "$CACHE")" root:700 "the cache directory"
    assert_eq "$(stat -c %U:%a "$CACHE/$key")" root:755 "the copy"
    [ ! -e "$CACHE/$key/shadow" ] && [ ! -e "$CACHE/$key/ssh" ] && [ ! -e "$CACHE/$key/machine-id" ] ||
        fail "the copy holds a file that is not on the allow-list"
    assert_eq "$(copies)" 1 "copies"
}

@test "a host file added, changed in place or removed is what the next sandbox sees; unused copies go" {
    rm -f "$PAPER"
    settle
    etc_view
    assert_eq "$(kv paper)" - "absent"
    assert_eq "$(kv below)" 0 "mounts below /etc"
    local first
    first=$(cat "$CACHE/current")

    printf 'a4\n' >"$PAPER"
    etc_view # within the second: right, with or without a copy
    assert_eq "$(kv paper)" a4 "added"
    settle
    etc_view
    assert_eq "$(kv paper)" a4 "added"
    assert_eq "$(kv below)" 0 "mounts below /etc"
    assert_ne "$(cat "$CACHE/current")" "$first" "the copy after a change"

    # in place, same size, same inode: only the times tell
    local ino
    ino=$(stat -c %i "$PAPER")
    printf 'a5\n' >"$PAPER"
    assert_eq "$(stat -c %i "$PAPER")" "$ino" "inode"
    etc_view
    assert_eq "$(kv paper)" a5 "changed in place"
    settle
    etc_view
    assert_eq "$(kv paper)" a5 "changed in place"
    assert_eq "$(kv below)" 0 "mounts below /etc"
    assert_eq "$(copies)" 1 "copies once none is in use"

    rm -f "$PAPER"
    settle
    etc_view
    assert_eq "$(kv paper)" - "removed"
    assert_eq "$(copies)" 1 "copies"
}

@test "a copy in use by a running sandbox is kept until it ends" {
    settle
    etc_view
    local old
    old=$(cat "$CACHE/current")
    "$AJ" run --quiet -- /bin/sh -c 'cat /etc/ld.so.conf >/dev/null; sleep 30' </dev/null >/dev/null 2>&1 &
    AJ_BG_PID=$!
    local i # until the sandbox holds its copy (its manifest locked shared)
    for i in $(seq 100); do
        flock -n -x "$CACHE/$old.manifest" true || break
        sleep 0.1
    done
    ! flock -n -x "$CACHE/$old.manifest" true || fail "the running sandbox does not hold its copy"
    printf 'b5\n' >"$PAPER"
    settle
    etc_view
    assert_eq "$(kv paper)" b5 "added"
    assert_ne "$(cat "$CACHE/current")" "$old" "the copy after a change"
    [ -d "$CACHE/$old" ] || fail "the copy in use was removed"
    assert_eq "$(copies)" 2 "copies while one is in use"
    kill -TERM "$AJ_BG_PID" 2>/dev/null
    wait "$AJ_BG_PID" 2>/dev/null || true
    # the next copy made removes it
    printf 'b6\n' >"$PAPER"
    settle
    etc_view
    assert_eq "$(kv paper)" b6 "changed"
    [ ! -e "$CACHE/$old" ] && [ ! -e "$CACHE/$old.manifest" ] || fail "an unused copy was kept"
    assert_eq "$(copies)" 1 "copies"
}

@test "a copy or manifest others may change, or a bad pointer, is never used: made again" {
    settle
    etc_view
    local key
    key=$(cat "$CACHE/current")
    # a group-writable copy whose file was changed
    echo tampered >"$CACHE/$key/host.conf"
    chmod g+w "$CACHE/$key"
    sandbox -- /bin/cat /etc/host.conf
    assert_status 0
    assert_eq "$output" "$(cat /etc/host.conf)" "/etc/host.conf"
    assert_eq "$(stat -c %a "$CACHE/$key")" 755 "the copy, made again"
    # a manifest owned by someone else
    chown 65534 "$CACHE/$key.manifest"
    etc_view
    assert_eq "$(kv below)" 0 "mounts below /etc"
    assert_eq "$(stat -c %u "$CACHE/$key.manifest")" 0 "the manifest, made again"
    # a pointer to nowhere, a link as pointer
    echo ../../../etc >"$CACHE/current"
    etc_view
    assert_eq "$(cat "$CACHE/current")" "$key" "the pointer, made again"
    rm "$CACHE/current"
    ln -s "$key.manifest" "$CACHE/current"
    etc_view
    assert_eq "$(kv below)" 0 "mounts below /etc"
    [ -f "$CACHE/current" ] && [ ! -L "$CACHE/current" ] || fail "current is still a link"
}

@test "without a usable state directory, /etc is a bind per file and the same files" {
    export AGENTJAIL_STATE_DIR=/proc/agentjail-no-state
    etc_view
    [ "$(kv below)" -gt 10 ] || fail "expected a bind per file below /etc, got $(kv below)"
    assert_eq "$(kv ldcache)" "$(sha256sum </etc/ld.so.cache | cut -c1-64)" "/etc/ld.so.cache"
    assert_eq "$(kv certs)" "$(ls /etc/ssl/certs | wc -l)" "entries of /etc/ssl/certs"
    assert_eq "$(kv home)" /home/agent "root's home in /etc/passwd"
    assert_eq "$(kv write)" no "a file written in /etc"
    # a state directory others may write to
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/open
    mkdir -p "$AGENTJAIL_STATE_DIR/etc-cache"
    chmod 0777 "$AGENTJAIL_STATE_DIR/etc-cache"
    etc_view
    [ "$(kv below)" -gt 10 ] || fail "a world-writable cache directory was used"
    [ -z "$(ls -A "$AGENTJAIL_STATE_DIR/etc-cache")" ] || fail "something was written into it"
}

# What the sandbox's /dev is.
dev_view() {
    sandbox -- /bin/sh -c '
        echo "below=$(awk '\''$5 ~ "^/dev/"'\'' /proc/self/mountinfo | awk '\''{ print $5 }'\'' | sort | tr "\n" " ")"
        echo "root=$(awk '\''$5 == "/dev" { print $4 }'\'' /proc/self/mountinfo)"
        echo "opts=$(awk '\''$5 == "/dev" { print $6 }'\'' /proc/self/mountinfo)"
        echo "ls=$(ls /dev | tr "\n" " ")"
        echo "null=$(echo x >/dev/null && head -c 8 /dev/null | wc -c)"
        echo "zero=$(head -c 4 /dev/zero | od -An -tx1 | tr -d " ")"
        echo "random=$(head -c 16 /dev/urandom | wc -c)"
        echo "pty=$(python3 -c "import os, pty; m, s = pty.openpty(); print(os.ttyname(s))")"
        touch /dev/x 2>/dev/null && echo "write=yes" || echo "write=no"'
    assert_status 0
}

@test "/dev is one read-only bind of the prepared tree: the six nodes work, devpts and shm on top" {
    dev_view
    assert_eq "$(kv root)" "$AGENTJAIL_STATE_DIR/dev-cache/dev.1" "what /dev is"
    [[ ",$(kv opts)," == *,ro,* && ",$(kv opts)," == *,nosuid,* && ",$(kv opts)," == *,noexec,* ]] ||
        fail "/dev mount options: $(kv opts)"
    assert_eq "$(kv below)" "/dev/pts /dev/shm " "mounts below /dev"
    assert_eq "$(kv ls)" "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero " "/dev"
    assert_eq "$(kv null)" 0 "/dev/null"
    assert_eq "$(kv zero)" 00000000 "/dev/zero"
    assert_eq "$(kv random)" 16 "/dev/urandom"
    assert_eq "$(kv pty)" /dev/pts/0 "a pty of the sandbox's own devpts"
    assert_eq "$(kv write)" no "a file made in /dev"
    assert_eq "$(stat -c %U:%a "$AGENTJAIL_STATE_DIR/dev-cache")" root:700 "the cache directory"
}

@test "a prepared /dev with a wrong node, or on a nodev filesystem, is not used" {
    dev_view
    local tree=$AGENTJAIL_STATE_DIR/dev-cache/dev.1
    # /dev/null replaced by a node that reads zeros
    rm "$tree/null"
    mknod -m 666 "$tree/null" c 1 5
    dev_view
    [ "$(kv root)" != "$tree" ] || fail "a /dev with a wrong node was used"
    assert_eq "$(kv null)" 0 "/dev/null"
    assert_eq "$(kv below)" "/dev/full /dev/null /dev/pts /dev/random /dev/shm /dev/tty /dev/urandom /dev/zero " "a bind per node"
    assert_eq "$(kv ls)" "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero " "/dev"
    # a state directory on a filesystem mounted nodev
    mkdir "$BATS_TEST_TMPDIR/nodev"
    mount -t tmpfs -o nodev,mode=0755 tmpfs "$BATS_TEST_TMPDIR/nodev"
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/nodev/state
    dev_view
    [[ "$(kv root)" != */dev-cache/* ]] || fail "a /dev on a nodev filesystem was used"
    assert_eq "$(kv zero)" 00000000 "/dev/zero"
}
