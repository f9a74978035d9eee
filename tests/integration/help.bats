#!/usr/bin/env bats
# Every command and subcommand answers --help: exit 0, its usage on stdout.
# The list comes from the top-level help (so a new command is covered), and
# the top-level help names every `sandbox` command.

load helpers

# "CMD" and "CMD SUB" lines from `agentjail --help`'s Commands: section
commands() {
    "$AJ" --help | awk '/^Commands:/ {on = 1; next} on && /^$/ {exit}
        on && /^  [a-z]/ {print $1; n = split($2, s, "|"); if (n > 1) for (i = 1; i <= n; i++) print $1 " " s[i]}'
}

@test "every command and subcommand answers --help with exit 0" {
    local list line bad=()
    list=$(commands)
    [ "$(wc -l <<<"$list")" -ge 12 ] || fail "too few commands in the help: $list"
    while IFS= read -r line; do
        # shellcheck disable=SC2086
        run --separate-stderr "$AJ" $line --help
        if [ "$status" -ne 0 ] || [ -z "$output" ]; then
            bad+=("'$line --help': exit $status, stdout ${#output} bytes; $stderr")
        fi
    done <<<"$list"
    [ ${#bad[@]} -eq 0 ] || fail "$(printf '%s\n' "${bad[@]}")"
}

@test "the top-level help lists every sandbox command" {
    local listed sub
    listed=$(commands | awk '$1 == "sandbox" && NF == 2 {print $2}' | sort)
    for sub in $("$AJ" sandbox --help | awk '/^  [a-z]/ {print $1}' | sort); do
        grep -qx "$sub" <<<"$listed" || fail "agentjail --help does not list 'sandbox $sub'"
    done
}

@test "docs/cli.md has every option of serve --help" {
    local opt
    for opt in $("$AJ" serve --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        grep -q -- "$opt" "$_aj_root/docs/cli.md" || fail "docs/cli.md lacks $opt"
    done
}
