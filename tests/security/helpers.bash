# Helpers for agentjail's public security suite (bats >= 1.5).
#
# Reuses tests/integration/helpers.bash (assertions, kv, residue check:
# mounts, cgroups, processes, temp dirs, netns, links before/after every
# test) and adds the attack program:
#
#   AJ      agentjail binary                 (default: build/agentjail)
#   ATTACK  static attack program            (default: build/tests/ajattack;
#           when that does not exist it is compiled once per bats run from
#           tests/security/attack.c into $BATS_RUN_TMPDIR)
#
# Every attack runs as `/attack NAME ...` inside the sandbox and prints
# `NAME=blocked errno=E` / `NAME=ESCAPED ...` per attempt and a final
# `result=blocked|ESCAPED` line (exit 0 / 1); see attack.c.

# shellcheck source=../integration/helpers.bash
source "$BATS_TEST_DIRNAME/../integration/helpers.bash"

_aj_sec_dir=$BATS_TEST_DIRNAME

_aj_find_attack() {
    if [ -n "${ATTACK:-}" ]; then return 0; fi
    local c
    for c in "$PWD/build/tests/ajattack" "$_aj_root/build/tests/ajattack"; do
        if [ -x "$c" ]; then
            ATTACK=$c
            return 0
        fi
    done
    # Not built by meson yet: compile it once for this bats run.
    ATTACK=${BATS_RUN_TMPDIR:-/tmp}/ajattack
    if [ ! -x "$ATTACK" ]; then
        gcc -std=c17 -D_GNU_SOURCE -static -O2 -Wall -Wextra -Werror \
            -o "$ATTACK.tmp.$$" "$_aj_sec_dir/attack.c" -pthread >&2 &&
            mv -f "$ATTACK.tmp.$$" "$ATTACK"
    fi
}
_aj_find_attack

# The integration helpers check for their probe; this suite needs the attack.
require_binaries() {
    [ -x "$AJ" ] || fail "agentjail binary not found at $AJ (build it: meson setup build && ninja -C build)"
    [ -x "$ATTACK" ] || fail "attack program not found at $ATTACK (ninja -C build, or set ATTACK=)"
    # it must be readable by the sandbox's unmapped uid
    chmod o+rx "$ATTACK" 2>/dev/null || true
}

# Residue: like the integration helpers' check (new processes that descend
# from the test or run as a sandbox uid), except sandbox processes that
# belong to a *live* agentjail some other test run started (another suite
# running at the same time): those are neither reported nor killed. A
# sandbox process that outlived its agentjail has no agentjail ancestor and
# is still reported.
_aj_new_procs() {
    local f=$BATS_TEST_TMPDIR/.ps
    ps -e -o pid=,ppid=,uid=,comm= >"$f" 2>/dev/null
    local -A parent=() uidof=() comm=()
    local pid ppid uid c p mine foreign
    while read -r pid ppid uid c; do
        parent[$pid]=$ppid
        uidof[$pid]=$uid
        comm[$pid]=$c
    done <"$f"
    for pid in "${!parent[@]}"; do
        [[ " $AJ_SETUP_PIDS " == *" $pid "* ]] && continue
        [ "$pid" = "$BASHPID" ] && continue
        [ "${comm[$pid]}" = ps ] && continue
        mine=
        foreign=
        p=${parent[$pid]}
        while [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != 1 ]; do
            if [ "$p" = "$AJ_TEST_PID" ]; then
                mine=1
                break
            fi
            if [ "${comm[$p]:-}" = agentjail ] && [ "${uidof[$p]:-0}" -lt "$SANDBOX_UID_MIN" ]; then
                foreign=1 # a host-side agentjail that is not ours (ours descend from the test)
            fi
            p=${parent[$p]:-}
        done
        if [ -n "$mine" ]; then
            echo "$pid uid=${uidof[$pid]} comm=${comm[$pid]} (child of the test)"
        elif [ -z "$foreign" ] && [ "${uidof[$pid]}" -ge "$SANDBOX_UID_MIN" ]; then
            echo "$pid uid=${uidof[$pid]} comm=${comm[$pid]}"
        fi
    done
}

