#!/usr/bin/env bats
# Warm pools (serve --pool IMAGE=N): sandboxes built ahead, each handed out
# at most once; as isolated as a fresh one (the attack program runs in a
# pooled sandbox through the API); drained at shutdown, swept after a crash.

load ../security/helpers
load helpers

# Wait until the pool of image $1 has $2 ready sandboxes.
pool_wait_ready() {
    local i
    for i in $(seq 200); do
        [ "$(api GET /v1/pools | jq --arg i "$1" '.pools[] | select(.image == $i) | .ready')" = "$2" ] && return 0
        sleep 0.05
    done
    api GET /v1/pools >&2
    fail "pool $1 did not reach $2 ready sandboxes"
}

pool_field() { api GET /v1/pools | jq --arg i "$1" ".pools[] | select(.image == \$i) | .$2"; }

# A create the default pool serves, once it is full: BODY, the pool's hit
# count after it (N); the sandbox in $body.
handout() {
    pool_wait_ready default 2
    api_status POST /v1/sandboxes -d "$1"
    assert_eq "$status_code" 201
    assert_eq "$(pool_field default hits)" "$2"
}

@test "pool: creates are served from the pool and it refills in the background" {
    svc_start --pool default=2
    pool_wait_ready default 2
    sleep 3 # the pooled sandboxes are 3 s old at least
    a=$(sb_create)
    b=$(sb_create '{"timeout": 60}')
    # the TTL of a pooled sandbox counts from the hand-out, not its build
    [ "$(api GET "/v1/sandboxes/$b" | jq .timeout_remaining)" -ge 58 ]
    assert_eq "$(pool_field default hits)" 2
    pool_wait_ready default 2
    [ "$(pool_field default built)" -ge 4 ]
    # a policy the pool was not built with: built fresh (a miss), and it applies
    api_status POST /v1/sandboxes -d '{"hostname": "fresh-one"}'
    assert_eq "$status_code" 201
    assert_eq "$(sb_exec "$(jq -r .id <<<"$body")" '{"cmd": "hostname"}' | events_stdout)" fresh-one
    assert_eq "$(pool_field default hits)" 2
    assert_eq "$(api GET /v1/pools | jq .misses)" 1
    # a seccomp-profile is never dropped for a pooled sandbox: built fresh, with it
    api_status POST /v1/sandboxes -d '{"memory": "64M", "seccomp-profile": {"default_action": "allow", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "errno"}]}}'
    assert_eq "$status_code" 201
    assert_contains "$(sb_exec "$(jq -r .id <<<"$body")" '{"cmd": "mkdir /tmp/d 2>&1"}' | events_stdout)" "Operation not permitted"
    assert_eq "$(pool_field default hits)" 2
    assert_eq "$(api GET /v1/pools | jq .misses)" 2
    # disk is applied at hand-out: the scratch tmpfs (/tmp, home, /dev/shm) resized
    handout '{"disk": "64M"}' 3
    assert_eq "$(jq -r .limits.disk <<<"$body")" 67108864
    small=$(jq -r .id <<<"$body")
    out=$(sb_exec "$small" '{"cmd": "df -B1 --output=size /tmp /dev/shm | tail -2 | tr -d \" \"; head -c 80000000 /dev/zero >/tmp/big 2>&1; echo $?"}' | events_stdout)
    assert_eq "$out" $'67108864\n67108864\n1'
    api DELETE "/v1/sandboxes/$small" >/dev/null
    # memory and pids are set on the pooled sandbox's cgroup at hand-out
    handout '{"memory": "48M", "pids": 32}' 4
    assert_eq "$(jq -r '[.limits.memory, .limits.pids] | @tsv' <<<"$body")" $'50331648\t32'
    lim=$(jq -r .id <<<"$body")
    ex=$(sb_exec "$lim" '{"cmd": ["python3", "-c", "b = bytearray(256 << 20)"]}' | events_exit)
    assert_eq "$(jq -r '[.exit_code, .oom_killed] | @tsv' <<<"$ex")" $'137\ttrue'
    out=$(sb_exec "$lim" '{"cmd": "for i in $(seq 40); do sleep 5 & done 2>&1 | head -c 300; wait"}' | events_stdout)
    [[ "$out" == *"fork"* || "$out" == *"Resource temporarily unavailable"* ]] || fail "pids 32 not enforced: $out"
    # cpus too: a pooled sandbox's quota is every CPU until a create sets one
    busy='{"cmd": ["python3", "-c", "import time, os\ne = time.time() + 2\nwhile time.time() < e: pass\nt = os.times(); print(int((t.user + t.system) * 100))"]}'
    if grep -qw cpu /proc/self/cgroup /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        handout '{"cpus": 0.5}' 5
        assert_eq "$(jq -r .limits.cpus <<<"$body")" 0.5
        half=$(jq -r .id <<<"$body")
        used=$(sb_exec "$half" "$busy" | events_stdout)
        [ "$used" -lt 140 ] || fail "cpus 0.5 not enforced: ${used} cs of CPU in 2 s"
        api DELETE "/v1/sandboxes/$half" >/dev/null
        handout '{}' 6
        assert_eq "$(jq -r .limits.cpus <<<"$body")" 0
        free=$(jq -r .id <<<"$body")
        hits=6
        [ "$(nproc)" -lt 2 ] || [ "$(sb_exec "$free" "$busy" | events_stdout)" -gt 140 ] ||
            fail "a pooled sandbox without cpus is limited"
        api DELETE "/v1/sandboxes/$free" >/dev/null
    else
        hits=4
    fi
    # no limit (0) cannot be applied to a built sandbox: a fresh one
    api_status POST /v1/sandboxes -d '{"memory": "0"}'
    assert_eq "$status_code" 201
    assert_eq "$(pool_field default hits)" "$hits"
    assert_eq "$(api GET /v1/pools | jq .misses)" 3
    api DELETE "/v1/sandboxes/$lim" >/dev/null
    # env and secret are applied at hand-out: placeholders inside, redacted output
    pool_wait_ready default 2
    id=$(sb_create '{"env": {"GREETING": "hello"}, "secret": {"TOKEN": "pool-s3cret-42"}}')
    assert_eq "$(pool_field default hits)" $((hits + 1))
    out=$(sb_exec "$id" '{"cmd": "echo $GREETING; echo $TOKEN; echo pool-s3cret-42"}' | events_stdout)
    assert_output_lacks pool-s3cret-42
    [[ "$out" == hello$'\n'agentjail-placeholder-TOKEN-* ]] || fail "unexpected: $out"
    [[ "$out" == *REDACTED* ]]
    ! grep -q pool-s3cret-42 "$STATE/audit.log"
    # bad env: a JSON error, the pool untouched
    api_status POST /v1/sandboxes -d '{"env": {"A": 5}}'
    assert_eq "$status_code" 400
    api_status POST /v1/sandboxes -d '{"memory": "lots"}'
    assert_eq "$status_code" 400
    api_status POST /v1/sandboxes -d '{"cpus": "lots"}'
    assert_eq "$status_code" 400
    assert_eq "$(pool_field default hits)" $((hits + 1))
    # metrics
    m=$(api GET /metrics)
    grep -q "^agentjail_pool_hits_total{image=\"default\",isolation=\"process\"} $((hits + 1))\$" <<<"$m"
    grep -q '^agentjail_pool_ready{image="default",isolation="process"} [0-9]' <<<"$m"
    grep -q '^agentjail_pool_misses_total 3$' <<<"$m"
    api DELETE "/v1/sandboxes/$a" >/dev/null
}

