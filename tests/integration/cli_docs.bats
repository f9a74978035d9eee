#!/usr/bin/env bats
# The man page agentjail(1) and the bash completion are made at build time
# from the program's own --help texts (src/tools/cli_docs.py): every
# command and subcommand the top-level help names is in both, and the page
# renders without a warning.

load helpers

docs_dir() { echo "$(dirname "${AJ_REAL:-$AJ}")/docs/man"; }

# "CMD" and "CMD SUB" lines from `agentjail --help`'s Commands: section
commands() {
    "$AJ" --help | awk '/^Commands:/ {on = 1; next} on && /^$/ {exit}
        on && /^  [a-z]/ {print $1; n = split($2, s, "|"); if (n > 1) for (i = 1; i <= n; i++) print $1 " " s[i]}'
}

# The candidates the completion offers for the words given (the last one is
# the word being completed), one a line, sorted.
complete_words() {
    # shellcheck disable=SC2016
    bash --norc --noprofile -c '
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _agentjail agentjail "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf "%s\n" "${COMPREPLY[@]}"' complete "$(docs_dir)/agentjail" "$@" | sort
}

@test "man: agentjail(1) names every command and subcommand, and every run option" {
    local page line text opt
    page=$(docs_dir)/agentjail.1
    [ -s "$page" ] || fail "no man page at $page"
    # man -l renders it, and groff has nothing to say about it
    run --separate-stderr env MANWIDTH=100 man --warnings -E UTF-8 -l "$page"
    [ "$status" -eq 0 ] || fail "man -l: exit $status: $stderr"
    [ -z "$stderr" ] || fail "man -l warned: $stderr"
    text=$(col -b <<<"$output")
    [[ "$text" == *"agentjail - run untrusted commands"* ]] || fail "no NAME line: ${text:0:300}"
    while IFS= read -r line; do
        case $line in
        help | version) grep -qE "^ +$line( |$)" <<<"$text" || fail "the page lacks '$line'" ;;
        *) grep -qF "agentjail $line" <<<"$text" || fail "the page lacks 'agentjail $line'" ;;
        esac
    done < <(commands)
    for opt in $("$AJ" run --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
        grep -qF -- "$opt" <<<"$text" || fail "the page lacks run's $opt"
    done
}

@test "completion: commands, subcommands, flags and their values" {
    [ -s "$(docs_dir)/agentjail" ] || fail "no completion at $(docs_dir)/agentjail"
    assert_eq "$(complete_words agentjail ru)" run "agentjail ru<TAB>"
    assert_eq "$(complete_words agentjail run --iso)" --isolation "agentjail run --iso<TAB>"
    assert_eq "$(complete_words agentjail run --isolation '')" "$(printf 'gvisor\nmicrovm\nprocess\nwasm')" \
        "agentjail run --isolation <TAB>"
    # a flag's value is not taken for a word: -w DIR, then --net's values
    assert_eq "$(complete_words agentjail run -w /tmp --net '')" "$(printf 'none\nopen')" \
        "agentjail run -w /tmp --net <TAB>"
    assert_eq "$(complete_words agentjail sandbox '')" \
        "$("$AJ" sandbox --help | awk '/^  [a-z]/ {print $1}' | sort)" "agentjail sandbox <TAB>"
    assert_eq "$(complete_words agentjail sandbox --socket /tmp/s ex)" exec \
        "agentjail sandbox --socket S ex<TAB>"
    assert_eq "$(complete_words agentjail sandbox exec --ti)" --timeout "agentjail sandbox exec --ti<TAB>"
    assert_eq "$(complete_words agentjail image '')" "$(printf 'build\ninspect\nls\nrm')" "agentjail image <TAB>"
    assert_eq "$(complete_words agentjail serve --log-format '')" "$(printf 'json\nplain')" \
        "agentjail serve --log-format <TAB>"
    # after --, the sandbox's command: a command of the host
    complete_words agentjail run -- ech | grep -qx echo || fail "agentjail run -- ech<TAB>"
    # every command of the top-level help completes
    local c
    for c in $(commands | awk 'NF == 1'); do
        complete_words agentjail "${c:0:3}" | grep -qx "$c" || fail "agentjail ${c:0:3}<TAB> lacks $c"
    done
}

@test "completion: loads through bash-completion's loader, as installed" {
    [ -r /usr/share/bash-completion/bash_completion ] || skip "bash-completion is not installed"
    # the loader looks in $BASH_COMPLETION_USER_DIR/completions first
    mkdir -p "$BATS_TEST_TMPDIR/user/completions"
    cp "$(docs_dir)/agentjail" "$BATS_TEST_TMPDIR/user/completions/agentjail"
    run bash --norc --noprofile -c '
        export BASH_COMPLETION_USER_DIR=$1
        source /usr/share/bash-completion/bash_completion
        __load_completion agentjail && complete -p agentjail' load "$BATS_TEST_TMPDIR/user"
    assert_eq "$output" "complete -F _agentjail agentjail" "the loaded completion"
}