# True when PID is alive and is not this test or one of its descendants.
_aj_is_foreign_live() { # PID
    local p=$1 i
    [ -d "/proc/$p" ] || return 1
    for ((i = 0; i < 64; i++)); do
        [ "$p" = "$AJ_TEST_PID" ] && return 1
        [ "$p" -le 1 ] && return 0
        p=$(awk '$1 == "PPid:" { print $2 }' "/proc/$p/status" 2>/dev/null)
        [ -n "$p" ] || return 0
    done
    return 0
}

# Same snapshot as the integration helpers', except cgroups of agentjails
# that other test runs have live right now (agentjail-PID-...).
_aj_snapshot() {
    echo "## mounts"
    awk '{ print $5 }' /proc/self/mountinfo | sort
    echo "## cgroups"
    local d
    while read -r d; do
        [ -n "$d" ] || continue
        if [[ "$d" =~ /agentjail-([0-9]+)- ]] && _aj_is_foreign_live "${BASH_REMATCH[1]}"; then
            continue
        fi
        echo "$d"
    done < <(_aj_cgroup_dirs | sort)
    echo "## tempdirs"
    ls -d /tmp/agentjail* /run/agentjail* /dev/shm/agentjail* 2>/dev/null | sort
    echo "## netns"
    ip netns list 2>/dev/null | sort
    echo "## links"
    ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }' | sort
}

# Value of KEY in key=value lines of $output (first match); a pty's \r is dropped.
kv() {
    printf '%s\n' "${output:-}" | tr -d '\r' | awk -v k="$1=" 'index($0, k) == 1 { print substr($0, length(k) + 1); exit }'
}

# agentjail run with the test workspace and the attack program at /attack.
ajattack_run() {
    timeout -k 5 "$AJ_TIMEOUT" "$AJ" run --workspace "$WS" --ro "$ATTACK:/attack" "$@"
}

# attack [AGENTJAIL-OPTIONS...] -- /attack NAME [ARGS...]
# Sets $status $output $lines $stderr $stderr_lines.
attack() {
    run --separate-stderr ajattack_run "$@"
}

# Every attempt failed, agentjail passed the attack's exit 0 through.
assert_all_blocked() {
    local l
    for l in "${lines[@]}"; do
        if [[ "$l" == *=ESCAPED* ]]; then
            _aj_dump
            fail "ESCAPED: $l"
        fi
    done
    if [[ "$(kv result)" != blocked* ]]; then
        _aj_dump
        fail "no 'result=blocked' line"
    fi
    assert_status 0
}

# One attempt failed with exactly this errno.
assert_blocked() { # NAME ERRNO
    assert_eq "$(kv "$1")" "blocked errno=$2" "$1"
}

# A check (not a system call) found the wall in place.
assert_held() { # NAME
    assert_eq "$(kv "$1")" "blocked" "$1"
}

# Every NAME given failed with ERRNO.
assert_blocked_each() { # ERRNO NAME...
    local e=$1 n
    shift
    for n in "$@"; do assert_blocked "$n" "$e"; done
}

# An "info KEY VALUE..." line of the attack's output (first match).
info_of() { # KEY
    printf '%s\n' "${output:-}" | tr -d '\r' | awk -v k="$1" '$1 == "info" && $2 == k { $1 = ""; $2 = ""; sub(/^  /, ""); print; exit }'
}

# Host-side processes running as a sandbox uid whose comm is NAME.
sandbox_pids_named() { # NAME
    ps -e -o pid=,uid=,comm= | awk -v n="$1" -v min="$SANDBOX_UID_MIN" '$2 >= min && $3 == n { print $1 }'
}

# Count of host processes that run as any sandbox uid and are new.
count_new_sandbox_procs() {
    new_sandbox_uid_pids | wc -l
}

# Seconds (float) since EPOCHREALTIME value $1.
elapsed_since() { # START
    awk -v s="$1" -v n="$EPOCHREALTIME" 'BEGIN { printf "%.2f", n - s }'
}

# Fail unless float A <= B.
assert_le() { # A B WHAT
    if ! awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; then
        _aj_dump
        fail "${3:-value}: $1 > $2"
    fi
}

# A note for the suite's report (shown in the TAP stream, does not fail).
finding() {
    echo "# FINDING: $*" >&3
}

setup() { aj_setup; }
teardown() { aj_teardown; }
