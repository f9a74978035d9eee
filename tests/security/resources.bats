#!/usr/bin/env bats
# Resource walls: fork, memory, disk, inode, /dev/shm bombs, output floods,
# CPU spin, rlimit games. Each leaves the host responsive and agentjail
# within bounded time and memory.

load helpers

# Integer field of the --result JSON.
result_field() { # FILE FIELD
    jq -r ".$2" "$1"
}

@test "fork bomb (--pids 64): fork fails with EAGAIN before 64 processes; teardown kills them all" {
    attack --pids 64 -- /attack forkbomb 1000
    assert_all_blocked
    assert_blocked fork EAGAIN
    local n
    n=$(info_of forks)
    [ "$n" -ge 16 ] && [ "$n" -le 63 ] || { _aj_dump; fail "forks before EAGAIN: $n (want 16..63)"; }
}

@test "fork bomb, unbounded (--pids 64 --timeout 5): <= 64 processes, host responsive, exit 124 in time" {
    local start=$EPOCHREALTIME rc=0
    "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" --ro "$ATTACK:/attack" --pids 64 --timeout 5 --kill-after 1 \
        -- /attack forkbomb_wild >"$T/out" 2>"$T/err" &
    AJ_BG_PID=$!
    local i n uid= maxn=0 s lat maxlat=0
    for ((i = 0; i < 150; i++)); do
        kill -0 "$AJ_BG_PID" 2>/dev/null || break
        # (level 2: the host sees runsc's processes, not the sandbox's)
        at_level gvisor || [ -n "$uid" ] || uid=$(ps -o uid= --ppid "$AJ_BG_PID" 2>/dev/null | awk 'NR == 1 { print $1 }')
        if [ -n "$uid" ]; then
            n=$(ps -e -o uid= | awk -v u="$uid" '$1 == u' | wc -l)
            ((n > maxn)) && maxn=$n
        fi
        s=$EPOCHREALTIME
        ls / >/dev/null
        cat /proc/loadavg >/dev/null
        lat=$(elapsed_since "$s")
        awk -v a="$lat" -v b="$maxlat" 'BEGIN { exit !(a > b) }' && maxlat=$lat
        sleep 0.1
    done
    wait "$AJ_BG_PID" || rc=$?
    AJ_BG_PID=
    local took
    took=$(elapsed_since "$start")
    status=$rc output=$(cat "$T/out") stderr=$(cat "$T/err")
    echo "# processes at most $maxn, host latency at most ${maxlat}s, took ${took}s" >&3
    assert_le "$maxlat" 1.0 "host command latency during the fork bomb (s)"
    assert_le "$took" 9 "seconds until agentjail returned (--timeout 5 --kill-after 1)"
    if at_level gvisor; then
        # RLIMIT_NPROC 64 stops fork() inside, but each failed attempt still
        # costs the ptrace platform host tasks: the host cgroup's backstop
        # (192 + 16 x --pids) is reached and the Sentry stops; agentjail
        # says so (exit 2). The sandbox ends early; the host is unharmed.
        # (Or it lasts until the timeout, as at level 1.)
        if [ "$status" != 124 ]; then
            assert_status 2
            assert_contains "$stderr" "reached their cgroup limit"
            assert_contains "$stderr" "and gVisor's kernel stopped"
        fi
        return
    fi
    assert_status 124
    [ "$maxn" -le 64 ] || fail "the sandbox had $maxn processes (--pids 64)"
    [ "$maxn" -ge 32 ] || fail "the fork bomb never got going ($maxn processes): the test proves nothing"
    assert_le "$maxlat" 1.0 "host command latency during the fork bomb (s)"
    assert_le "$took" 9 "seconds until agentjail returned (--timeout 5 --kill-after 1)"
}

@test "memory bomb (--memory 64M): killed, exit 137, stderr says out of memory, --result oom_killed" {
    attack --memory 64M --result "$T/r.json" -- /attack membomb 1024
    assert_output_lacks "=ESCAPED"
    assert_eq "$(kv attempt)" membomb "the attack ran"
    assert_status 137
    [[ "$stderr" == *"out of memory"* ]] || { _aj_dump; fail "stderr does not mention out of memory"; }
    assert_eq "$(result_field "$T/r.json" oom_killed)" true oom_killed
    assert_le "$(result_field "$T/r.json" peak_memory_bytes)" $((65 * 1024 * 1024)) peak_memory_bytes
}

