# Shared helpers for agentjail integration tests (bats >= 1.5).
#
#   AJ     path of the agentjail binary      (default: build/agentjail)
#   PROBE  path of the static probe program  (default: build/tests/ajprobe)
#
# Every test gets a fresh workspace "$WS" (mode 0755, owned by root) and a
# scratch dir "$T".  setup() snapshots host state, teardown() checks that the
# test left nothing behind: mounts, cgroups, processes, temp dirs, netns, links,
# nftables rules.

bats_require_minimum_version 1.5.0

_aj_root=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
if [ -z "${AJ:-}" ]; then
    if [ -e "$PWD/build/agentjail" ]; then AJ=$PWD/build/agentjail; else AJ=$_aj_root/build/agentjail; fi
fi
if [ -z "${PROBE:-}" ]; then
    if [ -e "$PWD/build/tests/ajprobe" ]; then PROBE=$PWD/build/tests/ajprobe; else PROBE=$_aj_root/build/tests/ajprobe; fi
fi
AJ_TIMEOUT=${AJ_TIMEOUT:-60}
SANDBOX_UID_MIN=1000000000
# A non-root caller gets a (correct) one-line warning about cgroup limits on
# every run; generic tests silence it so that they can check stderr exactly.
# nonroot.bats checks the warning itself.
if [ "$EUID" -eq 0 ]; then AJ_QUIET=(); else AJ_QUIET=(--quiet); fi

# ---------------------------------------------------------------- assertions

fail() {
    echo "FAIL: $*" >&2
    return 1
}

_aj_dump() {
    {
        echo "--- status: ${status:-}"
        echo "--- stdout:"
        printf '%s\n' "${output:-}"
        echo "--- stderr:"
        printf '%s\n' "${stderr:-}"
        echo "---"
    } >&2
}

assert_status() {
    if [ "${status:-}" != "$1" ]; then
        _aj_dump
        fail "expected exit status $1, got ${status:-unset}"
    fi
}

assert_eq() { # ACTUAL EXPECTED [WHAT]
    if [ "$1" != "$2" ]; then
        _aj_dump
        fail "${3:-value}: expected [$2], got [$1]"
    fi
}

assert_ne() { # ACTUAL UNEXPECTED [WHAT]
    if [ "$1" = "$2" ]; then
        _aj_dump
        fail "${3:-value}: must not be [$2]"
    fi
}

assert_contains() { # TEXT SUBSTRING
    if [[ "$1" != *"$2"* ]]; then
        _aj_dump
        fail "[${1:0:300}] lacks [$2]"
    fi
}

assert_output_has_line() { # LINE : exact line present in $output
    local l
    for l in "${lines[@]}"; do [ "$l" = "$1" ] && return 0; done
    _aj_dump
    fail "output lacks line [$1]"
}

assert_output_lacks() { # SUBSTRING
    if [[ "${output:-}" == *"$1"* ]]; then
        _aj_dump
        fail "output must not contain [$1]"
    fi
}

