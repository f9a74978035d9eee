#!/usr/bin/env bats
# Level 3 in the service: a microVM that lives across commands, behind the
# same API as level 1 (docs/levels.md, "Level 3 in the service"). On TCG
# (forced, as in run.bats) each boot takes seconds: one sandbox serves
# every assertion of a test. Each test checks that nothing of a VM is left
# (qemu, virtiofsd, /tmp/agentjail-microvm-*, the VMM's host cgroup).

load ../service/helpers

setup() {
    require_root
    command -v qemu-system-x86_64 >/dev/null || skip "qemu is not installed (scripts/setup.sh)"
    [ -r /var/cache/agentjail/microvm/vmlinux ] || skip "no guest kernel (scripts/setup.sh)"
    export AGENTJAIL_MICROVM_ACCEL=tcg
    MV_BEFORE=$(ls -d /tmp/agentjail-microvm-* 2>/dev/null | sort || true)
    aj_setup
}

mv_create() { # [JSON]
    api POST /v1/sandboxes -d "${1:-{\"isolation\": \"microvm\"\}}" | jq -er .id
}

# The VM's cgroup (v2, else v1's memory one), from qemu's pid.
vmm_cgroup() {
    if [ -d /sys/fs/cgroup/memory ]; then
        echo "/sys/fs/cgroup/memory$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' "/proc/$1/cgroup")"
    else
        echo "/sys/fs/cgroup$(awk -F: '$1 == 0 { print $3 }' "/proc/$1/cgroup")"
    fi
}

# No qemu, virtiofsd, new VM directory or the recorded cgroup ($1) is left.
mv_none_left() { # [CGROUP]
    local n
    for n in $(seq 50); do
        pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm' >/dev/null || pgrep -x virtiofsd >/dev/null || break
        sleep 0.1
    done
    [ -z "$(pgrep -af '^/usr/bin/qemu-system-x86_64 -M microvm')" ] || fail "a qemu is left"
    [ -z "$(pgrep -x virtiofsd)" ] || fail "a virtiofsd is left"
    local after
    after=$(ls -d /tmp/agentjail-microvm-* 2>/dev/null | sort || true)
    [ -z "$(comm -13 <(echo "$MV_BEFORE") <(echo "$after"))" ] ||
        fail "VM directories left: $(comm -13 <(echo "$MV_BEFORE") <(echo "$after"))"
    [ -z "${1:-}" ] || [ ! -d "$1" ] || fail "the VMM's cgroup $1 is left"
}

@test "serve microvm: one VM across execs and file operations; workspace files the owner's; delete leaves nothing" {
    svc_start
    ws=$BATS_TEST_TMPDIR/ws
    mkdir "$ws"
    chown 4242:4343 "$ws"
    mkdir -p "$BATS_TEST_TMPDIR/ro" "$BATS_TEST_TMPDIR/rw"
    echo from-host >"$BATS_TEST_TMPDIR/ro/f"
    chown 5151:5252 "$BATS_TEST_TMPDIR/rw"
    id=$(mv_create "{\"isolation\": \"microvm\", \"workspace\": \"$ws\", \"secret\": {\"TOKEN\": \"s3cr3t-value-97\"},
        \"ro\": [\"$BATS_TEST_TMPDIR/ro:/mnt/ro\"], \"rw\": [\"$BATS_TEST_TMPDIR/rw:/mnt/rw\"],
        \"seccomp-profile\": {\"default_action\": \"allow\", \"syscalls\": [{\"names\": [\"mknod\", \"mknodat\"], \"action\": \"errno\"}]}}")
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$(jq -r .isolation <<<"$body")" microvm "the sandbox's level"
    qemu=$(pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm' | head -1)
    [ -n "$qemu" ] || fail "no qemu for the sandbox"
    cg=$(vmm_cgroup "$qemu")
    # the guest's own kernel; state in the guest's /tmp kept between execs (one VM)
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "uname -r; echo 41 > /tmp/x"]}')
    guest=$(events_stdout <<<"$out")
    assert_ne "$guest" "$(uname -r)" "the guest's kernel release"
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "echo $(( $(cat /tmp/x) + 1 )); echo err >&2; exit 3"]}')
    assert_eq "$(events_stdout <<<"$out")" 42 "a file the exec before wrote in the guest"
    assert_eq "$(events_stderr <<<"$out")" err "stderr"
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 3 "exit code"
    # --ro and --rw binds: read-only to guest root; the --rw file its owner's on the host
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "cat /mnt/ro/f; echo x >/mnt/ro/f || echo refused; echo made >/mnt/rw/new"]}')
    assert_eq "$(events_stdout <<<"$out")" "from-host
