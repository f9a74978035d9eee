#!/usr/bin/env bats
# Bad input: exit 125, exactly one clear "agentjail: ..." line on stderr,
# nothing on stdout, nothing changed on the host.

load helpers

# Host state that a rejected invocation must not touch: the scratch tree
# (workspace, its parent, bind sources) with owners, modes and contents.
scratch_state() {
    (cd "$T" && find . -printf '%p %y %s %m %u:%g %l\n' | sort &&
        find . -type f -exec md5sum {} + | sort)
}

# assert_rejected ARGS... : run "$AJ" ARGS..., expect a clean 125.
assert_rejected() {
    local before after
    before=$(scratch_state)
    run --separate-stderr aj_timeout "$AJ" "$@"
    if [ "$status" != 125 ]; then
        _aj_dump
        fail "agentjail $* : expected exit 125, got $status"
    fi
    assert_one_error_line || fail "for: agentjail $*"
    if [ -n "$output" ]; then
        _aj_dump
        fail "agentjail $* : printed on stdout"
    fi
    after=$(scratch_state)
    assert_eq "$after" "$before" "scratch tree after: agentjail $*"
}

@test "unknown option" {
    assert_rejected run --workspace "$WS" --frobnicate -- /bin/true
}

@test "unknown subcommand" {
    assert_rejected frobnicate
}

@test "option missing its value" {
    assert_rejected run --workspace
}

@test "missing command (no -- and nothing after run)" {
    assert_rejected run --workspace "$WS"
}

@test "missing command after --" {
    assert_rejected run --workspace "$WS" --
}

@test "missing workspace directory" {
    assert_rejected run --workspace "$T/does-not-exist" -- /bin/true
    [ ! -e "$T/does-not-exist" ] || fail "agentjail created the missing workspace"
}

@test "workspace is a file, not a directory" {
    echo x >"$T/afile"
    assert_rejected run --workspace "$T/afile" -- /bin/true
}

@test "relative workspace path" {
    mkdir "$T/rel"
    cd "$T"
    assert_rejected run --workspace rel -- /bin/true
}

@test "workspace path with .." {
    assert_rejected run --workspace "$WS/../ws" -- /bin/true
}

@test "symlinked workspace" {
    ln -s "$WS" "$T/wslink"
    assert_rejected run --workspace "$T/wslink" -- /bin/true
}

@test "workspace below a symlinked directory" {
    ln -s "$T" "$BATS_TEST_TMPDIR/tlink"
    assert_rejected run --workspace "$BATS_TEST_TMPDIR/tlink/ws" -- /bin/true
}

@test "--ro with a missing source" {
    assert_rejected run --workspace "$WS" --ro "$T/missing:/data" -- /bin/true
}

@test "--rw with a missing source" {
    assert_rejected run --workspace "$WS" --rw "$T/missing:/data" -- /bin/true
}

@test "--ro with a relative source or destination, or .. in it" {
    mkdir "$T/src"
    cd "$T"
    assert_rejected run --workspace "$WS" --ro "src:/data" -- /bin/true
    assert_rejected run --workspace "$WS" --ro "$T/src:data" -- /bin/true
    assert_rejected run --workspace "$WS" --ro "$T/src:/data/../etc" -- /bin/true
    assert_rejected run --workspace "$WS" --ro "$T/../t/src:/data" -- /bin/true
}

@test "--user garbage" {
    local u
    for u in abc -1 1:x 1:2:3 "" 99999999999; do
        assert_rejected run --workspace "$WS" --user "$u" -- /bin/true
    done
}

@test "--cpus garbage" {
    local c
    for c in abc -1 0 1.2.3 ""; do
        assert_rejected run --workspace "$WS" --cpus "$c" -- /bin/true
    done
}

@test "--memory, --pids, --tmp-size garbage" {
    assert_rejected run --workspace "$WS" --memory 12q -- /bin/true
    assert_rejected run --workspace "$WS" --memory -5M -- /bin/true
    assert_rejected run --workspace "$WS" --pids many -- /bin/true
    assert_rejected run --workspace "$WS" --pids -3 -- /bin/true
    assert_rejected run --workspace "$WS" --tmp-size lots -- /bin/true
}

@test "--env with an invalid name; --env-file missing" {
    assert_rejected run --workspace "$WS" --env =value -- /bin/true
    assert_rejected run --workspace "$WS" --env "1BAD=x" -- /bin/true
    assert_rejected run --workspace "$WS" --env-file "$T/no-such-envfile" -- /bin/true
}

@test "--cwd relative" {
    assert_rejected run --workspace "$WS" --cwd tmp -- /bin/true
}

@test "--hostname invalid" {
    assert_rejected run --workspace "$WS" --hostname "$(printf 'h%.0s' {1..80})" -- /bin/true
    assert_rejected run --workspace "$WS" --hostname "a/b" -- /bin/true
}

@test "--rootfs missing or not a directory" {
    assert_rejected run --workspace "$WS" --rootfs "$T/no-rootfs" -- /bin/true
    echo x >"$T/rootfs-file"
    assert_rejected run --workspace "$WS" --rootfs "$T/rootfs-file" -- /bin/true
}

@test "--cwd to a directory that does not exist inside" {
    assert_rejected run --workspace "$WS" --cwd /no/such/dir -- /bin/true
}

@test "binds over paths agentjail manages (/, /proc, /workspace)" {
    mkdir "$T/src"
    assert_rejected run --workspace "$WS" --ro "$T/src:/" -- /bin/true
    assert_rejected run --workspace "$WS" --ro "$T/src:/proc" -- /bin/true
    assert_rejected run --workspace "$WS" --rw "$T/src:/workspace" -- /bin/true
}
