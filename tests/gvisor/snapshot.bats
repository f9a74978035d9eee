#!/usr/bin/env bats
# Forks at level 2 (docs/levels.md, "Fork at level 2"): `runsc checkpoint`
# of the sandbox, restored in place and into each copy, so a copy goes on
# from the parent's memory and processes, not only its files; what can't
# be copied is 409 with the reason, and nothing is left after (with a
# network: snapshot_net.bats).

load ../service/helpers

setup() {
    require_root
    command -v runsc >/dev/null || skip "runsc is not installed (apt-get install runsc)"
    aj_setup
    GVBOX_BEFORE=$(ls -d /tmp/agentjail-gvbox-* 2>/dev/null | sort || true)
}

gv_create() { # [JSON]
    api POST /v1/sandboxes -d "${1:-{\"isolation\": \"gvisor\"\}}" | jq -er .id
}

stdout_of() { # ID CMD: the command's stdout (sh -c)
    sb_exec "$1" "$(jq -nc --arg c "$2" '{cmd: ["sh", "-c", $c]}')" | events_stdout
}

# A process that holds a random value only in its memory and answers each
# name written to /tmp/q with "VALUE NAME" in /tmp/a.NAME; detached from
# the exec (its stdio /dev/null), so it lives on after it.
KEEPER='setsid sh -c '\''v=$(od -An -N4 -tu4 /dev/urandom | tr -d " "); echo $v > /tmp/v0
while :; do read n < /tmp/q; echo "$v $n" > /tmp/a.$n; done'\'' </dev/null >/dev/null 2>&1 &
mkfifo /tmp/q 2>/dev/null; echo parent > /tmp/f
for i in $(seq 50); do [ -s /tmp/v0 ] && break; sleep 0.1; done; cat /tmp/v0'

ask() { # ID NAME: what the memory process answers
    stdout_of "$1" "echo $2 > /tmp/q; for i in 1 2 3 4 5 6 7 8 9 10; do [ -s /tmp/a.$2 ] && break; sleep 0.1; done; cat /tmp/a.$2"
}

# Nothing of a level-2 sandbox is left: no runsc process, no new gvbox
# directory (runsc's state and the checkpoint images are in it), no
# checkpoint image anywhere in /tmp (the cgroups, mounts and processes:
# the residue check of aj_teardown).
gv_nothing_left() {
    local left after
    left=$(pgrep -a -f 'runsc.*--root=' || true)
    [ -z "$left" ] || fail "runsc processes left: $left"
    after=$(ls -d /tmp/agentjail-gvbox-* 2>/dev/null | sort || true)
    [ -z "$(comm -13 <(echo "$GVBOX_BEFORE") <(echo "$after"))" ] ||
        fail "gVisor sandbox directories left: $(comm -13 <(echo "$GVBOX_BEFORE") <(echo "$after"))"
    left=$(find /tmp -maxdepth 4 -name 'checkpoint.img' 2>/dev/null || true)
    [ -z "$left" ] || fail "checkpoint images left: $left"
}