@test "memory bomb spread over 4 processes (4 x 40M, --memory 64M): the limit is for the whole sandbox" {
    attack --memory 64M -- /bin/sh -c 'for i in 1 2 3 4; do /attack membomb 40 3 & done; wait'
    local escaped
    escaped=$(printf '%s\n' "$output" | grep -c '^membomb=ESCAPED' || true)
    [ "$escaped" -le 1 ] || { _aj_dump; fail "$escaped processes held 40M each under --memory 64M"; }
    [[ "$stderr" == *"out of memory"* ]] || { _aj_dump; fail "stderr does not mention out of memory"; }
}

@test "two sandboxes at once: one's memory bomb (--memory 48M) leaves the other (--memory 256M, 100M used) unaffected" {
    "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" --ro "$ATTACK:/attack" --memory 256M -- /attack membomb 100 2 \
        >"$T/b.out" 2>"$T/b.err" &
    local b=$!
    attack --memory 48M -- /attack membomb 1024
    assert_status 137
    local rc=0
    wait "$b" || rc=$?
    # the big one held 100M (more than the small one's whole limit) and ended normally
    grep -q '^membomb=ESCAPED touched 100 MiB' "$T/b.out" || { cat "$T/b.out" "$T/b.err" >&2; fail "the second sandbox could not use its own memory"; }
    assert_eq "$rc" 1 "second sandbox's exit (1: it 'escaped' its 100M, i.e. got all it asked for)"
}

@test "tmpfs as memory: /tmp and /dev/shm writes beyond --memory 64M (with --disk 512M) are stopped" {
    local d
    for d in /tmp /dev/shm; do
        attack --memory 64M --disk 512M -- /attack fill "$d" 256
        assert_output_lacks "=ESCAPED"
        # reported as what it is: the sandbox ran out of memory
        assert_status 137
        [[ "$stderr" == *"out of memory"* ]] || { _aj_dump; fail "stderr does not mention out of memory"; }
    done
}

@test "disk fill (--disk 16M): /tmp and home writes end with ENOSPC at 16 MiB, on tmpfs (host disk untouched)" {
    local d
    for d in /tmp /home/agent; do
        attack --disk 16M -- /attack fill "$d"
        assert_all_blocked
        assert_blocked fill ENOSPC
        assert_le "$(info_of written)" $((16 * 1024 * 1024)) "bytes written to $d"
    done
    attack -- /usr/bin/stat -f -c %T /tmp /home/agent /dev/shm
    assert_status 0
    assert_eq "$(printf '%s\n' "$output" | sort -u)" tmpfs "filesystem of the writable areas"
}

@test "inode fill (--disk 16M): creating empty files ends with ENOSPC (inodes capped too)" {
    attack --disk 16M -- /attack inodefill /tmp 100000
    if at_level gvisor; then
        # gVisor's tmpfs has no inode cap: its inodes are the Sentry's memory,
        # in the sandbox's cgroup, bounded by --memory (not by --disk)
        assert_sentry_own inodefill
        assert_eq "$(info_of files)" 100000 "files created"
        return
    fi
    assert_all_blocked
    assert_blocked inodefill ENOSPC
    assert_le "$(info_of files)" 4096 "files created"
}

@test "/dev/shm fill: shares the --disk cap with /tmp (10M in /tmp leaves 6M for /dev/shm)" {
    attack --disk 16M -- /bin/sh -c '/attack fill /tmp 10 >/dev/null; /attack fill /dev/shm'
    assert_all_blocked
    assert_blocked fill ENOSPC
    # level 2: /tmp and /dev/shm are tmpfs mounts of the Sentry's, each
    # sized --disk (not one shared cap)
    assert_le "$(info_of written)" "$(lv $((7 * 1024 * 1024)) $((16 * 1024 * 1024)))" "bytes written to /dev/shm"
}

