#!/usr/bin/env bats
# The workspace can't plant code that the host runs later (issue 20, 1):
# .git/config, .git/hooks, the core.hooksPath directory, .git/info,
# .git/modules, .git/worktrees, .vscode, .idea, .claude, .cursor, .mcp.json,
# .envrc, .husky ... are read-only inside, also when they do not exist yet,
# and .git can't be renamed, removed or replaced. git add/commit/checkout
# -b/stash still work. --writable PATH lifts one path, never silently.
# As root and as an unprivileged caller (uid 65534), and through the service.

load helpers

NR_UID=65534

# A git repository in $1 with a config that names a hooks directory and an
# include in the workspace, a hook, .vscode with settings, a symlinked
# .idea (into the workspace) and .cursor (out of it, to $T/outside).
make_repo() { # DIR
    local d=$1
    git init -q "$d"
    git -C "$d" config user.email agent@example.invalid
    git -C "$d" config user.name agent
    git -C "$d" config core.hooksPath hooks-dir
    git -C "$d" config include.path ../inc.cfg
    mkdir -p "$d/hooks-dir" "$d/.vscode" "$d/sub/idea"
    printf '#!/bin/sh\nexit 0\n' >"$d/hooks-dir/pre-commit"
    chmod 0755 "$d/hooks-dir/pre-commit"
    printf '#!/bin/sh\nexit 0\n' >"$d/.git/hooks/post-checkout"
    echo '{"editor.fontSize": 12}' >"$d/.vscode/settings.json"
    echo '<project/>' >"$d/sub/idea/workspace.xml"
    ln -s sub/idea "$d/.idea"
    mkdir -p "$T/outside"
    ln -s "$T/outside" "$d/.cursor"
    echo hello >"$d/file.txt"
    git -C "$d" add file.txt
    git -C "$d" -c core.hooksPath=/dev/null commit -qm initial
}

# Everything below DIR, with owner, mode, size, link target and content hash:
# the before/after picture of the host's workspace (and $T/outside).
listing() { # DIR...
    local d
    for d in "$@"; do
        (cd "$d" && find . -printf '%p %u:%g %m %y %s %l\n' | sort)
        (cd "$d" && find . -type f -print0 | sort -z | xargs -0r sha256sum)
    done
}