@test "gvisor fork: the copies go on from the parent's memory and files, then are independent" {
    svc_start
    id=$(gv_create)
    v=$(stdout_of "$id" "$KEEPER")
    [[ "$v" =~ ^[0-9]+$ ]] || fail "the process did not start: $v"
    assert_eq "$(ask "$id" before)" "$v before" "the parent's process"
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 2}'
    assert_eq "$status_code" 201 "fork: $body"
    mapfile -t kids < <(jq -r '.sandboxes[].id' <<<"$body")
    assert_eq "${#kids[@]}" 2 "two copies: $body"
    assert_eq "$(jq -r '.sandboxes[0].isolation' <<<"$body")" gvisor "the copies' level"
    # each copy: the parent's process, with the value only its memory held
    assert_eq "$(ask "${kids[0]}" kid0)" "$v kid0" "copy 0's process"
    assert_eq "$(ask "${kids[1]}" kid1)" "$v kid1" "copy 1's process"
    assert_eq "$(stdout_of "${kids[0]}" 'cat /tmp/f')" parent "copy 0's /tmp"
    # the parent goes on too
    assert_eq "$(ask "$id" after)" "$v after" "the parent's process after the fork"
    # independent: a file and a process of one are not the others'
    stdout_of "${kids[0]}" 'echo kid0 > /tmp/f; pkill -f "read n" || kill $(pgrep -f "read n")' >/dev/null
    assert_eq "$(stdout_of "$id" 'cat /tmp/f')" parent "the parent's /tmp after a copy wrote"
    assert_eq "$(stdout_of "${kids[1]}" 'cat /tmp/f')" parent "copy 1's /tmp after copy 0 wrote"
    assert_eq "$(stdout_of "${kids[0]}" 'cat /tmp/f')" kid0 "copy 0's own write"
    assert_eq "$(ask "${kids[1]}" again)" "$v again" "copy 1's process after copy 0's was killed"
    # each is a sandbox of its own on the host: its own Sentry
    p0=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
    p1=$(api GET "/v1/sandboxes/${kids[0]}" | jq -r .pid)
    [ "$p0" != "$p1" ] && [ "$p1" -gt 0 ] || fail "the same Sentry: $p0 $p1"
    for s in "$id" "${kids[@]}"; do
        api_status DELETE "/v1/sandboxes/$s"
        assert_eq "$status_code" 200 "delete $s"
    done
    gv_nothing_left
}

@test "gvisor fork: refused with the reason (running command 409, paused 409, workspace 409); the source unharmed; swept after a crash" {
    mkdir -p "$BATS_TEST_TMPDIR/ws"
    chown 4242:4343 "$BATS_TEST_TMPDIR/ws"
    svc_start
    id=$(gv_create)
    stdout_of "$id" 'echo kept > /tmp/f' >/dev/null
    # a command runs: runsc checkpoint can't save runsc exec's host pipes
    api POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["sleep", "30"], "background": true}' >/dev/null
    sleep 0.5
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 1}'
    assert_eq "$status_code" 409 "fork with a command running: $body"
    assert_eq "$(jq -r .error.code <<<"$body")" conflict
    assert_contains "$body" "running"
    api_status POST "/v1/sandboxes/$id/processes/p1/signal" -d '{"signal": "KILL"}'
    for i in $(seq 50); do
        [ "$(api GET "/v1/sandboxes/$id/processes/p1" | jq -r .running)" = false ] && break
        sleep 0.1
    done
    # paused: runsc checkpoint refuses a paused container
    api_status POST "/v1/sandboxes/$id/pause"
    assert_eq "$status_code" 200
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 1}'
    assert_eq "$status_code" 409 "fork of a paused sandbox: $body"
    assert_contains "$body" "resume"
    api_status POST "/v1/sandboxes/$id/resume"
    assert_eq "$status_code" 200
    assert_eq "$(stdout_of "$id" 'cat /tmp/f')" kept "the source after the refusals"
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 1 "no copy was made"
    # once the command has ended, the same sandbox forks
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 1}'
    assert_eq "$status_code" 201 "fork after the command ended: $body"
    kid=$(jq -r '.sandboxes[0].id' <<<"$body")
    assert_eq "$(stdout_of "$kid" 'cat /tmp/f')" kept "the copy's /tmp"
    # a workspace (a host directory bound read-write) can't be duplicated
    ws=$(gv_create "{\"isolation\": \"gvisor\", \"workspace\": \"$BATS_TEST_TMPDIR/ws\"}")
    api_status POST "/v1/sandboxes/$ws/fork" -d '{"count": 1}'
    assert_eq "$status_code" 409 "fork with a workspace: $body"
    assert_contains "$body" "workspace"
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 3 "no copy was made"
    # a SIGKILLed service: the next start sweeps the forked source (restored
    # under a new runsc id) and its copy with the rest
    _svc_record_keepers
    kill -KILL "$SVC_PID"
    wait "$SVC_PID" 2>/dev/null || true
    SVC_PID=
    svc_start
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$status_code" 404
    for _ in $(seq 50); do
        pgrep -f 'runsc.*--root=' >/dev/null || break
        sleep 0.1
    done
    gv_nothing_left
}

