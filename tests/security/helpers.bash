# Helpers for agentjail's public security suite (bats >= 1.5).
#
# Reuses tests/integration/helpers.bash (assertions, kv, residue check:
# mounts, cgroups, processes, temp dirs, netns, links before/after every
# test) and adds the attack program:
#
#   AJ      agentjail binary                 (default: build/agentjail)
#   ATTACK  static attack program            (default: build/tests/ajattack;
#           when that does not exist it is compiled once per bats run from
#           tests/security/attack*.c into $BATS_RUN_TMPDIR)
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
            -o "$ATTACK.tmp.$$" "$_aj_sec_dir"/attack*.c -pthread >&2 &&
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

# The integration helpers' cgroup scan, in one awk and one find instead of
# a few processes per hierarchy (it runs twice per test; the suite has many).
# Same result: agentjail-like dirs below our own cgroup in every hierarchy.
_aj_cgroup_dirs() {
    local roots=()
    mapfile -t roots < <(awk '
        FNR == NR {
            split($0, f, ":")
            if (f[2] == "") v2 = f[3]
            else { n = split(f[2], c, ","); for (i = 1; i <= n; i++) own[c[i]] = f[3] }
            next
        }
        {
            fs = ""
            for (i = 7; i <= NF; i++) if ($i == "-") { fs = $(i + 1); opts = $(i + 3); break }
            if (fs == "cgroup2" && v2 != "") print $5 v2
            else if (fs == "cgroup") {
                n = split(opts, o, ",")
                for (k = 1; k <= n; k++) if (o[k] in own) { print $5 own[o[k]]; break }
            }
        }' /proc/self/cgroup /proc/self/mountinfo)
    [ "${#roots[@]}" -gt 0 ] || return 0
    find "${roots[@]}" -mindepth 1 -type d \( -iname '*agentjail*' -o -name 'aj-*' -o -name 'aj_*' \) 2>/dev/null
    return 0
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
