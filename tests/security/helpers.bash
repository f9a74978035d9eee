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
#   AJ_ISOLATION  the isolation level every `agentjail run` of the suite
#           asks for (`--isolation`, docs/levels.md): process (default) or
#           gvisor; microvm skips here: level 3 runs the attacks in one VM
#           (tests/microvm/security.bats). tests/run.sh runs the suite at both; a test whose wall
#           differs by level says what the other level must show instead
#           (`at_level gvisor && ...`, docs/security.md "attack x level").
#
# Every attack runs as `/attack NAME ...` inside the sandbox and prints
# `NAME=blocked errno=E` / `NAME=ESCAPED ...` per attempt and a final
# `result=blocked|ESCAPED` line (exit 0 / 1); see attack.c.

# shellcheck source=../integration/helpers.bash
source "$BATS_TEST_DIRNAME/../integration/helpers.bash"

_aj_sec_dir=$BATS_TEST_DIRNAME

AJ_ISOLATION=${AJ_ISOLATION:-process}
# The options that select the level: every `"$AJ" run` of the suite has them.
AJ_LEVEL=(--isolation "$AJ_ISOLATION")

# True when the suite runs at this level (process, gvisor).
at_level() { # LEVEL
    [ "$AJ_ISOLATION" = "$1" ]
}

# What a level needs on this host: level 2 needs root and runsc.
require_level() {
    case $AJ_ISOLATION in
    process) ;;
    gvisor)
        require_root
        command -v runsc >/dev/null || skip "runsc is not installed (apt-get install runsc)"
        ;;
    microvm)
        # level 3 runs the suite's attacks in one VM (a TCG boot each would
        # cost ~3 s per attack): tests/microvm/security.bats
        [[ "$BATS_TEST_FILENAME" == */microvm/* ]] ||
            skip "at level 3 the attacks run in one VM: tests/microvm/security.bats"
        require_root
        ;;
    *) fail "AJ_ISOLATION=$AJ_ISOLATION: expected process, gvisor or microvm" ;;
    esac
}

# A test that has no counterpart at this level: skipped, with the reason
# (the level's own test file that covers it instead, or why it can't apply).
not_at_level() { # LEVEL REASON
    if at_level "$1"; then skip "not at level $1: $2"; fi
}

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

# The integration helpers' cgroup scan without its depth limit: the roots
# found once per test (_aj_cgroup_roots), one find.
_aj_cgroup_dirs() {
    _aj_cgroup_roots
    [ "${#_AJ_CG_ROOTS[@]}" -gt 0 ] || return 0
    find "${_AJ_CG_ROOTS[@]}" -mindepth 1 -type d \( -iname '*agentjail*' -o -name 'aj-*' -o -name 'aj_*' \) 2>/dev/null
    return 0
}

# Value of KEY in key=value lines of $output (first match); a pty's \r is dropped.
kv() {
    printf '%s\n' "${output:-}" | tr -d '\r' | awk -v k="$1=" 'index($0, k) == 1 { print substr($0, length(k) + 1); exit }'
}

# agentjail run with the test workspace and the attack program at /attack.
ajattack_run() {
    timeout -k 5 "$AJ_TIMEOUT" "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" --ro "$ATTACK:/attack" "$@"
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

# The expectation at this level: level 1's (process) first, level 2's
# (gvisor) second, e.g. `assert_blocked fsopen "$(lv EPERM ENOSYS)"`.
lv() { # PROCESS GVISOR
    if at_level gvisor; then printf '%s' "$2"; else printf '%s' "$1"; fi
}

# Level 2: the attempts NAME... succeed, but inside gVisor's own kernel (the
# Sentry's namespaces, procfs, sysfs, /dev, io_uring, netlink ...), so no
# host object is reached; the test shows how the host is kept out. Each
# NAME must print ESCAPED (the test notices when gVisor changes) and no
# other attempt may; the attack's summary and exit (1) say so.
assert_sentry_own() { # NAME...
    local want got n
    want=$(printf '%s\n' "$@" | sort -u)
    got=$(printf '%s\n' "${lines[@]}" | tr -d '\r' | awk -F= '$1 != "result" && $2 ~ /^ESCAPED/ { print $1 }' | sort -u)
    n=$(printf '%s\n' "${lines[@]}" | grep -v '^result=' | grep -c '^[^ ]*=ESCAPED' || true)
    if [ "$got" != "$want" ]; then
        _aj_dump
        fail "ESCAPED inside the Sentry: expected [$(echo $want)], got [$(echo $got)]"
    fi
    assert_eq "$(kv result)" "ESCAPED n=$n" "the attack's summary"
    assert_status 1
}

# Level 2 never maps host root: a root-owned workspace (the suite's $WS) is
# read-only to the sandbox there (docs/levels.md, "Identity"). Tests whose
# attacks write into the workspace give it a user at level 2, so that the
# attack is made at all.
workspace_for_level() {
    if at_level gvisor; then chown 4242:4242 "$WS"; fi
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

setup() {
    require_level
    aj_setup
}
teardown() { aj_teardown; }

# plant DIR NAME VARIANT TARGET INROOT: make DIR/NAME a link that leads to
# the host directory TARGET from agentjail's staging root (where the host
# is /oldroot); INROOT is where DIR/NAME is inside the sandbox's root (for
# the loop).
plant() {
    local dir=$1 name=$2 v=$3 target=$4 inroot=$5 up=../../../../../../../../../..
    rm -rf "${dir:?}/$name" "$dir/.$name".*
    case $v in
    abs) ln -s "/oldroot$target" "$dir/$name" ;;
    rel) ln -s "$up/oldroot$target" "$dir/$name" ;;
    chain)
        ln -s ".$name.c1" "$dir/$name"
        ln -s ".$name.c2" "$dir/.$name.c1"
        ln -s "$up/oldroot$target" "$dir/.$name.c2"
        ;;
    dotdot)
        mkdir "$dir/.$name.d"
        ln -s ".$name.d/$up/oldroot$target" "$dir/$name"
        ;;
    host) ln -s "$target" "$dir/$name" ;;
    loop) ln -s "$up$inroot" "$dir/$name" ;;
    esac
}
