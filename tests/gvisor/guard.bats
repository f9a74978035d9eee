#!/usr/bin/env bats
# Level 2 keeps the workspace's host-run files read-only as level 1 does
# (tests/security/workspace_guard.bats, docs/security.md "Files the host
# runs"): .git/config, hooks, core.hooksPath, .vscode, .idea, .mcp.json ...
# can't be written, created, renamed or replaced inside gVisor, .git can't
# be moved or removed, git add/commit/checkout -b/stash still work, and
# nothing is left on the host. The workspace belongs to a user (4242), as a
# developer's does: the sandbox user writes as that user there.

load ../security/helpers
load ../security/guard_helpers

setup() {
    require_root
    command -v runsc >/dev/null || skip "runsc is not installed (apt-get install runsc)"
    aj_setup
}

teardown() { aj_teardown; }

gv() {
    timeout -k 5 "$AJ_TIMEOUT" "$AJ" run --isolation gvisor --workspace "$WS" "$@" </dev/null
}

own_ws() { chown -R 4242:4343 "$WS" "$T/outside" 2>/dev/null || chown -R 4242:4343 "$WS"; }

hgit() { git -c safe.directory='*' -C "$WS" "$@"; }

@test "gvisor guard: host-run files can't be written, created, renamed or replaced" {
    make_repo "$WS"
    write_hostile "$T/hostile.sh"
    own_ws
    listing "$WS" "$T/outside" >"$T/before"
    run --separate-stderr gv --ro "$T/hostile.sh:/hostile.sh" -- /hostile.sh
    assert_status 0
    # gVisor answers a chmod of a read-only host file with success without
    # doing it (its gofer's error is not passed on): the listing below
    # proves the host's mode unchanged
    output=${output//config_chmod=ESCAPED/config_chmod=blocked}
    mapfile -t lines <<<"$output"
    assert_none_escaped
    listing "$WS" "$T/outside" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
    assert_no_placeholder "$WS"
}

@test "gvisor guard: git add, commit, checkout -b and stash work inside" {
    make_repo "$WS"
    own_ws
    local cfg
    cfg=$(sha256sum <"$WS/.git/config")
    run --separate-stderr gv -- sh -c '
        set -e
        echo change >>file.txt && echo new >new.txt
        git add file.txt new.txt
        git -c core.hooksPath=/dev/null commit -qm inside
        git checkout -qb topic
        echo more >>file.txt
        git stash -q
        git stash list | grep -q "WIP on topic"
        git status --porcelain
        echo ok'
    assert_status 0
    assert_eq "${lines[-1]}" ok
    assert_eq "$(hgit log -1 --format=%s topic)" inside "commit on the host"
    assert_eq "$(hgit rev-parse --abbrev-ref HEAD)" topic "branch"
    hgit stash list | grep -q "WIP on topic" || fail "no stash on the host"
    assert_eq "$(sha256sum <"$WS/.git/config")" "$cfg" ".git/config"
    assert_no_placeholder "$WS"
}

@test "gvisor guard: --writable .vscode lifts exactly that one, and says so" {
    make_repo "$WS"
    own_ws
    run --separate-stderr gv --quiet --writable .vscode -- sh -c '
        echo "{}" >.vscode/tasks.json && echo vscode=written
        echo x >.mcp.json 2>/dev/null || echo mcp=blocked
        echo x >>.git/config 2>/dev/null || echo config=blocked
        mv .git .git-old 2>/dev/null || echo gitmv=blocked'
    assert_status 0
    assert_eq "$(kv vscode)" written
    assert_eq "$(kv mcp)" blocked
    assert_eq "$(kv config)" blocked
    assert_eq "$(kv gitmv)" blocked
    [[ "$stderr" == *"notice: --writable .vscode"* ]] || fail "not said on stderr: $stderr"
    [ -f "$WS/.vscode/tasks.json" ] || fail "tasks.json not on the host"
    assert_eq "$(stat -c %u "$WS/.vscode/tasks.json")" 4242 "owner of the lifted file"
    assert_no_placeholder "$WS"
}

@test "gvisor guard: a workspace that is no repository gets no .git; --writable .git allows git init" {
    echo hi >"$WS/f"
    own_ws
    run --separate-stderr gv -- sh -c 'git init -q . 2>&1; echo rc=$?; mkdir .git/hooks; echo mk=$?; mv .git x; echo mv=$?; echo x >.envrc; echo envrc=$?'
    assert_status 0
    assert_ne "$(kv rc)" 0 "git init"
    assert_ne "$(kv mk)" 0 "mkdir .git/hooks"
    assert_ne "$(kv mv)" 0 "mv .git"
    assert_ne "$(kv envrc)" 0 ".envrc"
    [ ! -e "$WS/.git" ] && [ ! -e "$WS/x" ] || fail "a .git was left on the host"
    assert_no_placeholder "$WS"
    assert_eq "$(ls -A "$WS")" f "workspace entries"
    run --separate-stderr gv --writable .git -- git init -q .
    assert_status 0
    [[ "$stderr" == *"--writable .git"* ]] || fail "--writable .git was silent: $stderr"
    [ -f "$WS/.git/config" ] || fail "git init did not make .git/config"
}

@test "gvisor guard: a .git file (gitdir:) and the git directory it names are protected" {
    git init -q --separate-git-dir="$WS/.realgit" "$WS"
    own_ws
    listing "$WS" >"$T/before"
    run --separate-stderr gv -- sh -c '
        for c in "echo x >>.git" "echo x >>.realgit/config" "echo x >.realgit/hooks/pre-commit" \
            "mv .realgit y" "mv .git y" "rm -f .git" "echo x >.realgit/commondir" "git config core.fsmonitor x"; do
            if sh -c "$c" 2>/dev/null; then echo "ESCAPED: $c"; fi
        done; echo done'
    assert_status 0
    [[ "$output" != *ESCAPED* ]] || fail "$output"
    assert_eq "${lines[-1]}" done
    listing "$WS" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
}

@test "gvisor guard: a submodule's .git file and its git directory in .git/modules are protected" {
    git init -q "$T/lib"
    git -C "$T/lib" -c user.email=a@example.invalid -c user.name=a commit -q --allow-empty -m lib
    make_repo "$WS"
    git -C "$WS" -c protocol.file.allow=always submodule add -q "$T/lib" mod 2>/dev/null
    git -C "$WS" -c core.hooksPath=/dev/null commit -qm sub
    [ -f "$WS/mod/.git" ] && [ -d "$WS/.git/modules/mod" ] || skip "git made no submodule"
    own_ws
    # the index is git's to rewrite (the chown changed the files' ctime:
    # git status inside refreshes it)
    listing "$WS" | grep -v '\./\.git/index\( \|$\)' >"$T/before"
    run --separate-stderr gv -- sh -c '
        for c in "echo gitdir: ../evil >mod/.git" "rm -f mod/.git" "mv mod mod2" \
            "echo x >>.git/modules/mod/config" "echo x >.git/modules/mod/hooks/pre-commit" \
            "mkdir .git/modules/evil"; do
            if sh -c "$c" 2>/dev/null; then echo "ESCAPED: $c"; fi
        done
        git status --porcelain >/dev/null && echo status=ok'
    assert_status 0
    [[ "$output" != *ESCAPED* ]] || fail "$output"
    assert_eq "$(kv status)" ok "git status inside"
    listing "$WS" | grep -v '\./\.git/index\( \|$\)' >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
}

@test "gvisor guard: a run that fails to start leaves no placeholder" {
    echo hi >"$WS/f"
    own_ws
    # runsc that can't start the sandbox: the run fails after the
    # placeholders are made; they go with it
    printf '#!/bin/sh\nexit 3\n' >"$T/runsc"
    chmod 0755 "$T/runsc"
    run --separate-stderr env AGENTJAIL_RUNSC="$T/runsc" "$AJ" run --isolation gvisor --workspace "$WS" -- /bin/true
    assert_ne "$status" 0
    assert_no_placeholder "$WS"
    assert_eq "$(ls -A "$WS")" f "workspace entries"
}
