#!/usr/bin/env bats
# The service's sandboxes: a workspace's host-run files (.git/config, hooks,
# .vscode, .mcp.json ...) are read-only for its commands and for the files
# API; "writable" in the create body lifts one path and the sandbox's JSON
# says so (issue 20, 1; tests/security/workspace_guard.bats for the rest).

load helpers
load ../security/guard_helpers

# A box's teardown may end after DELETE answers.
wait_no_placeholder() { # DIR
    local i
    for i in $(seq 50); do
        [ -e "$1/.mcp.json" ] || break
        sleep 0.1
    done
    assert_no_placeholder "$1"
}

@test "serve: a sandbox's commands and the files API can't plant host-run files in the workspace" {
    make_repo "$WS"
    write_hostile "$T/hostile.sh"
    listing "$WS" "$T/outside" >"$T/before"
    svc_start
    id=$(sb_create "{\"workspace\": \"$WS\", \"ro\": [\"$T/hostile.sh:/hostile.sh\"]}")
    [ -n "$id" ] || fail "no sandbox"
    out=$(sb_exec "$id" '{"cmd": ["/hostile.sh"]}')
    mapfile -t lines < <(events_stdout <<<"$out")
    output=$(events_stdout <<<"$out")
    assert_none_escaped
    api GET "/v1/sandboxes/$id" | jq -e '.writable == []' >/dev/null || fail "writable not []"
    # the files API writes as the sandbox does
    api_status PUT "/v1/sandboxes/$id/files?path=/workspace/.vscode/tasks.json" --data-binary '{}'
    [ "$status_code" -ge 400 ] || fail "files API wrote .vscode/tasks.json ($status_code)"
    api_status PUT "/v1/sandboxes/$id/files?path=/workspace/.git/hooks/pre-commit" --data-binary 'x'
    [ "$status_code" -ge 400 ] || fail "files API wrote a hook ($status_code)"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    wait_no_placeholder "$WS"
    listing "$WS" "$T/outside" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
    assert_no_placeholder "$WS"
}

@test "serve: \"writable\" lifts one path and shows in the sandbox's JSON; a bad one is a 400" {
    make_repo "$WS"
    svc_start
    api_status POST /v1/sandboxes -d "{\"workspace\": \"$WS\", \"writable\": [\"src\"]}"
    assert_eq "$status_code" 400
    [[ "$(jq -r .error.message <<<"$body")" == *"not a protected path"* ]] || fail "$body"
    api_status POST /v1/sandboxes -d "{\"workspace\": \"$WS\", \"writable\": \"../x\"}"
    assert_eq "$status_code" 400
    assert_no_placeholder "$WS"
    api_status POST /v1/sandboxes -d "{\"workspace\": \"$WS\", \"writable\": [\".vscode\"]}"
    assert_eq "$status_code" 201
    id=$(jq -r .id <<<"$body")
    assert_eq "$(jq -c .writable <<<"$body")" '[".vscode"]' "writable in the create's answer"
    out=$(sb_exec "$id" '{"cmd": "echo {} >/workspace/.vscode/tasks.json && echo ok; echo x >/workspace/.mcp.json || echo mcp=blocked"}')
    [[ "$(events_stdout <<<"$out")" == *ok*mcp=blocked* ]] || fail "$out"
    # git still works for the sandbox's commands
    out=$(sb_exec "$id" '{"cmd": "cd /workspace && echo x >>file.txt && git add file.txt && git -c core.hooksPath=/dev/null commit -qm svc && git checkout -qb topic && echo y >>file.txt && git stash -q && echo committed"}')
    [[ "$(events_stdout <<<"$out")" == *committed* ]] || fail "git: $out"
    assert_eq "$(git -C "$WS" log -1 --format=%s)" svc "the commit on the host"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    wait_no_placeholder "$WS"
    [ -f "$WS/.vscode/tasks.json" ] || fail "tasks.json not written"
    assert_no_placeholder "$WS"
}

@test "serve: a credential file is masked value by value; \"unmask\" shows it as it is and in the sandbox's JSON; a bad one is a 400" {
    local c="ajcanary-$RANDOM$RANDOM-svc"
    printf 'registry=http://registry.test/\n//registry.test/:_authToken=%s\n' "$c" >"$WS/.npmrc"
    svc_start
    id=$(sb_create "{\"workspace\": \"$WS\"}")
    [ -n "$id" ] || fail "no sandbox"
    out=$(events_stdout <<<"$(sb_exec "$id" '{"cmd": "cat /workspace/.npmrc"}')")
    [[ "$out" == *"registry=http://registry.test/"*"_authToken=agentjail-masked"* ]] || fail "masked: $out"
    [[ "$out" != *"$c"* ]] || fail "the token is visible: $out"
    api GET "/v1/sandboxes/$id" | jq -e '.unmasked == []' >/dev/null || fail "unmasked not []"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    for bad in '"../x"' '["/etc/passwd"]' '["*.npmrc"]' '["a//b"]'; do
        api_status POST /v1/sandboxes -d "{\"workspace\": \"$WS\", \"unmask\": $bad}"
        assert_eq "$status_code" 400 "unmask $bad"
    done
    api_status POST /v1/sandboxes -d "{\"workspace\": \"$WS\", \"unmask\": [\".npmrc\"]}"
    assert_eq "$status_code" 201
    id=$(jq -r .id <<<"$body")
    assert_eq "$(jq -c .unmasked <<<"$body")" '[".npmrc"]' "unmasked in the create's answer"
    out=$(events_stdout <<<"$(sb_exec "$id" '{"cmd": "cat /workspace/.npmrc"}')")
    [[ "$out" == *"_authToken=$c"* ]] || fail "unmasked: $out"
    api DELETE "/v1/sandboxes/$id" >/dev/null
}
