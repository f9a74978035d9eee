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

# A tiny root: sh and a few tools, and a file a test removes.
mk_shell_tree() {
    mk_tiny_root "$1" sh cat ls rm mkdir env sleep mv truncate
    echo gone >"$1/etc/remove-me"
    chmod a+r "$1/etc/remove-me"
}

run_in() { sb_exec "$1" "$(jq -nc --arg c "$2" '{cmd: $c}')"; }
image_dir() { echo "$AGENTJAIL_STATE_DIR/images/$("$AJ" image inspect "$1" | jq -r '.digest | sub("sha256:"; "")')/rootfs"; }
image_names() { ls "$AGENTJAIL_STATE_DIR/images/names" | tr '\n' ' '; }

@test "snapshot: the sandbox's root into a new image; no secret in it; the source goes on" {
    svc_start
    id=$(sb_create '{"image": "tiny", "secret": {"TOK": "snap-s3cret-77"}}')
    # root in the sandbox forges a level-2 checkpoint (level 2 would restore it)
    run_in "$id" 'echo changed >/etc/motd; rm /etc/remove-me; mkdir -p /opt/x /.agentjail-checkpoint; echo $TOK >/opt/x/tok; env >/opt/env; echo t >/tmp/t; echo forged >/.agentjail-checkpoint/checkpoint.img' >/dev/null
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
    [ ! -e "$dir/.agentjail-checkpoint" ] || fail "a forged level-2 checkpoint in the snapshot"
    assert_eq "$(jq .checkpoint "$dir/../image.json")" false
    # nor from a directory (every way into the store but a level-2 snapshot)
    mkdir -p "$T/fd/.agentjail-checkpoint" && echo x >"$T/fd/.agentjail-checkpoint/checkpoint.img"
    aj_timeout "$AJ" image build fromdir --from-dir "$T/fd" 2>/dev/null
    [ ! -e "$(image_dir fromdir)/.agentjail-checkpoint" ] || fail "a checkpoint from --from-dir"
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
    # agentjail's own /etc files (passwd, hosts ...: written into every
    # image sandbox) are not the snapshot's: the image keeps the base's (none)
    assert_eq "$(ls "$dir/etc")" motd "the snapshot's /etc"
    assert_eq "$(run_in "$new" 'cat /etc/motd; ls /etc' | events_stdout)" $'changed\ngroup\nhostname\nhosts\nmotd\nnsswitch.conf\npasswd\nresolv.conf'
    # a paused sandbox stays paused through a snapshot
    api POST "/v1/sandboxes/$id/pause" >/dev/null
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "snap2"}'
    assert_eq "$status_code" 201
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r .state)" paused
}

@test "snapshot: /etc files agentjail writes over an image's come back as the image had them" {
    mk_shell_tree "$T/t2"
    echo base-host >"$T/t2/etc/hostname"
    echo 'root:x:0:0::/root:/bin/sh' >"$T/t2/etc/passwd"
    ln -s ../run/resolv.conf "$T/t2/etc/resolv.conf"
    aj_timeout "$AJ" image build withetc --from-dir "$T/t2" 2>/dev/null
    svc_start
    id=$(sb_create '{"image": "withetc", "hostname": "inside"}')
    # inside: agentjail's files, not the image's
    assert_eq "$(run_in "$id" 'cat /etc/hostname; readlink /etc/resolv.conf || echo a-file' | events_stdout)" $'inside\na-file'
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "withetc2"}'
    assert_eq "$status_code" 201
    local dir
    dir=$(image_dir withetc2)
    assert_eq "$(cat "$dir/etc/hostname")" base-host "the snapshot's hostname"
    assert_eq "$(cat "$dir/etc/passwd")" 'root:x:0:0::/root:/bin/sh' "the snapshot's passwd"
    assert_eq "$(readlink "$dir/etc/resolv.conf")" ../run/resolv.conf "the snapshot's resolv.conf link"
    assert_eq "$(ls "$dir/etc" | tr '\n' ' ')" "hostname motd passwd remove-me resolv.conf " "the snapshot's /etc"
    api DELETE "/v1/sandboxes/$id" >/dev/null
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
        assert_eq "$(run_in "$f" 'cat /etc/motd /tmp/t /home/agent/h; ls /etc; echo $E' | events_stdout)" $'changed\nt\nh\ngroup\nhostname\nhosts\nmotd\nnsswitch.conf\npasswd\nresolv.conf\nx'
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

# ---- sparse files and the store's room (issue 20, section 3)

