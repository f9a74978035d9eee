#!/usr/bin/env bats
# Snapshots (a sandbox's filesystem into a new image) and forks (new
# sandboxes starting from a copy of its files), through the API.

load helpers

setup() {
    require_root
    aj_setup
    export AGENTJAIL_STATE_DIR=$T/state
    mk_shell_tree "$T/tree"
    aj_timeout "$AJ" image build tiny --from-dir "$T/tree" 2>/dev/null
}

# A tiny root: sh and a few tools with their libraries.
mk_shell_tree() {
    local d=$1 b l
    mkdir -p "$d/bin" "$d/etc" "$d/tmp" "$d/proc" "$d/dev" "$d/root"
    for b in sh cat ls rm mkdir env sleep mv; do
        cp "$(command -v "$b")" "$d/bin/$b"
        for l in $(ldd "$(command -v "$b")" | grep -o '/[^ ]*'); do
            mkdir -p "$d$(dirname "$l")"
            cp -n "$l" "$d$l"
        done
    done
    echo base >"$d/etc/motd"
    echo gone >"$d/etc/remove-me"
    chmod -R a+rX "$d"
}

run_in() { sb_exec "$1" "$(jq -nc --arg c "$2" '{cmd: $c}')"; }
image_dir() { echo "$AGENTJAIL_STATE_DIR/images/$("$AJ" image inspect "$1" | jq -r '.digest | sub("sha256:"; "")')/rootfs"; }
image_names() { ls "$AGENTJAIL_STATE_DIR/images/names" | tr '\n' ' '; }

@test "snapshot: the sandbox's root into a new image; no secret in it; the source goes on" {
    svc_start
    id=$(sb_create '{"image": "tiny", "secret": {"TOK": "snap-s3cret-77"}}')
    run_in "$id" 'echo changed >/etc/motd; rm /etc/remove-me; mkdir -p /opt/x; echo $TOK >/opt/x/tok; env >/opt/env; echo t >/tmp/t' >/dev/null
    # the counter is replaced, not rewritten in place: a download never
    # meets a file that shrinks under it (a short body, curl's error 18)
    api POST "/v1/sandboxes/$id/exec" -d '{"cmd": "i=0; while :; do i=$((i+1)); echo $i >/tmp/n.new; mv /tmp/n.new /tmp/n; sleep 0.05; done", "background": true}' >/dev/null
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "snap1"}'
    assert_eq "$status_code" 201
    [[ "$(jq -r .digest <<<"$body")" =~ ^sha256:[0-9a-f]{64}$ ]]
    assert_eq "$(jq -r .source <<<"$body")" "sandbox:$id (image tiny)"
    run "$AJ" image inspect snap1
    assert_status 0
    assert_eq "$(jq -r .digest <<<"$output")" "$(jq -r .digest <<<"$body")"
    dir=$(image_dir snap1)
    assert_eq "$(cat "$dir/etc/motd")" changed
    [ ! -e "$dir/etc/remove-me" ]
    [ ! -e "$dir/tmp/t" ] # /tmp is not part of the image's root
    # owners are the image's own (inside ids), not the sandbox's host uid range
    assert_eq "$(stat -c %u:%g "$dir/opt/x/tok")" 0:0
    # the secret's value is nowhere in the image (only its placeholder)
    ! grep -rq snap-s3cret-77 "$AGENTJAIL_STATE_DIR/images" || fail "secret value in the snapshot"
    grep -q agentjail-placeholder-TOK "$dir/opt/x/tok"
    ! grep -q snap-s3cret-77 "$STATE/audit.log"
    # the source was thawed: its loop goes on
    n1=$(api GET "/v1/sandboxes/$id/files?path=/tmp/n")
    sleep 0.5
    [ "$(api GET "/v1/sandboxes/$id/files?path=/tmp/n")" -gt "$n1" ]
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r .state)" running
    # a new sandbox from the snapshot starts from its files
    new=$(sb_create '{"image": "snap1"}')
    assert_eq "$(run_in "$new" 'cat /etc/motd; ls /etc' | events_stdout)" $'changed\nmotd'
    # a paused sandbox stays paused through a snapshot
    api POST "/v1/sandboxes/$id/pause" >/dev/null
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "snap2"}'
    assert_eq "$status_code" 201
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r .state)" paused
}

@test "snapshot: bad input gets a JSON error and changes nothing" {
    svc_start
    id=$(sb_create '{"image": "tiny"}')
    host=$(sb_create)
    before=$(find "$AGENTJAIL_STATE_DIR" | sort)
    api_status POST /v1/sandboxes/sb-0000000000000000/snapshot -d '{"name": "x"}'
    assert_eq "$status_code" 404
    for b in '{}' '{"name": ""}' '{"name": "Bad/Name"}' '{"name": "../x"}' '{"name": 5}' \
        '{"name": "ok", "extra": 1}' '[]' 'not json' "{\"name\": \"$(printf 'a%.0s' {1..70})\"}"; do
        api_status POST "/v1/sandboxes/$id/snapshot" -d "$b"
        assert_eq "$status_code" 400 "$b"
        assert_eq "$(jq -r .error.code <<<"$body")" bad_request "$b"
    done
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "tiny"}'
    assert_eq "$status_code" 409
    [[ "$(jq -r .error.message <<<"$body")" == *"exists already"* ]]
    api_status POST "/v1/sandboxes/$host/snapshot" -d '{"name": "fromhost"}'
    assert_eq "$status_code" 400
    [[ "$(jq -r .error.message <<<"$body")" == *"made from an image"* ]]
    api_status GET "/v1/sandboxes/$id/snapshot"
    assert_eq "$status_code" 405
    assert_eq "$(find "$AGENTJAIL_STATE_DIR" | sort)" "$before" "state dir after bad input"
    assert_eq "$(image_names)" "tiny "
}