@test "pool: the attack program finds every wall in place in a pooled sandbox" {
    svc_start --pool default=1
    pool_wait_ready default 1
    id=$(sb_create)
    assert_eq "$(pool_field default hits)" 1
    api_status PUT "/v1/sandboxes/$id/files?path=/tmp/attack&mode=755" --data-binary "@$ATTACK"
    assert_eq "$status_code" 201
    local a
    for a in fds init_fds cwd proc_write sys remount newmount chroot pivot_root handle proc1root \
        mknod devscan landlock privstate caps_raise ptrace1 kill1 tiocsti tioclinux userns cgroup \
        clone3 io_uring keyring bpf perf userfaultfd rawsock vsock netlink; do
        output=$(sb_exec "$id" "{\"cmd\": [\"/tmp/attack\", \"$a\"]}" | jq -j 'select(.type == "stdout" or .type == "stderr") | .data')
        [[ "$output" != *=ESCAPED* ]] || fail "$a ESCAPED in a pooled sandbox: $output"
        [[ "$(kv result)" == blocked* ]] || fail "$a: no result=blocked line: $output"
    done
    # the x32 ABI: killed by seccomp (SIGSYS)
    ex=$(sb_exec "$id" '{"cmd": ["/tmp/attack", "x32"]}' | events_exit)
    assert_eq "$(jq -r .exit_code <<<"$ex")" 159
    # init stays not dumpable after commands started from its memory
    # (clone(CLONE_VM)): its fd directory cannot even be listed
    sb_exec "$id" '{"cmd": ["true"]}' >/dev/null
    output=$(sb_exec "$id" '{"cmd": ["/tmp/attack", "init_fds"]}' | jq -j 'select(.type == "stdout") | .data')
    assert_eq "$(kv init_fds_list)" "blocked errno=EACCES" "listing /proc/1/fd"
    # every command runs with oom_score_adj 500, init keeps the service's
    out=$(sb_exec "$id" '{"cmd": "cat /proc/self/oom_score_adj; cat /proc/1/oom_score_adj"}' | events_stdout)
    assert_eq "$out" "500"$'\n'"$(cat /proc/$$/oom_score_adj)" "command's, then init's oom_score_adj"
    # a persistent sandbox's init runs under the commands' seccomp filter
    # (they inherit it) and keeps it: Seccomp mode 2 on the host
    pid=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
    assert_eq "$(awk '/^Seccomp:/ {print $2}' "/proc/$pid/status")" 2 "init's seccomp mode"
}

