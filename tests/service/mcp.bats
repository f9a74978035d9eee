#!/usr/bin/env bats
# agentjail mcp (docs/mcp.md): the official MCP TypeScript SDK's client
# drives it over stdio against a real service (tests/mcp/client.test.mjs),
# and raw lines on its stdin check the JSON-RPC faults.

load helpers

MCP_DIR=$_aj_root/tests/mcp

# Lines on the server's stdin (one argument each); its stdout in $output.
mcp_raw() {
    run --separate-stderr timeout 30 "$AJ" mcp --socket "$SOCK" < <(printf '%s\n' "$@")
}

# The answer with id $1 in $output (one JSON object per line).
answer() { jq -c --argjson id "$1" 'select(.id == $id)' <<<"$output"; }

@test "mcp: the MCP TypeScript SDK's client: every tool, progress, cancel, bad arguments, errors" {
    [ -d "$MCP_DIR/node_modules/@modelcontextprotocol/sdk" ] ||
        fail "run scripts/setup.sh (npm ci in tests/mcp)"
    svc_start
    local work=$BATS_TEST_TMPDIR/work
    mkdir -p "$work"
    AJ=$AJ SOCK=$SOCK WORK=$(realpath "$work") MCP_STDERR=$BATS_TEST_TMPDIR/mcp.err \
        run timeout 120 node --test --test-reporter=spec "$MCP_DIR/client.test.mjs"
    [ "$status" -eq 0 ] || {
        echo "$output" >&2
        cat "$BATS_TEST_TMPDIR/mcp.err" "$BATS_TEST_TMPDIR/serve.log" >&2 || true
        fail "the MCP client's tests failed"
    }
    [[ "$output" == *"pass 14"* ]] || { echo "$output" >&2; fail "not every test ran"; }
    [[ "$output" == *"fail 0"* ]]
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
}

@test "mcp: raw JSON-RPC faults: parse error, batch, invalid request, unknown method" {
    svc_start
    mcp_raw '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
        '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
        '{not json' \
        '[{"jsonrpc":"2.0","id":2,"method":"ping"}]' \
        '{"jsonrpc":"1.0","id":3,"method":"ping"}' \
        '{"jsonrpc":"2.0","id":4,"method":"no/such"}' \
        '{"jsonrpc":"2.0","id":5.5,"method":"ping"}' \
        '"a string"' \
        '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":[]}' \
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_command","arguments":"x"}}' \
        '{"jsonrpc":"2.0","id":"eight","method":"ping"}' \
        '{"jsonrpc":"2.0","id":9,"result":{}}' \
        '{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}'
    [ "$status" -eq 0 ] || { echo "$stderr" >&2; fail "mcp exited with $status"; }
    # every line is a JSON-RPC 2.0 message: nothing else on stdout
    jq -e -s 'all(.jsonrpc == "2.0")' <<<"$output" >/dev/null || fail "not JSON-RPC: $output"
    assert_eq "$(answer 1 | jq -r .result.protocolVersion)" 2024-11-05
    assert_eq "$(answer 1 | jq -r .result.serverInfo.name)" agentjail
    assert_eq "$(answer 1 | jq -c .result.capabilities.tools)" '{"listChanged":false}'
    assert_eq "$(answer 10 | jq -r .result.protocolVersion)" 2025-06-18
    # id null: a parse error, a batch, a bad id, not an object
    assert_eq "$(jq -c 'select(.id == null) | .error.code' <<<"$output" | tr '\n' ' ')" \
        "-32700 -32600 -32600 -32600 "
    [[ "$(jq -r 'select(.id == null) | .error.message' <<<"$output")" == *"batch"* ]]
    assert_eq "$(answer 3 | jq .error.code)" -32600
    assert_eq "$(answer 4 | jq .error.code)" -32601
    assert_eq "$(answer 6 | jq .error.code)" -32602
    assert_eq "$(answer 7 | jq .error.code)" -32602
    assert_eq "$(jq -c 'select(.id == "eight") | .result' <<<"$output")" '{}'
    # a notification and the client's own response got no answer
    assert_eq "$(wc -l <<<"$output")" 11
}

@test "mcp: a message over 8 MiB is refused, the next one answered" {
    svc_start
    local big=$BATS_TEST_TMPDIR/big
    {
        printf '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'
        head -c $((9 << 20)) /dev/zero | tr '\0' a
        printf '"}}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    } >"$big"
    run --separate-stderr timeout 30 "$AJ" mcp --socket "$SOCK" <"$big"
    [ "$status" -eq 0 ] || { echo "$stderr" >&2; fail "mcp exited with $status"; }
    assert_eq "$(jq -c 'select(.id == null) | .error.code' <<<"$output")" -32600
    [[ "$(jq -r 'select(.id == null) | .error.message' <<<"$output")" == *"over 8388608 bytes"* ]]
    assert_eq "$(answer 2 | jq -c .result)" '{}'
    assert_eq "$(answer 1)" ""
    assert_eq "$(wc -l <<<"$output")" 2
}

@test "mcp: bad input never crashes it: binary, NULs, deep nesting, a line without newline" {
    svc_start
    local in=$BATS_TEST_TMPDIR/in
    {
        head -c 4096 /dev/urandom | tr -d '\n'
        printf '\n'
        printf '{"jsonrpc":"2.0","id":1,"method":"ping"\0}\n'
        printf '%*s' 100000 '' | tr ' ' '['
        printf '\n{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_list","arguments":{"x":{"y":[1,2,{}]}}}}\n'
        printf '{"jsonrpc":"2.0","id":3,"method":"ping"}'
    } >"$in"
    run --separate-stderr timeout 30 "$AJ" mcp --socket "$SOCK" <"$in"
    [ "$status" -eq 0 ] || { echo "$stderr" >&2; fail "mcp exited with $status"; }
    assert_eq "$(jq -c 'select(.id == null) | .error.code' <<<"$output" | tr '\n' ' ')" \
        "-32700 -32700 -32700 "
    assert_eq "$(answer 2 | jq .error.code)" -32602
    assert_eq "$(answer 3 | jq -c .result)" '{}'
}

@test "mcp: without a service it refuses at start, saying so (125)" {
    run --separate-stderr "$AJ" mcp --socket "$BATS_TEST_TMPDIR/absent.sock" </dev/null
    assert_eq "$status" 125
    assert_eq "$output" ""
    [[ "$stderr" == *"no agentjail service at $BATS_TEST_TMPDIR/absent.sock"* ]]
    [[ "$stderr" == *"agentjail serve"* ]]
    run "$AJ" mcp --help
    assert_eq "$status" 0
    [[ "$output" == *"Usage: agentjail mcp"* ]]
    run "$AJ" mcp --bogus x
    assert_eq "$status" 125
}
