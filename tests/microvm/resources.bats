#!/usr/bin/env bats
# The security suite's process and resource attacks (tests/security/
# process.bats, resources.bats) at level 3 (docs/security.md, "Attack x
# level"), in three TCG boots: setup_file runs two VMs side by side, each a
# script of cases ("=== NAME" before each case's output), checked case by
# case below:
#   limits: --memory 384m --pids 64 --disk 16M: the fork bomb, the fills,
#     /dev/shm, inodes, the processes the command sees, a 200 MiB bomb
#     that its RAM holds, and last kill(-1) (the run's exit 0 says the
#     guest's agent lived through it);
#   memory: --memory 128m --disk 512M: bombs spread over 4 processes, /tmp
#     and /dev/shm beyond the RAM, socket buffers, an orphan holding the
#     output, and last a bomb the guest's OOM killer ends (137).
# The third run (the last test) ends by --timeout: an unbounded fork bomb,
# a spin ignoring SIGTERM and a flood to a reader that never reads.
# Level 1's expectations where the guest gives the same walls; where the
# VM is the wall instead, its RAM (--memory), its cgroup (--pids), its
# tmpfs (--disk), and the host unaffected.

AJ_ISOLATION=microvm
load ../security/helpers

setup_file() {
    [ "$(id -u)" = 0 ] || return 0
    command -v qemu-system-x86_64 >/dev/null || return 0
    [ -r /var/cache/agentjail/microvm/vmlinux ] || return 0
    local d=$BATS_FILE_TMPDIR
    _aj_find_attack
    chmod o+rx "$ATTACK"
    # (dash: `read` of a NUL-separated /proc file fails, so awk counts
    # the processes that are no kernel threads: not kthreadd's children)
    cat >"$d/limits.sh" <<EOF
c() { echo "=== \$1"; }
c procs; awk '\$1 != 2 && \$4 != 2 { n++; print "proc", \$2 } END { print "user_procs=" n }' /proc/[0-9]*/stat
[ -r /proc/$$/cmdline ] && tr '\\0' ' ' </proc/$$/cmdline; echo
c forkbomb; sh -c 'echo \$\$ >/tmp/fb; exec setsid /attack forkbomb 1000'; kill -9 -\$(cat /tmp/fb)
c fill_tmp; /attack fill /tmp; rm -f /tmp/ajfill
c fill_home; /attack fill /root; rm -f /root/ajfill
c shm; /attack fill /tmp 10 >/dev/null; /attack fill /dev/shm; rm -f /tmp/ajfill /dev/shm/ajfill
c inodefill; /attack inodefill /tmp 100000; rm -rf /tmp/ajinodes
c fstype; stat -f -c %T /tmp /root /dev/shm
c mem; /attack membomb 200 1
c agent; python3 -c 'import fcntl, os
r, w = os.pipe()
try:
    fcntl.fcntl(w, fcntl.F_SETOWN, os.getppid())
    print("setown=ESCAPED")
except OSError as e:
    print("setown=" + os.strerror(e.errno))'
echo 1000 2>/dev/null >/proc/\$PPID/oom_score_adj && echo oomadj=ESCAPED || echo oomadj=refused
c killall; exec /attack killall
EOF
    cat >"$d/memory.sh" <<'EOF'
c() { echo "=== $1"; }
c spread; for i in 1 2 3 4; do (/attack membomb 40 1; echo "exit=$?") & done; wait
c tmpfs; /attack fill /tmp 256; echo "exit=$?"; rm -f /tmp/ajfill
c shm; /attack fill /dev/shm 256; echo "exit=$?"; rm -f /dev/shm/ajfill
c tcpbuf; /attack tcpbuf 16 256 128 0
c orphan; /attack orphan ajtorphan keepfds
c final; exec /attack membomb 1024
EOF
    chmod o+r "$d/limits.sh" "$d/memory.sh"
    local t0=$EPOCHREALTIME
    (
        rc=0
        AGENTJAIL_MICROVM_ACCEL=tcg timeout -k 5 90 sh -c 'echo $$ >"$0"; exec "$@"' "$d/limits.pid" \
            "$AJ" run -q --isolation microvm --memory 384m --pids 64 --disk 16M --ro "$ATTACK:/attack" --ro "$d/limits.sh:/cases" \
            -- /bin/sh /cases </dev/null >"$d/limits.out" 2>"$d/limits.err" || rc=$?
        echo "$rc" >"$d/limits.rc"
    ) &
    (
        rc=0
        AGENTJAIL_MICROVM_ACCEL=tcg timeout -k 5 90 sh -c 'echo $$ >"$0"; exec "$@"' "$d/memory.pid" \
            "$AJ" run --isolation microvm --memory 128m --disk 512M --result "$d/memory.json" --ro "$ATTACK:/attack" \
            --ro "$d/memory.sh:/cases" -- /bin/sh /cases </dev/null >"$d/memory.out" 2>"$d/memory.err" || rc=$?
        echo "$rc" >"$d/memory.rc"
    ) &
    wait
    elapsed_since "$t0" >"$d/secs"
}

