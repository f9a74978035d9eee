#!/usr/bin/env bats
# agentjail run: exit codes, stdio pass-through, environment, help.

load helpers

@test "exit status 0 of the command is returned" {
    sandbox -- /probe exit 0
    assert_status 0
}

@test "exit status N of the command is returned (3, 42, 255)" {
    local n
    for n in 3 42 255; do
        sandbox -- /probe exit "$n"
        assert_status "$n"
    done
}

@test "killed by signal N gives 128+N (TERM, KILL, SEGV)" {
    sandbox -- /probe signal-self TERM
    assert_status 143
    sandbox -- /probe signal-self KILL
    assert_status 137
    sandbox -- /probe signal-self SEGV
    assert_status 139
}

@test "shell exit status and signal of a shell command" {
    sandbox -- /bin/sh -c 'exit 17'
    assert_status 17
    sandbox -- /bin/sh -c 'kill -USR1 $$'
    assert_status 138
}

@test "unknown option: 125 and one 'agentjail:' line on stderr" {
    run --separate-stderr "$AJ" run --no-such-option -- /bin/true
    assert_status 125
    assert_one_error_line
}

@test "command not found: 127 (absolute path and bare name)" {
    run -127 --separate-stderr ajrun -- /no/such/command
    assert_status 127
    run -127 --separate-stderr ajrun -- no-such-command-aj
    assert_status 127
}

@test "command not executable: 126 (non-executable file, directory)" {
    printf '#!/bin/sh\necho hi\n' >"$WS/notexec"
    chmod 0644 "$WS/notexec"
    sandbox -- /workspace/notexec
    assert_status 126
    assert_output_lacks hi
    mkdir "$WS/adir"
    sandbox -- /workspace/adir
    assert_status 126
}

@test "stdout and stderr pass through separately" {
    sandbox -- /bin/sh -c 'echo to-stdout; echo to-stderr >&2; echo more-stdout'
    assert_status 0
    assert_eq "$output" "$(printf 'to-stdout\nmore-stdout')" stdout
    assert_eq "$stderr" "to-stderr" stderr
}

@test "arguments are passed verbatim" {
    sandbox -- /usr/bin/printf '[%s]' 'a b' '' '$HOME' '*' "it's" 'x;y'
    assert_status 0
    assert_eq "$output" "[a b][][\$HOME][*][it's][x;y]"
}

@test "stdin passes through (binary-safe, 1 MiB)" {
    head -c 1048576 /dev/urandom >"$T/blob"
    local want
    want=$(sha256sum <"$T/blob" | cut -d' ' -f1)
    run --separate-stderr bash -c 'timeout -k 5 60 "$0" run --workspace "$1" -- /usr/bin/sha256sum <"$2"' "$AJ" "$WS" "$T/blob"
    assert_status 0
    assert_eq "${output%% *}" "$want" "sha256 of stdin seen inside"
}

@test "large stdout is delivered completely" {
    run --separate-stderr bash -c 'timeout -k 5 60 "$0" run --workspace "$1" -- /usr/bin/head -c 3000000 /dev/zero </dev/null | wc -c' "$AJ" "$WS"
    assert_status 0
    assert_eq "$output" 3000000 "bytes received"
}

@test "stdin at EOF: command sees end of input" {
    run --separate-stderr bash -c 'timeout -k 5 60 "$0" run --workspace "$1" -- /bin/sh -c "cat; echo done" </dev/null' "$AJ" "$WS"
    assert_status 0
    assert_eq "$output" done
}

@test "environment: only PATH HOME TERM LANG, caller's variables do not leak" {
    run --separate-stderr env AJ_SECRET_TEST=s3cr3t-value-xyz LD_PRELOAD= SSH_AUTH_SOCK=/tmp/agent.sock \
        TERM=xterm LANG=C.UTF-8 \
        timeout -k 5 60 "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --ro "$PROBE:/probe" -- /probe env </dev/null
    assert_status 0
    assert_output_lacks s3cr3t-value-xyz
    assert_output_lacks AJ_SECRET_TEST
    assert_output_lacks SSH_AUTH_SOCK
    local l name
    for l in "${lines[@]}"; do
        name=${l%%=*}
        case "$name" in
        PATH | HOME | TERM | LANG) ;;
        *) _aj_dump; fail "unexpected environment variable inside: $l" ;;
        esac
    done
    [ -n "$(kv PATH)" ] || fail "PATH not set inside"
    assert_eq "$(kv HOME)" /home/agent HOME
}

@test "--env NAME=VALUE, --env NAME (copied from caller), --env-file" {
    printf 'FROM_FILE=file value\nSECOND=2\n' >"$T/envfile"
    export AJ_COPY_ME=copied-value
    export AJ_NOT_ME=must-not-leak
    sandbox --env AJ_SET=direct=value --env AJ_COPY_ME --env-file "$T/envfile" -- /probe env
    assert_status 0
    assert_eq "$(kv AJ_SET)" direct=value "--env NAME=VALUE"
    assert_eq "$(kv AJ_COPY_ME)" copied-value "--env NAME"
    assert_eq "$(kv FROM_FILE)" "file value" "--env-file line 1"
    assert_eq "$(kv SECOND)" 2 "--env-file line 2"
    assert_output_lacks must-not-leak
}

