#!/usr/bin/env bats
# Secret walls: the caller's environment and command line, --secret values,
# output redaction, masked workspace files, host credential files, host
# path disclosure.

load helpers

# A fresh canary and its reverse (the attack is given the reverse, so that
# its own command line does not hold the canary).
new_canary() {
    CANARY="ajcanary-$RANDOM$RANDOM-$BASHPID-zq"
    REV=$(printf '%s' "$CANARY" | rev)
}

@test "secrets: the caller's environment (AJ_SEC_CANARY) is in no /proc/*/environ, cmdline or file inside" {
    new_canary
    AJ_SEC_CANARY=$CANARY attack -- /attack scan_secret "$REV"
    assert_all_blocked
    assert_held secret
    local scanned
    scanned=$(info_of scanned | awk '{ print $1 }')
    # level 2: the command is alone (pid 1, no init): 3 files of its own
    [ "$scanned" -ge "$(lv 6 3)" ] || { _aj_dump; fail "scanned only $scanned /proc files"; }
}

@test "secrets: --env X=canary and --env-file values are not in init's (pid 1) cmdline or environ" {
    new_canary
    printf 'FROM_FILE=%s-file\n' "$CANARY" >"$T/envfile"
    if at_level gvisor; then
        # no agentjail init: pid 1 is the command, whose environment is where
        # --env puts the value; the whole scan (every /proc entry, every
        # file inside) finds it there and nowhere else
        attack --env "X=$CANARY" --env-file "$T/envfile" -- /attack scan_secret "$REV"
        assert_sentry_own secret
        assert_eq "$(kv result)" "ESCAPED n=1" "places holding the value"
        assert_eq "$(kv secret)" "ESCAPED found in /proc/1/environ" "where the value is"
        return
    fi
    attack --env "X=$CANARY" --env-file "$T/envfile" -- /attack scan_secret "$REV" pid1
    assert_all_blocked
    assert_held secret
    attack --env "X=$CANARY" -- /attack scan_secret "$(printf '%s' "$CANARY-file" | rev)" pid1
    assert_all_blocked
}

@test "secrets: a --secret value is in no process's environ/cmdline nor any file inside; NAME holds a placeholder" {
    new_canary
    attack --secret "AJ_TOKEN=$CANARY" -- /bin/sh -c "/attack scan_secret $REV; echo \"token=\$AJ_TOKEN\""
    assert_all_blocked
    assert_held secret
    [[ "$(kv token)" == agentjail-placeholder-AJ_TOKEN-* ]] || { _aj_dump; fail "AJ_TOKEN inside is not the placeholder"; }
    # --secret NAME takes the value from the caller's environment
    AJ_TOKEN=$CANARY attack --secret AJ_TOKEN -- /bin/sh -c "/attack scan_secret $REV; echo \"token=\$AJ_TOKEN\""
    assert_all_blocked
    [[ "$(kv token)" == agentjail-placeholder-AJ_TOKEN-* ]] || { _aj_dump; fail "AJ_TOKEN inside is not the placeholder"; }
}

@test "redaction: a secret the command found is printed raw, split, byte by byte, base64, on stderr: never shown" {
    new_canary
    echo "$CANARY" >"$WS/found-it"
    attack --secret "AJ_TOKEN=$CANARY" -- /attack leak /workspace/found-it
    assert_status 0
    local all="$output
$stderr" a enc
    [[ "$all" != *"$CANARY"* ]] || { _aj_dump; fail "the secret's value reached the caller"; }
    for a in "" x xy; do
        enc=$(printf '%s%s' "$a" "$CANARY" | base64 -w0)
        [[ "$all" != *"$enc"* ]] || { _aj_dump; fail "the secret's base64 (alignment ${#a}) reached the caller"; }
    done
    assert_eq "$(printf '%s\n' "$output" | awk '$1 == "raw" { print $2 }')" "[REDACTED]" "raw"
    assert_eq "$(printf '%s\n' "$output" | awk '$1 == "split" { print $2 }')" "[REDACTED]" "split over 3 writes"
    assert_eq "$(printf '%s\n' "$output" | awk '$1 == "bytes" { print $2 }')" "[REDACTED]" "one byte per write"
    assert_eq "$(printf '%s\n' "$stderr" | awk '$1 == "stderr" { print $2 }')" "[REDACTED]" "stderr"
    # Beyond the documented guarantee (each stream on its own): half on
    # stdout, half on stderr is not redacted.
    local half1 half2
    half1=$(printf '%s\n' "$output" | awk '$1 == "cross_out" { print $2 }')
    half2=$(printf '%s\n' "$stderr" | awk '$1 == "cross_err" { print $2 }')
    if [ "$half1$half2" = "$CANARY" ]; then
        finding "redaction is per stream: a value split between stdout and stderr reaches the caller in two halves"
    fi
}

