#!/usr/bin/env bats
# The TypeScript SDK (sdk/typescript, npm package "agentjail") against a
# real service: its node --test suite (built from the sources here, in
# setup_file), the same over TCP with a token, and the `npm pack` tarball
# installed offline into a fresh project (ESM, CommonJS, the .d.ts).

load helpers

TS=$_aj_root/sdk/typescript
TOKEN=test-token-0123456789abcdef

setup_file() {
    command -v node >/dev/null && command -v npm >/dev/null ||
        skip "node/npm not installed (scripts/setup.sh)"
    [ -d "$TS/node_modules/typescript" ] ||
        { echo "sdk/typescript: no node_modules; run scripts/setup.sh (npm ci)" >&2; return 1; }
    # the package and its tests, compiled from the sources of this tree
    (cd "$TS" && node scripts/build.mjs --tests) >&2
}

# A tiny image (sh and a few tools) in $AGENTJAIL_STATE_DIR, for snapshots.
mk_tiny_image() {
    local d=$T/tree b l
    export AGENTJAIL_STATE_DIR=$T/imgstate
    mkdir -p "$d/bin" "$d/etc" "$d/tmp" "$d/proc" "$d/dev" "$d/root" "$d/opt"
    for b in sh cat ls mkdir sleep; do
        cp "$(command -v "$b")" "$d/bin/$b"
        for l in $(ldd "$(command -v "$b")" | grep -o '/[^ ]*'); do
            mkdir -p "$d$(dirname "$l")"
            cp -n "$l" "$d$l"
        done
    done
    chmod -R a+rX "$d"
    aj_timeout "$AJ" image build tiny --from-dir "$d" >/dev/null 2>&1 || fail "image build failed"
}

ts_run() { # [NAME=VALUE...] [node args...]: node --test of the compiled tests
    local envs=()
    while [[ "${1:-}" == *=* && "$1" != -* ]]; do envs+=("$1"); shift; done
    run env "${envs[@]}" node --test --test-concurrency=1 "$@" "$TS/build/test/"
    if [ "$status" -ne 0 ]; then
        echo "$output" >&2
        echo "--- the service's log:" >&2
        cat "$BATS_TEST_TMPDIR/serve.log" >&2
        fail "TypeScript SDK tests failed"
    fi
}

@test "typescript SDK: node --test suite against the service (unix socket)" {
    mk_tiny_image
    svc_start
    ts_run AGENTJAIL_SOCKET="$SOCK" AJ_TS_IMAGE=tiny
    [[ "$output" == *"# fail 0"* ]]
    [[ "$output" != *"SKIP no image"* ]] # the snapshot test ran
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
}

@test "typescript SDK: a URL and a bearer token (TCP, WebSocket too)" {
    printf '%s\n' "$TOKEN" >"$T/token"
    port=$((20000 + RANDOM % 20000))
    svc_start --listen "127.0.0.1:$port" --token-file "$T/token"
    ts_run AGENTJAIL_SOCKET=/nonexistent AJ_TS_URL="http://127.0.0.1:$port" AJ_TS_TOKEN="$TOKEN" \
        --test-name-pattern="URL and a token"
    [[ "$output" == *"# pass 1"* ]]
    [[ "$output" == *"# fail 0"* ]]
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
}

@test "typescript SDK: npm pack; installs offline in a fresh project; ESM, CJS, types" {
    svc_start
    (cd "$TS" && npm pack --ignore-scripts --silent --pack-destination "$T") >"$T/pack.out"
    tgz=$T/$(tail -1 "$T/pack.out")
    [ -f "$tgz" ] || fail "no tarball: $(cat "$T/pack.out")"
    tar tzf "$tgz" >"$T/files"
    grep -qx package/dist/esm/index.js "$T/files"
    grep -qx package/dist/esm/index.d.ts "$T/files"
    grep -qx package/dist/cjs/index.js "$T/files"
    grep -qx package/dist/cjs/index.d.ts "$T/files"
    ! grep -q '^package/\(src\|test\|build\|node_modules\)/' "$T/files" || fail "sources in the tarball"
    mkdir "$T/app" && cd "$T/app"
    printf '{"name": "app", "version": "1.0.0", "private": true}\n' >package.json
    run npm install --offline --no-audit --no-fund --silent "$tgz"
    [ "$status" -eq 0 ] || fail "offline install: $output"
    cat >esm.mjs <<'JS'
import { Sandbox, Client, NotFoundError, AgentjailError } from "agentjail";
const c = new Client({ socketPath: process.env.SOCK });
const sb = await Sandbox.create({ client: c, timeout: 60 });
const r = await sb.commands.run("echo esm");
await sb.kill();
const e = await Sandbox.connect("sb-0000000000000000", { client: c }).catch((x) => x);
console.log(r.stdout.trim(), e instanceof NotFoundError && e instanceof AgentjailError, e.code);
JS
    cat >cjs.cjs <<'JS'
const { Sandbox, Client, NotFoundError } = require("agentjail");
(async () => {
  const c = new Client({ socketPath: process.env.SOCK });
  const sb = await Sandbox.create({ client: c, timeout: 60 });
  const r = await sb.commands.run(["echo", "cjs"]);
  const out = [];
  const t = await sb.pty.create({ cmd: ["echo", "pty"], onData: (d) => out.push(Buffer.from(d)) });
  await t.wait(); // the WebSocket (ws) from CommonJS too
  await sb.kill();
  const e = await Sandbox.connect("sb-0000000000000000", { client: c }).catch((x) => x);
  console.log(r.stdout.trim(), Buffer.concat(out).toString().trim(), e instanceof NotFoundError, e.status);
})();
JS
    run env SOCK="$SOCK" node esm.mjs
    assert_eq "$output" "esm true not_found"
    run env SOCK="$SOCK" node cjs.cjs
    assert_eq "$output" "cjs pty true 404"
    # the shipped .d.ts, as a consumer's tsc (NodeNext) resolves them
    cat >use.mts <<'TS'
import { Sandbox, type CommandResult } from "agentjail";
const sb: Sandbox = await Sandbox.create({ memory: "64M" });
const r: CommandResult = await sb.commands.run("true", { timeout: 1, onStdout: (s: string) => s.length });
const n: number | null = r.exitCode;
// @ts-expect-error: exitCode is not a string
const bad: string = r.exitCode;
export { n, bad };
TS
    cat >use.cts <<'TS'
import aj = require("agentjail");
const create: (o?: aj.SandboxOpts) => Promise<aj.Sandbox> = aj.Sandbox.create;
const isGone = (e: unknown): boolean => e instanceof aj.NotFoundError && e.status === 404;
export = { create, isGone };
TS
    run node "$TS/node_modules/typescript/bin/tsc" --noEmit --strict --module nodenext \
        --moduleResolution nodenext --target es2022 --types node --typeRoots "$TS/node_modules/@types" use.mts use.cts
    [ "$status" -eq 0 ] || fail "tsc of a consumer: $output"
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
}
