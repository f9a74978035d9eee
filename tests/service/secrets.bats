#!/usr/bin/env bats
# Scoped secrets through the service (docs/network.md, "Secrets for the
# hosts they belong to"): HTTPS interception with the operator's
# serve --upstream-ca, the secret_* lines in the audit log, the mint hook
# (serve --secret-mint), and a fork that keeps its interception. In the
# fake world of tests/network (its own test CA; api.example.test is
# 192.0.2.10, other.test 203.0.113.10); nothing is sent to a real address.

load helpers
load ../network/world

setup_file() {
    world_setup_file
    world_test_certs "$BATS_FILE_TMPDIR/certs"
}

setup() {
    CERTS=$BATS_FILE_TMPDIR/certs
    WORLD_WEB_PORTS=80 WORLD_TLS=443:$CERTS world_setup
    SVC_WRAP=(nsenter --net="/run/netns/$HNS")
    # the hook: logs its verb, the secret, hosts, sandbox and stdin (the
    # test's log, outside every sandbox); mints "minted-SANDBOX-NAME";
    # fails for a secret named BAD
    HOOK=$BATS_TEST_TMPDIR/mint.sh
    HOOK_LOG=$BATS_TEST_TMPDIR/mint.log
    cat >"$HOOK" <<EOF
#!/bin/sh
v=\$(cat)
echo "\$1 \$AGENTJAIL_SECRET \$AGENTJAIL_SECRET_HOSTS \$AGENTJAIL_SANDBOX stdin=\$v args=\$#" >>"$HOOK_LOG"
[ "\$AGENTJAIL_SECRET" = BAD ] && { echo "the issuer refused \$AGENTJAIL_SECRET" >&2; exit 3; }
[ "\$1" = revoke ] && [ -e "$BATS_TEST_TMPDIR/issuer-down" ] && { echo "the issuer is down" >&2; exit 4; }
if [ "\$1" = revoke ] && [ -e "$BATS_TEST_TMPDIR/slow" ]; then
    : >"$BATS_TEST_TMPDIR/revoking"; i=0
    while [ ! -e "$BATS_TEST_TMPDIR/release" ] && [ \$i -lt 40 ]; do sleep 0.1; i=\$((i+1)); done
    : >"$BATS_TEST_TMPDIR/revoked"
fi
[ "\$1" = mint ] && [ -e "$BATS_TEST_TMPDIR/rm-ws" ] && rmdir "$BATS_TEST_TMPDIR/gone"
[ "\$1" = mint ] && echo "minted-\$AGENTJAIL_SANDBOX-\$AGENTJAIL_SECRET"
exit 0
EOF
    chmod 755 "$HOOK"
    : >"$HOOK_LOG"
    # the records of minted secrets (AGENTJAIL_STATE_DIR/minted): in the
    # service's --state-dir here, as svc_start's STATE
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/state
}

# serve revokes what was left in a thread, once it answers: wait for the
# sweep's secret_sweep_done line (one per start)
swept() {
    local i
    for i in $(seq 300); do
        [ "$(audit '.event == "secret_sweep_done"' | wc -l)" -ge "$(audit '.event == "start"' | wc -l)" ] &&
            return 0
        sleep 0.05
    done
    fail "serve's sweep did not end: $(cat "$STATE/audit.log")"
}

teardown() {
    local rc=0
    svc_stop || rc=1
    world_teardown || rc=1
    return $rc
}

VALUE='sk-svc-tls-Zq8!x=1'

req() { jq -c "select(.path == \"$1\")" "$WEB_LOG"; }
audit() { jq -c "select($1)" "$STATE/audit.log"; }

# everything a process inside may read that agentjail wrote: files (but
# /usr, /proc, /sys, /dev), every process's environment and command line
DUMP='import itertools, os
out = open("/workspace/inside.bin", "wb")
skip = ("/usr", "/proc", "/sys", "/dev", "/workspace")
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
    for f in files:
        try:
            out.write(open(os.path.join(top, f), "rb").read(16 << 20))
        except OSError:
            pass