setup() {
    require_root
    command -v qemu-system-x86_64 >/dev/null || skip "qemu is not installed (scripts/setup.sh)"
    [ -r /var/cache/agentjail/microvm/vmlinux ] || skip "no guest kernel (scripts/setup.sh)"
    aj_setup
}

# $output and $lines: case NAME of the VM RUN's output
section() { # RUN NAME
    local f=$BATS_FILE_TMPDIR/$1
    output=$(awk -v n="=== $2" '$0 == n { on = 1; next } /^=== / { on = 0 } on' "$f.out")
    mapfile -t lines <<<"$output"
    [ -n "$output" ] || fail "no output for $1's $2 (the run: rc $(cat "$f.rc"), $(head -c 600 "$f.err"))"
}

# every attempt of the case blocked, its summary "result=blocked ..."
case_blocked() {
    local l
    for l in "${lines[@]}"; do
        [[ "$l" != *=ESCAPED* ]] || fail "ESCAPED: $l"
    done
    [[ "$(kv result)" == blocked* ]] || fail "no 'result=blocked' line: $output"
}

# nothing is left of the runs of agentjail PID...: the process, its VM's
# qemu (its command line names the VM's directory), the directory, the
# VMM's cgroup (other VMs on the machine are not this file's)
no_vm_left() { # PID...
    local pid
    for pid in "$@"; do
        [ -n "$pid" ] || fail "no pid of a run"
        ! kill -0 "$pid" 2>/dev/null || fail "agentjail $pid still runs"
        [ -z "$(pgrep -f "/tmp/agentjail-microvm-$pid-")" ] || fail "the qemu of run $pid is left"
        [ -z "$(ls -d /tmp/agentjail-microvm-"$pid"-* 2>/dev/null)" ] || fail "the VM directory of run $pid is left"
        [ -z "$(_aj_cgroup_dirs | grep "/agentjail-$pid-")" ] || fail "the VMM cgroup of run $pid is left"
    done
}

@test "microvm resources: two VMs side by side ran their cases, the first to its end (kill(-1) last), and left nothing" {
    echo "# two TCG boots side by side, their cases: $(cat "$BATS_FILE_TMPDIR/secs") s" >&3
    # limits: exit 0 is its last case's, kill(-1, SIGKILL) as guest root:
    # the agent that relays the exit (not the command's uid) lived on
    assert_eq "$(cat "$BATS_FILE_TMPDIR/limits.rc")" 0 "the limits VM's exit ($(head -c 600 "$BATS_FILE_TMPDIR/limits.err"))"
    local n
    for n in procs forkbomb fill_tmp fill_home shm inodefill fstype mem agent killall; do section limits "$n"; done
    for n in spread tmpfs shm tcpbuf orphan final; do section memory "$n"; done
    no_vm_left "$(cat "$BATS_FILE_TMPDIR/limits.pid")" "$(cat "$BATS_FILE_TMPDIR/memory.pid")"
}