@test "output flood (200M on stdout + 50M on stderr): finishes, agentjail's RSS stays < 64 MiB" {
    local rc=0 i rss maxrss=0 start=$EPOCHREALTIME
    "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" --ro "$ATTACK:/attack" -- \
        /bin/sh -c 'yes | head -c 50M >&2 & yes | head -c 200M; wait' >/dev/null 2>&1 &
    AJ_BG_PID=$!
    for ((i = 0; i < 1200; i++)); do
        rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$AJ_BG_PID/status" 2>/dev/null) || break
        [ -n "$rss" ] || break
        ((rss > maxrss)) && maxrss=$rss
        sleep 0.05
    done
    wait "$AJ_BG_PID" || rc=$?
    AJ_BG_PID=
    echo "# agentjail VmRSS at most ${maxrss} KiB, took $(elapsed_since "$start")s" >&3
    status=$rc
    assert_status 0
    [ "$maxrss" -gt 0 ] || fail "could not sample agentjail's RSS"
    [ "$maxrss" -lt $((64 * 1024)) ] || fail "agentjail's VmRSS reached ${maxrss} KiB"
}

@test "output flood against a stalled reader: --timeout still ends the sandbox and agentjail" {
    local tag rc=
    tag=$(aj_tag f)
    # the reader never reads: agentjail's stdout pipe fills up at once
    # (bats runs with errexit: keep the status without ending the group)
    { local r=0
      "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" --ro "$ATTACK:/attack" --timeout 2 --kill-after 1 \
        -- /attack flood "$tag" 2>"$T/err" || r=$?
      echo "$r" >"$T/rc"; } | sleep 12 &
    local pipe=$!
    # level 2: the flood runs in the Sentry, not seen on the host by name
    if at_level gvisor; then
        sleep 1
    else
        wait_for_comm "$tag" 5 >/dev/null || { kill "$pipe"; fail "the flood never started"; }
    fi
    local start=$EPOCHREALTIME i
    # 2 s timeout + 1 s grace + 2 s slack
    for ((i = 0; i < 100; i++)); do
        [ -s "$T/rc" ] && [ -z "$(host_pids_by_comm "$tag")" ] && break
        sleep 0.05
    done
    local left took
    left=$(host_pids_by_comm "$tag")
    rc=$(cat "$T/rc" 2>/dev/null || true)
    took=$(elapsed_since "$start")
    # end the reader (and with it anything still blocked on the pipe)
    kill "$pipe" 2>/dev/null || true
    wait "$pipe" 2>/dev/null || true
    wait_gone_comm "$tag" 5 || true
    [ -z "$left" ] || fail "the flooding process still ran ${took}s after start (--timeout 2 --kill-after 1): pids $left"
    assert_eq "$rc" 124 "agentjail's exit status within 5 s"
}

@test "CPU spin in 3 processes (--cpus 0.2 --timeout 2): exit 124, CPU time within the quota" {
    attack --cpus 0.2 --timeout 2 --kill-after 1 --result "$T/r.json" -- /attack spin 3
    assert_status 124
    local cpu wall
    cpu=$(($(result_field "$T/r.json" cpu_user_ms) + $(result_field "$T/r.json" cpu_sys_ms)))
    wall=$(result_field "$T/r.json" wall_ms)
    echo "# cpu ${cpu} ms over ${wall} ms" >&3
    assert_eq "$(result_field "$T/r.json" timed_out)" true timed_out
    assert_le "$wall" 3500 "wall_ms"
    # level 2: --result's CPU is runsc run's own, not the Sentry's
    # (docs/levels.md); the quota itself: tests/gvisor/run.bats "--cpus"
    if at_level gvisor; then return; fi
    # 0.2 CPU for ~2 s = 400 ms, plus one CFS period of slack
    assert_le "$cpu" 700 "cpu ms used under --cpus 0.2"
}

@test "CPU spin ignoring SIGTERM (--timeout 1 --kill-after 1): SIGKILL follows, exit 124 in time, nothing left" {
    local start=$EPOCHREALTIME
    attack --timeout 1 --kill-after 1 -- /attack spin 2 ignore_term
    assert_status 124
    assert_le "$(elapsed_since "$start")" 4 "seconds until agentjail returned"
}

