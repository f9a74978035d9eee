# Level 3's --ro binds (run.bats, image.bats).

# A --ro source's path swapped for a link (its parent p -> hidden) while
# agentjail reads its --seccomp-profile, a FIFO (after the command line,
# before the boot): the run's status, output and stderr. ARGS... first.
ro_swap_run() {
    local d=$T/swap w
    mkdir -p "$d/p/a" "$d/hidden/a"
    echo public >"$d/p/a/f"
    echo hidden >"$d/hidden/a/f"
    mkfifo "$d/prof"
    timeout 60 bash -c 'exec 4>"$1/prof"; mv "$1/p" "$1/p.old"; ln -s "$1/hidden" "$1/p"
        echo "{\"default_action\": \"allow\", \"syscalls\": []}" >&4' _ "$d" &
    w=$!
    run --separate-stderr timeout -k 5 "$AJ_TIMEOUT" "$AJ" run -q --isolation microvm "$@" \
        --seccomp-profile "$d/prof" --ro "$d/p/a:/mnt/a" -- /bin/cat /mnt/a/f </dev/null
    wait "$w" || fail "the swap did not happen"
}