for pid in filter(str.isdigit, os.listdir("/proc")):
    for what in ("environ", "cmdline"):
        try:
            out.write(open(f"/proc/{pid}/{what}", "rb").read())
        except OSError:
            pass'

@test "service: HTTPS to a secret's host gets the minted value (serve --upstream-ca, --secret-mint); the audit log has the secret_* lines" {
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    mkdir -p "$BATS_TEST_TMPDIR/ws"
    id=$(sb_create "{\"allow\": [\"api.example.test\", \"other.test\"], \"dns\": \"192.0.2.53\",
        \"workspace\": \"$BATS_TEST_TMPDIR/ws\",
        \"secret\": {\"TOKEN\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]}}}")
    local minted=minted-$id-TOKEN
    # minted at create, with the value on stdin, never on the command line
    [ "$(cat "$HOOK_LOG")" = "mint TOKEN api.example.test $id stdin=$VALUE args=1" ] ||
        fail "hook: $(cat "$HOOK_LOG")"
    output=$(sb_exec "$id" "$(jq -cn --arg d "$DUMP" '{cmd: ["sh", "-c", "
        curl -sS -m 10 -H \"Authorization: Bearer $TOKEN\" -w \"api %{http_code}\n\" -o /dev/null https://api.example.test/svc-tls
        curl -sS -m 10 -k -H \"Authorization: Bearer $TOKEN\" -w \"other %{http_code}\n\" -o /dev/null https://other.test/svc-other
        curl -sS -m 10 -H \"Authorization: Bearer $TOKEN\" -w \"plain %{http_code}\n\" -o /dev/null http://other.test/svc-plain
        echo audit-fds: $(ls -l /proc/[0-9]*/fd/ 2>/dev/null | grep -c audit)
        env; python3 -c \"$0\"; echo inside: $TOKEN", $d], timeout: 60}')" | events_stdout)
    [[ "$output" == *"api 200"* && "$output" == *"other 200"* && "$output" == *"plain 200"* ]] ||
        fail "exec: $output $(cat "$BATS_TEST_TMPDIR/serve.log")"
    local ph
    ph=$(sed -n 's/^inside: //p' <<<"$output")
    [[ "$ph" == agentjail-placeholder-TOKEN-* ]] || fail "not a placeholder: $ph"
    # the audit log's descriptor went to netd, not into the sandbox
    [[ "$output" == *"audit-fds: 0"* ]] || fail "$(grep audit-fds <<<"$output")"
    # the server got the minted value over TLS; other hosts the placeholder
    [ "$(req /svc-tls | jq -r '.headers.Authorization')" = "Bearer $minted" ] || fail "/svc-tls: $(req /svc-tls)"
    [ "$(req /svc-tls | jq -r .tls)" = true ] || fail "not over TLS: $(req /svc-tls)"
    [ "$(req /svc-other | jq -r '.headers.Authorization')" = "Bearer $ph" ] || fail "/svc-other: $(req /svc-other)"
    [ "$(req /svc-plain | jq -r '.headers.Authorization')" = "Bearer $ph" ] || fail "/svc-plain: $(req /svc-plain)"
    # neither value inside: output, environment, files
    [ "$(stat -c %s "$BATS_TEST_TMPDIR/ws/inside.bin")" -gt 100000 ] || fail "the dump is too small"
    ! grep -qF -e "$VALUE" -e "$minted" "$BATS_TEST_TMPDIR/ws/inside.bin" || fail "a value is inside"
    [[ "$output" != *"$VALUE"* && "$output" != *"$minted"* ]] || fail "a value in the output"
    # the audit log: netd's lines with the sandbox's id and the tenant the
    # service's own lines name, never a value
    local tenant
    tenant=$(audit ".event == \"secret_minted\" and .sandbox == \"$id\"" | jq -r .tenant)
    [ -n "$tenant" ] && [ "$tenant" != null ] || fail "no tenant: $(cat "$STATE/audit.log")"
    [ "$(audit ".event == \"secret_injected\" and .sandbox == \"$id\" and .tenant == \"$tenant\" and .host == \"api.example.test\" and .port == 443" | wc -l)" -eq 1 ] ||
        fail "injected: $(cat "$STATE/audit.log")"
    [ "$(audit ".event == \"secret_withheld\" and .sandbox == \"$id\" and .tenant == \"$tenant\" and .host == \"other.test\" and .port == 80 and .secret == \"TOKEN\"" | wc -l)" -eq 1 ] ||
        fail "withheld: $(cat "$STATE/audit.log")"
    [ "$(audit ".event == \"secret_minted\" and .sandbox == \"$id\"" | wc -l)" -eq 1 ] || fail "$(cat "$STATE/audit.log")"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    # revoked at destroy, the minted value on stdin
    [ "$(sed -n 2p "$HOOK_LOG")" = "revoke TOKEN api.example.test $id stdin=$minted args=1" ] ||
        fail "hook: $(cat "$HOOK_LOG")"
    [ "$(audit ".event == \"secret_revoked\" and .sandbox == \"$id\"" | wc -l)" -eq 1 ] || fail "$(cat "$STATE/audit.log")"
    ! grep -qF -e "$VALUE" -e "$minted" "$STATE/audit.log" || fail "a value in the audit log"
    # the array form of "secret" is minted too: the minted value goes out,
    # not the one the client gave
    local arr
    arr=$(sb_create "{\"allow\": [\"api.example.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": [\"ARR@api.example.test=$VALUE\"]}")
    output=$(sb_exec "$arr" '{"cmd": ["sh", "-c", "curl -sS -m 10 -H \"Authorization: Bearer $ARR\" -w \"api %{http_code}\\n\" -o /dev/null https://api.example.test/svc-arr"], "timeout": 60}' | events_stdout)
    [[ "$output" == *"api 200"* ]] || fail "array form: $output"
    [ "$(req /svc-arr | jq -r '.headers.Authorization')" = "Bearer minted-$arr-ARR" ] || fail "/svc-arr: $(req /svc-arr)"
    api DELETE "/v1/sandboxes/$arr" >/dev/null
    assert_world_clean
}

