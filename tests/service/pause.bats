#!/usr/bin/env bats
# Pause and resume (cgroup freezer): processes stop, memory is kept, the TTL
# clock stops; exec and files are refused while paused.

load helpers

# The counter a background loop writes to /tmp/n (replaced, not rewritten
# in place: a download never meets a file that shrinks under it).
counter() { api GET "/v1/sandboxes/$1/files?path=/tmp/n"; }

@test "pause: a counting loop stops while paused and goes on after resume" {
    svc_start
    id=$(sb_create '{"timeout": 600}')
    api POST "/v1/sandboxes/$id/exec" -d '{"cmd": "i=0; x=$(head -c 1000000 /dev/zero | tr \"\\0\" a); while :; do i=$((i+1)); echo $i >/tmp/n.new; mv /tmp/n.new /tmp/n; sleep 0.02; done", "background": true}' >/dev/null
    for _ in $(seq 50); do [ -n "$(counter "$id")" ] && break; sleep 0.1; done
    api_status POST "/v1/sandboxes/$id/pause"
    assert_eq "$status_code" 200
    assert_eq "$(jq -r .state <<<"$body")" paused
    pid=$(jq -r .pid <<<"$body")
    # exec and files: 409 with a JSON error, nothing started
    api_status POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["touch", "/tmp/ran"]}'
    assert_eq "$status_code" 409
    assert_eq "$(jq -r .error.code <<<"$body")" sandbox_paused
    api_status GET "/v1/sandboxes/$id/files?path=/tmp/n"
    assert_eq "$status_code" 409
    api_status PUT "/v1/sandboxes/$id/files?path=/tmp/up" --data-binary x
    assert_eq "$status_code" 409
    api_status POST "/v1/sandboxes/$id/pause"
    assert_eq "$status_code" 409
    assert_eq "$(jq -r .error.code <<<"$body")" conflict
    # the loop does not advance (read through the host: /proc/PID/root)
    n1=$(cat "/proc/$pid/root/tmp/n")
    sleep 1
    n2=$(cat "/proc/$pid/root/tmp/n")
    assert_eq "$n2" "$n1" "counter while paused"
    api_status POST "/v1/sandboxes/$id/resume"
    assert_eq "$status_code" 200
    assert_eq "$(jq -r .state <<<"$body")" running
    sleep 1
    n3=$(counter "$id")
    [ "$n3" -gt "$n2" ] || fail "counter did not go on after resume ($n2 -> $n3)"
    api_status POST "/v1/sandboxes/$id/resume"
    assert_eq "$status_code" 409
    ! api POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["test", "-e", "/tmp/ran"]}' | events_exit | jq -e '.exit_code == 0'
}

@test "pause: the TTL clock stops while paused; expiry resumes with the time left" {
    svc_start
    id=$(sb_create '{"timeout": 3}')
    api POST "/v1/sandboxes/$id/pause" >/dev/null
    sleep 4
    # still there, still paused, with about 3 s left
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$status_code" 200
    assert_eq "$(jq -r .state <<<"$body")" paused
    left=$(jq -r .timeout_remaining <<<"$body")
    [ "$left" -ge 2 ] && [ "$left" -le 3 ] || fail "timeout_remaining $left while paused"
    assert_eq "$(jq -r .expires_at <<<"$body")" null
    api POST "/v1/sandboxes/$id/resume" >/dev/null
    api_status GET "/v1/sandboxes/$id"
    [ "$(jq -r .timeout_remaining <<<"$body")" -ge 2 ]
    # then it expires as usual
    for _ in $(seq 60); do
        api_status GET "/v1/sandboxes/$id"
        [ "$status_code" = 404 ] && break
        sleep 0.1
    done
    assert_eq "$status_code" 404
}

@test "pause: a paused sandbox is destroyed cleanly (DELETE and at shutdown)" {
    svc_start
    a=$(sb_create)
    b=$(sb_create)
    api POST "/v1/sandboxes/$a/exec" -d '{"cmd": ["sleep", "100"], "background": true}' >/dev/null
    api POST "/v1/sandboxes/$a/pause" >/dev/null
    api POST "/v1/sandboxes/$b/pause" >/dev/null
    api_status DELETE "/v1/sandboxes/$a"
    assert_eq "$status_code" 200
    # b goes at shutdown (teardown checks that nothing is left)
}

@test "pause: SIGKILL of the service while a sandbox is paused: the next start removes it" {
    svc_start
    id=$(sb_create)
    api POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["sleep", "100"], "background": true}' >/dev/null
    init=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
    api POST "/v1/sandboxes/$id/pause" >/dev/null
    svc_crash
    # frozen, init cannot act on its parent-death SIGKILL: it stays
    sleep 0.5
    kill -0 "$init" 2>/dev/null || skip "init died while frozen (another freezer)"
    svc_start # sweeps the state the killed service left: thaws, kills, removes
    for _ in $(seq 100); do kill -0 "$init" 2>/dev/null || break; sleep 0.05; done
    ! kill -0 "$init" 2>/dev/null || fail "the paused sandbox's init $init outlived the next start"
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 0
    # teardown: no process, cgroup or mount of it left
}

@test "pause: unknown sandbox, wrong method, CLI" {
    svc_start
    api_status POST /v1/sandboxes/sb-0000000000000000/pause
    assert_eq "$status_code" 404
    id=$(sb_create)
    api_status GET "/v1/sandboxes/$id/pause"
    assert_eq "$status_code" 405
    run "$AJ" sandbox --socket "$SOCK" pause "$id"
    assert_status 0
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r .state)" paused
    run "$AJ" sandbox --socket "$SOCK" pause "$id"
    assert_status 125
    [[ "$output" == *"paused already"* ]]
    run "$AJ" sandbox --socket "$SOCK" resume "$id"
    assert_status 0
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r .state)" running
}