@test "pool: two pooled sandboxes in a row share nothing (uid range, pid ns, writable layer)" {
    svc_start --pool default=2
    pool_wait_ready default 2
    a=$(sb_create)
    b=$(sb_create)
    assert_eq "$(pool_field default hits)" 2
    pa=$(api GET "/v1/sandboxes/$a" | jq -r .pid)
    pb=$(api GET "/v1/sandboxes/$b" | jq -r .pid)
    ua=$(host_uid_of "$pa")
    ub=$(host_uid_of "$pb")
    [ "$ua" -ge "$SANDBOX_UID_MIN" ] && [ "$ub" -ge "$SANDBOX_UID_MIN" ]
    [ "$ua" != "$ub" ] || fail "both pooled sandboxes run as host uid $ua"
    for ns in pid mnt user net ipc uts; do
        [ "$(readlink "/proc/$pa/ns/$ns")" != "$(readlink "/proc/$pb/ns/$ns")" ] || fail "same $ns namespace"
    done
    sb_exec "$a" '{"cmd": "echo from-a >/tmp/mark; echo from-a >/workspace/mark; echo x >/root/mark"}' >/dev/null
    for f in /tmp/mark /workspace/mark /root/mark; do
        ex=$(sb_exec "$b" "{\"cmd\": [\"cat\", \"$f\"]}")
        assert_eq "$(events_exit <<<"$ex" | jq -r .exit_code)" 1 "$f in the second sandbox"
        [[ "$(events_stdout <<<"$ex")" != *from-a* ]]
    done
    # b sees only its own processes (init, the shell, ls, grep)
    n=$(sb_exec "$b" '{"cmd": "ls /proc | grep -c ^[0-9]"}' | events_stdout)
    [ "$n" -le 5 ] || fail "$n processes visible in the second sandbox"
    # a pooled sandbox is used once: after a's deletion, the next one is new
    api DELETE "/v1/sandboxes/$a" >/dev/null
    c=$(sb_create)
    [ "$c" != "$a" ] && [ "$c" != "$b" ]
    [ "$(api GET "/v1/sandboxes/$c" | jq -r .pid)" != "$pa" ]
    ex=$(sb_exec "$c" '{"cmd": ["cat", "/tmp/mark"]}' | events_exit)
    assert_eq "$(jq -r .exit_code <<<"$ex")" 1
}

@test "pool: bad --pool specs are refused (exit 125), nothing started" {
    for spec in nosuch-image=2 default=0 default=65 default 'Bad/Name=1' =3 default=x \
        bogus:default=1 microvm:default=1 wasm:default=1 :default=1 process:nosuch-image=1; do
        run "$AJ" serve --quiet --socket "$BATS_TEST_TMPDIR/x.sock" --state-dir "$BATS_TEST_TMPDIR/xs" --pool "$spec"
        assert_status 125
        [[ "$output" == *"--pool"* ]] || fail "no --pool in: $output"
        [ ! -e "$BATS_TEST_TMPDIR/x.sock" ]
    done
    run "$AJ" serve --quiet --socket "$BATS_TEST_TMPDIR/x.sock" --state-dir "$BATS_TEST_TMPDIR/xs" --pool default=1 --pool default=2
    assert_status 125
    [[ "$output" == *"two pools"* ]]
    # the level is part of the pool: level 1 spelled out is the same pool
    run "$AJ" serve --quiet --socket "$BATS_TEST_TMPDIR/x.sock" --state-dir "$BATS_TEST_TMPDIR/xs" --pool default=1 --pool process:default=2
    assert_status 125
    [[ "$output" == *"two pools of 'default' at level process"* ]] || fail "$output"
}

@test "pool: drained at shutdown; after a SIGKILL the next start sweeps the pooled sandboxes" {
    svc_start --pool default=3
    pool_wait_ready default 3
    pids=$(ps -eo pid=,args= | awk '$2 == "agentjail-init" { print $1 }')
    [ "$(ls "$STATE/sandboxes" | wc -l)" -eq 3 ]
    svc_crash
    for p in $pids; do
        for _ in $(seq 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    done
    svc_start
    [ "$(ls "$STATE/sandboxes" | wc -l)" -eq 0 ]
    svc_stop
    # a clean stop with a full pool: teardown's residue check
    svc_start --pool default=2
    pool_wait_ready default 2
}