# Exactly one stderr line, starting with "agentjail: ", nothing on stdout.
assert_one_error_line() {
    local n=${#stderr_lines[@]}
    if [ "$n" -ne 1 ] || [[ "${stderr_lines[0]:-}" != "agentjail: "?* ]]; then
        _aj_dump
        fail "expected exactly one stderr line starting with 'agentjail: ', got $n line(s)"
    fi
}

# Value of KEY in key=value lines of $output (first match).
kv() {
    printf '%s\n' "${output:-}" | awk -v k="$1=" 'index($0, k) == 1 { print substr($0, length(k) + 1); exit }'
}

# ---------------------------------------------------------------- running

require_binaries() {
    [ -x "$AJ" ] || fail "agentjail binary not found at $AJ (build it: meson setup build && ninja -C build)"
    [ -x "$PROBE" ] || fail "probe not found at $PROBE (build it: ninja -C build)"
}

require_root() {
    [ "$EUID" -eq 0 ] || skip "needs root (run the suite as root for this test)"
}

# timeout(1) for one agentjail invocation, stdin from /dev/null (see ajrun).
aj_timeout() {
    timeout -k 5 "$AJ_TIMEOUT" "$@" </dev/null
}

# agentjail run with the test workspace and the probe at /probe.  stdin is
# /dev/null: timeout(1) runs agentjail in a background process group, which
# must not touch a terminal the suite may have been started from.
ajrun() {
    timeout -k 5 "$AJ_TIMEOUT" "$AJ" run "${AJ_QUIET[@]}" --workspace "$WS" --ro "$PROBE:/probe" "$@" </dev/null
}

# run ajrun, keeping stderr apart: sets $status $output $lines $stderr $stderr_lines.
sandbox() {
    run --separate-stderr ajrun "$@"
}

# A per-test name for prctl(PR_SET_NAME) of probe processes (<= 15 chars).
aj_tag() {
    echo "ajt${BASHPID}${1:-}"
}

# Host pids whose comm is exactly NAME.
host_pids_by_comm() {
    ps -e -o pid=,comm= | awk -v n="$1" '$2 == n { print $1 }'
}

_aj_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Wait up to SECS (default 5) for a process named NAME; print its pid.
wait_for_comm() {
    local end pids
    end=$(($(_aj_now_ms) + ${2:-5} * 1000))
    while :; do
        pids=$(host_pids_by_comm "$1")
        if [ -n "$pids" ]; then
            echo "$pids" | head -n1
            return 0
        fi
        [ "$(_aj_now_ms)" -lt "$end" ] || return 1
        sleep 0.05
    done
}

# Wait up to SECS (default 1, fractions allowed) until no process is named NAME.
wait_gone_comm() {
    local end
    end=$(($(_aj_now_ms) + $(awk -v s="${2:-1}" 'BEGIN { print int(s * 1000) }')))
    while :; do
        [ -z "$(host_pids_by_comm "$1")" ] && return 0
        [ "$(_aj_now_ms)" -lt "$end" ] || return 1
        sleep 0.05
    done
}

# Wait up to SECS for FILE to contain a line matching REGEX.
wait_for_file_line() { # FILE REGEX [SECS]
    local end
    end=$(($(_aj_now_ms) + ${3:-5} * 1000))
    while :; do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        [ "$(_aj_now_ms)" -lt "$end" ] || return 1
        sleep 0.05
    done
}

# Field N (1-based: real, effective, saved, fs) of "Uid:" in /proc/PID/status.
host_uid_of() {
    awk -v f="${2:-1}" '$1 == "Uid:" { print $(f + 1) }' "/proc/$1/status"
}

# (The residue helpers below do their work in awk: bats traces every bash
# command, which makes shell loops over the process table slow.)

# Print, one per line, "pid uid comm why" for processes that appeared since
# setup and belong to this test: they descend from the test process, or they
# run as a sandbox uid (>= SANDBOX_UID_MIN, or AJ_EXTRA_UID) and are this
# test's sandbox processes -- comm is one of our tags, or their mounts come
# from this bats run's scratch tree (workspace, binds) or another AJ_MARKERS
# entry.  Sandboxes of anyone else (another suite running concurrently) are
# neither reported nor killed.
_aj_new_procs() {
    local self=$BASHPID # this (sub)shell: it and its children (ps, awk) are not residue
    ps -e -o pid=,ppid=,uid=,comm= 2>/dev/null | awk \
        -v setup="$AJ_SETUP_PIDS" -v testpid="$AJ_TEST_PID" -v self="$self" \
        -v umin="$SANDBOX_UID_MIN" -v extra="${AJ_EXTRA_UID:--1}" \
        -v tag="ajt$AJ_TEST_PID" -v markers="${AJ_MARKERS[*]}" '
        BEGIN { n = split(setup, a, " "); for (i = 1; i <= n; i++) old[a[i]] = 1
                nm = split(markers, mk, " ") }
        { pid[NR] = $1; parent[$1] = $2; uid[$1] = $3; comm[$1] = $4 }
        function mine(p,    f, line, i, hit) {
            if (index(comm[p], tag) == 1) return 1
            f = "/proc/" p "/mountinfo"; hit = 0
            while (!hit && (getline line < f) > 0)
                for (i = 1; i <= nm; i++) if (index(line, mk[i])) { hit = 1; break }
            close(f)
            return hit
        }
        END {
            for (k = 1; k <= NR; k++) {
                p = pid[k]
                if (p in old || p == self) continue
                if ((uid[p] + 0 >= umin || uid[p] == extra) && mine(p)) {
                    print p, uid[p], comm[p], "sandbox"; continue
                }
                for (q = parent[p]; q != "" && q > 1 && q != self; q = parent[q])
                    if (q == testpid) { print p, uid[p], comm[p], "child-of-test"; break }
            }
        }'
}

# Is PID one of this test's sandbox processes (see above)?
aj_is_mine() {
    _aj_new_procs | awk -v p="$1" '$1 == p { f = 1 } END { exit !f }'
}

# New host processes (not present at setup) of this test running as a sandbox uid.
new_sandbox_uid_pids() {
    _aj_new_procs | awk -v umin="$SANDBOX_UID_MIN" '$4 == "sandbox" && $2 >= umin { print $1 }'
}

# ---------------------------------------------------------------- residue

# The cgroup roots to scan: our own cgroup in every hierarchy, each once, in
# mountinfo's order; found once per test (setup and teardown share them).
_aj_cgroup_roots() {
    [ -z "${_AJ_CG_ROOTS_SET:-}" ] || return 0
    mapfile -t _AJ_CG_ROOTS < <(awk '
        FNR == 1 { file++ }
        file == 1 { split($0, c, ":"); if (c[2] == "") v2 = c[3]; else { n = split(c[2], cs, ","); for (i = 1; i <= n; i++) path[cs[i]] = c[3] }; next }
        {   for (i = 7; i <= NF; i++) if ($i == "-") break
            fs = $(i + 1); opts = $(i + 3); r = ""
            if (fs == "cgroup2") { if (v2 != "") r = $5 v2 }
            else if (fs == "cgroup") {
                n = split(opts, o, ",")
                for (j = 1; j <= n; j++) if (o[j] in path) { r = $5 path[o[j]]; break }
            }
            if (r != "" && !(r in seen)) { seen[r] = 1; print r }
        }' /proc/self/cgroup /proc/self/mountinfo)
    _AJ_CG_ROOTS_SET=1
}

# Cgroup dirs named like agentjail's below our own cgroup, in every hierarchy.
_aj_cgroup_dirs() {
    _aj_cgroup_roots
    [ "${#_AJ_CG_ROOTS[@]}" -gt 0 ] || return 0
    find "${_AJ_CG_ROOTS[@]}" -mindepth 1 -maxdepth 3 -type d \( -iname '*agentjail*' -o -name 'aj-*' -o -name 'aj_*' \) 2>/dev/null
    return 0
}

# One line per item, "KIND value", sorted.  Named network namespaces
# (/run/netns/NAME, `ip netns`) are only counted when agentjail-named: other
# suites build their fake networks with their own named namespaces, possibly
# while this one runs; agentjail's anonymous namespaces die with their
# processes, which are checked separately.  It runs twice per test: one awk
# sorts the sections out, and globs list what `ip netns`/`ip link` would.
_aj_snapshot() {
    # in this shell, not a pipeline's subshell: the cgroup roots are kept
    _aj_cgroup_dirs >"$BATS_TEST_TMPDIR/.residue.cgroups"
    {
        echo '@@aj tempdir'
        compgen -G '/tmp/agentjail*' || true
        compgen -G '/run/agentjail*' || true
        compgen -G '/dev/shm/agentjail*' || true
        # the host's records of minted secrets (tests keep theirs in
        # AGENTJAIL_STATE_DIR): none, and no directory made for them
        echo '@@aj minted'
        compgen -G '/var/lib/agentjail/minted' || true
        compgen -G '/var/lib/agentjail/minted/*' || true
        compgen -G '/var/lib/agentjail/minted/.[!.]*' || true
        echo '@@aj netns'
        compgen -G '/run/netns/*' || true
        echo '@@aj link'
        compgen -G '/sys/class/net/*' || true
        # nftables: the whole ruleset (agentjail's tables are inet agentjail-PID-SLOT),
        # counters' values left out: other rules' (e.g. Podman's netavark) count
        # the host's own packets
        echo '@@aj nft'
        nft list ruleset 2>/dev/null || true
    } | awk -v cg="$BATS_TEST_TMPDIR/.residue.cgroups" '
        FILENAME == "/proc/self/mountinfo" { if ($5 !~ "^/run/netns/" || $5 ~ "^/run/netns/(agentjail|aj[-_])") print "mount", $5; next }
        FILENAME == cg { print "cgroup", $0; next }
        /^@@aj / { kind = $2; next }
        kind == "tempdir" { print "tempdir", $0; next }
        kind == "minted" { print "minted", $0; next }
        kind == "netns" { sub(/^\/run\/netns\//, ""); if ($0 ~ /^(agentjail|aj[-_])/) print "netns", $0; next }
        kind == "link" { sub(/^\/sys\/class\/net\//, ""); print "link", $0; next }
        kind == "nft" { sub(/counter packets [0-9]+ bytes [0-9]+/, "counter"); if (NF) print "nft", $0 }
        ' /proc/self/mountinfo "$BATS_TEST_TMPDIR/.residue.cgroups" - | LC_ALL=C sort
}

# Items added since setup (as `comm -13`: a line counts as often as it is
# there).  Cgroups are named agentjail-PID-RANDOM; those of
# agentjail processes this test did not start (another suite running at the
# same time) are not ours to judge.
_aj_added() {
    LC_ALL=C awk -v pidsfile="$AJ_PIDS_FILE" '
            BEGIN { while ((getline l < pidsfile) > 0) ours[l] = 1 }
            FILENAME == ARGV[1] { before[$0]++; next }
            before[$0] > 0 { before[$0]--; next }
            $1 == "cgroup" {
                n = split($2, parts, "/"); base = parts[n]
                if (match(base, /^agentjail-[0-9]+-/)) {
                    p = substr(base, 11, RLENGTH - 11)
                    if (!(p in ours)) next
                }
            }
            { print }' "$BATS_TEST_TMPDIR/.residue.before" "$BATS_TEST_TMPDIR/.residue.after"
}

aj_residue_setup() {
    AJ_TEST_PID=$BASHPID
    AJ_MARKERS=("$(basename "$BATS_RUN_TMPDIR")")
    AJ_SETUP_PIDS=$(ps -e -o pid=)
    AJ_SETUP_PIDS=${AJ_SETUP_PIDS//$'\n'/ }
    _aj_snapshot >"$BATS_TEST_TMPDIR/.residue.before"
}

# Compare with the setup snapshot, allowing ~1 s for teardown to finish.
aj_residue_check() {
    local procs='' added='' deadline
    [ -f "$BATS_TEST_TMPDIR/.residue.before" ] || return 0 # setup did not get that far
    deadline=$((${EPOCHREALTIME//[!0-9]/} + 1000000))
    while :; do
        _aj_snapshot >"$BATS_TEST_TMPDIR/.residue.after"
        procs=$(_aj_new_procs)
        added=$(_aj_added)
        [ -z "$procs" ] && [ -z "$added" ] && return 0
        [ "${EPOCHREALTIME//[!0-9]/}" -lt "$deadline" ] || break
        sleep 0.1
    done
    local ok=0
    if [ -n "$procs" ]; then
        echo "RESIDUE: processes left behind (pid uid comm why):" >&2
        echo "$procs" >&2
        ok=1
        # Do not let our stray processes outlive the test (by pid; only those
        # attributed to this test above).
        # shellcheck disable=SC2046
        kill -KILL $(echo "$procs" | awk '{ print $1 }') 2>/dev/null || true
    fi
    if [ -n "$added" ]; then
        if [ -n "${AJ_RESIDUE_PROCS_ONLY:-}" ]; then
            echo "# note: non-process residue not counted for this test:" >&2
            echo "$added" >&2
        else
            echo "RESIDUE: left on the host:" >&2
            echo "$added" >&2
            ok=1
        fi
    fi
    return $ok
}

# ---------------------------------------------------------------- setup

# $AJ becomes a tiny wrapper that records agentjail's pid (exec keeps it) so
# residue can be attributed to this test; $AJ_REAL is the binary itself.
_aj_wrap() {
    AJ_REAL=${AJ_REAL:-$AJ}
    AJ_PIDS_FILE=$BATS_TEST_TMPDIR/.agentjail-pids
    : >"$AJ_PIDS_FILE"
    [ -d "$BATS_TEST_TMPDIR/bin" ] || mkdir -p "$BATS_TEST_TMPDIR/bin"
    printf '#!/bin/sh\necho $$ >>%q 2>/dev/null\nexec %q "$@"\n' "$AJ_PIDS_FILE" "$AJ_REAL" >"$BATS_TEST_TMPDIR/bin/agentjail"
    chmod 0755 "$BATS_TEST_TMPDIR/bin/agentjail"
    AJ=$BATS_TEST_TMPDIR/bin/agentjail
}

# Copy agentjail and the helper programs it execs (agentjail-net, -image,
# -service: found next to it) into DIR, mode 0755.
aj_copy_programs() { # DIR
    local f
    for f in "$AJ_REAL" "$(dirname "$AJ_REAL")"/agentjail-*; do
        [ -f "$f" ] || continue
        cp "$f" "$1/" && chmod 0755 "$1/$(basename "$f")"
    done
}

# Standard per-test setup: binaries present, scratch dir, workspace, snapshot.
aj_setup() {
    require_binaries
    T=$BATS_TEST_TMPDIR/t
    WS=$T/ws
    mkdir -p "$BATS_TEST_TMPDIR/bin" "$WS"
    _aj_wrap
    chmod 0755 "$BATS_TEST_TMPDIR" "$T" "$WS"
    aj_residue_setup
}

aj_teardown() {
    local rc=0
    # Reap any background agentjail the test started and did not wait for.
    if [ -n "${AJ_BG_PID:-}" ] && kill -0 "$AJ_BG_PID" 2>/dev/null; then
        kill -KILL "$AJ_BG_PID" 2>/dev/null || true
        wait "$AJ_BG_PID" 2>/dev/null || true
    fi
    aj_residue_check || rc=1
    return $rc
}

setup() { aj_setup; }
teardown() { aj_teardown; }
