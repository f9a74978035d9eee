#!/usr/bin/env bats
# Level 2 in the service: a gVisor sandbox that lives across commands,
# behind the same API as level 1 (docs/levels.md, "Level 2 in the
# service"); what level 2 lacks is 501, a level that can't run here 409,
# never a silent level 1.

load ../service/helpers

gv_create() { # [JSON]
    api POST /v1/sandboxes -d "${1:-{\"isolation\": \"gvisor\"\}}" | jq -er .id
}

# No runsc process, bundle or cgroup of a gVisor sandbox is left.
gv_none_left() {
    local left
    left=$(pgrep -a -f 'runsc.*--root=' || true)
    [ -z "$left" ] || fail "runsc processes left: $left"
}

@test "serve gvisor: commands share the sandbox's state; exit codes, stdin, timeout, redaction as level 1" {
    svc_start
    id=$(gv_create '{"isolation": "gvisor", "secret": {"TOKEN": "s3cr3t-value-91"}}')
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$(jq -r .isolation <<<"$body")" gvisor "the sandbox's level"
    # the Sentry's kernel, not the host's: gVisor's dmesg says so
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "dmesg 2>/dev/null | head -n1; echo 41 > /tmp/x"]}')
    [[ "$(events_stdout <<<"$out")" == *"gVisor"* ]] || fail "not gVisor: $out"
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "echo $(( $(cat /tmp/x) + 1 ))"]}')
    assert_eq "$(events_stdout <<<"$out")" "42" "a file written by the exec before"
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "exit 3"]}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 3 "exit code"
    out=$(sb_exec "$id" '{"cmd": ["cat"], "stdin": "from stdin\n"}')
    assert_eq "$(events_stdout <<<"$out")" "from stdin" "stdin"
    out=$(sb_exec "$id" '{"cmd": ["sleep", "30"], "timeout": 1}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 124 "timeout"
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "echo $TOKEN; cat /proc/self/environ"]}')
    [[ "$out" != *"s3cr3t-value-91"* ]] || fail "the secret's value came out: $out"
    out=$(sb_exec "$id" '{"cmd": ["/no/such/command"]}')
    [[ "$out" == *"127"* ]] || fail "a missing command: $out"
    api_status DELETE "/v1/sandboxes/$id"
    assert_eq "$status_code" 200
    gv_none_left
}

@test "serve gvisor: a workspace or --rw bind is refused (501): runsc exec's commands lack the setid filter" {
    svc_start
    mkdir "$BATS_TEST_TMPDIR/ws"
    api_status POST /v1/sandboxes -d "{\"isolation\": \"gvisor\", \"workspace\": \"$BATS_TEST_TMPDIR/ws\"}"
    assert_eq "$status_code" 501 "create with a workspace: $body"
    assert_eq "$(jq -r .error.code <<<"$body")" not_supported
    assert_contains "$body" "setuid"
    api_status POST /v1/sandboxes -d "{\"isolation\": \"gvisor\", \"rw\": \"$BATS_TEST_TMPDIR/ws:/data\"}"
    assert_eq "$status_code" 501 "create with --rw: $body"
    [ -z "$(ls -A "$BATS_TEST_TMPDIR/ws")" ] || fail "the refused create changed the workspace"
    api_status GET /v1/sandboxes
    assert_eq "$(jq -r 'if type == "array" then length else (.sandboxes | length) end' <<<"$body")" 0 "sandboxes after the refused creates"
}

@test "serve gvisor: files through the sandbox's own kernel; kernel file systems refused" {
    svc_start
    id=$(gv_create)
    printf 'hello from the host\n' >"$BATS_TEST_TMPDIR/up.txt"
    api_status PUT "/v1/sandboxes/$id/files?path=/tmp/up.txt" --data-binary @"$BATS_TEST_TMPDIR/up.txt"
    [ "$status_code" = 200 ] || [ "$status_code" = 201 ] || fail "upload: $status_code $body"
    out=$(sb_exec "$id" '{"cmd": ["cat", "/tmp/up.txt"]}')
    assert_eq "$(events_stdout <<<"$out")" "hello from the host" "the upload inside"
    sb_exec "$id" '{"cmd": ["sh", "-c", "head -c 3000000 /dev/zero | tr \"\\0\" a > /tmp/big"]}' >/dev/null
    api GET "/v1/sandboxes/$id/files?path=/tmp/big" -o "$BATS_TEST_TMPDIR/big"
    assert_eq "$(stat -c %s "$BATS_TEST_TMPDIR/big")" 3000000 "a 3 MB download"
    api_status POST "/v1/sandboxes/$id/mkdir?path=/tmp/a/b&parents=true"
    [ "$status_code" -lt 300 ] || fail "mkdir: $status_code $body"
    api_status GET "/v1/sandboxes/$id/files?path=/tmp"
    jq -e '.entries | map(.name) | index("up.txt") and index("a") and index("big")' <<<"$body" >/dev/null ||
        fail "listing: $body"
    api_status DELETE "/v1/sandboxes/$id/files?path=/tmp/a&recursive=true"
    assert_eq "$status_code" 200 "rm -r: $body"
    api_status GET "/v1/sandboxes/$id/files?path=/proc/self/environ"
    assert_eq "$status_code" 403 "a kernel file system: $body"
    # the sandbox's /etc/shadow is the sandbox's (no host file through a link)
    sb_exec "$id" '{"cmd": ["ln", "-s", "/etc/shadow", "/tmp/link"]}' >/dev/null
    api_status GET "/v1/sandboxes/$id/files?path=/tmp/link"
    [[ "$body" != *"root:"* ]] || fail "the host's /etc/shadow through a link: $body"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    gv_none_left
}