@test "service: a mint hook that fails fails the create, what it minted is revoked (kept in a record if that fails); a bad --upstream-ca stops serve" {
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    # the issuer is down for revokes too: GOOD's revoke fails (the old code
    # dropped its error and its record; nothing revoked GOOD ever again)
    touch "$BATS_TEST_TMPDIR/issuer-down"
    api_status POST /v1/sandboxes -d "{\"allow\": [\"api.example.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": {\"GOOD\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]},
                     \"BAD\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]}}}"
    [ "$status_code" = 500 ] || fail "status $status_code: $body"
    [ "$(jq -r .error.code <<<"$body")" = secret_mint_failed ] || fail "$body"
    [[ "$(jq -r .error.message <<<"$body")" == *"mint hook"*"secret BAD failed (exit status 3)"* ]] || fail "$body"
    [[ "$body" != *"$VALUE"* ]] || fail "the value in the error: $body"
    grep -q "^mint GOOD .*stdin=$VALUE" "$HOOK_LOG" && grep -q "^revoke GOOD .*stdin=minted-" "$HOOK_LOG" ||
        fail "hook: $(cat "$HOOK_LOG")"
    [ "$(api GET /v1/sandboxes | jq '.sandboxes | length')" -eq 0 ] || fail "a sandbox is left: $(api GET /v1/sandboxes)"
    local id rec
    id=$(awk '$1 == "mint" && $2 == "GOOD" { print $4 }' "$HOOK_LOG")
    rec=$STATE/minted/$id.json
    # BAD may have been issued before its hook failed: it is revoked too,
    # with an empty stdin, and kept as that fails (the old code dropped it)
    grep -qx "revoke BAD api.example.test $id stdin= args=1" "$HOOK_LOG" || fail "hook: $(cat "$HOOK_LOG")"
    [ "$(jq -c '[.secrets[].name] | sort' "$rec")" = '["BAD","GOOD"]' ] || fail "the record of the failed revoke: $(ls -la "$STATE/minted")"
    [ "$(audit ".event == \"secret_revoke_failed\" and .sandbox == \"$id\" and .secret == \"GOOD\"" | wc -l)" -eq 1 ] ||
        fail "audit: $(cat "$STATE/audit.log")"
    [ "$(audit ".event == \"secret_revoked\" and .sandbox == \"$id\"" | wc -l)" -eq 0 ] || fail "audit: $(cat "$STATE/audit.log")"
    # the next start revokes it
    rm "$BATS_TEST_TMPDIR/issuer-down"
    svc_stop
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    swept
    grep -qx "revoke GOOD api.example.test $id stdin= args=1" "$HOOK_LOG" || fail "hook: $(cat "$HOOK_LOG")"
    [ "$(jq -c '[.secrets[].name]' "$rec")" = '["BAD"]' ] || fail "the record after its revoke: $(cat "$rec")"
    rm "$rec" # BAD's issuer always refuses: revoked by hand
    svc_stop
    # an upstream CA that is not a CA, or not there: serve does not start
    run "$AJ" serve --socket "$BATS_TEST_TMPDIR/x.sock" --state-dir "$BATS_TEST_TMPDIR/x" \
        --upstream-ca "$CERTS/leaf.crt"
    assert_status 125
    [[ "$output" == *"--upstream-ca $CERTS/leaf.crt: a certificate in it is not a CA's"* ]] || fail "$output"
    run "$AJ" serve --socket "$BATS_TEST_TMPDIR/x.sock" --state-dir "$BATS_TEST_TMPDIR/x" \
        --upstream-ca "$CERTS/nothing.pem"
    assert_status 125
    [[ "$output" == *"cannot read it"* ]] || fail "$output"
    run "$AJ" serve --socket "$BATS_TEST_TMPDIR/x.sock" --state-dir "$BATS_TEST_TMPDIR/x" \
        --secret-mint relative/hook
    assert_status 125
    [[ "$output" == *"--secret-mint 'relative/hook': expected an absolute path"* ]] || fail "$output"
    [ ! -e "$BATS_TEST_TMPDIR/x.sock" ] || fail "serve started"
}

@test "service: what a SIGKILLed service minted is revoked at its next start" {
    # the old code kept no record: the next start never called revoke
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    local id rec
    id=$(sb_create "{\"allow\": [\"api.example.test\", \"*.example.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": {\"ONE\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]},
                     \"TWO\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\", \"*.example.test\"]}}}")
    rec=$STATE/minted/$id.json
    [ "$(stat -c %a "$rec")" = 600 ] && [ "$(stat -c %a "$STATE/minted")" = 700 ] || fail "$(ls -la "$STATE/minted")"
    [ "$(jq -c '[.secrets[].name]' "$rec")" = '["ONE","TWO"]' ] || fail "$(cat "$rec")"
    ! grep -qF -e "$VALUE" -e minted- "$rec" || fail "a value in the record: $(cat "$rec")"
    svc_crash
    ! grep -q "^revoke" "$HOOK_LOG" || fail "revoked already: $(cat "$HOOK_LOG")"
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    swept
    # one revoke per minted secret, with its name, hosts and sandbox; no value
    grep -qx "revoke ONE api.example.test $id stdin= args=1" "$HOOK_LOG" &&
        grep -qx "revoke TWO api.example.test,\*.example.test $id stdin= args=1" "$HOOK_LOG" ||
        fail "hook: $(cat "$HOOK_LOG")"
    [ "$(grep -c "^revoke" "$HOOK_LOG")" -eq 2 ] || fail "hook: $(cat "$HOOK_LOG")"
    [ ! -e "$rec" ] || fail "the record is left"
    [ "$(audit ".event == \"secret_revoked\" and .sandbox == \"$id\" and .after != null" | wc -l)" -eq 2 ] ||
        fail "audit: $(cat "$STATE/audit.log")"
    # a revoke that fails keeps its record for the next start; a record that
    # cannot be read is set aside and audited, never dropped in silence
    id=$(sb_create "{\"allow\": [\"api.example.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": {\"ONE\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]}}}")
    rec=$STATE/minted/$id.json
    svc_crash
    echo '{"sandbox": ' >"$STATE/minted/sb-torn.json"
    # records that are not the service's to act on: set aside, their
    # contents never reach the hook (the old code revoked all but the link)
    local bad b
    # a valid hook and an owner that is gone (pid 4194305: above any pid_max)
    local owner
    owner=$(jq -nc --arg b "$(cat /proc/sys/kernel/random/boot_id)" --argjson n "$(stat -Lc %i /proc/self/ns/pid)" \
        '{boot: $b, pidns: $n, pids: [[4194305, 1]]}')
    mkrec() { # SUFFIX NAME HOST [EXTRA] [HOOK] [OWNER]: a record of sandbox sb-00000000000000SUFFIX, 0600
        local f=$STATE/minted/sb-00000000000000$1.json
        printf '{"sandbox": "sb-00000000000000%s", "secrets": [{"name": "%s", "hosts": ["%s"]}], "hook": "%s", "owner": %s%s}' \
            "$1" "$2" "$3" "${5:-$HOOK}" "${6:-$owner}" "${4:-}" >"$f"
        chmod 600 "$f"
    }
    mkrec a1 MODE api.example.test && chmod 644 "$STATE/minted/sb-00000000000000a1.json"
    mkrec a2 OWNER api.example.test && chown 65534 "$STATE/minted/sb-00000000000000a2.json"
    mkrec a3 'X=Y' api.example.test
    mkrec a4 HOST 'API.example.test'
    mkrec a5 HOST2 'a b.test'
    mkrec a6 EXTRA api.example.test ', "more": 1'
    mkrec a7 DUP api.example.test ', "sandbox": "sb-00000000000000a7"'
    mkrec a8 ID api.example.test && mv "$STATE/minted/sb-00000000000000a8.json" "$STATE/minted/sb-00000000000000b8.json"
    mkrec a9 LINK api.example.test && mv "$STATE/minted/sb-00000000000000a9.json" "$BATS_TEST_TMPDIR/link.json" &&
        ln -s "$BATS_TEST_TMPDIR/link.json" "$STATE/minted/sb-00000000000000a9.json"
    mkrec c1 HOOKREL api.example.test '' mint.sh
    mkrec c2 OWNER2 api.example.test '' "$HOOK" "$(jq -c '.pids = [[0, 1]]' <<<"$owner")"
    mkrec c3 OWNER3 api.example.test '' "$HOOK" "$(jq -c '.more = 1' <<<"$owner")"
    bad="a1 a2 a3 a4 a5 a6 a7 b8 a9 c1 c2 c3"
    # one set aside before is kept; a failed revoke's record is rewritten by
    # a rename (a new inode), never in place (the old code: O_TRUNC)
    echo '{"earlier": 1}' >"$STATE/minted/.bad-sb-torn.json"
    local ino
    ino=$(stat -c %i "$rec")
    touch "$BATS_TEST_TMPDIR/issuer-down"
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    swept
    ! grep -q "sb-00000000000000" "$HOOK_LOG" || fail "a bad record reached the hook: $(cat "$HOOK_LOG")"
    for b in $bad; do
        [ ! -e "$STATE/minted/sb-00000000000000$b.json" ] && [ -e "$STATE/minted/.bad-sb-00000000000000$b.json" ] ||
            fail "record $b not set aside: $(ls -la "$STATE/minted")"
        [ "$(audit ".event == \"secret_revoke_failed\" and .record == \"sb-00000000000000$b.json\"" | wc -l)" -eq 1 ] ||
            fail "record $b not audited: $(cat "$STATE/audit.log")"
    done
    [ "$(jq -c '[.secrets[].name]' "$rec")" = '["ONE"]' ] || fail "a failed revoke dropped its record"
    [ "$(audit ".event == \"secret_revoke_failed\" and .sandbox == \"$id\"" | wc -l)" -eq 1 ] ||
        fail "audit: $(cat "$STATE/audit.log")"
    [ ! -e "$STATE/minted/sb-torn.json" ] && [ -f "$STATE/minted/.bad-sb-torn.json.1" ] &&
        [ "$(cat "$STATE/minted/.bad-sb-torn.json")" = '{"earlier": 1}' ] ||
        fail "the torn record: $(ls -la "$STATE/minted")"
    [ "$(stat -c %i "$rec")" != "$ino" ] || fail "the record was rewritten in place"
    ! ls -a "$STATE/minted" | grep -q '^\.tmp-' || fail "a temporary file left: $(ls -la "$STATE/minted")"
    [ "$(audit '.event == "secret_revoke_failed" and .record == "sb-torn.json"' | wc -l)" -eq 1 ] ||
        fail "audit: $(cat "$STATE/audit.log")"
    rm "$BATS_TEST_TMPDIR/issuer-down"
    svc_stop
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    swept
    [ ! -e "$rec" ] || fail "the record is left after its revoke"
    [ "$(audit ".event == \"secret_revoked\" and .sandbox == \"$id\" and .after != null" | wc -l)" -eq 1 ] ||
        fail "audit: $(cat "$STATE/audit.log")"
    assert_world_clean
}

@test "service: what it minted is revoked after a reboot (records in AGENTJAIL_STATE_DIR, not the --state-dir); serve answers while the hook revokes; a stop ends the sweep" {
    # AGENTJAIL_STATE_DIR outlives a reboot; the --state-dir (/run/agentjail
    # by default) does not (the old code kept the records there)
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/var
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    local id rec
    id=$(sb_create "{\"allow\": [\"api.example.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": {\"ONE\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]},
                     \"TWO\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]}}}")
    rec=$AGENTJAIL_STATE_DIR/minted/$id.json
    [ -f "$rec" ] && [ ! -e "$STATE/minted" ] || fail "the record: $(ls -laR "$AGENTJAIL_STATE_DIR" "$STATE")"
    # the machine goes down before the revoke went through (the issuer is
    # down for the stop's): the record stays
    touch "$BATS_TEST_TMPDIR/issuer-down"
    svc_stop
    rm "$BATS_TEST_TMPDIR/issuer-down"
    [ -f "$rec" ] || fail "no record after a failed revoke"
    # a reboot: the --state-dir is gone, the record is of another boot; its
    # owner's pid is one alive in this boot (so only the boot says gone)
    local me=$BASHPID start
    start=$(sed 's/.*) //' /proc/$me/stat | cut -d' ' -f20)
    jq -c --arg b "$(cat /proc/sys/kernel/random/uuid)" --argjson p "[[$me, $start]]" \
        '.owner.boot = $b | .owner.pids = $p' "$rec" >"$rec.new"
    chmod 600 "$rec.new" && mv "$rec.new" "$rec"
    rm -rf "$STATE"
    # the start's sweep revokes it in a thread: the socket answers while
    # the hook runs (the old code swept before it listened)
    : >"$HOOK_LOG"
    touch "$BATS_TEST_TMPDIR/slow"
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    local i
    for i in $(seq 100); do
        [ -e "$BATS_TEST_TMPDIR/revoking" ] && break
        sleep 0.05
    done
    api_status GET /v1/sandboxes
    [ "$status_code" = 200 ] || fail "list during the sweep: $status_code $body"
    [ -e "$BATS_TEST_TMPDIR/revoking" ] && [ ! -e "$BATS_TEST_TMPDIR/revoked" ] ||
        fail "the hook is not revoking while serve answers: $(ls "$BATS_TEST_TMPDIR") $(cat "$HOOK_LOG")"
    [ "$(audit '.event == "secret_sweep_done"' | wc -l)" -eq 0 ] || fail "the sweep ended already"
    # a stop while ONE's revoke runs: it waits for that revoke (let go once
    # the front is gone, when the stop has begun) and leaves TWO to the next
    # start, in the record
    local front
    front=$(audit '.event == "start"' | jq -r .front | tail -1)
    kill -TERM "$SVC_PID"
    for i in $(seq 100); do
        kill -0 "$front" 2>/dev/null || break
        sleep 0.05
    done
    sleep 0.1
    touch "$BATS_TEST_TMPDIR/release"
    svc_stop
    [ "$(cat "$HOOK_LOG")" = "revoke ONE api.example.test $id stdin= args=1" ] || fail "hook: $(cat "$HOOK_LOG")"
    [ "$(jq -c '[.secrets[].name]' "$rec")" = '["TWO"]' ] || fail "the record after the stop: $(cat "$rec")"
    [ "$(audit '.event == "secret_sweep_done" and .left == 1' | wc -l)" -eq 1 ] || fail "audit: $(cat "$STATE/audit.log")"
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    swept
    [ "$(sed -n 2p "$HOOK_LOG")" = "revoke TWO api.example.test $id stdin= args=1" ] || fail "hook: $(cat "$HOOK_LOG")"
    [ ! -e "$rec" ] || fail "the record is left: $(cat "$rec")"
    [ "$(audit ".event == \"secret_revoked\" and .sandbox == \"$id\" and .after == \"a restart of the machine\"" | wc -l)" -eq 2 ] ||
        fail "audit: $(cat "$STATE/audit.log")"
    [ "$(audit '.event == "secret_sweep_done" and .left == 0' | wc -l)" -eq 1 ] || fail "audit: $(cat "$STATE/audit.log")"
    assert_world_clean
}

@test "service: a sandbox whose start fails after its mint is revoked, no record left; a minted directory not the service's own is refused" {
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    # the hook removes the workspace once it has minted: the start then fails
    mkdir "$BATS_TEST_TMPDIR/gone"
    touch "$BATS_TEST_TMPDIR/rm-ws"
    local create="{\"allow\": [\"api.example.test\"], \"dns\": \"192.0.2.53\", \"workspace\": \"$BATS_TEST_TMPDIR/gone\",
        \"secret\": {\"TOKEN\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]}}}"
    api_status POST /v1/sandboxes -d "$create"
    [ "$status_code" -ge 400 ] && [ ! -e "$BATS_TEST_TMPDIR/gone" ] || fail "status $status_code: $body"
    local id
    id=$(awk '$1 == "mint" { print $4 }' "$HOOK_LOG")
    grep -qx "revoke TOKEN api.example.test $id stdin=minted-$id-TOKEN args=1" "$HOOK_LOG" || fail "hook: $(cat "$HOOK_LOG")"
    [ -z "$(ls -A "$STATE/minted")" ] || fail "a record is left: $(ls -la "$STATE/minted")"
    [ "$(audit ".event == \"secret_revoked\" and .sandbox == \"$id\"" | wc -l)" -eq 1 ] || fail "audit: $(cat "$STATE/audit.log")"
    [ "$(api GET /v1/sandboxes | jq '.sandboxes | length')" -eq 0 ] || fail "a sandbox is left"
    rm "$BATS_TEST_TMPDIR/rm-ws"
    # a minted directory of another user, group-writable, or a symbolic link:
    # a create that would mint fails, the hook never run (the old code wrote
    # records into the first two), and serve's next start says so
    create="{\"allow\": [\"api.example.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": {\"TOKEN\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]}}}"
    local bad
    for bad in owner mode link; do
        rm -rf "$STATE/minted"
        case $bad in
        owner) mkdir -m 700 "$STATE/minted" && chown 65534 "$STATE/minted" ;;
        mode) mkdir "$STATE/minted" && chmod 770 "$STATE/minted" ;;
        link) mkdir -p -m 700 "$BATS_TEST_TMPDIR/elsewhere" && ln -s "$BATS_TEST_TMPDIR/elsewhere" "$STATE/minted" ;;
        esac
        : >"$HOOK_LOG"
        api_status POST /v1/sandboxes -d "$create"
        [ "$status_code" = 500 ] && [ "$(jq -r .error.code <<<"$body")" = secret_mint_failed ] &&
            [[ "$(jq -r .error.message <<<"$body")" == *"$STATE/minted: not a directory of this user's (uid 0), mode 0700"* ]] ||
            fail "$bad: status $status_code: $body"
        [ ! -s "$HOOK_LOG" ] || fail "$bad: the hook ran: $(cat "$HOOK_LOG")"
        [ -z "$(ls -A "$BATS_TEST_TMPDIR/elsewhere" 2>/dev/null)" ] || fail "$bad: a record through the link"
    done
    svc_stop
    : >"$BATS_TEST_TMPDIR/serve.log"
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    swept
    grep -qF "$STATE/minted: not a directory of this user's (uid 0), mode 0700" "$BATS_TEST_TMPDIR/serve.log" ||
        fail "serve's start: $(cat "$BATS_TEST_TMPDIR/serve.log")"
    [ "$(audit ".event == \"secret_revoke_failed\" and .record == \"$STATE/minted\"" | wc -l)" -eq 1 ] ||
        fail "audit: $(cat "$STATE/audit.log")"
    rm -rf "$STATE/minted"
}

@test "service: a fork and a snapshot of a sandbox with scoped secrets: each copy intercepts with its own CA and value; the snapshot keeps the image's CA bundle" {
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/state
    mk_tiny_root "$T/tree" sh curl cat
    mkdir -p "$T/tree/etc/ssl/certs"
    cp /etc/ssl/certs/ca-certificates.crt "$T/tree/etc/ssl/certs/"
    aj_timeout "$AJ" image build tlsimg --from-dir "$T/tree" 2>/dev/null
    svc_start --upstream-ca "$CERTS/ca.crt" --secret-mint "$HOOK"
    id=$(sb_create "{\"image\": \"tlsimg\", \"allow\": [\"api.example.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": {\"TOKEN\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]}}}")
    get() { # SANDBOX PATH
        sb_exec "$1" "{\"cmd\": [\"sh\", \"-c\", \"curl -sS -m 10 -H \\\"Authorization: Bearer \$TOKEN\\\" -w '%{http_code}\\\\n' -o /dev/null https://api.example.test$2 2>&1\"]}" | events_stdout
    }
    [ "$(get "$id" /src)" = 200 ] || fail "source: $(get "$id" /src2)"
    api_status POST "/v1/sandboxes/$id/fork" -d '{}'
    [ "$status_code" = 201 ] || fail "fork: $status_code $body"
    f=$(jq -r '.sandboxes[0].id' <<<"$body")
    [ "$(get "$f" /fork)" = 200 ] || fail "fork: $(get "$f" /fork2)"
    [ "$(req /src | jq -r '.headers.Authorization')" = "Bearer minted-$id-TOKEN" ] || fail "/src: $(req /src)"
    [ "$(req /fork | jq -r '.headers.Authorization')" = "Bearer minted-$f-TOKEN" ] || fail "/fork: $(req /fork)"
    grep -q "^mint TOKEN api.example.test $f stdin=$VALUE" "$HOOK_LOG" || fail "hook: $(cat "$HOOK_LOG")"
    # a snapshot keeps the image's own bundle, not the sandbox's CA; a
    # sandbox made from it intercepts with a CA of its own
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "tlssnap"}'
    [ "$status_code" = 201 ] || fail "snapshot: $status_code $body"
    local img
    img=$AGENTJAIL_STATE_DIR/images/$("$AJ" image inspect tlssnap | jq -r '.digest | sub("sha256:"; "")')/rootfs
    cmp "$img/etc/ssl/certs/ca-certificates.crt" /etc/ssl/certs/ca-certificates.crt ||
        fail "the snapshot's CA bundle is not the image's"
    [ ! -e "$img/.agentjail/ca-certificates.crt" ] || fail "the snapshot holds the sandbox's CA bundle"
    r=$(sb_create "{\"image\": \"tlssnap\", \"allow\": [\"api.example.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": {\"TOKEN\": {\"value\": \"$VALUE\", \"hosts\": [\"api.example.test\"]}}}")
    [ "$(get "$r" /restored)" = 200 ] || fail "restored: $(get "$r" /restored2)"
    [ "$(req /restored | jq -r '.headers.Authorization')" = "Bearer minted-$r-TOKEN" ] || fail "$(req /restored)"
    local s
    for s in "$f" "$id" "$r"; do api DELETE "/v1/sandboxes/$s" >/dev/null; done
    [ "$(grep -c '^revoke TOKEN' "$HOOK_LOG")" -eq 3 ] || fail "hook: $(cat "$HOOK_LOG")"
}
