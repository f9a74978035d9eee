#!/usr/bin/env bats
# Level 4 in the service: `"isolation": "wasm"` makes a sandbox that lives
# across commands (a level-1 sandbox holding node), each exec one module,
# python3 or node command on the WebAssembly runtime (docs/levels.md).

load ../service/helpers

setup_file() {
    command -v clang-14 >/dev/null || skip "clang-14 is not installed (scripts/setup.sh)"
    [ -e /usr/lib/wasm32-wasi/libc.a ] || skip "wasi-libc is not installed (scripts/setup.sh)"
    export MOD=$BATS_FILE_TMPDIR/mod.wasm
    clang-14 --target=wasm32-wasi -O2 -o "$MOD" "$BATS_TEST_DIRNAME/mod.c"
    chmod 0644 "$MOD"
}

@test "serve wasm: create, upload a module, exec with streamed output, exit codes, stdin, env, timeout" {
    [ -e "${MOD:-}" ] || skip "no test module"
    svc_start
    ws=$T/wsw
    mkdir -p "$ws"
    chown 4242:4343 "$ws"
    id=$(api POST /v1/sandboxes -d "{\"isolation\": \"wasm\", \"workspace\": \"$ws\", \"env\": {\"FROM_CREATE\": \"c1\"}, \"secret\": {\"TOKEN\": \"s3cr3t-wasm-77\"}}" | jq -er .id)
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$(jq -r .isolation <<<"$body")" wasm "the sandbox's level"
    # the files API puts the module in the workspace
    api_status PUT "/v1/sandboxes/$id/files?path=/workspace/mod.wasm" --data-binary @"$MOD"
    assert_eq "$status_code" 201 "upload"
    out=$(sb_exec "$id" '{"cmd": ["/workspace/mod.wasm", "echo", "a", "b"], "stdin": "in\n"}')
    assert_eq "$(events_stdout <<<"$out")" "a b
in" "stdout"
    assert_eq "$(events_stderr <<<"$out")" "to-err" "stderr"
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 0
    out=$(sb_exec "$id" '{"cmd": ["/workspace/mod.wasm", "write", "/workspace/o.txt", "kept"]}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 0
    assert_eq "$(stat -c %u:%g "$ws/o.txt")" 4242:4343 "owner of the module's file on the host"
    out=$(sb_exec "$id" '{"cmd": ["/workspace/mod.wasm", "read", "/workspace/o.txt"]}')
    assert_eq "$(events_stdout <<<"$out")" kept "a file of the exec before"
    out=$(sb_exec "$id" '{"cmd": ["/workspace/mod.wasm", "exit", "9"]}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 9 "exit code"
    out=$(sb_exec "$id" '{"cmd": ["/workspace/mod.wasm", "env", "FROM_CREATE"]}')
    assert_eq "$(events_stdout <<<"$out")" c1 "the create's env"
    out=$(sb_exec "$id" '{"cmd": ["/workspace/mod.wasm", "env", "FROM_EXEC"], "env": {"FROM_EXEC": "e1"}}')
    assert_eq "$(events_stdout <<<"$out")" e1 "the exec's env"
    out=$(sb_exec "$id" '{"cmd": ["/workspace/mod.wasm", "env", "TOKEN"]}')
    [[ "$out" != *"s3cr3t-wasm-77"* ]] || fail "the secret's value came out: $out"
    out=$(sb_exec "$id" '{"cmd": ["/workspace/mod.wasm", "loop"], "timeout": 1}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 124 "timeout"
    out=$(sb_exec "$id" '{"cmd": ["/workspace/mod.wasm", "trap"]}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 134 "a trap"
    [[ "$(events_stderr <<<"$out")" == *"wasm trap: unreachable"* ]] || fail "no trap reason: $out"
    out=$(sb_exec "$id" '{"cmd": ["/bin/sh", "-c", "id"]}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 127 "a host program"
    # what level 4 lacks: 501, never level 1
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "wasm-snap"}'
    assert_eq "$status_code" 501 "snapshot"
    api_status DELETE "/v1/sandboxes/$id"
    assert_eq "$status_code" 200
    bad=$(find "$ws" \( -perm /6000 -o \! -uid 4242 -o \! -gid 4343 \) -printf '%m %u:%g %p\n')
    [ -z "$bad" ] || fail "setid or foreign-owned files left: $bad"
}

@test "serve wasm: what level 4 cannot do is refused at create" {
    svc_start
    api_status POST /v1/sandboxes -d '{"isolation": "wasm", "net": "open"}'
    assert_eq "$status_code" 501 "--net open at level 4: $body"
    assert_eq "$(jq -r .error.code <<<"$body")" not_supported
    api_status POST /v1/sandboxes -d '{"isolation": "wasm", "memory": "64m"}'
    assert_eq "$status_code" 400 "--memory 64m at level 4: $body"
}

# code ID JSON: a run_code's NDJSON events in $body, the last one its end
code() {
    api_status POST "/v1/sandboxes/$1/code" -d "$2"
    assert_eq "$status_code" 200 "run_code $2: $body"
    assert_eq "$(jq -sc 'last | .type' <<<"$body")" '"end"' "the last event is the end: $body"
}

@test "serve wasm: run_code on Pyodide: state, result, stdout/stderr, errors, timeout, contexts" {
    svc_start
    ws=$T/wsc
    mkdir -p "$ws"
    chown 4242:4343 "$ws"
    id=$(api POST /v1/sandboxes -d "{\"isolation\": \"wasm\", \"workspace\": \"$ws\", \"env\": {\"FROM_CREATE\": \"c1\"}}" | jq -er .id)
    code "$id" '{"code": "import os, sys\nprint(sys.platform, file=sys.stderr)\nx = 41\nprint(x + 1)\nprint(\"to-err\", file=sys.stderr)\nopen(\"/workspace/py.txt\", \"w\").write(os.environ[\"FROM_CREATE\"])\nx"}'
    assert_eq "$(events_stdout <<<"$body")" 42 "stdout"
    assert_eq "$(events_stderr <<<"$body")" "emscripten
to-err" "stderr (Python on Pyodide, not the host's)"
    assert_eq "$(jq -c 'select(.type == "result") | [.data["text/plain"], .execution_count]' <<<"$body")" '["41",1]' "the last expression's repr"
    assert_eq "$(jq -c 'select(.type == "end") | [.context, .execution_count, .timed_out, .restarted]' <<<"$body")" '["default",1,false,false]'
    assert_eq "$(cat "$ws/py.txt"):$(stat -c %u:%g "$ws/py.txt")" c1:4242:4343 "the env, a file written to the workspace and its owner"
    code "$id" '{"code": "x + 1"}'
    assert_eq "$(jq -c 'select(.type == "result") | [.data["text/plain"], .execution_count]' <<<"$body")" '["42",2]' "a variable of the run before"
    code "$id" '{"code": "def f():\n    return 1 / 0\nf()"}'
    assert_eq "$(jq -c 'select(.type == "error") | [.name, .value]' <<<"$body")" '["ZeroDivisionError","division by zero"]'
    [[ "$(jq -r 'select(.type == "error") | .traceback | join("")' <<<"$body")" == *"line 2, in f"*"return 1 / 0"* ]] ||
        fail "no traceback with the cell's line: $body"
    # a timeout interrupts the run (KeyboardInterrupt); the context lives on
    code "$id" '{"code": "import time\nwhile True: time.sleep(0.5)", "timeout": 1}'
    assert_eq "$(jq -c 'select(.type == "error") | .name' <<<"$body")" '"TimeoutError"'
    assert_eq "$(jq -c 'select(.type == "end") | [.timed_out, .restarted]' <<<"$body")" '[true,false]'
    code "$id" '{"code": "x"}'
    assert_eq "$(jq -r 'select(.type == "result") | .data["text/plain"]' <<<"$body")" 41 "x after the timeout"
    # another context: its own namespace
    api_status POST "/v1/sandboxes/$id/code/contexts" -d '{"id": "c2"}'
    assert_eq "$status_code" 201 "a context: $body"
    code "$id" '{"code": "x", "context": "c2"}'
    assert_eq "$(jq -r 'select(.type == "error") | .name' <<<"$body")" NameError "x in c2"
    api_status GET "/v1/sandboxes/$id/code/contexts"
    assert_eq "$(jq -c '[.contexts[] | [.id, .execution_count]] | sort' <<<"$body")" '[["c2",1],["default",5]]' "the list"
    # bad input: a JSON error, nothing run
    api_status POST "/v1/sandboxes/$id/code" -d '{"code": 5}'
    assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 400:bad_request "a bad body"
    api_status POST "/v1/sandboxes/$id/code" -d '{"code": "x", "context": "nope"}'
    assert_eq "$status_code" 404 "an unknown context"
    api_status DELETE "/v1/sandboxes/$id/code/contexts/c2"
    assert_eq "$status_code" 200 "delete c2"
    api_status GET "/v1/sandboxes/$id/code/contexts"
    assert_eq "$(jq -c '[.contexts[] | [.id, .execution_count]]' <<<"$body")" '[["default",5]]' "nothing run by the bad requests"
    api_status DELETE "/v1/sandboxes/$id"
    assert_eq "$status_code" 200
}

@test "serve wasm as an ordinary user: a module and run_code (limits best-effort)" {
    [ -e "${MOD:-}" ] || skip "no test module"
    # a tree nobody can traverse, with its own copy of agentjail; the
    # runtime directory is the source tree's, named by AGENTJAIL_WASM_DIR
    NRDIR=$(mktemp -d /tmp/ajtest-wasm.XXXXXX)
    AJ_MARKERS+=("$(basename "$NRDIR")")
    AJ_EXTRA_UID=65534
    chmod 0755 "$NRDIR"
    aj_copy_programs "$NRDIR"
    mkdir "$NRDIR/u" "$NRDIR/ws"
    chown 65534:65534 "$NRDIR/u" "$NRDIR/ws"
    local as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups
        env AGENTJAIL_WASM_DIR="$(realpath "$BATS_TEST_DIRNAME/../../src/backend/wasm/runtime")")
    jq -n --arg t "$NRDIR/ws" '{bind_roots: [{path: $t, rw: true}]}' >"$NRDIR/u/policy.json"
    "${as_nobody[@]}" "$NRDIR/agentjail" serve --quiet --socket "$NRDIR/u/s.sock" \
        --state-dir "$NRDIR/u/state" --operator-policy "$NRDIR/u/policy.json" \
        2>>"$BATS_TEST_TMPDIR/serve.log" </dev/null &
    SVC_PID=$!
    SOCK=$NRDIR/u/s.sock
    STATE=$NRDIR/u/state
    for _ in $(seq 100); do
        [ -S "$SOCK" ] && break
        sleep 0.05
    done
    nb() { "${as_nobody[@]}" curl -sSN --max-time 120 --unix-socket "$SOCK" "$@"; }
    id=$(nb -X POST http://agentjail/v1/sandboxes -d "{\"isolation\": \"wasm\", \"limits\": \"best-effort\", \"workspace\": \"$NRDIR/ws\"}" | jq -er .id)
    cp "$MOD" "$NRDIR/ws/mod.wasm"
    out=$(nb -X POST "http://agentjail/v1/sandboxes/$id/exec" -d '{"cmd": ["/workspace/mod.wasm", "write", "/workspace/o.txt", "made"], "stdin": ""}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 0 "a module: $out"
    assert_eq "$(cat "$NRDIR/ws/o.txt"):$(stat -c %u "$NRDIR/ws/o.txt")" made:65534 "the module's file and its owner"
    out=$(nb -X POST "http://agentjail/v1/sandboxes/$id/code" -d '{"code": "x = 6\nx * 7"}')
    assert_eq "$(jq -r 'select(.type == "result") | .data["text/plain"]' <<<"$out")" 42 "run_code: $out"
    # the sandbox (and the bridge's node in it) runs as the caller
    pid=$(nb "http://agentjail/v1/sandboxes/$id" | jq -r .pid)
    assert_eq "$(host_uid_of "$pid")" 65534
    bridge=$(pgrep -u 65534 -f 'runner.mjs.*--code-bridge' | head -1)
    [ -n "$bridge" ] || fail "no bridge running as uid 65534"
    out=$(nb -X DELETE "http://agentjail/v1/sandboxes/$id")
    assert_eq "$(jq -r .deleted <<<"$out")" true
}
