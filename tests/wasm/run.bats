#!/usr/bin/env bats
# Level 4: `agentjail run --isolation wasm` (docs/levels.md). A WASI module
# runs on node:wasi, which runs inside a level-1 sandbox: two walls, tested
# separately (the module's preopens; level 1 around node, with a hostile
# runner standing for a hole in node's WASI layer). The test module is
# tests/wasm/mod.c, built here with clang-14 --target=wasm32-wasi.

load ../integration/helpers

setup_file() {
    command -v clang-14 >/dev/null || skip "clang-14 is not installed (scripts/setup.sh)"
    [ -e /usr/lib/wasm32-wasi/libc.a ] || skip "wasi-libc is not installed (scripts/setup.sh)"
    export MOD=$BATS_FILE_TMPDIR/mod.wasm
    clang-14 --target=wasm32-wasi -O2 -o "$MOD" "$BATS_TEST_DIRNAME/mod.c"
    chmod 0644 "$MOD"
}

wasm() {
    timeout -k 5 "$AJ_TIMEOUT" "$AJ" run --isolation wasm "$@"
}

setup() {
    require_root
    [ -e "${MOD:-}" ] || skip "no test module"
    aj_setup
    cp "$MOD" "$WS/mod.wasm"
    # a host file outside the workspace that nothing may read
    echo "host-secret-5e1f" >"$T/secret"
    chmod 0644 "$T/secret"
}

teardown() { aj_teardown; }

@test "wasm: arguments, stdin, stdout, stderr, environment and exit codes pass through" {
    run --separate-stderr wasm -q --workspace "$WS" --env GREETING=hi -- \
        /workspace/mod.wasm echo one "two words" <<<"from-stdin"
    assert_status 0
    assert_eq "$output" "one two words
from-stdin"
    assert_eq "$stderr" to-err "stderr"
    run --separate-stderr wasm -q --workspace "$WS" --env GREETING=hi -- /workspace/mod.wasm env GREETING </dev/null
    assert_eq "$output" hi "--env reaches the module"
    run wasm -q --workspace "$WS" -- /workspace/mod.wasm exit 42 </dev/null
    assert_status 42
    # relative paths: the working directory (/workspace)
    echo in-ws >"$WS/data.txt"
    run --separate-stderr wasm -q --workspace "$WS" -- mod.wasm read data.txt </dev/null
    assert_status 0
    assert_eq "$output" in-ws
}

@test "wasm: the module reads the workspace and writes there as the workspace's owner" {
    chown 4242:4343 "$WS"
    echo "input-data" >"$WS/in.txt"
    chown 4242:4343 "$WS/in.txt"
    run --separate-stderr wasm -q --workspace "$WS" -- /workspace/mod.wasm read /workspace/in.txt </dev/null
    assert_status 0
    assert_eq "$output" input-data
    run --separate-stderr wasm -q --workspace "$WS" -- /workspace/mod.wasm write /workspace/out.txt made-here </dev/null
    assert_status 0
    assert_eq "$(cat "$WS/out.txt")" made-here
    assert_eq "$(stat -c %u:%g "$WS/out.txt")" 4242:4343 "owner of the module's file on the host"
    # /tmp is the sandbox's own, gone with it
    run --separate-stderr wasm -q --workspace "$WS" -- /workspace/mod.wasm write /tmp/t.txt x </dev/null
    assert_status 0
}

@test "wasm: paths that climb out of the preopens are refused" {
    for path in /workspace/../secret /workspace/../../etc/passwd ../secret "$T/secret" /etc/passwd \
        /proc/self/environ; do
        run --separate-stderr wasm -q --workspace "$WS" -- /workspace/mod.wasm read "$path" </dev/null
        assert_status 3
        assert_output_lacks host-secret
        assert_output_lacks "root:"
    done
    run --separate-stderr wasm -q --workspace "$WS" -- /workspace/mod.wasm write /workspace/../escaped x </dev/null
    assert_status 3
    [ ! -e "$T/escaped" ] || fail "the module wrote outside the workspace"
    run --separate-stderr wasm -q --workspace "$WS" -- /workspace/mod.wasm ls / </dev/null
    assert_output_lacks "usr"
}