@test "gvisor snapshot: an image with the sandbox's memory; a level-2 create goes on from it, level 1 gets its files" {
    export AGENTJAIL_STATE_DIR=$T/state
    mk_tiny_root "$T/tree" sh cat ls sleep od tr setsid mkfifo seq
    aj_timeout "$AJ" image build tiny --from-dir "$T/tree" 2>/dev/null
    svc_start
    id=$(gv_create '{"isolation": "gvisor", "image": "tiny"}')
    v=$(stdout_of "$id" "PATH=/bin; $KEEPER")
    [[ "$v" =~ ^[0-9]+$ ]] || fail "the process did not start: $v"
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "gsnap"}'
    assert_eq "$status_code" 201 "snapshot: $body"
    assert_eq "$(jq -r .source <<<"$body")" "sandbox:$id (image tiny)"
    [ -s "$AGENTJAIL_STATE_DIR/images/$(jq -r '.digest | sub("sha256:"; "")' <<<"$body")/rootfs/.agentjail-checkpoint/checkpoint.img" ] ||
        fail "no checkpoint in the image: $body $(ls -la "$AGENTJAIL_STATE_DIR"/images/*/rootfs/.agentjail-checkpoint)"
    # the source goes on
    assert_eq "$(ask "$id" src)" "$v src" "the source's process after the snapshot"
    stdout_of "$id" 'echo changed > /tmp/f' >/dev/null
    # a level-2 sandbox from the snapshot: the process with the value only
    # its memory held, and /tmp as it was at the snapshot
    new=$(gv_create '{"isolation": "gvisor", "image": "gsnap"}')
    assert_eq "$(ask "$new" new)" "$v new" "the process in a sandbox from the snapshot"
    assert_eq "$(stdout_of "$new" 'cat /tmp/f /etc/motd')" $'parent\nbase' "its files"
    [[ "$(stdout_of "$new" 'ls -a /')" != *agentjail-checkpoint* ]] || fail "the checkpoint is visible inside"
    # another policy (a workspace: one mount more) can't take that memory
    mkdir -p "$T/ws" && chown 4242:4343 "$T/ws"
    api_status POST /v1/sandboxes -d "{\"isolation\": \"gvisor\", \"image\": \"gsnap\", \"workspace\": \"$T/ws\"}"
    assert_eq "$status_code" 409 "a level-2 create from the snapshot with a workspace added: $body"
    assert_contains "$body" "saved memory"
    # level 1 from it: the image's files (a snapshot's root; /tmp is not in one)
    l1=$(sb_create '{"image": "gsnap"}')
    assert_eq "$(stdout_of "$l1" 'cat /etc/motd')" base "level 1 from the snapshot"
    # secrets live in the memory a snapshot would store: refused
    sec=$(gv_create '{"isolation": "gvisor", "image": "tiny", "secret": {"TOK": "gv-s3cret-55"}}')
    api_status POST "/v1/sandboxes/$sec/snapshot" -d '{"name": "gsec"}'
    assert_eq "$status_code" 409 "snapshot with a secret: $body"
    assert_contains "$body" "secret"
    ! grep -rq gv-s3cret-55 "$AGENTJAIL_STATE_DIR/images" || fail "the secret's value is in the store"
    # the host's minimal root: no image to snapshot (as at level 1)
    host=$(gv_create)
    api_status POST "/v1/sandboxes/$host/snapshot" -d '{"name": "ghost"}'
    assert_eq "$status_code" 400 "snapshot of the host root: $body"
    for s in "$id" "$new" "$l1" "$sec" "$host"; do
        api DELETE "/v1/sandboxes/$s" >/dev/null
    done
    gv_nothing_left
    left=$(find /tmp -maxdepth 3 -path '*checkpoint-*' 2>/dev/null || true)
    [ -z "$left" ] || fail "checkpoint directories left: $left"
}