@test "fork: N sandboxes start from the source's files, each isolated from the others" {
    svc_start
    id=$(sb_create '{"image": "tiny", "memory": "128M", "env": {"E": "x"}}')
    run_in "$id" 'echo changed >/etc/motd; rm /etc/remove-me; echo t >/tmp/t; echo h >/home/agent/h' >/dev/null
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 2, "timeout": 120}'
    assert_eq "$status_code" 201
    mapfile -t forks < <(jq -r '.sandboxes[].id' <<<"$body")
    assert_eq "${#forks[@]}" 2
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 3
    assert_eq "$(jq -r '.sandboxes[0].limits.memory' <<<"$body")" 134217728
    [ "$(jq -r '.sandboxes[0].timeout_remaining' <<<"$body")" -le 120 ]
    for f in "${forks[@]}"; do
        [ "$f" != "$id" ]
        assert_eq "$(run_in "$f" 'cat /etc/motd /tmp/t /home/agent/h; ls /etc; echo $E' | events_stdout)" $'changed\nt\nh\nmotd\nx'
    done
    # each its own: a write in one is seen by no other
    run_in "${forks[0]}" 'echo mine >/tmp/only0; echo f0 >/etc/motd' >/dev/null
    run_in "$id" 'echo later >/tmp/later' >/dev/null
    for s in "$id" "${forks[1]}"; do
        ex=$(run_in "$s" 'cat /tmp/only0' | events_exit)
        assert_eq "$(jq -r .exit_code <<<"$ex")" 1 "/tmp/only0 in $s"
        assert_eq "$(run_in "$s" 'cat /etc/motd' | events_stdout)" changed
    done
    ex=$(run_in "${forks[1]}" 'cat /tmp/later' | events_exit)
    assert_eq "$(jq -r .exit_code <<<"$ex")" 1
    # different processes, namespaces and host uids
    p0=$(api GET "/v1/sandboxes/${forks[0]}" | jq -r .pid)
    p1=$(api GET "/v1/sandboxes/${forks[1]}" | jq -r .pid)
    ps=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
    [ "$(readlink "/proc/$p0/ns/pid")" != "$(readlink "/proc/$p1/ns/pid")" ]
    [ "$(readlink "/proc/$p0/ns/mnt")" != "$(readlink "/proc/$ps/ns/mnt")" ]
    [ "$(host_uid_of "$p0")" != "$(host_uid_of "$p1")" ]
    [ "$(host_uid_of "$p0")" != "$(host_uid_of "$ps")" ]
    # files keep their owner inside (the fork's own id range)
    assert_eq "$(run_in "${forks[1]}" 'ls -ln /tmp/t' | events_stdout | awk '{print $3}')" 0
    # deleting the source leaves the forks alone
    api DELETE "/v1/sandboxes/$id" >/dev/null
    assert_eq "$(run_in "${forks[1]}" 'cat /tmp/t' | events_stdout)" t
}

@test "fork: a host-root sandbox's /tmp and home are copied" {
    svc_start
    id=$(sb_create)
    run_in "$id" 'mkdir -p /tmp/d/e; echo deep >/tmp/d/e/f; ln -s /etc/passwd /tmp/link; echo h >~/h' >/dev/null
    api_status POST "/v1/sandboxes/$id/fork" -d '{}'
    assert_eq "$status_code" 201
    f=$(jq -r '.sandboxes[0].id' <<<"$body")
    assert_eq "$(run_in "$f" 'cat /tmp/d/e/f ~/h; readlink /tmp/link' | events_stdout)" $'deep\nh\n/etc/passwd'
}

@test "fork: bad input gets a JSON error and creates nothing" {
    svc_start --max-sandboxes 2
    id=$(sb_create '{"image": "tiny"}')
    api_status POST /v1/sandboxes/sb-0000000000000000/fork -d '{"count": 1}'
    assert_eq "$status_code" 404
    for b in '{"count": 0}' '{"count": -1}' '{"count": 17}' '{"count": 1000000000}' \
        '{"count": "2"}' '{"count": 1.5}' '{"count": 1, "timeout": -1}' '{"count": 1, "timeout": "x"}' \
        '{"count": 1, "image": "tiny"}' '[]' 'nope'; do
        api_status POST "/v1/sandboxes/$id/fork" -d "$b"
        assert_eq "$status_code" 400 "$b"
        assert_eq "$(jq -r .error.code <<<"$body")" bad_request "$b"
    done
    # over --max-sandboxes: 429, and the forks made so far are gone again
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 2}'
    assert_eq "$status_code" 429
    assert_eq "$(api GET /v1/sandboxes | jq -r '[.sandboxes[].id] | join(" ")')" "$id"
    api_status GET "/v1/sandboxes/$id/fork"
    assert_eq "$status_code" 405
}