refused" "the binds"
    assert_eq "$(cat "$BATS_TEST_TMPDIR/ro/f")" from-host "the --ro source"
    assert_eq "$(stat -c %u:%g "$BATS_TEST_TMPDIR/rw/new")" 5151:5252 "the --rw file's owner"
    # the API's inline seccomp-profile, stacked on the agent's filter in every exec
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "mkfifo /tmp/p 2>&1; echo rc=$?"]}')
    assert_contains "$(events_stdout <<<"$out")" "Operation not permitted" "mknod under the profile"
    out=$(sb_exec "$id" '{"cmd": ["cat"], "stdin": "from stdin\n"}')
    assert_eq "$(events_stdout <<<"$out")" "from stdin" "stdin"
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "echo $TOKEN"]}')
    [[ "$out" != *"s3cr3t-value-97"* ]] || fail "the secret's value came out: $out"
    out=$(sb_exec "$id" '{"cmd": ["/no/such/command"]}')
    [[ "$out" == *"127"* ]] || fail "a missing command: $out"
    # side by side: a second exec ends while the first still runs (the
    # first, once started, waits for a file a third exec makes)
    sb_exec "$id" '{"cmd": ["sh", "-c", "touch /tmp/slow; for i in $(seq 300); do [ -e /tmp/go ] && break; sleep 0.1; done; echo slow"]}' \
        >"$BATS_TEST_TMPDIR/slow" 3>&- &
    slow=$!
    for _ in $(seq 100); do
        api_status GET "/v1/sandboxes/$id/files?path=/tmp/slow"
        [ "$status_code" = 200 ] && break
        sleep 0.1
    done
    assert_eq "$status_code" 200 "the first exec started"
    out=$(sb_exec "$id" '{"cmd": ["echo", "fast"]}')
    assert_eq "$(events_stdout <<<"$out")" fast "an exec beside a running one"
    kill -0 "$slow" 2>/dev/null || fail "the first exec ended before the second (not side by side)"
    sb_exec "$id" '{"cmd": ["touch", "/tmp/go"]}' >/dev/null
    wait "$slow"
    assert_eq "$(events_stdout <"$BATS_TEST_TMPDIR/slow")" slow "the first exec"
    # timeout: 124, and the VM serves the next exec
    out=$(sb_exec "$id" '{"cmd": ["sleep", "30"], "timeout": 1}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 124 "timeout"
    out=$(sb_exec "$id" '{"cmd": ["cat", "/tmp/x"]}')
    assert_eq "$(events_stdout <<<"$out")" 41 "the same VM after a timeout"
    # the workspace: a file the guest writes is the workspace owner's on the host
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "pwd; echo made inside > out.txt"]}')
    assert_eq "$(events_stdout <<<"$out")" /workspace "the command's directory"
    assert_eq "$(cat "$ws/out.txt")" "made inside" "a workspace file on the host"
    assert_eq "$(stat -c %u:%g "$ws/out.txt")" 4242:4343 "its host owner"
    # files: upload, read back, list, stat, mkdir, remove; kernel file systems refused
    printf 'hello from the host\n' >"$BATS_TEST_TMPDIR/up.txt"
    api_status PUT "/v1/sandboxes/$id/files?path=/tmp/up.txt" --data-binary @"$BATS_TEST_TMPDIR/up.txt"
    assert_eq "$status_code" 201 "upload: $body"
    out=$(sb_exec "$id" '{"cmd": ["cat", "/tmp/up.txt"]}')
    assert_eq "$(events_stdout <<<"$out")" "hello from the host" "the upload inside"
    api_status GET "/v1/sandboxes/$id/files?path=/tmp/up.txt"
    assert_eq "$body" $'hello from the host\n' "the upload read back"
    api_status POST "/v1/sandboxes/$id/mkdir?path=/tmp/a/b&parents=true"
    [ "$status_code" -lt 300 ] || fail "mkdir: $status_code $body"
    api_status GET "/v1/sandboxes/$id/files?path=/tmp"
    jq -e '.entries | map(.name) | index("up.txt") and index("a") and index("x")' <<<"$body" >/dev/null ||
        fail "listing: $body"
    api_status DELETE "/v1/sandboxes/$id/files?path=/tmp/a&recursive=true"
    assert_eq "$status_code" 200 "rm -r: $body"
    api_status GET "/v1/sandboxes/$id/files?path=/tmp/a"
    assert_eq "$status_code" 404 "after rm -r: $body"
    api_status GET "/v1/sandboxes/$id/files?path=/proc/self/environ"
    assert_eq "$status_code" 403 "a kernel file system: $body"
    # the ports proxy: a server on the guest's loopback (busybox's httpd,
    # the host's /usr/bin/busybox), reached through the guest's agent
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "mkdir -p /tmp/www && echo from-guest >/tmp/www/hello.txt && busybox httpd -p 127.0.0.1:8080 -h /tmp/www"]}')
    api_status GET "/v1/sandboxes/$id/ports/8080/hello.txt"
    assert_eq "$status_code" 200 "ports: $body $out"
    assert_eq "$body" $'from-guest\n' "a file the guest's server served"
    api_status GET "/v1/sandboxes/$id/ports/8081/"
    assert_eq "$status_code" 502 "a closed port: $body"
    assert_contains "$body" port_closed
    # two connections to a server that never answers hold the proxy's two
    # ports: a third is refused at once (503, not a wait), commands still
    # run, and a client's hang-up ends its connection in the guest
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "mkdir -p /tmp/www/cgi-bin && printf \"#!/bin/sh\\necho x >>/tmp/held\\nexec sleep 600\\n\" >/tmp/www/cgi-bin/hold && chmod +x /tmp/www/cgi-bin/hold"]}')
    # (curl itself in the background: its pid is the client's)
    curl -s --unix-socket "$SOCK" -o /dev/null --max-time 30 "http://agentjail/v1/sandboxes/$id/ports/8080/cgi-bin/hold" &
    local h1=$!
    curl -s --unix-socket "$SOCK" -o /dev/null --max-time 30 "http://agentjail/v1/sandboxes/$id/ports/8080/cgi-bin/hold" &
    local h2=$! n=0
    for _ in $(seq 50); do
        n=$(sb_exec "$id" '{"cmd": ["sh", "-c", "cat /tmp/held 2>/dev/null | wc -l"]}' | events_stdout)
        [ "${n// /}" -ge 2 ] && break
        sleep 0.2
    done
    assert_eq "${n// /}" 2 "the held connections reached the server: $out"
    api_status GET "/v1/sandboxes/$id/ports/8080/hello.txt"
    assert_eq "$status_code" 503 "a third connection: $body"
    assert_contains "$body" busy
    out=$(sb_exec "$id" '{"cmd": ["echo", "beside"]}')
    assert_eq "$(events_stdout <<<"$out")" beside "a command beside the held connections"
    kill "$h1" "$h2"
    wait "$h1" "$h2" 2>/dev/null || true
    for _ in $(seq 50); do
        api_status GET "/v1/sandboxes/$id/ports/8080/hello.txt"
        [ "$status_code" = 200 ] && break
        sleep 0.2
    done
    assert_eq "$status_code" 200 "once the held clients hung up: $body"
    # a terminal (sandbox exec -t) of the guest's devpts, with the client's size
    run timeout 60 script -qec "stty rows 33 cols 101; '$AJ' sandbox --socket '$SOCK' exec -t '$id' -- sh -c 'tty; stty size; exit 5'" /dev/null
    assert_status 5
    [[ "$output" == *"/dev/pts/"* ]] || fail "no terminal: $output"
    [[ "$output" == *"33 101"* ]] || fail "the terminal's size did not come in: $output"
    # pause: the VMM frozen, its memory kept; commands refused until resume
    api_status POST "/v1/sandboxes/$id/pause"
    assert_eq "$status_code" 200 "pause: $body"
    if [ -d /sys/fs/cgroup/freezer ]; then
        frozen=$(cat "/sys/fs/cgroup/freezer$(awk -F: '$2 == "freezer" { print $3 }' "/proc/$qemu/cgroup")/freezer.state")
    else
        frozen=$(cat "$cg/cgroup.freeze")
    fi
    [[ "$frozen" == 1 || "$frozen" == FROZEN ]] || fail "the VMM's cgroup is not frozen: $frozen"
    api_status POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["true"]}'
    assert_eq "$status_code" 409 "exec while paused"
    api_status POST "/v1/sandboxes/$id/resume"
    assert_eq "$status_code" 200 "resume: $body"
    out=$(sb_exec "$id" '{"cmd": ["cat", "/tmp/x"]}')
    assert_eq "$(events_stdout <<<"$out")" 41 "the same VM after resume"
    # a snapshot needs a VM made from an image (as level 1's)
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "mv-snap"}'
    assert_eq "$status_code" 400 "snapshot of the host's minimal root: $body"
    assert_contains "$body" "image"
    # a fork of a VM with a workspace: its virtiofs does not migrate (501,
    # saying so), nothing made, the VM unharmed
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 1}'
    assert_eq "$status_code" 501 "fork: $body"
    assert_contains "$body" "virtiofs"
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 1 "no copy was made"
    # a proxy client that does not read a flood: the delete does not wait
    # for its relay (blocked writing to the front)
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "printf \"#!/bin/sh\\necho Content-Type: text/plain\\necho\\nexec cat /dev/zero\\n\" >/tmp/www/cgi-bin/flood && chmod +x /tmp/www/cgi-bin/flood"]}')
    curl -s --unix-socket "$SOCK" -o /dev/null --max-time 60 --limit-rate 1 "http://agentjail/v1/sandboxes/$id/ports/8080/cgi-bin/flood" &
    local fl=$!
    sleep 1
    api_status DELETE "/v1/sandboxes/$id" --max-time 30
    kill "$fl" 2>/dev/null || true
    wait "$fl" 2>/dev/null || true
    assert_eq "$status_code" 200 "delete with a flooded proxy client: $body"
    assert_eq "$(cat "$ws/out.txt")" "made inside" "the workspace's file after delete"
    mv_none_left "$cg"
}

