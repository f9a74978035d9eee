# Helpers of workspace_guard.bats (tests/security and tests/service): a
# repository with host-run files, a hostile command against them, and a
# before/after listing of the host workspace.

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
try idea_parent_mv sh -c 'mv sub sub-old && mkdir -p sub/idea && echo x >sub/idea/workspace.xml'
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
try mise w mise.toml '[hooks]'
try aider w .aider.conf.yml 'test-cmd: x'
try continue_dir w .continue/config.yaml 'mcpServers: []'
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
    for p in .mcp.json .envrc .claude .husky .devcontainer .pre-commit-config.yaml .githooks .continue mise.toml \
        .zed .gemini lefthook.yml .git/commondir .git/config.worktree .git/modules .git/worktrees; do
        [ "$p" = "${2:-}" ] && continue
        if [ -e "$1/$p" ] || [ -L "$1/$p" ]; then
            ls -la "$1" >&2
            fail "placeholder $p left in the workspace"
        fi
    done
}