@test "HOME and /tmp are writable tmpfs inside" {
    sandbox -- /bin/sh -c 'echo h >"$HOME/f" && echo t >/tmp/f && cat "$HOME/f" /tmp/f && pwd'
    assert_status 0
    assert_eq "$output" "$(printf 'h\nt\n/workspace')"
}

@test "agentjail --help and run --help exit 0 and describe usage" {
    run --separate-stderr "$AJ" --help
    assert_status 0
    [[ "$output" == *run* ]] || fail "--help does not mention 'run'"
    run --separate-stderr "$AJ" run --help
    assert_status 0
    [[ "$output" == *--workspace* ]] || fail "run --help does not mention --workspace"
    [[ "$output" == *--rootfs* ]] || fail "run --help does not mention --rootfs"
}

@test "agentjail doctor exits 0 on this host (sandboxes can run)" {
    run --separate-stderr "$AJ" doctor
    assert_status 0
    [ -n "$output$stderr" ] || fail "doctor printed nothing"
}

@test "agentjail doctor has a line for every isolation level" {
    run --separate-stderr "$AJ" doctor --json
    assert_status 0
    for level in "level 2: gvisor" "level 3: microvm" "level 4: wasm"; do
        jq -e --arg n "$level" 'any(.. | objects | select(has("name")); .name == $n)' <<<"$output" >/dev/null ||
            fail "no doctor line '$level' in: $output"
    done
}

@test "as root, a successful run prints nothing of its own on stderr" {
    require_root
    sandbox -- /probe exit 0
    assert_status 0
    assert_eq "$stderr" "" "agentjail stderr"
}

@test "closed stdin, stdout or stderr (as under CI): agentjail still runs and relays" {
    run --separate-stderr bash -c '"$1" run --workspace "$2" --ro "$3:/probe" -- /bin/sh -c "echo out; cat; echo done" <&-' _ "$AJ" "$WS" "$PROBE"
    assert_status 0
    assert_eq "$output" "$(printf 'out\ndone')" "stdout with stdin closed"
    run --separate-stderr bash -c '"$1" run --workspace "$2" -- /bin/sh -c "echo err >&2; echo out" >&-' _ "$AJ" "$WS"
    assert_status 0
    assert_eq "$stderr" "err" "stderr with stdout closed"
}

@test "--print-plan: JSON of the plan (workspace mount, placeholders), nothing run or left" {
    run --separate-stderr "$AJ" run --print-plan --workspace "$WS" --ro "$PROBE:/probe" \
        --secret PLAN_TOKEN=plan-secret-4711 --redact plan-redact-0815 --memory 64M \
        -- /bin/sh -c 'touch /workspace/ran; echo plan-secret-4711'
    assert_status 0
    [ -z "$stderr" ]
    jq -e . <<<"$output" >/dev/null
    # the workspace is bound read-write at /workspace from its host path
    jq -e --arg ws "$WS" \
        '[.mounts[] | select(.target == "/workspace" and .source == $ws and .ro == false)] | length == 1' \
        <<<"$output"
    jq -e --arg p "$PROBE" '[.mounts[] | select(.target == "/probe" and .source == $p and .ro)] | length == 1' \
        <<<"$output"
    jq -e '.limits.memory_bytes == 67108864 and .isolation == "process"' <<<"$output"
    # a secret's name and placeholder, never its value (nor a --redact value)
    jq -e '.env.secrets[0].name == "PLAN_TOKEN" and (.env.secrets[0].placeholder | startswith("agentjail-placeholder-"))' \
        <<<"$output"
    assert_output_lacks plan-secret-4711
    assert_output_lacks plan-redact-0815
    # the command did not run
    [ ! -e "$WS/ran" ]
    # level 2's plan is printed without runsc running
    run --separate-stderr "$AJ" run --print-plan --isolation gvisor --workspace "$WS" -- /bin/true
    assert_status 0
    jq -e '.isolation == "gvisor" and (.landlock.rules | length == 0)' <<<"$output"
}

@test "--print-plan with an invalid policy: 125, one error line, no plan" {
    # the usual error of the policy (not of the flag)
    run --separate-stderr "$AJ" run --print-plan --memory lots -- /bin/true
    assert_status 125
    assert_one_error_line
    [[ $stderr == *"--memory 'lots'"* ]]
    [ -z "$output" ]
    run --separate-stderr "$AJ" run --print-plan --workspace "$T/missing" -- /bin/true
    assert_status 125
    assert_one_error_line
    [[ $stderr == *"workspace '$T/missing'"* ]]
    [ -z "$output" ]
    run --separate-stderr "$AJ" run --print-plan
    assert_status 125
    assert_one_error_line
    [[ $stderr == *"no command given"* ]]
}
