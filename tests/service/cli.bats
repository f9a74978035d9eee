#!/usr/bin/env bats
# agentjail sandbox create|ls|exec|cp|rm against a real service.

load helpers

@test "sandbox CLI: create, ls, exec (status, streams, stdin, env), cp, rm" {
    svc_start
    export AGENTJAIL_SOCKET=$SOCK
    run "$AJ" sandbox create --memory 128M --env A=1 --secret TOK=abcdefgh123 --timeout 100
    assert_status 0
    id=$output
    [[ "$id" == sb-* ]]
    run "$AJ" sandbox ls
    assert_status 0
    [[ "$output" == *"$id"* ]]
    run --separate-stderr "$AJ" sandbox exec "$id" -- sh -c 'echo $A; echo abcdefgh123; echo err >&2; exit 4'
    assert_status 4
    assert_eq "$output" $'1\n[REDACTED]'
    assert_eq "$stderr" err
    run bash -c "echo piped | '$AJ' sandbox exec -i -e B=2 --cwd /tmp '$id' -- sh -c 'cat; pwd; echo \$B'"
    assert_eq "$output" $'piped\n/tmp\n2'
    run "$AJ" sandbox exec --timeout 0.3 "$id" -- sleep 10
    assert_status 124
    run -127 "$AJ" sandbox exec "$id" -- no-such-command
    assert_status 127
    head -c 100000 /dev/urandom >"$T/f"
    run "$AJ" sandbox cp "$T/f" "$id:/tmp/f"
    assert_status 0
    run "$AJ" sandbox cp "$id:/tmp/f" "$T/g"
    assert_status 0
    cmp "$T/f" "$T/g"
    run "$AJ" sandbox cp "$id:/tmp/missing" "$T/h"
    assert_status 125
    [ ! -e "$T/h" ]
    run "$AJ" sandbox rm "$id"
    assert_status 0
    run --separate-stderr "$AJ" sandbox exec "$id" -- true
    assert_status 125
    assert_one_error_line
    run "$AJ" sandbox create --memory lots
    assert_status 125
    [[ "$output" == *"--memory 'lots'"* ]]
    # --seccomp-profile FILE: the client's file, sent as the profile itself
    echo '{"default_action": "allow", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "errno"}]}' >"$T/prof.json"
    run "$AJ" sandbox create --seccomp-profile "$T/prof.json"
    assert_status 0
    run "$AJ" sandbox exec "$output" -- mkdir /tmp/d
    assert_status 1
    assert_contains "$output" "Operation not permitted"
}

@test "sandbox CLI: exec output byte for byte (escapes, NUL, bytes that are not UTF-8, split characters, megabytes)" {
    svc_start
    export AGENTJAIL_SOCKET=$SOCK
    id=$("$AJ" sandbox create --memory 256M)
    script='printf "q\042\134\011\033 \303\251\n"; printf "\342\202"; sleep 0.2; printf "\254\n"; printf "a\377b" >&2; printf "\000z"'
    "$AJ" sandbox exec "$id" -- sh -c "$script" >"$T/out" 2>"$T/err"
    assert_eq "$(od -An -tx1 "$T/out" | tr -d ' \n')" 71225c091b20c3a90ae282ac0a007a
    assert_eq "$(od -An -tx1 "$T/err" | tr -d ' \n')" 61ff62
    # binary (base64 events) and text (the fast path), several MiB each
    run "$AJ" sandbox exec "$id" -- sh -c 'head -c 3000000 /dev/urandom >/tmp/r; head -c 9000000 /dev/zero | tr "\0" "\n" >>/tmp/r; sha256sum </tmp/r'
    assert_status 0
    want=${output%% *}
    got=$("$AJ" sandbox exec "$id" -- cat /tmp/r | sha256sum)
    assert_eq "${got%% *}" "$want"
    "$AJ" sandbox rm "$id" >/dev/null
}

@test "sandbox CLI: no service" {
    run "$AJ" sandbox --socket "$T/none.sock" ls
    assert_status 125
    [[ "$output" == "agentjail: cannot reach the service at $T/none.sock"* ]]
}