@test "rlimit games (--nofile 64 --fsize 1M): raising NOFILE/NPROC/FSIZE/MEMLOCK fails, EMFILE, EFBIG" {
    attack --nofile 64 --fsize 1M -- /bin/sh -c '/attack rlimit; /attack fsize /tmp/big 4'
    assert_output_lacks "=ESCAPED"
    assert_status 0
    assert_blocked_each EPERM raise_nofile raise_nproc raise_fsize raise_memlock prlimit_self_nofile prlimit_init_nofile
    assert_blocked open_many EMFILE
    assert_eq "$(info_of raise_nofile)" "cur=64 max=64" "RLIMIT_NOFILE inside"
    assert_eq "$(info_of raise_fsize)" "cur=1048576 max=1048576" "RLIMIT_FSIZE inside"
    assert_blocked fsize EFBIG
    assert_eq "$(info_of written)" 1048576 "bytes written under --fsize 1M"
}

# The memory cgroup of agentjail run PID (v1: in the memory hierarchy; v2:
# the unified one): the directory it made below our own cgroup.
_sandbox_memory_cgroup() { # PID
    local all d
    all=$(_aj_cgroup_dirs | grep "/agentjail-$1-[^/]*$")
    d=$(grep '/memory/' <<<"$all" | head -1)
    echo "${d:-$(head -1 <<<"$all")}"
}

@test "TCP socket buffers (--memory 64M): 16 loopback connections filled without reading are charged to the sandbox and capped" {
    # each end's send and receive buffers raised to net.core.[wr]mem_max
    # and filled, 256 MiB asked for; v1 charges socket buffers only with
    # memory.kmem.tcp.limit_in_bytes set (else the host pays), v2 always
    # (memory.stat sock, inside memory.max)
    if at_level gvisor; then
        # the Sentry's netstack: socket buffers are the Sentry's memory, in
        # the sandbox's cgroup: the sandbox runs out of memory (137)
        attack --memory 64M -- /attack tcpbuf 16 256 64 5
        assert_status 137
        assert_contains "$stderr" "out of memory"
        return
    fi
    "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" --ro "$ATTACK:/attack" --memory 64M -- /attack tcpbuf 16 256 64 5 \
        >"$T/out" 2>"$T/err" &
    AJ_BG_PID=$!
    local i cg='' charged=0 limit=0
    for ((i = 0; i < 300; i++)); do
        grep -q '^filled' "$T/out" 2>/dev/null && break
        sleep 0.1
    done
    grep -q '^filled' "$T/out" || { cat "$T/out" "$T/err" >&2; fail "the attack did not fill its sockets within 30 s"; }
    cg=$(_sandbox_memory_cgroup "$AJ_BG_PID")
    [ -n "$cg" ] || fail "no memory cgroup of the sandbox (agentjail-$AJ_BG_PID-*)"
    if [ -f "$cg/memory.kmem.tcp.usage_in_bytes" ]; then
        charged=$(cat "$cg/memory.kmem.tcp.usage_in_bytes")
        limit=$(cat "$cg/memory.kmem.tcp.limit_in_bytes")
    else
        charged=$(awk '$1 == "sock" { print $2 }' "$cg/memory.stat")
        limit=$(cat "$cg/memory.max")
    fi
    status=0
    wait "$AJ_BG_PID" || status=$?
    AJ_BG_PID=
    output=$(cat "$T/out") stderr=$(cat "$T/err")
    mapfile -t lines <"$T/out"
    echo "# socket memory charged to the sandbox: $((charged >> 20)) MiB (limit $limit), queued: $(info_of tcp_queued_mb) MiB" >&3
    # charged: the sandbox pays for what it queued
    [ "$charged" -ge $((16 << 20)) ] || fail "only $charged bytes of socket memory charged to $cg (the host pays for the rest)"
    [ "$limit" -le $((64 << 20)) ] || fail "socket memory of $cg is not bounded by --memory 64M (limit $limit)"
    assert_le "$charged" $((64 << 20)) "socket memory charged (bytes)"
    assert_le "$(info_of tcp_queued_mb)" 64 "MiB queued in socket buffers"
    assert_all_blocked
}