@test "masks: .env (keys kept, values placeholders), id_rsa, *.pem, .ssh/, .aws/ hide their contents" {
    new_canary
    printf 'API_KEY=%s\nDEBUG=1\n' "$CANARY" >"$WS/.env"
    mkdir -p "$WS/.ssh" "$WS/.aws" "$WS/app/config"
    echo "$CANARY" >"$WS/.ssh/id_ed25519"
    echo "$CANARY" >"$WS/id_rsa"
    echo "$CANARY" >"$WS/app/server.pem"
    printf '[default]\naws_secret_access_key = %s\n' "$CANARY" >"$WS/.aws/credentials"
    printf 'SECRET=%s\n' "$CANARY" >"$WS/app/config/.env.production"
    attack -- /bin/sh -c 'cd /workspace && cat .env id_rsa app/server.pem app/config/.env.production .ssh/id_ed25519 .aws/credentials 2>&1; ls -A .ssh .aws'
    [[ "$output" != *"$CANARY"* ]] || { _aj_dump; fail "a masked file's content is visible inside"; }
    assert_output_has_line "API_KEY=agentjail-masked"
    assert_output_has_line "DEBUG=agentjail-masked"
    # the host files are intact
    grep -q "$CANARY" "$WS/.env" "$WS/id_rsa" || fail "host workspace files changed"
}

@test "masks: credential files keep what is not secret, each secret a placeholder (.npmrc, .pypirc, pip.conf, .netrc, .git-credentials, .docker/config.json, .yarnrc.yml)" {
    new_canary
    local c=$CANARY
    mkdir -p "$WS/.docker" "$WS/.config/pip" "$WS/sub"
    printf 'registry=http://registry.test/\n//registry.test/:_authToken=%s\n_auth=%s\n//r.example/:_password=%s\n' "$c" "$c" "$c" >"$WS/.npmrc"
    printf '[pypi]\nusername = __token__\npassword = %s\n' "$c" >"$WS/.pypirc"
    printf '[global]\nindex-url = https://alice:%s@pypi.example/simple\n' "$c" >"$WS/.config/pip/pip.conf"
    printf 'machine api.example.com login %s password %s\n' "$c" "$c" >"$WS/.netrc"
    printf 'https://bob:%s@git.example\n' "$c" >"$WS/.git-credentials"
    printf '{"auths": {"registry.example": {"auth": "%s", "identitytoken": "%s"}}, "credsStore": "pass"}\n' "$c" "$c" >"$WS/.docker/config.json"
    printf 'npmRegistryServer: "https://registry.test"\nnpmAuthToken: %s\n' "$c" >"$WS/.yarnrc.yml"
    # a file that does not parse is masked whole, never passed through
    printf 'registry=http://registry.test/\n%s\n' "$c" >"$WS/sub/.npmrc"
    attack -- /bin/sh -c 'cd /workspace && for f in .npmrc .pypirc .config/pip/pip.conf .netrc .git-credentials .docker/config.json .yarnrc.yml sub/.npmrc; do echo "== $f"; cat "$f"; done'
    assert_status 0
    [[ "$output" != *"$CANARY"* ]] || { _aj_dump; fail "a secret of a credential file is visible inside"; }
    local l
    for l in "registry=http://registry.test/" "//registry.test/:_authToken=agentjail-masked" \
        "_auth=agentjail-masked" "//r.example/:_password=agentjail-masked" "username = __token__" \
        "password =agentjail-masked" "index-url = https://alice:agentjail-masked@pypi.example/simple" \
        "machine api.example.com login agentjail-masked password agentjail-masked" \
        "https://bob:agentjail-masked@git.example" '  "credsStore": "pass"' \
        '      "identitytoken": "agentjail-masked"' 'npmRegistryServer: "https://registry.test"' \
        'npmAuthToken: "agentjail-masked"'; do
        assert_output_has_line "$l"
    done
    # sub/.npmrc: empty
    [[ "$output" == *"== sub/.npmrc" ]] || { _aj_dump; fail "a malformed .npmrc was not masked whole"; }
    grep -q "$CANARY" "$WS/.npmrc" "$WS/.netrc" || fail "host workspace files changed"
}

@test "masks: --unmask PATH shows that one entry as it is, with a notice; a bad PATH fails closed" {
    new_canary
    printf 'registry=http://registry.test/\n//registry.test/:_authToken=%s\n' "$CANARY" >"$WS/.npmrc"
    printf 'KEY=%s\n' "$CANARY" >"$WS/.env"
    attack --unmask .npmrc -- /bin/sh -c 'cat /workspace/.npmrc /workspace/.env'
    assert_status 0
    assert_output_has_line "//registry.test/:_authToken=$CANARY"
    assert_output_has_line "KEY=agentjail-masked"
    [[ "$stderr" == *"notice: --unmask .npmrc"* ]] || { _aj_dump; fail "no notice"; }
    local bad
    for bad in /abs ../x a/../b '' 'a//b' '*.env' .; do
        attack --unmask "$bad" -- true
        assert_status 125
        assert_one_error_line
    done
}