# The guest's counter (/tmp/counter.sh) advances, and it saw no SIGCONT.
mv_counter_runs() { # ID WHEN
    local out
    out=$(sb_exec "$1" '{"cmd": ["sh", "-c", "a=$(cat /tmp/n); sleep 0.5; b=$(cat /tmp/n); [ \"$a\" != \"$b\" ] && echo runs; cat /tmp/cont 2>/dev/null; true"], "timeout": 20}')
    assert_eq "$(events_stdout <<<"$out")" runs "the guest's counter $2: $out"
}

@test "serve microvm: a snapshot of a VM's root is a new image; a SIGKILLed service's VMs (a paused one) are swept at the next start" {
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/state
    mk_tiny_root "$BATS_TEST_TMPDIR/tree" sh cat ls mkdir ln sleep truncate rm
    aj_timeout "$AJ" image build tiny --from-dir "$BATS_TEST_TMPDIR/tree" 2>/dev/null
    ws=$BATS_TEST_TMPDIR/ws
    mkdir "$ws"
    svc_start
    id=$(mv_create "{\"isolation\": \"microvm\", \"image\": \"tiny\", \"workspace\": \"$ws\", \"disk\": \"64m\"}")
    # files written in the VM: in its root (a hard-linked pair), the
    # workspace, /tmp; a process that the copy freezes and thaws, and a
    # counter that would see a SIGCONT (the freezer sends none)
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "mkdir -p /opt/d && echo made-in-vm >/opt/d/f && ln -s ../etc/motd /opt/d/l && echo pair >/opt/d/h1 && ln /opt/d/h1 /opt/d/h2 && mkdir /.agentjail-checkpoint && echo c >/.agentjail-checkpoint/c && ln /.agentjail-checkpoint/c /opt/d/cp && echo x >/opt/d/$(printf \"lat\\351\") && echo changed >/etc/motd && echo w >/workspace/w && echo t >/tmp/t && (sleep 300 </dev/null >/dev/null 2>&1 & echo $! >/tmp/pid); echo up"]}')
    assert_eq "$(events_stdout <<<"$out")" up "$out"
    printf '%s\n' "trap 'echo cont >>/tmp/cont' CONT" 'i=0' 'while :; do i=$((i + 1)); echo $i >/tmp/n; sleep 0.1; done' >"$BATS_TEST_TMPDIR/counter.sh"
    api_status PUT "/v1/sandboxes/$id/files?path=/tmp/counter.sh" --data-binary @"$BATS_TEST_TMPDIR/counter.sh"
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "sh /tmp/counter.sh </dev/null >/dev/null 2>&1 & sleep 0.3; cat /tmp/n"]}')
    [ -n "$(events_stdout <<<"$out")" ] || fail "the guest's counter: $out"
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "mvsnap"}'
    assert_eq "$status_code" 201 "snapshot: $body"
    assert_eq "$(jq -r .source <<<"$body")" "sandbox:$id (image tiny)"
    dir=$AGENTJAIL_STATE_DIR/images/$(jq -r '.digest | sub("sha256:"; "")' <<<"$body")/rootfs
    assert_eq "$(cat "$dir/opt/d/f")" made-in-vm "the VM's file in the image"
    assert_eq "$(stat -c %u:%g "$dir/opt/d/f")" 0:0 "its owner (the image's ids)"
    assert_eq "$(readlink "$dir/opt/d/l")" ../etc/motd "a symlink"
    [ -e "$dir/opt/d/$(printf 'lat\351')" ] || fail "a file whose name is not UTF-8: $(ls "$dir/opt/d")"
    assert_eq "$(cat "$dir/etc/motd")" changed "a changed image file"
    [ "$dir/opt/d/h1" -ef "$dir/opt/d/h2" ] || fail "the hard-linked pair is two files: $(ls -li "$dir/opt/d")"
    assert_eq "$(cat "$dir/opt/d/h2")" pair "the hard link's content"
    # a link to a file of a directory the store drops: a file of its own
    assert_eq "$(cat "$dir/opt/d/cp")" c "a link into the dropped checkpoint directory"
    [ ! -e "$dir/.agentjail-checkpoint" ] || fail "the checkpoint directory in the image"
    # agentjail's /etc files as the base image had them (none), no
    # workspace or /tmp files, no device or socket
    assert_eq "$(ls "$dir/etc")" motd "the snapshot's /etc"
    [ -z "$(ls -A "$dir/workspace" 2>/dev/null)" ] || fail "workspace files in the image: $(ls -A "$dir/workspace")"
    [ -z "$(ls -A "$dir/tmp")" ] || fail "/tmp files in the image: $(ls -A "$dir/tmp")"
    [ -z "$(find "$dir" -type b -o -type c -o -type s)" ] || fail "devices or sockets in the image"
    # the guest's processes go on after the copy (the counter advances),
    # and saw no signal
    mv_counter_runs "$id" "after the snapshot"
    # level 1's errors: a name that exists, a bad name; nothing left of them
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "mvsnap"}'
    assert_eq "$status_code" 409 "an existing name: $body"
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "Bad/Name"}'
    assert_eq "$status_code" 400 "a bad name: $body"
    # past the VM's image plus its disk (a sparse 1 GiB file): 507, the
    # agent stopped mid-file, the VM's processes continued
    out=$(sb_exec "$id" '{"cmd": ["truncate", "-s", "1G", "/opt/big"]}')
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "mvbig"}'
    assert_eq "$status_code" 507 "a snapshot past the disk: $body"
    assert_contains "$body" disk
    sb_exec "$id" '{"cmd": ["rm", "/opt/big"]}' >/dev/null
    mv_counter_runs "$id" "after a 507"
    # every agent port given up, then made anew (docs/levels.md, "A
    # given-up port made anew"): the VMM stopped (SIGSTOP on the host: the
    # test's hook), four execs each cut off by its timeout (their ports
    # stale), then four more: no answer comes to their ports' drain (5 s),
    # every port is given up and made anew in the background (the host's
    # filler and reset, the guest init's answer once the old agent is
    # reaped, a fresh agent's hello), the VMM going on meanwhile (after
    # 6.5 s); the four requests go on on ports made anew (was: 500, the
    # VM does not answer), later ones too
    local k pids=() vmm
    vmm=$(pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm' | head -1)
    kill -STOP "$vmm"
    for k in 1 2 3 4; do
        sb_exec "$id" '{"cmd": ["sleep", "30"], "timeout": 1}' >"$BATS_TEST_TMPDIR/stop.$k" &
        pids+=($!)
    done
    wait "${pids[@]}"
    pids=()
    t0=$(date +%s)
    for k in 1 2 3 4; do
        sb_exec "$id" "{\"cmd\": [\"sh\", \"-c\", \"echo back-$k\"]}" >"$BATS_TEST_TMPDIR/back.$k" &
        pids+=($!)
    done
    sleep 6.5
    kill -CONT "$vmm"
    wait "${pids[@]}"
    for k in 1 2 3 4; do
        assert_eq "$(events_stdout <"$BATS_TEST_TMPDIR/back.$k")" "back-$k" "request $k once every port was given up: $(cat "$BATS_TEST_TMPDIR/back.$k")"
    done
    echo "# four ports given up and made anew in $(($(date +%s) - t0)) s" >&3
    assert_eq "$(grep -c 'agent port [0-3] made anew' "$BATS_TEST_TMPDIR/serve.log")" 4 "the ports made anew: $(grep 'agent port' "$BATS_TEST_TMPDIR/serve.log")"
    api_status GET "/v1/sandboxes/$id/files?path=/tmp/t"
    assert_eq "$status_code $body" "200 t"$'\n' "a file read on a port made anew"
    mv_counter_runs "$id" "after the ports were made anew"
    [ ! -e "$AGENTJAIL_STATE_DIR/images/names/mvbig" ] || fail "the refused snapshot's name exists"
    [ -z "$(ls -A "$AGENTJAIL_STATE_DIR/images" | grep '^\.')" ] || fail "left in the store: $(ls -A "$AGENTJAIL_STATE_DIR/images")"
    # a level-1 sandbox from the new image sees the VM's file
    l1=$(sb_create '{"image": "mvsnap"}')
    out=$(sb_exec "$l1" '{"cmd": ["cat", "/opt/d/f"]}')
    assert_eq "$(events_stdout <<<"$out")" made-in-vm "the VM's file in a sandbox of the new image"
    api_status DELETE "/v1/sandboxes/$l1"
    # and so does a level-3 VM of it (a workspace: no VM snapshot saved),
    # its hard-linked pair one file; with --user, what the files API
    # writes into the workspace is the owner's on the host, U's in the guest
    ws2=$BATS_TEST_TMPDIR/ws2
    mkdir "$ws2"
    chown 4242:4343 "$ws2"
    mv2=$(mv_create "{\"isolation\": \"microvm\", \"image\": \"mvsnap\", \"workspace\": \"$ws2\", \"user\": \"1000:1001\"}")
    out=$(sb_exec "$mv2" '{"cmd": ["sh", "-c", "cat /opt/d/f; [ /opt/d/h1 -ef /opt/d/h2 ] && echo linked"]}')
    assert_eq "$(events_stdout <<<"$out")" "made-in-vm
linked" "a VM of the new image: $out"
    api_status PUT "/v1/sandboxes/$mv2/files?path=/workspace/up.txt" --data-binary @"$BATS_TEST_TMPDIR/counter.sh"
    assert_eq "$status_code" 201 "upload as --user: $body"
    api_status POST "/v1/sandboxes/$mv2/mkdir?path=/workspace/d1/d2&parents=true"
    [ "$status_code" -lt 300 ] || fail "mkdir as --user: $status_code $body"
    assert_eq "$(stat -c %u:%g "$ws2/up.txt" "$ws2/d1" "$ws2/d1/d2" | sort -u)" 4242:4343 "the files API's files on the host"
    out=$(sb_exec "$mv2" '{"cmd": ["ls", "-lnd", "/workspace/up.txt", "/workspace/d1", "/workspace/d1/d2"]}')
    assert_eq "$(events_stdout <<<"$out" | awk '{ print $3 ":" $4 }' | sort -u)" 1000:1001 "their owner in the guest: $out"
    api_status DELETE "/v1/sandboxes/$mv2"
    assert_eq "$status_code" 200 "delete the second VM: $body"
    qemu=$(pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm' | head -1)
    cg=$(vmm_cgroup "$qemu")
    # paused: its frozen VMM dies only once the sweep thaws it
    api_status POST "/v1/sandboxes/$id/pause"
    assert_eq "$status_code" 200 "pause: $body"
    # a paused VM's snapshot: it stays paused (its VMM frozen again)
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "mvsnap-paused"}'
    assert_eq "$status_code" 201 "snapshot of a paused VM: $body"
    dir=$AGENTJAIL_STATE_DIR/images/$(jq -r '.digest | sub("sha256:"; "")' <<<"$body")/rootfs
    assert_eq "$(cat "$dir/opt/d/f")" made-in-vm "the paused VM's file in the image"
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r .state)" paused "the state after"
    if [ -d /sys/fs/cgroup/freezer ]; then
        frozen=$(cat "/sys/fs/cgroup/freezer$(awk -F: '$2 == "freezer" { print $3 }' "/proc/$qemu/cgroup")/freezer.state")
    else
        frozen=$(cat "$cg/cgroup.freeze")
    fi
    [[ "$frozen" == 1 || "$frozen" == FROZEN ]] || fail "the VMM's cgroup is not frozen after the snapshot: $frozen"
    _svc_record_keepers
    kill -KILL "$SVC_PID"
    wait "$SVC_PID" 2>/dev/null || true
    SVC_PID=
    svc_start
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$status_code" 404
    mv_none_left "$cg"
}
