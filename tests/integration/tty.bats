#!/usr/bin/env bats
# agentjail run on a terminal (provided by script(1)).

load helpers

setup() {
    aj_setup
    command -v script >/dev/null || skip "script(1) (util-linux) not installed"
}

# in_tty 'shell code' : run bash code on a fresh terminal; $AJRUN in the code
# expands to the agentjail run prefix (workspace + probe).  Output has its
# carriage returns stripped.
in_tty() {
    local ajrun
    ajrun=$(printf '%q ' timeout --foreground 60 "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --ro "$PROBE:/probe")
    printf 'AJRUN=(%s)\n%s\n' "$ajrun" "$1" >"$T/inner.sh"
    run --separate-stderr bash -c 'script -qec "bash $1" /dev/null </dev/null | tr -d "\r"; exit ${PIPESTATUS[0]}' _ "$T/inner.sh"
}

# The code that checks, after agentjail exits, whether anything was injected
# into our (the caller's) terminal input queue.
# script(1) writes the EOF character (^D) for its stdin's end (/dev/null)
# into the terminal at a time of its own: that one is not an injection.
READ_BACK='stty -icanon -echo min 0 time 0; x=; read -r -t 1 -n 64 x || true; x=${x//$'"'"'\004'"'"'/}; echo "got=[$x]"'

@test "tty: the command sees a terminal on stdin and stdout" {
    in_tty '"${AJRUN[@]}" -- /probe tty'
    assert_status 0
    assert_eq "$(kv fd0_isatty)" 1 "stdin is a tty"
    assert_eq "$(kv fd1_isatty)" 1 "stdout is a tty"
}

@test "tty: TIOCSTI from inside cannot inject into the caller's terminal (default)" {
    in_tty '"${AJRUN[@]}" -- /probe tiocsti; echo "rc=$?"; '"$READ_BACK"
    assert_status 0
    [ -n "$(kv injected)" ] || { _aj_dump; fail "probe did not run"; }
    assert_eq "$(kv got)" "[]" "input injected into the caller's terminal"
}

@test "tty: TIOCSTI cannot inject into the caller's terminal with --tty" {
    in_tty '"${AJRUN[@]}" --tty -- /probe tiocsti; echo "rc=$?"; '"$READ_BACK"
    assert_status 0
    [ -n "$(kv injected)" ] || { _aj_dump; fail "probe did not run"; }
    assert_eq "$(kv got)" "[]" "input injected into the caller's terminal"
}

@test "tty: TIOCSTI cannot inject into the caller's terminal with --no-tty" {
    in_tty '"${AJRUN[@]}" --no-tty -- /probe tiocsti; echo "rc=$?"; '"$READ_BACK"
    assert_status 0
    [ -n "$(kv injected)" ] || { _aj_dump; fail "probe did not run"; }
    assert_eq "$(kv got)" "[]" "input injected into the caller's terminal"
}

@test "tty: exit status passes through on a terminal" {
    in_tty '"${AJRUN[@]}" -- /probe exit 7; echo "rc=$?"'
    assert_status 0
    assert_eq "$(kv rc)" 7 "exit status"
    in_tty '"${AJRUN[@]}" -- /probe signal-self TERM; echo "rc=$?"'
    assert_eq "$(kv rc)" 143 "exit status"
}

@test "tty: output and input pass through the terminal" {
    printf 'AJRUN=(%s)\n%s\n' "$(printf "%q " timeout --foreground 60 "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS")" \
        '"${AJRUN[@]}" -- /bin/sh -c "read x; echo got:\$x"' >"$T/inner.sh"
    run --separate-stderr bash -c '{ sleep 0.5; printf "hello\n"; sleep 2; } | script -qec "bash $1" /dev/null | tr -d "\r"' _ "$T/inner.sh"
    assert_status 0
    assert_output_has_line "got:hello"
}

@test "tty: terminal settings are restored after the run" {
    in_tty 'before=$(stty -g); "${AJRUN[@]}" -- /bin/sh -c "stty raw -echo 2>/dev/null; echo in"; after=$(stty -g); [ "$before" = "$after" ] && echo restored=yes || echo restored=no'
    assert_status 0
    assert_eq "$(kv restored)" yes "caller's terminal modes after agentjail"
}

@test "tty: the command sees the caller's window size" {
    in_tty 'stty cols 123 rows 45; "${AJRUN[@]}" -- /bin/stty size; "${AJRUN[@]}" --tty -- /bin/stty size'
    assert_status 0
    assert_eq "${lines[0]:-}" "45 123" "window size (default)"
    assert_eq "${lines[1]:-}" "45 123" "window size (--tty)"
}

@test "tty: Ctrl-C on the terminal interrupts the command (130)" {
    printf 'AJRUN=(%s)\n%s\n' "$(printf "%q " timeout --foreground 60 "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --ro "$PROBE:/probe")" \
        '"${AJRUN[@]}" -- /probe sleep 30; echo "rc=$?"' >"$T/inner.sh"
    run --separate-stderr bash -c '{ sleep 1; printf "\003"; sleep 3; } | script -qec "bash $1" /dev/null | tr -d "\r"' _ "$T/inner.sh"
    assert_status 0
    [[ "$output" == *rc=130* ]] || { _aj_dump; fail "command not interrupted by ^C"; }
}

@test "tty: in the background of a terminal (cmd &) agentjail is not stopped; the command's stdin is at EOF" {
    in_tty 'set -m; "${AJRUN[@]}" -- /bin/sh -c "cat; echo cat-eof" & wait $!; echo "rc=$?"'
    assert_status 0
    assert_output_has_line "cat-eof"
    assert_eq "$(kv rc)" 0 "exit status of the background run"
}