@test "sandbox CLI: background processes: exec -d, ps, logs (-f, --offset), kill" {
    svc_start
    export AGENTJAIL_SOCKET=$SOCK
    id=$("$AJ" sandbox create --secret TOK=abcdefgh123)
    run "$AJ" sandbox exec -d "$id" -- sh -c 'echo one; echo abcdefgh123; echo two >&2; exit 3'
    assert_status 0
    p1=$output
    [[ "$p1" == p* ]]
    # -f follows to the end and exits with the process's status
    run --separate-stderr "$AJ" sandbox logs -f "$id" "$p1"
    assert_status 3
    assert_eq "$output" $'one\n[REDACTED]'
    assert_eq "$stderr" two
    # --offset skips what was already read ("one\n" is 4 bytes)
    run --separate-stderr "$AJ" sandbox logs --offset 4 "$id" "$p1"
    assert_status 0
    assert_eq "$output" '[REDACTED]'
    run "$AJ" sandbox exec --background "$id" -- sleep 100
    p2=$output
    run "$AJ" sandbox ps "$id"
    assert_status 0
    [[ "$output" == *"$p1"*"exit 3"* ]]
    [[ "$output" == *"$p2"*running*sleep* ]]
    run "$AJ" sandbox kill -s KILL "$id" "$p2"
    assert_status 0
    run "$AJ" sandbox logs -f "$id" "$p2"
    assert_status 137
    run "$AJ" sandbox ps --json "$id"
    [ "$(jq -r '[.processes[] | select(.running)] | length' <<<"$output")" = 0 ]
    # bad input: one clear line, nothing changes
    run --separate-stderr "$AJ" sandbox kill "$id" "$p2"
    assert_status 125
    assert_one_error_line
    run --separate-stderr "$AJ" sandbox logs "$id" p999
    assert_status 125
    assert_one_error_line
    run --separate-stderr "$AJ" sandbox logs --offset -1 "$id" "$p1"
    assert_status 125
    assert_one_error_line
    run --separate-stderr "$AJ" sandbox kill -s NOPE "$id" "$p1"
    assert_status 125
    assert_one_error_line
    run --separate-stderr "$AJ" sandbox ps "$id/../x"
    assert_status 125
    assert_one_error_line
    run "$AJ" sandbox ps "$id"
    [ "$(grep -c '^p' <<<"$output")" = 2 ]
    "$AJ" sandbox rm "$id"
}

@test "sandbox CLI: exec -t: a terminal in the sandbox over WebSocket, stdin streamed, status passed" {
    svc_start
    export AGENTJAIL_SOCKET=$SOCK
    id=$("$AJ" sandbox create --secret TOK=abcdefgh123)
    # stdin is streamed to the sandbox's terminal (which echoes it); output redacted
    run bash -c "printf 'echo \$((6*7)) abcdefgh123\nexit 3\n' | timeout 20 '$AJ' sandbox exec -t '$id' -- sh"
    assert_status 3
    [[ "$output" == *"42 [REDACTED]"* ]] || fail "$output"
    assert_output_lacks abcdefgh123
    # on our own terminal (script gives us one): raw mode, the sandbox's pty
    run timeout 20 script -qec "'$AJ' sandbox exec -t -e X=1 --cwd /tmp '$id' -- sh -c 'tty; pwd; echo \$X; exit 5'" /dev/null
    assert_status 5
    [[ "$output" == *"/dev/pts/0"*"/tmp"*"1"* ]] || fail "$output"
    run --separate-stderr timeout 20 "$AJ" sandbox exec -t sb-0000000000000000 -- true
    assert_status 125
    assert_one_error_line
    [[ "$stderr" == *"no sandbox"* ]] || fail "$stderr"
    run --separate-stderr "$AJ" sandbox exec -t -d "$id" -- true
    assert_status 125
    assert_one_error_line
    "$AJ" sandbox rm "$id"
}