@test "masks: masked entries cannot be removed, renamed, written or unmounted to uncover them" {
    new_canary
    echo "TOKEN=$CANARY" >"$WS/.env"
    echo "$CANARY" >"$WS/id_rsa"
    attack -- /bin/sh -c 'cd /workspace
        try() { n=$1; shift; if "$@" 2>/dev/null; then echo "$n=0"; else echo "$n=1"; fi; }
        try rm rm -f .env
        try mv mv id_rsa x
        try write sh -c "echo x >>.env"
        try ln ln .env hard
        cat .env id_rsa x hard 2>/dev/null
        /attack remount >/dev/null; echo "remount=$?"'
    [[ "$output" != *"$CANARY"* ]] || { _aj_dump; fail "a masked file's content became visible"; }
    assert_eq "$(kv rm)" 1 "rm of a masked .env"
    assert_eq "$(kv mv)" 1 "mv of a masked id_rsa"
    assert_eq "$(kv write)" 1 "append to a masked .env"
    assert_eq "$(kv ln)" 1 "hard link to a masked .env"
    assert_eq "$(kv remount)" 0 "umount/remount attempts all blocked"
    assert_eq "$(cat "$WS/.env")" "TOKEN=$CANARY" "host .env"
}

@test "masks: a symlink named like a secret (.env.local -> config/prod, .ssh -> dotssh) does not uncover its target" {
    new_canary
    mkdir -p "$WS/config" "$WS/dotssh"
    printf 'TOKEN=%s\n' "$CANARY" >"$WS/config/prod.settings"
    ln -s config/prod.settings "$WS/.env.local"
    echo "IdentityFile $CANARY" >"$WS/dotssh/config"
    ln -s dotssh "$WS/.ssh"
    attack -- /bin/sh -c 'cd /workspace && echo "env.local: $(cat .env.local 2>&1)"; echo "ssh: $(cat .ssh/config 2>&1)"'
    assert_status 0
    [[ "$output" != *"$CANARY"* ]] || { _aj_dump; fail "a secret is readable through a workspace symlink named like a masked entry"; }
}

@test "credential files: host /root/.ssh, /etc/shadow, /etc/ssh, the caller's keys are absent inside" {
    mkdir -p "$T/creds/.ssh"
    echo key >"$T/creds/.ssh/id_rsa"
    attack -- /attack creds "$T/creds/.ssh/id_rsa" "$T/creds" "${HOME:-/root}/.ssh" "${HOME:-/root}/.aws" /etc/ssh/ssh_host_rsa_key
    assert_all_blocked
    local n
    for n in cred_root cred_root__ssh cred_etc_shadow cred_etc_gshadow cred_etc_ssh cred_etc_sudoers \
        cred_etc_machine_id cred_var cred_run cred_home_agent__ssh cred_etc_pip_conf cred_etc_npmrc; do
        assert_blocked "$n" ENOENT
    done
    # level 2: /proc/1 is the command: its root is the sandbox's, without /root
    assert_blocked cred_proc_1_root_root "$(lv EACCES ENOENT)"
    [ "$(printf '%s\n' "$output" | grep -c '=blocked errno=ENOENT')" -ge 17 ] || { _aj_dump; fail "a host credential path exists inside"; }
}

@test "environment: nothing of the caller's environment reaches the command" {
    AJ_SEC_LEAK=leaky HOME=/root/should-not-leak attack -- /usr/bin/env
    assert_status 0
    local names
    names=$(printf '%s\n' "$output" | cut -d= -f1 | sort | tr '\n' ' ')
    assert_eq "$names" "HOME LANG PATH TERM " "variables inside"
    assert_eq "$(kv HOME)" /home/agent HOME
}

@test "host path disclosure: mountinfo shows no host mount and no host path beyond the binds' source roots" {
    attack -- /bin/cat /proc/self/mountinfo /proc/self/mounts
    assert_status 0
    local mi bad
    mi=$(printf '%s\n' "$output" | awk 'NF >= 10 && $1 ~ /^[0-9]+$/')
    # every mount point is one agentjail made
    # (level 2: also the Sentry's own sysfs at /sys)
    bad=$(printf '%s\n' "$mi" | awk '{ print $5 }' |
        grep -Ev '^(/|/usr|/bin|/sbin|/lib|/lib32|/lib64|/libx32|/etc|/etc/.+|/proc|/dev|/dev/.+|/tmp|/home/agent|/workspace|/workspace/.+|/attack'"$(lv '' '|/sys')"')$' || true)
    [ -z "$bad" ] || { _aj_dump; fail "unexpected mount points inside: $bad"; }
    # the host's temp dir shows up nowhere but in the "root" field (4) of binds
    bad=$(printf '%s\n' "$mi" | awk -v t="$BATS_RUN_TMPDIR" '{ $4 = ""; if (index($0, t)) print }')
    [ -z "$bad" ] || { _aj_dump; fail "host path in mountinfo: $bad"; }
    bad=$(printf '%s\n' "$output" | awk 'NF == 6' | grep -F "$BATS_RUN_TMPDIR" || true)
    [ -z "$bad" ] || { _aj_dump; fail "host path in /proc/self/mounts: $bad"; }
    if printf '%s\n' "$mi" | awk '{ print $4 }' | grep -qF "$BATS_RUN_TMPDIR"; then
        finding "mountinfo's root field reveals the host path of the workspace and binds: $(printf '%s\n' "$mi" | awk '$5 == "/workspace" { print $4 }')"
    fi
}