@test "microvm resources: kill(-1) and the processes the command sees: its own, init and the agent; not the host's" {
    section limits killall
    assert_output_has_line alive
    # the guest's kernel threads are guest root's and ignore signals: the
    # call succeeds (0, not level 1's ESRCH), and reaches no agent or init
    assert_eq "$(info_of "kill(-1,")" "SIGKILL) = 0 (ok)" "kill(-1, SIGKILL)"
    section limits procs
    # init, the agent, the shell of the cases and awk (level 1: <= 4)
    assert_le "$(kv user_procs)" 4 "processes besides kernel threads"
    assert_contains "$output" "proc (agentjail-agent)"
    # the test's own process (its pid, looked up in the guest) is not there
    assert_output_lacks bats
}

@test "microvm resources: the agent can't be signalled through F_SETOWN or have its oom_score_adj raised by guest root" {
    section limits agent
    # euid 0 may send SIGIO (any signal with F_SETSIG) to any process whose
    # owner it sets; the agent's /proc files are its uid's, not root's
    assert_output_has_line "setown=Operation not permitted"
    assert_output_has_line "oomadj=refused"
}

@test "microvm resources: --pids 64 is the guest's cgroup: fork fails with EAGAIN before 64 processes" {
    section limits forkbomb
    case_blocked
    assert_blocked fork EAGAIN
    local n
    n=$(info_of forks)
    [ "$n" -ge 16 ] && [ "$n" -le 63 ] || fail "forks before EAGAIN: $n (want 16..63)"
}

@test "microvm resources: --disk 16M caps /tmp, home and /dev/shm together (ENOSPC), and inodes, in guest RAM" {
    local d
    for d in fill_tmp fill_home; do
        section limits "$d"
        case_blocked
        assert_blocked fill ENOSPC
        assert_le "$(info_of written)" $((16 * 1024 * 1024)) "bytes written ($d)"
    done
    # one cap with /tmp, as level 1's scratch (10M in /tmp leaves 6M)
    section limits shm
    case_blocked
    assert_blocked fill ENOSPC
    assert_le "$(info_of written)" $((7 * 1024 * 1024)) "bytes written to /dev/shm"
    section limits inodefill
    case_blocked
    assert_blocked inodefill ENOSPC
    assert_le "$(info_of files)" 4096 "files created"
    # the root (/tmp, home) an overlay over the guest's tmpfs; /dev/shm a
    # bind of that tmpfs: nothing on a host disk
    section limits fstype
    assert_eq "$(printf '%s ' "${lines[@]}")" "overlayfs overlayfs tmpfs " "filesystems of /tmp, /root, /dev/shm"
}

@test "microvm resources: --memory is the guest's RAM: bombs, tmpfs and socket buffers end in its OOM killer (137); the other VM held 200M meanwhile" {
    # 4 x 40M in a 128M guest: at most one holds it, the others are killed
    section memory spread
    local escaped killed
    escaped=$(grep -c '^membomb=ESCAPED' <<<"$output" || true)
    killed=$(grep -c '^exit=137$' <<<"$output" || true)
    [ "$escaped" -le 1 ] || fail "$escaped processes held 40M each in a 128M guest"
    assert_eq "$((escaped + killed))" 4 "bombs that held or were killed (137): $output"
    # /tmp and /dev/shm (--disk 512M, beyond the RAM) as memory: the
    # writer is killed by the guest's OOM killer, the VM goes on
    local s
    for s in tmpfs shm; do
        section memory "$s"
        assert_output_lacks "=ESCAPED"
        assert_eq "$(kv exit)" 137 "the $s writer's exit"
    done
    # socket buffers are the guest kernel's memory: less than its RAM
    section memory tcpbuf
    case_blocked
    assert_le "$(info_of tcp_queued_mb)" 128 "MiB queued in socket buffers"
    # the last case's bomb ends the run: 137, said as out of memory
    assert_eq "$(cat "$BATS_FILE_TMPDIR/memory.rc")" 137 "the memory VM's exit ($(head -c 600 "$BATS_FILE_TMPDIR/memory.err"))"
    assert_contains "$(cat "$BATS_FILE_TMPDIR/memory.err")" "out of memory"
    assert_eq "$(jq -r .oom_killed "$BATS_FILE_TMPDIR/memory.json")" true oom_killed
    # the limits VM, side by side, held more than this one's whole RAM
    section limits mem
    assert_output_has_line "membomb=ESCAPED touched 200 MiB"
}

@test "microvm resources: an orphan holding the output does not keep the run (the agent's 2 s drain)" {
    section memory orphan
    [[ "$output" == *"orphan pid="* ]] || fail "the daemon was not started: $output"
    # the run ended (137, previous test) with the daemon still holding
    # its stdout; nothing of it is on the host (a guest process)
    assert_eq "$(cat "$BATS_FILE_TMPDIR/memory.rc")" 137 "the memory VM's exit"
    [ -z "$(host_pids_by_comm ajtorphan)" ] || fail "the daemon runs on the host"
}

# The VMM's cgroup of agentjail run PID in controller C's hierarchy (v1),
# or its v2 one.
vmm_cg() { # PID C
    local all d
    all=$(_aj_cgroup_dirs | grep "/agentjail-$1-[^/]*$")
    d=$(grep "/$2[,/]" <<<"$all" | head -1)
    echo "${d:-$(head -1 <<<"$all")}"
}

@test "microvm resources: --timeout ends a fork bomb, a spin ignoring SIGTERM and a flood to a stalled reader: 124 in time; host responsive; rlimits" {
    local tag=ajtflood t0=$EPOCHREALTIME
    # (--timeout counts from the command's start: the guest's boot, 2-7 s
    # on TCG, is not in it)
    # the reader never reads: agentjail's stdout pipe fills up at once;
    # stderr says when the command started and has the rlimit cases
    {
        local r=0
        AGENTJAIL_MICROVM_ACCEL=tcg "$AJ" run -q --isolation microvm --ro "$ATTACK:/attack" \
            --pids 64 --cpus 1 --nofile 64 --fsize 1M --timeout 10 --kill-after 1 -- /bin/sh -c '
            echo started >&2; /attack rlimit >&2; /attack fsize /tmp/big 4 >&2
            /attack spin 2 ignore_term & /attack flood '$tag' & exec /attack forkbomb_wild' \
            </dev/null 2>"$T/err" || r=$?
        echo "$r $EPOCHREALTIME" >"$T/rc"
    } | sleep 40 &
    local pipe=$! i started='' aj cg='' pcg='' quota='' s lat maxlat=0 tasks maxtasks=0
    for ((i = 0; i < 400; i++)); do
        [ -s "$T/rc" ] && break
        [ -n "$started" ] || ! grep -q '^started' "$T/err" 2>/dev/null || started=$EPOCHREALTIME
        if [ -z "$cg" ] && aj=$(pgrep -f -n "^$AJ_REAL run -q --isolation microvm"); then
            cg=$(vmm_cg "$aj" cpu)
            pcg=$(vmm_cg "$aj" pids)
        fi
        if [ -n "$cg" ] && [ -z "$quota" ]; then
            quota=$(cat "$cg/cpu.cfs_quota_us" 2>/dev/null || awk '{ print $1 }' "$cg/cpu.max" 2>/dev/null)
        fi
        if [ -n "$pcg" ] && tasks=$(cat "$pcg/pids.current" 2>/dev/null); then
            ((tasks > maxtasks)) && maxtasks=$tasks
        fi
        s=$EPOCHREALTIME
        ls / >/dev/null
        cat /proc/loadavg >/dev/null
        lat=$(elapsed_since "$s")
        awk -v a="$lat" -v b="$maxlat" 'BEGIN { exit !(a > b) }' && maxlat=$lat
        sleep 0.05
    done
    local rc took
    read -r rc took <"$T/rc" || true
    kill "$pipe" 2>/dev/null || true
    wait "$pipe" 2>/dev/null || true
    [ -n "$started" ] || fail "the command never started: $(head -c 600 "$T/err")"
    started=$(awk -v a="$started" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
    took=$(awk -v a="$took" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
    echo "# the command started after ${started} s, agentjail ended after ${took} s; host latency at most ${maxlat} s; VMM tasks at most $maxtasks" >&3
    assert_eq "$rc" 124 "agentjail's exit"
    # --timeout 10 --kill-after 1 from the command's start, 2.5 s of slack
    assert_le "$(awk -v a="$took" -v b="$started" 'BEGIN { printf "%.2f", a - b }')" 13.5 \
        "seconds from the command's start until agentjail returned"
    assert_le "$maxlat" 1.0 "host command latency during the fork bomb (s)"
    # the guest's fork bomb makes no host task: the VMM's stay few
    [ "$maxtasks" -gt 0 ] || fail "could not read the VMM's pids cgroup ($pcg)"
    assert_le "$maxtasks" 64 "tasks of the VMM's cgroup"
    # --cpus 1: one vCPU, and the VMM's cgroup has the quota
    assert_eq "$quota" 100000 "the VMM's CPU quota (--cpus 1)"
    # rlimits: level 1's (the agent sets them before the command)
    output=$(cat "$T/err") stderr=''
    mapfile -t lines <"$T/err"
    assert_blocked_each EPERM raise_nofile raise_nproc raise_fsize raise_memlock prlimit_self_nofile prlimit_init_nofile
    assert_blocked open_many EMFILE
    assert_eq "$(info_of raise_nofile)" "cur=64 max=64" "RLIMIT_NOFILE inside"
    assert_eq "$(info_of raise_fsize)" "cur=1048576 max=1048576" "RLIMIT_FSIZE inside"
    assert_blocked fsize EFBIG
    assert_eq "$(info_of written)" 1048576 "bytes written under --fsize 1M"
    no_vm_left "$aj"
}