# Bytes of disk blocks below a host path (du: st_blocks, not the length).
blocks_of() { du -s --block-size=1 "$1" | awk '{ print $1 }'; }
avail_of() { df --output=avail -B1 "$1" | tail -n1 | tr -d ' '; }
# Everything in the store, by owner, mode, type, size, blocks and content.
store_listing() {
    (cd "$AGENTJAIL_STATE_DIR" && find . -printf '%u:%g %m %y %s %b %p\n' | LC_ALL=C sort)
    (cd "$AGENTJAIL_STATE_DIR" && find . -type f -exec sha256sum {} + | LC_ALL=C sort -k2)
}

@test "a sparse file (4 GiB by truncate) stays sparse on the host: snapshot, fork and download" {
    local size=${SPARSE_SIZE:-4G} bytes
    bytes=$(numfmt --from=iec "$size")
    svc_start
    id=$(sb_create '{"image": "tiny", "disk": "16G"}')
    local store=$AGENTJAIL_STATE_DIR/images b0 a0
    b0=$(blocks_of "$store")
    a0=$(avail_of "$store")
    run_in "$id" "mkdir -p /opt; echo head >/opt/sparse; truncate -s $size /opt/sparse; echo t >/tmp/sparse; truncate -s $size /tmp/sparse" >/dev/null
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "sparse1"}'
    assert_eq "$status_code" 201 "$body"
    assert_eq "$(jq -r .size_bytes <<<"$body")" "$(($("$AJ" image inspect tiny | jq -r .size_bytes) + bytes))"
    f=$(image_dir sparse1)/opt/sparse
    assert_eq "$(stat -c %s "$f")" "$bytes"
    assert_eq "$(head -c 5 "$f")" head
    # a few blocks, not 10 GiB of them: in the file, the store, the filesystem
    [ "$(($(stat -c '%b * %B' "$f")))" -lt $((1 << 20)) ] || fail "the snapshot's file has $(stat -c %b "$f") blocks"
    [ $(($(blocks_of "$store") - b0)) -lt $((64 << 20)) ] || fail "the store grew by $(($(blocks_of "$store") - b0)) bytes"
    [ $((a0 - $(avail_of "$store"))) -lt $((2 << 30)) ] || fail "the filesystem lost $((a0 - $(avail_of "$store"))) bytes"
    # a fork: its copy in its own tmpfs (host memory) keeps the holes too
    api_status POST "/v1/sandboxes/$id/fork" -d '{}'
    assert_eq "$status_code" 201 "$body"
    fk=$(jq -r '.sandboxes[0].id' <<<"$body")
    pid=$(api GET "/v1/sandboxes/$fk" | jq -r .pid)
    for p in tmp/sparse opt/sparse; do
        assert_eq "$(stat -c %s "/proc/$pid/root/$p")" "$bytes" "/$p in the fork"
        [ "$(($(stat -c '%b * %B' "/proc/$pid/root/$p")))" -lt $((1 << 20)) ] ||
            fail "/$p in the fork has $(stat -c %b "/proc/$pid/root/$p") blocks"
    done
    assert_eq "$(run_in "$fk" 'read l </tmp/sparse; echo $l' | events_stdout)" t
    # a download streams the zeros from the sandbox's file: no copy on the host
    b0=$(blocks_of "$store")
    a0=$(avail_of "$store")
    got=$(api GET "/v1/sandboxes/$fk/files?path=/tmp/sparse" --max-time 120 -o /dev/null -w '%{size_download}')
    assert_eq "$got" "$bytes" "downloaded bytes"
    assert_eq "$(blocks_of "$store")" "$b0" "the store after a download"
    [ $((a0 - $(avail_of "$store"))) -lt $((2 << 30)) ] || fail "the filesystem lost $((a0 - $(avail_of "$store"))) bytes in a download"
    # the CLI's cp writes it sparse where it was asked to
    AGENTJAIL_SOCKET=$SOCK "$AJ" sandbox cp "$id:/opt/sparse" "$T/down"
    assert_eq "$(stat -c %s "$T/down")" "$bytes"
    assert_eq "$(head -c 5 "$T/down")" head
    [ "$(($(stat -c '%b * %B' "$T/down")))" -lt $((1 << 20)) ] || fail "the CLI's download has $(stat -c %b "$T/down") blocks"
    [ $((a0 - $(avail_of "$store"))) -lt $((2 << 30)) ] || fail "the filesystem lost $((a0 - $(avail_of "$store"))) bytes in the CLI's download"
    rm -f "$T/down"
}

