#!/usr/bin/env bats
# The workspace can't plant code that the host runs later (issue 20, 1):
# .git/config, .git/hooks, the core.hooksPath directory, .git/info,
# .git/modules, .git/worktrees, .vscode, .idea, .claude, .cursor, .mcp.json,
# .envrc, .husky ... are read-only inside, also when they do not exist yet,
# and .git can't be renamed, removed or replaced. git add/commit/checkout
# -b/stash still work. --writable PATH lifts one path, never silently.
# As root and as an unprivileged caller (uid 65534), and through the service.

load helpers
load guard_helpers

NR_UID=65534

# Level 2 never maps host root: a root-owned repository is read-only there
# (docs/levels.md "Identity"), so the guard is tried on a user's, as
# tests/gvisor/guard.bats does.
# (The test's own git on the host then reads a repository of another
# user's: safe.directory for it, through the environment, not inside.)
repo_for_level() { # DIR
    if at_level gvisor; then
        chown -R 4242:4242 "$1"
        export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'
    fi
}

# Level 2 needs root (runsc's rootless mode is not wired in): an
# unprivileged caller is refused with the fix, nothing is made.
nr_refused_at_level2() {
    at_level gvisor || return 1
    run --separate-stderr nr_aj run --quiet --workspace "$NRWS" -- true
    assert_status 125
    assert_contains "$stderr" "isolation level gvisor is not usable here: it needs root"
    assert_no_placeholder "$NRWS"
}