@test "wasm: a symlink planted in the workspace that points outside leads nowhere" {
    ln -s "$T/secret" "$WS/link"
    ln -s "$T" "$WS/dirlink"
    ln -s ../secret "$WS/rel"
    for path in /workspace/link /workspace/dirlink/secret /workspace/rel link; do
        run --separate-stderr wasm -q --workspace "$WS" -- /workspace/mod.wasm read "$path" </dev/null
        assert_status 3
        assert_output_lacks host-secret
    done
    run --separate-stderr wasm -q --workspace "$WS" -- /workspace/mod.wasm write /workspace/dirlink/planted x </dev/null
    assert_status 3
    [ ! -e "$T/planted" ] || fail "the module wrote through a symlink"
    assert_eq "$(cat "$T/secret")" host-secret-5e1f "the host file"
}

@test "wasm: the runtime itself is in a level-1 sandbox (a hostile runner stands for a WASI hole)" {
    # what code in node could do, were node:wasi's wall gone
    mkdir -p "$T/rt"
    cat >"$T/rt/runner.mjs" <<'EOF'
import fs from 'node:fs';
const t = (name, f) => { try { console.log(name + '=' + f()); } catch (e) { console.log(name + '=' + (e.code || e.message)); } };
const secret = process.argv[process.argv.length - 1];
t('read_host', () => fs.readFileSync(secret, 'utf8').trim());
t('write_usr', () => { fs.writeFileSync('/usr/aj-wasm-escape', 'x'); return 'ok'; });
t('status', () => fs.readFileSync('/proc/self/status', 'utf8').split('\n')
  .filter((l) => /^(Uid|Seccomp|NoNewPrivs|CapEff):/.test(l)).map((l) => l.replace(/\s+/g, ' ')).join(';'));
t('cgroup', () => fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n').every((l) => l.endsWith(':/')) ? 'own' : 'host');
t('uid_map', () => fs.readFileSync('/proc/self/uid_map', 'utf8').trim().split(/\s+/).join(' '));
t('host_root', () => fs.readdirSync('/').sort().join(','));
t('node_options', () => process.env.NODE_OPTIONS === undefined ? 'unset' : 'set');
EOF
    chmod -R a+rX "$T/rt"
    run --separate-stderr env AGENTJAIL_WASM_DIR="$T/rt" timeout -k 5 60 "$AJ" run --isolation wasm -q \
        --workspace "$WS" --env NODE_OPTIONS=--no-such-option -- /workspace/mod.wasm "$T/secret" </dev/null
    assert_status 0
    assert_output_lacks host-secret
    assert_output_has_line "read_host=ENOENT"
    assert_output_has_line "write_usr=EROFS"
    assert_output_has_line "cgroup=own"
    host_uid=$(kv uid_map | cut -d' ' -f2)
    [ "$host_uid" -ge "$SANDBOX_UID_MIN" ] || fail "node's uid 0 is host uid [$host_uid]: $output"
    assert_output_has_line "node_options=unset"
    assert_contains "$output" "Seccomp: 2"
    assert_contains "$output" "NoNewPrivs: 1"
    assert_contains "$output" "CapEff: 0000000000000000"
    [ ! -e /usr/aj-wasm-escape ] || fail "the runner wrote the host's /usr"
}

@test "wasm: NODE_OPTIONS in --env reaches the module, never node" {
    printf 'require("fs").writeFileSync("/workspace/pwned", "x")\n' >"$WS/evil.cjs"
    run --separate-stderr wasm -q --workspace "$WS" --env NODE_OPTIONS="--require /workspace/evil.cjs" -- \
        /workspace/mod.wasm env NODE_OPTIONS </dev/null
    assert_status 0
    assert_eq "$output" "--require /workspace/evil.cjs" "the module's variable"
    [ ! -e "$WS/pwned" ] || fail "node ran the user's NODE_OPTIONS"
}

@test "wasm: --memory bounds the linear memory: malloc fails, a trap says why" {
    run --separate-stderr wasm -q --workspace "$WS" --memory 256m -- /workspace/mod.wasm grow </dev/null
    assert_status 1
    mib=$(sed -n 's/^malloc failed after \([0-9]*\) MiB$/\1/p' <<<"$output")
    [ -n "$mib" ] && [ "$mib" -le 160 ] && [ "$mib" -ge 64 ] || fail "grew to [$mib] MiB under --memory 256m: $output"
    run --separate-stderr wasm -q --workspace "$WS" --memory 256m --result "$T/r.json" -- \
        /workspace/mod.wasm grow-trap </dev/null
    assert_status 134
    assert_contains "$stderr" "wasm trap: unreachable (out of memory? the linear memory is at"
    assert_eq "$(jq -r .oom_killed "$T/r.json")" false "the cgroup's OOM killer"
}

@test "wasm: an endless loop ends at --timeout with 124" {
    run --separate-stderr wasm -q --workspace "$WS" --timeout 1 -- /workspace/mod.wasm loop </dev/null
    assert_status 124
}

@test "wasm: a trap ends with 134 and its reason" {
    run --separate-stderr wasm -q --workspace "$WS" -- /workspace/mod.wasm trap </dev/null
    assert_status 134
    assert_eq "$stderr" "agentjail: wasm trap: unreachable"
    run --separate-stderr wasm -q --workspace "$WS" -- /workspace/mod.wasm recurse </dev/null
    assert_status 134
    assert_contains "$stderr" "agentjail: wasm trap: "
}

@test "wasm: what is not a module is 127 or 126; what level 4 lacks is 125" {
    run -127 --separate-stderr wasm -q --workspace "$WS" -- /workspace/none.wasm </dev/null
    assert_status 127
    echo "not wasm" >"$WS/bad.wasm"
    run --separate-stderr wasm -q --workspace "$WS" -- /workspace/bad.wasm </dev/null
    assert_status 126
    assert_contains "$stderr" "not a WebAssembly module"
    run -127 --separate-stderr wasm -q --workspace "$WS" -- /bin/sh -c true </dev/null
    assert_status 127
    assert_contains "$stderr" "at --isolation wasm a command is a WebAssembly module"
    # a module outside what the sandbox shows it
    run -127 --separate-stderr wasm -q --workspace "$WS" -- /usr/../workspace/../etc/x.wasm </dev/null
    assert_status 127
    run --separate-stderr wasm -q --net open -- /workspace/mod.wasm </dev/null
    assert_status 125
    assert_contains "$stderr" "no sockets"
    run --separate-stderr wasm -q --memory 64m -- /workspace/mod.wasm </dev/null
    assert_status 125
    assert_contains "$stderr" "too small"
}

@test "wasm: python3 runs on Pyodide: the workspace, no subprocess, no sockets" {
    [ -e "${AGENTJAIL_WASM_DIR:-$BATS_TEST_DIRNAME/../../src/backend/wasm/runtime}/node_modules/pyodide/pyodide.asm.wasm" ] ||
        skip "Pyodide is not installed (scripts/setup.sh)"
    chown 4242:4343 "$WS"
    echo 20 >"$WS/n.txt"
    cat >"$WS/t.py" <<'EOF'
import sys, json, os
n = int(open("n.txt").read())
open("/workspace/py.out", "w").write(json.dumps({"sum": n + 22, "argv": sys.argv[1:]}))
for name, f in [("subprocess", lambda: __import__("subprocess").run(["/bin/true"])),
                ("socket", lambda: __import__("socket").create_connection(("127.0.0.1", 9))),
                ("host", lambda: open(sys.argv[1]).read())]:
    try:
        f(); print(name + "=ok")
    except Exception as e:
        print(name + "=" + type(e).__name__)
sys.exit(5)
EOF
    run --separate-stderr wasm -q --workspace "$WS" -- python3 t.py "$T/secret" </dev/null
    assert_status 5
    assert_eq "$(cat "$WS/py.out")" "{\"sum\": 42, \"argv\": [\"$T/secret\"]}"
    assert_eq "$(stat -c %u:%g "$WS/py.out")" 4242:4343 "owner of Python's file on the host"
    assert_output_lacks "=ok"
    assert_output_lacks host-secret
    # Pyodide's JavaScript side: an empty `js`, no eval, no new mounts
    run --separate-stderr wasm -q -- python3 -c '
import pyodide_js
try:
    pyodide_js.FS.mount(pyodide_js.FS.filesystems.NODEFS, None, "/host"); print("mounted")
except Exception as e:
    print("mount refused")
from pyodide.code import run_js
run_js("1")' </dev/null
    assert_status 1
    assert_eq "$output" "mount refused"
    assert_contains "$stderr" "ImportError"
}

@test "wasm: node runs on QuickJS: console, process.argv, process.exit, no require" {
    printf 'console.log("sum", 20 + 22, process.argv.slice(2), typeof require, typeof fetch);\nprocess.exit(6);\n' >"$WS/t.js"
    run --separate-stderr wasm -q --workspace "$WS" -- node t.js a b </dev/null
    assert_status 6
    assert_eq "$output" "sum 42 [ 'a', 'b' ] undefined undefined"
    run --separate-stderr wasm -q -- node -e 'throw new TypeError("bad")' </dev/null
    assert_status 1
    assert_contains "$stderr" "Uncaught TypeError: bad"
}