# The hostile command: every attempt that succeeds prints NAME=ESCAPED.
write_hostile() { # FILE
    cat >"$1" <<'EOF'
#!/bin/sh
cd /workspace || exit 99
try() { n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$n=ESCAPED"; else echo "$n=blocked"; fi; }
w() { f=$1; shift; printf '%s\n' "$*" >"$f"; }
a() { f=$1; shift; printf '%s\n' "$*" >>"$f"; }
# .git/config and what it names
try config_append a .git/config '[core] fsmonitor = touch /workspace/PWNED'
try config_git git config core.fsmonitor 'touch /workspace/PWNED'
try config_hookspath git config core.hooksPath /workspace/evil
try config_rm rm -f .git/config
try config_mv mv .git/config .git/config.old
try config_link ln -sf /workspace/evil.cfg .git/config
try config_chmod chmod 0666 .git/config
try worktree_cfg w .git/config.worktree '[core] fsmonitor = x'
try commondir w .git/commondir ../evil
try include_file w inc.cfg '[core] fsmonitor = x'
try include_rm rm -f inc.cfg
# hooks, also in core.hooksPath's directory
try hook_new w .git/hooks/pre-commit '#!/bin/sh'
try hook_edit a .git/hooks/post-checkout 'touch /workspace/PWNED'
try hook_rmdir rm -rf .git/hooks
try hook_mv mv .git/hooks .git/hooks.old
try hookspath_new w hooks-dir/post-commit '#!/bin/sh'
try hookspath_edit a hooks-dir/pre-commit 'touch /workspace/PWNED'
try hookspath_mv mv hooks-dir hooks-old
try info_attr w .git/info/attributes '* filter=evil'
try modules mkdir -p .git/modules/x
try worktrees mkdir -p .git/worktrees/x
# .git itself
try git_mv mv .git .git-old
try git_rm_dir rmdir .git
try git_replace sh -c 'mkdir g2; mv -T g2 .git; r=$?; rmdir g2 2>/dev/null; exit $r'
try git_swap sh -c 'mv .git x && mkdir .git'
# editors and agent hosts: existing, missing, symlinked
try vscode_new w .vscode/tasks.json '{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}'
try vscode_edit a .vscode/settings.json '{}'
try vscode_mv mv .vscode vscode-old
try vscode_rm rm -rf .vscode
try idea_target w sub/idea/workspace.xml '<evil/>'
try idea_link_rm rm -f .idea
try cursor_link_rm rm -f .cursor
try cursor_out w .cursor/mcp.json '{}'
try claude_new sh -c 'mkdir -p .claude && echo {} >.claude/settings.json'
try claude_rmdir rmdir .claude
try mcp_json w .mcp.json '{"mcpServers":{}}'
try mcp_rm rmdir .mcp.json
try envrc w .envrc 'touch /workspace/PWNED'
try envrc_mv mv .envrc envrc-old
try envrc_link sh -c 'rmdir .envrc || ln -s /tmp/x .envrc'
try husky sh -c 'mkdir -p .husky && echo x >.husky/pre-commit'
try devcontainer w .devcontainer/devcontainer.json '{"initializeCommand":"x"}'
try precommit w .pre-commit-config.yaml 'repos: []'
try githooks w .githooks/pre-commit x
echo result=done
EOF
    chmod 0755 "$1"
}

assert_none_escaped() {
    local l n=0
    for l in "${lines[@]}"; do
        [[ "$l" == *=blocked ]] && n=$((n + 1))
        if [[ "$l" == *=ESCAPED* ]]; then
            _aj_dump
            fail "ESCAPED: $l"
        fi
    done
    [ "$(kv result)" = done ] || {
        _aj_dump
        fail "the hostile command did not finish"
    }
    [ "$n" -ge 40 ] || {
        _aj_dump
        fail "only $n attempts ran"
    }
}

# The placeholders agentjail makes for missing paths are gone afterwards.
assert_no_placeholder() { # DIR [EXCEPT]
    local p
    for p in .mcp.json .envrc .claude .husky .devcontainer .pre-commit-config.yaml .githooks \
        .zed .gemini lefthook.yml .git/commondir .git/config.worktree .git/modules .git/worktrees; do
        [ "$p" = "${2:-}" ] && continue
        if [ -e "$1/$p" ] || [ -L "$1/$p" ]; then
            ls -la "$1" >&2
            fail "placeholder $p left in the workspace"
        fi
    done
}

@test "workspace guard (root): host-run files can't be written, created, renamed or replaced" {
    make_repo "$WS"
    write_hostile "$T/hostile.sh"
    listing "$WS" "$T/outside" >"$T/before"
    run --separate-stderr timeout -k 5 60 "$AJ" run --workspace "$WS" --ro "$T/hostile.sh:/hostile.sh" -- /hostile.sh
    assert_status 0
    assert_none_escaped
    listing "$WS" "$T/outside" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
    assert_no_placeholder "$WS"
}

@test "workspace guard (root): git add, commit, checkout -b and stash work inside" {
    make_repo "$WS"
    local cfg
    cfg=$(sha256sum <"$WS/.git/config")
    run --separate-stderr timeout -k 5 60 "$AJ" run --workspace "$WS" -- sh -c '
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
    run --separate-stderr timeout -k 5 60 "$AJ" run --workspace "$WS" -- sh -c 'git init -q . 2>&1; echo rc=$?; mkdir .git/hooks; echo mk=$?; mv .git x; echo mv=$?'
    assert_status 0
    assert_ne "$(kv rc)" 0 "git init"
    assert_ne "$(kv mk)" 0 "mkdir .git/hooks"
    assert_ne "$(kv mv)" 0 "mv .git"
    [[ "$output" == *"Read-only file system"* ]] || fail "no clear reason: $output"
    [ ! -e "$WS/.git" ] && [ ! -e "$WS/x" ] || fail "a .git was left on the host"
    assert_no_placeholder "$WS"
    run --separate-stderr timeout -k 5 60 "$AJ" run --writable .git --workspace "$WS" -- git init -q .
    assert_status 0
    [[ "$stderr" == *"--writable .git"* ]] || fail "--writable .git was silent: $stderr"
    [ -f "$WS/.git/config" ] || fail "git init did not make .git/config"
}

@test "workspace guard (root): a .git file (gitdir:) and the git directory it names are protected" {
    git init -q --separate-git-dir="$WS/.realgit" "$WS"
    git -C "$WS" config user.email a@example.invalid
    listing "$WS" >"$T/before"
    run --separate-stderr timeout -k 5 60 "$AJ" run --workspace "$WS" -- sh -c '
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

@test "workspace guard (root): --writable .vscode lifts exactly that one, and says so" {
    make_repo "$WS"
    run --separate-stderr timeout -k 5 60 "$AJ" run --quiet --writable .vscode --workspace "$WS" -- sh -c '
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
    listing "$WS" >"$T/before"
    local v
    for v in /etc .. ../x .vscode/../src src file.txt '' ./.vscode .git//hooks; do
        run --separate-stderr "$AJ" run --writable "$v" --workspace "$WS" -- touch /workspace/ran
        assert_status 125
        [[ "$stderr" == *"--writable"* ]] || fail "unclear message for '$v': $stderr"
    done
    run --separate-stderr "$AJ" run --writable .vscode -- true
    assert_status 125
    [[ "$stderr" == *"no --workspace"* ]] || fail "$stderr"
    listing "$WS" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
}

@test "workspace guard (root): placeholders of a run that was killed are removed by the next" {
    echo hi >"$WS/f"
    timeout -k 5 60 "$AJ" run --workspace "$WS" -- sleep 30 &
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
    run --separate-stderr timeout -k 5 60 "$AJ" run --workspace "$T/other" -- true
    assert_status 0
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

nr_aj() {
    (cd "$NRWS" && exec timeout -k 5 60 setpriv --reuid="$NR_UID" --regid="$NR_UID" --clear-groups \
        --inh-caps=-all env -i PATH=/usr/bin:/bin HOME="$NRWS" LANG=C "$NRDIR/agentjail" "$@" </dev/null)
}

@test "workspace guard (unprivileged): host-run files can't be written, created, renamed or replaced" {
    nr_prepare
    T=$NRDIR make_repo "$NRWS"
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