@test "serve gvisor: pause and resume; snapshot and fork answer 501 with the reason" {
    svc_start
    id=$(gv_create)
    api_status POST "/v1/sandboxes/$id/pause"
    assert_eq "$status_code" 200 "pause: $body"
    api_status POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["true"]}'
    assert_eq "$status_code" 409 "exec while paused"
    api_status POST "/v1/sandboxes/$id/resume"
    assert_eq "$status_code" 200 "resume: $body"
    out=$(sb_exec "$id" '{"cmd": ["echo", "awake"]}')
    assert_eq "$(events_stdout <<<"$out")" awake "exec after resume"
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "gv-snap"}'
    assert_eq "$status_code" 501 "snapshot: $body"
    assert_eq "$(jq -r .error.code <<<"$body")" not_supported
    assert_contains "$body" "gvisor"
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 1}'
    assert_eq "$status_code" 501 "fork: $body"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    gv_none_left
}

@test "serve gvisor: a terminal (sandbox exec -t) with its size" {
    svc_start
    id=$(gv_create)
    run timeout 30 script -qec "stty rows 33 cols 101; '$AJ' sandbox --socket '$SOCK' exec -t '$id' -- sh -c 'tty; stty size; exit 5'" /dev/null
    assert_status 5
    [[ "$output" == *"/dev/pts/"* ]] || fail "no terminal: $output"
    [[ "$output" == *"33 101"* ]] || fail "the terminal's size did not come in: $output"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    gv_none_left
}

@test "serve gvisor: a pool of level 2 serves level-2 creates only" {
    svc_start --pool gvisor:default=1
    for _ in $(seq 200); do
        [ "$(api GET /v1/pools | jq -r '.pools[] | select(.isolation == "gvisor") | .ready')" = 1 ] && break
        sleep 0.1
    done
    id=$(gv_create)
    assert_eq "$(api GET /v1/pools | jq -r '.pools[] | select(.isolation == "gvisor") | .hits')" 1 "pool hits"
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r .isolation)" gvisor
    id1=$(sb_create '{}')
    assert_eq "$(api GET "/v1/sandboxes/$id1" | jq -r .isolation)" process "a level-1 create from a level-2 pool"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    api DELETE "/v1/sandboxes/$id1" >/dev/null
}

@test "serve gvisor: a SIGKILLed service's level-2 sandboxes are swept at the next start" {
    svc_start
    id=$(gv_create)
    sb_exec "$id" '{"cmd": ["true"]}' >/dev/null
    _svc_record_keepers
    kill -KILL "$SVC_PID"
    wait "$SVC_PID" 2>/dev/null || true
    SVC_PID=
    svc_start
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$status_code" 404
    for _ in $(seq 50); do
        pgrep -f 'runsc.*--root=' >/dev/null || break
        sleep 0.1
    done
    gv_none_left
}

@test "serve gvisor: a level that can't run here is 409 with the fix; a bad level 400; never level 1" {
    SVC_WRAP=(env AGENTJAIL_RUNSC=/nonexistent/runsc)
    svc_start
    api_status POST /v1/sandboxes -d '{"isolation": "gvisor"}'
    assert_eq "$status_code" 409 "create: $body"
    assert_eq "$(jq -r .error.code <<<"$body")" isolation_unavailable
    assert_contains "$body" "fix:"
    api_status POST /v1/sandboxes -d '{"isolation": "bogus"}'
    assert_eq "$status_code" 400
    api_status POST /v1/sandboxes -d '{"isolation": "microvm"}'
    assert_eq "$status_code" 501 "microvm: $body"
    api_status GET /v1/sandboxes
    assert_eq "$(jq -r 'if type == "array" then length else (.sandboxes | length) end' <<<"$body")" 0 "sandboxes after the refused creates"
}

@test "serve gvisor: the code interpreter's kernel runs inside runsc; state kept; a secret redacted" {
    /usr/bin/python3 -c 'import ipykernel, jupyter_client' || skip "no python3-ipykernel (scripts/setup.sh)"
    svc_start
    id=$(gv_create '{"isolation": "gvisor", "secret": {"TOKEN": "s3cr3t-value-93"}}')
    out=$(api POST "/v1/sandboxes/$id/code" -d '{"code": "import os\nv = 41\nprint(os.uname().release)"}')
    # gVisor's Sentry reports its own kernel release, not the host's
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$out")" "4.4.0"
    assert_ne "$(uname -r)" "4.4.0"
    out=$(api POST "/v1/sandboxes/$id/code" -d '{"code": "print(os.environ[\"TOKEN\"], \"s3cr3t-value-93\")\nv + 1"}')
    [[ "$out" != *"s3cr3t-value-93"* ]] || fail "the secret's value came out: $out"
    assert_eq "$(jq -rs 'map(select(.type == "result"))[0].data["text/plain"]' <<<"$out")" 42
    api_status DELETE "/v1/sandboxes/$id"
    assert_eq "$status_code" 200
    # the bridge's runsc exec ends with the sandbox (its last reference, as
    # a command still running when the sandbox is deleted)
    for _ in $(seq 100); do pgrep -f 'runsc.*--root=' >/dev/null || break; sleep 0.1; done
    gv_none_left
}
