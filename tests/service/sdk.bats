#!/usr/bin/env bats
# The Python SDK (sdk/python, standard library only) against a real service,
# and the agent loop example. The SDK is installed the way a user installs
# it (pip, offline, into a venv of the test's own), and the tests import the
# installed package, not the source tree.

load helpers

# Debian's python3 (scripts/setup.sh installs python3-venv, -setuptools and
# -wheel: the build backend, seen through --system-site-packages, so that pip
# needs no index and no build isolation).
SDK_PY=${SDK_PY:-/usr/bin/python3}

setup_file() {
    local v=$BATS_FILE_TMPDIR/venv
    "$SDK_PY" -m venv --system-site-packages "$v"
    "$v/bin/pip" install --quiet --no-index --no-build-isolation "$BATS_TEST_DIRNAME/../../sdk/python" \
        >"$BATS_FILE_TMPDIR/pip.log" 2>&1 || { cat "$BATS_FILE_TMPDIR/pip.log" >&2; return 1; }
}

# the venv's python, run outside the source tree (its sdk/python is not on sys.path)
vpy() { (cd "$BATS_TEST_TMPDIR" && "$BATS_FILE_TMPDIR/venv/bin/python" "$@"); }

@test "python SDK: installed by pip, typed, documented by pydoc" {
    run vpy -c 'import agentjail, agentjail.aio; print(agentjail.__file__)'
    [ "$status" -eq 0 ] || fail "$output"
    [[ "$output" == "$BATS_FILE_TMPDIR/venv/lib/"*"/site-packages/agentjail/__init__.py" ]] ||
        fail "not the installed package: $output"
    [ -f "${output%/__init__.py}/py.typed" ]
    run vpy -m pip show agentjail
    [[ "$output" == *"Requires: "$'\n'* || "$output" == *"Requires:"$'\n'* ]] || fail "dependencies: $output"
    run vpy -m pydoc agentjail.aio
    [ "$status" -eq 0 ]
    [[ "$output" == *"class Sandbox"* && "$output" == *"asyncio"* ]] || fail "$output"
    [[ "$output" == *"exec(self, cmd: 'Command'"* ]] || fail "no type hints in pydoc: $output"
    run vpy -m pydoc agentjail.Sandbox.create
    [[ "$output" == *"policy keys are the long options"* ]] || fail "$output"
}

@test "python SDK: unittest suite against the service" {
    svc_start
    AGENTJAIL_SOCKET=$SOCK run vpy "$_aj_root/sdk/python/tests/test_sdk.py" -v
    [ "$status" -eq 0 ] || {
        # the failures first: CI keeps only a part of a long output
        echo "$output" | sed -n '/^=\{20,\}$/,$p' >&2
        echo "--- the whole output:" >&2
        echo "$output" >&2
        echo "--- the service's log (its end):" >&2
        tail -n 60 "$BATS_TEST_TMPDIR/serve.log" >&2
        fail "SDK tests failed"
    }
    [[ "$output" == *"OK"* ]]
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
}

@test "python SDK: the asyncio client against the service" {
    svc_start
    AGENTJAIL_SOCKET=$SOCK run vpy "$_aj_root/sdk/python/tests/test_aio.py" -v
    [ "$status" -eq 0 ] || {
        echo "$output" >&2
        echo "--- the service's log:" >&2
        cat "$BATS_TEST_TMPDIR/serve.log" >&2
        fail "asyncio SDK tests failed"
    }
    [[ "$output" == *"Ran 9 tests"*"OK"* ]] || fail "$output"
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
}

@test "examples/agent_loop.py runs to its end (installed SDK)" {
    svc_start
    AGENTJAIL_SOCKET=$SOCK run vpy "$_aj_root/examples/agent_loop.py"
    [ "$status" -eq 0 ] || { echo "$output" >&2; fail "agent loop failed"; }
    [[ "$output" == *"tests pass"* ]]
}