@test "a snapshot bigger than the sandbox's disk or the store's room: 507 with a fix, nothing half-written stays" {
    svc_start --store-quota 2G
    small=$(sb_create '{"image": "tiny", "disk": "64M"}')
    big=$(sb_create '{"image": "tiny", "disk": "8G"}')
    run_in "$small" 'mkdir -p /opt; echo x >/opt/f; truncate -s 1G /opt/f' >/dev/null
    run_in "$big" 'mkdir -p /opt; echo x >/opt/f; truncate -s 3G /opt/f' >/dev/null
    before=$(store_listing)
    # apparent size above --disk (plus the image): refused
    api_status POST "/v1/sandboxes/$small/snapshot" -d '{"name": "toobig"}'
    assert_eq "$status_code" 507 "$body"
    assert_eq "$(jq -r .error.code <<<"$body")" insufficient_storage
    [[ "$(jq -r .error.message <<<"$body")" == *'"disk"'* ]] || fail "no word of the disk: $body"
    [[ "$(jq -r .error.message <<<"$body")" == *'(fix: '*'larger "disk"'* ]] || fail "no fix line: $body"
    # within its disk (8G) but above the store's quota (2G): refused
    api_status POST "/v1/sandboxes/$big/snapshot" -d '{"name": "toobig"}'
    assert_eq "$status_code" 507 "$body"
    [[ "$(jq -r .error.message <<<"$body")" == *quota* ]] || fail "no word of the quota: $body"
    [[ "$(jq -r .error.message <<<"$body")" == *'(fix: '*store-quota* ]] || fail "no fix line: $body"
    # the store is as it was: same entries, owners, sizes, contents; no name
    assert_eq "$(store_listing)" "$before" "the store after refused snapshots"
    assert_eq "$(image_names)" "tiny "
    # nothing of a sandbox's host uid range anywhere in the state directory
    [ -z "$(find "$AGENTJAIL_STATE_DIR" -uid +999999999 -print -quit)" ] || fail "files of a sandbox uid in the store"
    # a snapshot that fits still works, and both sandboxes go on
    run_in "$small" 'rm /opt/f' >/dev/null
    api_status POST "/v1/sandboxes/$small/snapshot" -d '{"name": "fits"}'
    assert_eq "$status_code" 201 "$body"
    assert_eq "$(run_in "$big" 'echo alive' | events_stdout)" alive
}

@test "the store's sweep: a build directory whose process died goes, a live one stays" {
    local images=$AGENTJAIL_STATE_DIR/images
    # what a SIGKILLed snapshot leaves: a build directory nobody holds
    mkdir -p "$images/.build-999999-0badf00d/rootfs/opt" "$images/.trash-0123"
    echo half >"$images/.build-999999-0badf00d/rootfs/opt/half"
    chown -R 1000000000:1000000000 "$images/.build-999999-0badf00d"
    # one in use (flock'ed, as a running build holds it)
    mkdir -p "$images/.build-1-live/rootfs"
    exec {L}<"$images/.build-1-live"
    flock -x "$L"
    svc_start
    [ ! -e "$images/.build-999999-0badf00d" ] || fail "the stale build directory is still there"
    [ ! -e "$images/.trash-0123" ] || fail "the stale trash directory is still there"
    [ -d "$images/.build-1-live/rootfs" ] || fail "a live build directory was removed"
    exec {L}<&-
    svc_stop
    svc_start
    [ ! -e "$images/.build-1-live" ] || fail "the released build directory is still there"
}

@test "a snapshot cut short by SIGKILL of the service: the next start removes its half-written copy" {
    svc_start
    id=$(sb_create '{"image": "tiny", "disk": "1G"}')
    run_in "$id" 'mkdir -p /opt' >/dev/null
    head -c 400M /dev/zero >"$T/big"
    api PUT "/v1/sandboxes/$id/files?path=/opt/big" --data-binary @"$T/big" >/dev/null
    rm -f "$T/big"
    _svc_record_keepers
    local images=$AGENTJAIL_STATE_DIR/images before i seen=
    before=$(store_listing)
    api POST "/v1/sandboxes/$id/snapshot" -d '{"name": "cut"}' >/dev/null 2>&1 &
    local req=$!
    for i in $(seq 400); do
        if compgen -G "$images/.build-*/rootfs/opt/big" >/dev/null; then seen=1; break; fi
        sleep 0.01
    done
    [ -n "$seen" ] || fail "the snapshot's copy was never seen under way"
    svc_crash
    wait "$req" 2>/dev/null || true
    compgen -G "$images/.build-*" >/dev/null || fail "the killed snapshot left nothing to sweep (too fast?)"
    svc_start
    ! compgen -G "$images/.build-*" >/dev/null || fail "a half-written copy is still there: $(ls -a "$images")"
    assert_eq "$(store_listing)" "$before" "the store after the crash and the sweep"
    assert_eq "$(image_names)" "tiny "
}