@test "workspace guard (root): host-run files can't be written, created, renamed or replaced" {
    make_repo "$WS"
    repo_for_level "$WS"
    write_hostile "$T/hostile.sh"
    listing "$WS" "$T/outside" >"$T/before"
    run --separate-stderr timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" --ro "$T/hostile.sh:/hostile.sh" -- /hostile.sh
    assert_status 0
    if at_level gvisor; then
        # gVisor answers a chmod of a read-only host file with success, the
        # host file unchanged (the listing below compares its mode)
        assert_output_has_line config_chmod=ESCAPED
        output=${output//config_chmod=ESCAPED/config_chmod=blocked}
        mapfile -t lines <<<"$output"
    fi
    assert_none_escaped
    listing "$WS" "$T/outside" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
    assert_no_placeholder "$WS"
}

@test "workspace guard (root): git add, commit, checkout -b and stash work inside" {
    make_repo "$WS"
    repo_for_level "$WS"
    local cfg
    cfg=$(sha256sum <"$WS/.git/config")
    run --separate-stderr timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" -- sh -c '
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
    assert_eq "$(git -C "$WS" log -1 --format=%s topic)" inside "commit on the host"
    assert_eq "$(git -C "$WS" rev-parse --abbrev-ref HEAD)" topic "branch"
    git -C "$WS" stash list | grep -q "WIP on topic" || fail "no stash on the host"
    assert_eq "$(sha256sum <"$WS/.git/config")" "$cfg" ".git/config"
    assert_no_placeholder "$WS"
}

@test "workspace guard (root): a workspace that is no repository gets no .git; --writable .git allows git init" {
    echo hi >"$WS/f"
    repo_for_level "$WS"
    run --separate-stderr timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" -- sh -c 'git init -q . 2>&1; echo rc=$?; mkdir .git/hooks; echo mk=$?; mv .git x; echo mv=$?'
    assert_status 0
    assert_ne "$(kv rc)" 0 "git init"
    assert_ne "$(kv mk)" 0 "mkdir .git/hooks"
    assert_ne "$(kv mv)" 0 "mv .git"
    [[ "$output" == *"Read-only file system"* ]] || fail "no clear reason: $output"
    [ ! -e "$WS/.git" ] && [ ! -e "$WS/x" ] || fail "a .git was left on the host"
    assert_no_placeholder "$WS"
    run --separate-stderr timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --writable .git --workspace "$WS" -- git init -q .
    assert_status 0
    [[ "$stderr" == *"--writable .git"* ]] || fail "--writable .git was silent: $stderr"
    [ -f "$WS/.git/config" ] || fail "git init did not make .git/config"
}

@test "workspace guard (root): a .git file (gitdir:) and the git directory it names are protected" {
    git init -q --separate-git-dir="$WS/.realgit" "$WS"
    git -C "$WS" config user.email a@example.invalid
    repo_for_level "$WS"
    listing "$WS" >"$T/before"
    run --separate-stderr timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" -- sh -c '
        for c in "echo x >>.git" "echo x >>.realgit/config" "echo x >.realgit/hooks/pre-commit" \
            "mv .realgit y" "mv .git y" "echo x >.realgit/commondir" "git config core.fsmonitor x"; do
            if sh -c "$c" 2>/dev/null; then echo "ESCAPED: $c"; fi
        done; echo done'
    assert_status 0
    [[ "$output" != *ESCAPED* ]] || fail "$output"
    assert_eq "${lines[-1]}" done
    listing "$WS" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
}

@test "workspace guard (root): a submodule's .git file and its git directory in .git/modules are protected" {
    git init -q "$T/lib"
    git -C "$T/lib" -c user.email=a@example.invalid -c user.name=a commit -q --allow-empty -m lib
    make_repo "$WS"
    git -C "$WS" -c protocol.file.allow=always submodule add -q "$T/lib" mod 2>/dev/null
    git -C "$WS" -c core.hooksPath=/dev/null commit -qm sub
    repo_for_level "$WS"
    [ -f "$WS/mod/.git" ] && [ -d "$WS/.git/modules/mod" ] || skip "git made no submodule"
    listing "$WS" >"$T/before"
    run --separate-stderr timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" -- sh -c '
        for c in "echo gitdir: ../evil >mod/.git" "rm -f mod/.git" "mv mod mod2" \
            "echo x >>.git/modules/mod/config" "echo x >.git/modules/mod/hooks/pre-commit" \
            "mkdir .git/modules/evil"; do
            if sh -c "$c" 2>/dev/null; then echo "ESCAPED: $c"; fi
        done
        git status --porcelain >/dev/null && echo status=ok'
    assert_status 0
    [[ "$output" != *ESCAPED* ]] || fail "$output"
    assert_eq "$(kv status)" ok "git status inside"
    listing "$WS" >"$T/after"
    if at_level gvisor; then
        # git status inside refreshes the index's cached stat data (the
        # gofer's inode numbers differ from the host's): the index is the
        # sandbox's to write, no host-run file
        local f
        for f in "$T/before" "$T/after"; do grep -Ev ' \./\.git/index( |$)' "$f" >"$f.x"; mv "$f.x" "$f"; done
    fi
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
}

@test "workspace guard (root): --writable .vscode lifts exactly that one, and says so" {
    make_repo "$WS"
    repo_for_level "$WS"
    run --separate-stderr timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --quiet --writable .vscode --workspace "$WS" -- sh -c '
        echo "{}" >.vscode/tasks.json && echo vscode=written
        echo x >.mcp.json 2>/dev/null || echo mcp=blocked
        echo x >>.git/config 2>/dev/null || echo config=blocked'
    assert_status 0
    assert_eq "$(kv vscode)" written
    assert_eq "$(kv mcp)" blocked
    assert_eq "$(kv config)" blocked
    [[ "$stderr" == *"notice: --writable .vscode"* ]] || fail "not said on stderr: $stderr"
    [ -f "$WS/.vscode/tasks.json" ] || fail "tasks.json not on the host"
    assert_no_placeholder "$WS"
}

@test "workspace guard: bad --writable values are refused with exit 125, nothing changed" {
    make_repo "$WS"
    repo_for_level "$WS"
    listing "$WS" >"$T/before"
    local v
    for v in /etc .. ../x .vscode/../src src file.txt '' ./.vscode .git//hooks; do
        run --separate-stderr "$AJ" run "${AJ_LEVEL[@]}" --writable "$v" --workspace "$WS" -- touch /workspace/ran
        assert_status 125
        [[ "$stderr" == *"--writable"* ]] || fail "unclear message for '$v': $stderr"
    done
    run --separate-stderr "$AJ" run "${AJ_LEVEL[@]}" --writable .vscode -- true
    assert_status 125
    [[ "$stderr" == *"no --workspace"* ]] || fail "$stderr"
    listing "$WS" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
}

@test "workspace guard: a core.hooksPath agentjail can't follow safely fails the run (125), nothing left" {
    make_repo "$WS"
    repo_for_level "$WS"
    git -C "$WS" config core.hooksPath missing/../hooks
    listing "$WS" >"$T/before"
    run --separate-stderr timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" -- touch /workspace/ran
    assert_status 125
    [[ "$stderr" == *"missing/../hooks"* ]] || fail "unclear: $stderr"
    listing "$WS" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
}

@test "workspace guard (root): placeholders of a run that was killed are removed by the next" {
    echo hi >"$WS/f"
    timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" -- sleep 30 &
    AJ_BG_PID=$!
    local i
    for i in $(seq 100); do [ -d "$WS/.mcp.json" ] && break; sleep 0.05; done
    [ -d "$WS/.mcp.json" ] || fail "no placeholder while running"
    sleep 0.3
    kill -KILL "$(tail -1 "$AJ_PIDS_FILE")"
    wait "$AJ_BG_PID" 2>/dev/null || true
    for i in $(seq 50); do [ -z "$(sandbox_pids_named sleep)" ] && break; sleep 0.1; done
    [ -d "$WS/.mcp.json" ] || skip "the killed run cleaned up after all"
    mkdir -p "$T/other"
    run --separate-stderr timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --workspace "$T/other" -- true
    assert_status 0
    assert_no_placeholder "$WS"
    assert_eq "$(ls -A "$WS")" f "workspace entries"
}

@test "workspace guard (root): two runs on one workspace share the placeholders; the last removes them" {
    echo hi >"$WS/f"
    timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" -- sleep 1 &
    AJ_BG_PID=$!
    local i
    for i in $(seq 100); do [ -d "$WS/.mcp.json" ] && break; sleep 0.05; done
    # the second outlives the first: its .git and .mcp.json stay protected
    run --separate-stderr timeout -k 5 60 "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" -- sh -c '
        sleep 2
        mkdir .git/hooks 2>/dev/null && echo git=ESCAPED
        echo x >.mcp.json 2>/dev/null && echo mcp=ESCAPED
        mv .envrc x 2>/dev/null && echo envrc=ESCAPED
        [ -d .git ] && [ -d .mcp.json ] && echo still=there'
    wait "$AJ_BG_PID"
    assert_status 0
    [[ "$output" != *ESCAPED* ]] || fail "$output"
    assert_eq "$(kv still)" there "placeholders after the first run ended"
    assert_no_placeholder "$WS"
    assert_eq "$(ls -A "$WS")" f "workspace entries"
}

# ---- unprivileged caller ----

nr_prepare() {
    command -v setpriv >/dev/null || skip "setpriv not installed"
    NRDIR=$(mktemp -d /tmp/ajtest-guard.XXXXXX)
    AJ_MARKERS+=("$(basename "$NRDIR")")
    AJ_EXTRA_UID=$NR_UID
    chmod 0755 "$NRDIR"
    aj_copy_programs "$NRDIR"
    NRWS=$NRDIR/ws
    if ! setpriv --reuid="$NR_UID" --regid="$NR_UID" --clear-groups --inh-caps=-all unshare --user --map-root-user true 2>/dev/null; then
        skip "unprivileged user namespaces are not available on this host"
    fi
}

# (no cgroup is delegated to uid 65534 here: limits fail closed without --limits best-effort)
nr_aj() {
    (cd "$NRWS" && exec timeout -k 5 60 setpriv --reuid="$NR_UID" --regid="$NR_UID" --clear-groups \
        --inh-caps=-all env -i PATH=/usr/bin:/bin HOME="$NRWS" LANG=C "$NRDIR/agentjail" "$1" "${AJ_LEVEL[@]}" --limits best-effort "${@:2}" </dev/null)
}

@test "workspace guard (unprivileged): host-run files can't be written, created, renamed or replaced" {
    nr_prepare
    T=$NRDIR make_repo "$NRWS"
    if nr_refused_at_level2; then return; fi
    write_hostile "$NRDIR/hostile.sh"
    chown -R "$NR_UID:$NR_UID" "$NRWS" "$NRDIR/outside"
    listing "$NRWS" "$NRDIR/outside" >"$T/before"
    run --separate-stderr nr_aj run --quiet --workspace "$NRWS" --ro "$NRDIR/hostile.sh:/hostile.sh" -- /hostile.sh
    assert_status 0
    assert_none_escaped
    listing "$NRWS" "$NRDIR/outside" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
    assert_no_placeholder "$NRWS"
}

@test "workspace guard (unprivileged): git works inside, --writable lifts one path" {
    nr_prepare
    T=$NRDIR make_repo "$NRWS"
    if nr_refused_at_level2; then return; fi
    chown -R "$NR_UID:$NR_UID" "$NRWS" "$NRDIR/outside"
    run --separate-stderr nr_aj run --quiet --writable .claude --workspace "$NRWS" -- sh -c '
        set -e
        git config --global --add safe.directory "*" 2>/dev/null || true
        echo change >>file.txt
        git -c safe.directory="*" add file.txt
        git -c safe.directory="*" -c core.hooksPath=/dev/null commit -qm inside
        git -c safe.directory="*" checkout -qb topic
        echo more >>file.txt
        git -c safe.directory="*" stash -q
        mkdir -p .claude && echo "{}" >.claude/settings.json
        if echo x >.mcp.json 2>/dev/null; then echo mcp=ESCAPED; fi
        echo ok'
    assert_status 0
    assert_eq "${lines[-1]}" ok
    [[ "$stderr" == *"notice: --writable .claude"* ]] || fail "not said: $stderr"
    assert_eq "$(git -C "$NRWS" -c safe.directory='*' log -1 --format=%s topic)" inside
    assert_eq "$(stat -c %u "$NRWS/.claude/settings.json")" "$NR_UID" "owner of the lifted file"
    assert_no_placeholder "$NRWS" .claude
}

teardown() {
    local rc=0
    aj_teardown || rc=1
    [ -n "${NRDIR:-}" ] && [ -d "$NRDIR" ] && rm -rf --one-file-system "$NRDIR"
    return $rc
}
