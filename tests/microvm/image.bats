#!/usr/bin/env bats
# Level 3 on an image (docs/levels.md, "The root"): --image/--rootfs as a
# read-only squashfs on virtio-blk (cached per image digest in the state
# directory), under the guest's tmpfs overlay, with the files agentjail owns
# in /etc over the image's. TCG (forced, as in run.bats): four boots in all;
# the service's test reuses its one snapshot for restores, forks and a pool
# (its fourth boot: the VM built when a pooled one fails its hand-out), and
# two more: a service VM with binds (which never starts from a snapshot)
# and three runs whose image's links (a loop, into the workspace, to /)
# stop them in their guest's init.

load ../service/helpers
load binds

setup() {
    require_root
    command -v qemu-system-x86_64 >/dev/null || skip "qemu is not installed (scripts/setup.sh)"
    [ -r /var/cache/agentjail/microvm/vmlinux ] || skip "no guest kernel (scripts/setup.sh)"
    export AGENTJAIL_MICROVM_ACCEL=tcg
    MV_BEFORE=$(ls -d /tmp/agentjail-microvm-* 2>/dev/null | sort || true)
    aj_setup
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/state
    mk_tiny_root "$BATS_TEST_TMPDIR/tree" sh cat ls od date tr mkfifo setsid sleep head rm
    mark_a=mark-a-$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
    mkdir "$BATS_TEST_TMPDIR/tree/$mark_a"
    # a hostile image's links at bind destinations: into the guest
    # initramfs's overlay layer (/mnt/rw/upper, /mnt), if followed there,
    # and a loop
    ln -s /mnt/rw/upper "$BATS_TEST_TMPDIR/tree/evil"
    ln -s ../../../../mnt "$BATS_TEST_TMPDIR/tree/up"
    ln -s loop "$BATS_TEST_TMPDIR/tree/loop"
    # links to the workspace's inside and to the root itself: a bind there
    # would make directories in the host's workspace, or cover the root
    ln -s /workspace/a/b "$BATS_TEST_TMPDIR/tree/wsl"
    ln -s / "$BATS_TEST_TMPDIR/tree/top"
    aj_timeout "$AJ" image build tiny --from-dir "$BATS_TEST_TMPDIR/tree" 2>/dev/null
}


# No qemu, virtiofsd or new VM directory is left.
mv_none_left() {
    local n after
    for n in $(seq 50); do
        pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm' >/dev/null || pgrep -x virtiofsd >/dev/null || break
        sleep 0.1
    done
    [ -z "$(pgrep -af '^/usr/bin/qemu-system-x86_64 -M microvm')" ] || fail "a qemu is left"
    [ -z "$(pgrep -x virtiofsd)" ] || fail "a virtiofsd is left"
    after=$(ls -d /tmp/agentjail-microvm-* 2>/dev/null | sort || true)
    [ -z "$(comm -13 <(echo "$MV_BEFORE") <(echo "$after"))" ] || fail "VM directories left"
}

# what a command in the VM sees of its root: the image's file, no host /usr,
# the hostname agentjail wrote, a write in the guest's own layer
LOOK='cat /etc/motd; ls /usr 2>&1 || echo no-usr; cat /etc/hostname; echo w > /bin/new && cat /bin/new'

@test "microvm --image/--rootfs: the image's root on a read-only disk, the host's /usr unseen; --ro/--rw binds in it" {
    # the two boots side by side (each TCG vCPU a thread of its own): a
    # --rootfs directory (a copy of the image's tree, another motd) is its
    # own squashfs, made for the VM and gone with it
    cp -a "$BATS_TEST_TMPDIR/tree" "$BATS_TEST_TMPDIR/rtree"
    echo other >"$BATS_TEST_TMPDIR/rtree/etc/motd"
    # a device node planted in the tree (the guest's /dev/null's numbers)
    mknod -m 0666 "$BATS_TEST_TMPDIR/rtree/nul" c 1 3
    timeout -k 5 "$AJ_TIMEOUT" "$AJ" run -q --isolation microvm --rootfs "$BATS_TEST_TMPDIR/rtree" \
        -- /bin/sh -c "$LOOK; (: >/nul) 2>/dev/null && echo dev-opened || echo dev-refused" \
        >"$BATS_TEST_TMPDIR/r.out" 2>"$BATS_TEST_TMPDIR/r.err" 3>&- &
    local rpid=$!
    # --ro and --rw binds on the image: the --ro ones served read-only by a
    # virtiofsd of their own (the root is a disk), one where the host's
    # view refuses it (/lib: here the image's); each destination resolved
    # inside the image's root, through its links (setup)
    local bd=$BATS_TEST_TMPDIR/binds
    mkdir -p "$bd/ro/sub" "$bd/rw"
    echo from-host >"$bd/ro/sub/f"
    echo single >"$bd/file"
    # host root's 0600 file: closed to guest root, as to level 1's sandbox root
    echo s3cret >"$bd/ro/secret" && chmod 0600 "$bd/ro/secret"
    chown 4242:4343 "$bd/rw"
    binds='cat /mnt/ro/sub/f /lib/one /mnt/rw/upper/in/sub/f
echo x >/mnt/ro/new; echo x >>/lib/one; echo x >/mnt/rw/upper/in/sub/f
echo made >"/mnt/data w/new" && echo rw-ok; [ -e /in ] && echo leaked || echo inside
cat /mnt/ro/secret 2>/dev/null || echo secret-closed'
    run --separate-stderr timeout -k 5 "$AJ_TIMEOUT" "$AJ" run -q --isolation microvm --image tiny \
        --ro "$bd/ro:/mnt/ro" --ro "$bd/file:/lib/one" --ro "$bd/ro:/evil/in" --rw "$bd/rw:/up/data w" \
        -- /bin/sh -c "$LOOK; $binds"
    local rrc=0
    wait "$rpid" || rrc=$?
    assert_status 0
    [[ "$output" == base*no-usr*agentjail*w$'\n'from-host$'\n'single$'\n'from-host$'\n'rw-ok$'\n'inside$'\n'secret-closed ]] ||
        fail "the image's root and binds: $output ($stderr)"
    for f in /mnt/ro/new /lib/one /mnt/rw/upper/in/sub/f; do
        assert_contains "$stderr" "cannot create $f: Read-only file system"
    done
    assert_eq "$(cat "$bd/ro/sub/f" "$bd/file" | tr '\n' ' ')" "from-host single " "the --ro sources"
    [ ! -e "$bd/ro/new" ] || fail "a file was made in a --ro bind"
    assert_eq "$(cat "$bd/rw/new")" made "the --rw file on the host"
    assert_eq "$(stat -c %u:%g "$bd/rw/new")" 4242:4343 "the --rw file's owner"
    # one squashfs per image digest, cached; the image's tree untouched
    digest=$("$AJ" image inspect tiny | jq -r '.digest | sub("sha256:"; "")')
    [ -s "$AGENTJAIL_STATE_DIR/microvm/rootfs-$digest.sqfs" ] || fail "no cached squashfs: $(ls "$AGENTJAIL_STATE_DIR/microvm")"
    [ ! -e "$AGENTJAIL_STATE_DIR/images/$digest/rootfs/bin/new" ] || fail "the guest wrote into the image"
    output=$(cat "$BATS_TEST_TMPDIR/r.out")
    assert_eq "$rrc" 0 "the --rootfs run's exit ($(cat "$BATS_TEST_TMPDIR/r.err"))"
    [[ "$output" == other*no-usr*agentjail*w*dev-refused ]] || fail "the --rootfs: $output ($(cat "$BATS_TEST_TMPDIR/r.err"))"
    [ "$(ls "$AGENTJAIL_STATE_DIR/microvm" | grep -c '\.sqfs$')" -eq 1 ] || fail "a --rootfs was cached"
    mv_none_left
    # bad binds on an image: refused as without one, before any VM
    run --separate-stderr "$AJ" run --isolation microvm --image tiny --rw "$bd/file:/mnt/f" -- /bin/echo ran
    assert_status 125
    assert_contains "$stderr" "shares directories read-write, not files"
    run --separate-stderr "$AJ" run --isolation microvm --image tiny --ro "$bd/ro:/proc/x" -- /bin/echo ran
    assert_status 125
    assert_contains "$stderr" "/proc is managed by agentjail"
    run --separate-stderr "$AJ" run --isolation microvm --image tiny --ro "$bd/ro:/workspace/x" -- /bin/echo ran
    assert_status 125
    assert_contains "$stderr" "not at /workspace or below it"
    assert_output_lacks ran
    # a destination through a loop of the image's links: the guest's init
    # stops the VM, the reason in the run's error
    run --separate-stderr "$AJ" run -q --isolation microvm --image tiny --ro "$bd/ro:/loop/x" -- /bin/echo ran
    assert_status 125
    assert_contains "$stderr" "mount point in the root /loop/x: Too many levels of symbolic links"
    assert_output_lacks ran
    # destinations the image's links lead into the workspace or onto its
    # root: the guest's init stops the VM, nothing made in the workspace
    mkdir "$BATS_TEST_TMPDIR/ws"
    run --separate-stderr "$AJ" run -q --isolation microvm --image tiny --workspace "$BATS_TEST_TMPDIR/ws" \
        --rw "$bd/rw:/wsl/x" -- /bin/echo ran
    assert_status 125
    assert_contains "$stderr" "--rw /wsl/x: its path leads to /workspace (a link of the root's)"
    assert_output_lacks ran
    [ -z "$(ls -A "$BATS_TEST_TMPDIR/ws")" ] || fail "made in the workspace: $(ls -AR "$BATS_TEST_TMPDIR/ws")"
    run --separate-stderr "$AJ" run -q --isolation microvm --image tiny --ro "$bd/ro:/top" -- /bin/echo ran
    assert_status 125
    assert_contains "$stderr" "--ro /top: its path leads to / (a link of the root's)"
    assert_output_lacks ran
    # a --ro source's path swapped for a link after the command line was
    # read: refused before a boot (binds.bash)
    ro_swap_run --image tiny
    assert_status 125
    assert_output_lacks hidden
    assert_contains "$stderr" "--ro $T/swap/p/a: a symbolic link in its path (not followed"
    mv_none_left
}

# The files under DIR... holding the string S: grep without -a, so that a
# binary file is still listed and the holes of the snapshots' sparse RAM
# files (1 GiB each, ~100 MiB of data) are skipped, not read as zeros
# (-a: ~15 s a file on the test host; this: a few ms).
holding() { # S DIR...
    LC_ALL=C grep -rlF -- "$@"
}

stdout_of() { # ID CMD: the command's stdout (sh -c)
    sb_exec "$1" "$(jq -nc --arg c "$2" '{cmd: ["sh", "-c", $c]}')" | events_stdout
}

# A process that holds a random value only in its memory and answers each
# name written to /tmp/q with "VALUE NAME" in /tmp/a.NAME; detached from
# the exec (its stdio /dev/null), so it lives on after it.
KEEPER='mkfifo /tmp/q; echo parent > /tmp/f
setsid sh -c '\''echo $$ > /tmp/p0; v=$(od -An -N4 -tu4 /dev/urandom | tr -d " "); echo $v > /tmp/v0
while :; do read n < /tmp/q; echo "$v $n" > /tmp/a.$n; done'\'' </dev/null >/dev/null 2>&1 &
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do [ -s /tmp/v0 ] && break; sleep 0.2; done; cat /tmp/v0'

# Three busy processes that stop (SIGSTOP) the guest's next agent, or
# init's child before it became one, and write its pid to /tmp/NAME (NAME
# put in by the caller); the command ends once they all watch. A command
# may signal an agent: both are root in the guest.
STOPPER='read -r i </proc/1/cmdline; [ -n "$i" ] || exit 1
for k in 1 2 3; do setsid sh -c '\''echo >/tmp/NAME.$3; while [ ! -e /tmp/NAME ]; do
for p in /proc/[0-9]*; do n=${p#/proc/}
[ "$n" -gt "$1" ] || continue
c=; read -r c <$p/cmdline 2>/dev/null
case $c in "$2"|agentjail-agentcg) kill -STOP "$n" && echo "$n" >/tmp/NAME && exit;; esac
done; done'\'' _ $PPID "$i" $k </dev/null >/dev/null 2>&1 & done
while [ ! -e /tmp/NAME.1 ] || [ ! -e /tmp/NAME.2 ] || [ ! -e /tmp/NAME.3 ]; do :; done
echo started'

ask() { # ID NAME: what the memory process answers
    stdout_of "$1" "echo $2 > /tmp/q; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do [ -s /tmp/a.$2 ] && break; sleep 0.2; done; cat /tmp/a.$2"
}

pool_is() { # FIELD VALUE: the microvm pool's FIELD reaches VALUE
    for _ in $(seq 400); do
        [ "$(api GET /v1/pools | jq -r ".pools[] | select(.isolation == \"microvm\") | .$1")" = "$2" ] && return 0
        sleep 0.1
    done
    fail "the pool's $1 is not $2: $(api GET /v1/pools)"
}

@test "serve microvm: a pool of VMs on an image, the first booted, the next restored from its snapshot, each its own; forks" {
    # a pool spec of no image: exit 125, nothing started
    run --separate-stderr timeout 30 "$AJ" serve --quiet --socket "$BATS_TEST_TMPDIR/bad.sock" --state-dir "$BATS_TEST_TMPDIR/bad" --pool microvm:nosuch=1
    assert_status 125
    assert_contains "$stderr" "nosuch"
    # ,code at level 3 (a kernel in a pooled VM is untried): refused alike
    run --separate-stderr timeout 30 "$AJ" serve --quiet --socket "$BATS_TEST_TMPDIR/bad.sock" --state-dir "$BATS_TEST_TMPDIR/bad" --pool microvm:tiny=1,code
    assert_status 125
    assert_contains "$stderr" "',code' is not supported at level microvm"
    # 8 older snapshots of other configurations and a save a dead process
    # left: a save keeps the 7 newest and its own, and removes the leftover
    mkdir -p "$AGENTJAIL_STATE_DIR/microvm"
    for i in 1 2 3 4 5 6 7 8; do
        echo old >"$AGENTJAIL_STATE_DIR/microvm/snap-old$i.vmstate"
        touch -d "$((10 - i)) hours ago" "$AGENTJAIL_STATE_DIR/microvm/snap-old$i.vmstate"
    done
    echo ram >"$AGENTJAIL_STATE_DIR/microvm/snap-old1.ram"
    echo partial >"$AGENTJAIL_STATE_DIR/microvm/snap-old9.vmstate.999999999.tmp"
    # the service in a mount namespace of its own: the test mounts a small
    # file system where a fork's save goes (below), for the service alone
    SVC_WRAP=(unshare -m --propagation private)
    svc_start --pool microvm:tiny=1
    body='{"isolation": "microvm", "image": "tiny"}'
    # the pool's first boots, and is saved once ready: its devices in
    # STATE/microvm/snap-IMAGE-KEY.vmstate, its RAM in snap-IMAGE-KEY.ram
    pool_is ready 1
    a=$(api POST /v1/sandboxes -d "$body" | jq -er .id)
    assert_eq "$(api GET /v1/pools | jq -r '.pools[0].hits')" 1 "the create served by the pool"
    out=$(sb_exec "$a" "$(jq -nc --arg c "$LOOK" '{cmd: ["/bin/sh", "-c", $c]}')")
    [[ "$(events_stdout <<<"$out" | tr '\n' ' ')" == "base "*no-usr*agentjail*w* ]] || fail "the image's root: $out"
    out=$(sb_exec "$a" '{"cmd": ["cat", "/bin/new"]}')
    assert_eq "$(events_stdout <<<"$out")" w "the guest's layer across execs"
    ls "$STATE"/microvm/snap-*.vmstate >/dev/null || fail "no snapshot: $(ls "$STATE/microvm") $(cat "$BATS_TEST_TMPDIR/serve.log")"
    assert_eq "$(ls "$STATE"/microvm/snap-*.vmstate | grep -vc '/snap-old')" 1 "the new snapshot"
    assert_eq "$(cd "$STATE/microvm" && ls snap-old* | tr '\n' ' ')" "snap-old2.vmstate snap-old3.vmstate snap-old4.vmstate snap-old5.vmstate snap-old6.vmstate snap-old7.vmstate snap-old8.vmstate " "the snapshots kept"
    ram=$(ls "$STATE"/microvm/snap-*.ram) || fail "no snapshot RAM: $(ls "$STATE/microvm")"
    assert_eq "$(stat -c '%u %a' "$ram")" "0 600" "the snapshot RAM's owner and mode"
    sum=$(sha256sum <"$ram")
    # the next two restored (qemu -incoming), not booted: the pool's refill
    # and a create the pool does not serve (another cwd: not set at
    # hand-out); each given its identity (c's with its first request, b's
    # again when handed out), so the entropy check below fails if not
    # the pool's next is restored now, on the save's clock: 8 s behind
    # until its hand-out gives it the host's (the check below)
    snapf=$(ls "$STATE"/microvm/snap-*.vmstate | grep -v /snap-old)
    # meanwhile another image, with a sandbox of its own (booted, saved):
    # each image's top-level names are in its squashfs and in the RAM of
    # its snapshot (the `image rm` checks at the end)
    cp -a "$BATS_TEST_TMPDIR/tree" "$BATS_TEST_TMPDIR/tree2"
    rmdir "$BATS_TEST_TMPDIR/tree2/$mark_a"
    mark_b=mark-b-$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
    echo other >"$BATS_TEST_TMPDIR/tree2/etc/motd" && mkdir "$BATS_TEST_TMPDIR/tree2/$mark_b"
    aj_timeout "$AJ" image build other --from-dir "$BATS_TEST_TMPDIR/tree2" 2>/dev/null
    d=$(api POST /v1/sandboxes -d '{"isolation": "microvm", "image": "other"}' | jq -er .id)
    while [ $(($(date +%s) - $(stat -c %Y "$snapf"))) -lt 8 ]; do sleep 0.2; done
    pool_is ready 1
    b=$(api POST /v1/sandboxes -d "$body" | jq -er .id)
    c=$(api POST /v1/sandboxes -d '{"isolation": "microvm", "image": "tiny", "cwd": "/tmp"}' | jq -er .id)
    assert_eq "$(api GET /v1/pools | jq -r '.pools[0].hits')" 2 "b from the pool, c not"
    # a guest write of 16 MB in c (seconds on TCG), beside the checks below
    sb_exec "$c" '{"cmd": ["sh", "-c", "head -c 16000000 /dev/urandom >/tmp/fill && echo ok"]}' >"$BATS_TEST_TMPDIR/fill" 3>&- &
    local fill=$!
    # each maps the snapshot's RAM (a sealed memfd of the file) private:
    # copy-on-write; no one can write it, and a guest's writes stay its own
    for id in "$b" "$c"; do
        q=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
        tr '\0' ' ' <"/proc/$q/cmdline" | grep -q -- '-incoming defer' ||
            fail "$id not restored: $(pgrep -af qemu-system)"
        grep -qE "^[0-9a-f-]+ rw-p .* /memfd:$(basename "$ram") \(deleted\)$" "/proc/$q/maps" ||
            fail "qemu $q does not map $ram private: $(grep memfd "/proc/$q/maps")"
        # in place (the write seal) and past its end (the grow seal)
        run dd if=/dev/zero of="/proc/$q/fd/4" bs=1 count=1 conv=notrunc status=none
        [ "$status" -ne 0 ] || fail "the snapshot's RAM in qemu $q is writable in place"
        run sh -c "printf x >>/proc/$q/fd/4"
        [ "$status" -ne 0 ] || fail "the snapshot's RAM in qemu $q can grow"
    done
    # each its own: the image's files and a fresh layer, its own entropy
    # (the same memory would give the same bytes), the host's time
    peek='cat /etc/motd; cat /bin/new 2>/dev/null || echo fresh; od -An -tx1 -N16 /dev/urandom | tr -d " "; date +%s'
    ob=$(sb_exec "$b" "$(jq -nc --arg c "$peek" '{cmd: ["/bin/sh", "-c", $c]}')" | events_stdout)
    hb=$(date +%s)
    wait "$fill"
    assert_eq "$(events_stdout <"$BATS_TEST_TMPDIR/fill")" ok "a guest write of 16 MB"
    assert_eq "$(sha256sum <"$ram")" "$sum" "the snapshot's RAM file after a guest write"
    cmp -s "$ram" "/proc/$q/fd/4" || fail "the RAM qemu maps is not the snapshot's after a guest write"
    oc=$(sb_exec "$c" "$(jq -nc --arg c "$peek" '{cmd: ["/bin/sh", "-c", $c]}')" | events_stdout)
    hc=$(date +%s)
    assert_eq "$(sed -n 1,2p <<<"$ob" | tr '\n' ' ')" "base fresh " "a restored VM's root"
    [ "$(sed -n 3p <<<"$ob" | wc -c)" -eq 33 ] && [ "$(sed -n 3p <<<"$ob")" != "$(sed -n 3p <<<"$oc")" ] ||
        fail "two restored VMs gave the same random bytes (or none): $ob / $oc"
    for x in "$hb $(sed -n 4p <<<"$ob")" "$hc $(sed -n 4p <<<"$oc")"; do
        read -r h t <<<"$x"
        [ $((t - h)) -le 1 ] && [ $((h - t)) -le 3 ] || fail "a restored VM's clock at hand-out: $t, host $h: $ob / $oc"
    done
    # a fork whose VM does not go on after its save: qemu refuses `cont`
    # (the completed save let go of the image's squashfs, and another
    # process holds a lock on it meanwhile, byte 200: "consistent read" not
    # shared, which qemu's image locking checks when it takes it back).
    # The VM is killed: `500 vm_lost` for the fork, its execs and file
    # operations; deleted with nothing left
    pool_is ready 1
    qc=$(api GET "/v1/sandboxes/$c" | jq -r .pid)
    cdir=$(tr '\0' '\n' <"/proc/$qc/cmdline" | grep -o '/tmp/agentjail-microvm-[^/,]*' | head -1)
    digest=$("$AJ" image inspect tiny | jq -r '.digest | sub("sha256:"; "")')
    python3 -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 200)
print("locked", flush=True)
time.sleep(120)' "$STATE/microvm/rootfs-$digest.sqfs" >"$BATS_TEST_TMPDIR/lock" 3>&- &
    local locker=$!
    for _ in $(seq 50); do [ -s "$BATS_TEST_TMPDIR/lock" ] && break; sleep 0.1; done
    api_status POST "/v1/sandboxes/$c/fork" -d '{"count": 1}'
    kill "$locker" && wait "$locker" || true
    assert_eq "$status_code" 500 "a fork whose VM did not go on: $body"
    assert_contains "$body" vm_lost
    assert_contains "$body" "did not go on after its save"
    # killed (a zombie until the delete reaps it)
    for _ in $(seq 50); do [[ "$(cut -d' ' -f3 "/proc/$qc/stat" 2>/dev/null)" =~ ^Z?$ ]] && break; sleep 0.1; done
    [[ "$(cut -d' ' -f3 "/proc/$qc/stat" 2>/dev/null)" =~ ^Z?$ ]] || fail "the lost VM's qemu lives on"
    out=$(sb_exec "$c" '{"cmd": ["true"]}')
    assert_eq "$(events_exit <<<"$out" | jq -r .error.code)" vm_lost "an exec in the lost VM: $out"
    api_status GET "/v1/sandboxes/$c/files?path=/etc/motd"
    assert_eq "$status_code" 500 "a file read in the lost VM: $body"
    assert_contains "$body" vm_lost
    for id in "$a" "$c" "$d"; do
        api_status DELETE "/v1/sandboxes/$id"
        assert_eq "$status_code" 200
    done
    [ -n "$cdir" ] && [ ! -e "$cdir" ] && [ ! -e "/proc/$qc" ] || fail "the lost VM is left: $cdir $(cat "/proc/$qc/stat" 2>/dev/null)"
    # a VM with a workspace on the image: restored from the same snapshot,
    # not booted, its workspace's virtiofs (which does not migrate)
    # hot-plugged after: files the owner's on the host, the workspace
    # guard's read-only wall, no fork
    ws=$BATS_TEST_TMPDIR/ws
    mkdir -p "$ws/.git/hooks"
    echo keep >"$ws/.git/hooks/pre-commit"
    chown -R 4242:4343 "$ws"
    w=$(api POST /v1/sandboxes -d "{\"isolation\": \"microvm\", \"image\": \"tiny\", \"workspace\": \"$ws\"}" | jq -er .id)
    q=$(api GET "/v1/sandboxes/$w" | jq -r .pid)
    tr '\0' ' ' <"/proc/$q/cmdline" | grep -q -- '-incoming defer' ||
        fail "the VM with a workspace was not restored: $(tr '\0' ' ' <"/proc/$q/cmdline")"
    # its private copy of the snapshot's RAM (a memfd's pages) is charged
    # to the VM's host cgroup, not to the service's: at least the data of
    # the RAM file (its allocated blocks, the copy's pages less zeros)
    if [ -d /sys/fs/cgroup/memory ]; then
        mcg=/sys/fs/cgroup/memory$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' "/proc/$q/cgroup")
    else
        mcg=/sys/fs/cgroup$(awk -F: '$1 == 0 { print $3 }' "/proc/$q/cgroup")
    fi
    shmem=$(awk '$1 == "shmem" { print $2 }' "$mcg/memory.stat")
    data=$(($(stat -c '%b * %B' "$ram") * 9 / 10))
    [ "${shmem:-0}" -ge "$data" ] || fail "the VM's cgroup $mcg holds ${shmem:-no} bytes of shmem, not its RAM copy's ~$data"
    out=$(sb_exec "$w" '{"cmd": ["sh", "-c", "pwd; cat /etc/motd; echo made >/workspace/new; echo x >.git/hooks/pre-commit || echo guarded"]}')
    assert_eq "$(events_stdout <<<"$out" | tr '\n' ' ')" "/workspace base guarded " "the hot-plugged workspace: $out"
    assert_eq "$(stat -c %u:%g "$ws/new")" 4242:4343 "a guest file's owner in the workspace"
    assert_eq "$(cat "$ws/.git/hooks/pre-commit")" keep "the workspace guard"
    api_status POST "/v1/sandboxes/$w/fork" -d '{"count": 1}'
    assert_eq "$status_code" 501 "fork of a VM with a workspace: $body"
    api_status DELETE "/v1/sandboxes/$w"
    assert_eq "$status_code" 200
    # a VM on the image with --ro and --rw binds: booted (virtiofs does not
    # migrate), neither the pool's nor restored, the image's snapshot left
    # as it was; its binds as a run's; no fork (501 naming them)
    bd=$BATS_TEST_TMPDIR/binds
    mkdir -p "$bd/ro" "$bd/rw"
    echo from-host >"$bd/ro/f"
    chown 5151:5252 "$bd/rw"
    snaps=$(cd "$STATE/microvm" && ls -l --time-style=+%s.%N snap-* && sha256sum snap-*.vmstate)
    hits=$(api GET /v1/pools | jq -r '.pools[0].hits')
    x=$(api POST /v1/sandboxes -d "{\"isolation\": \"microvm\", \"image\": \"tiny\",
        \"ro\": [\"$bd/ro:/mnt/ro\"], \"rw\": [\"$bd/rw:/mnt/rw\"]}" | jq -er .id)
    assert_eq "$(api GET /v1/pools | jq -r '.pools[0].hits')" "$hits" "a create with binds served by the pool"
    q=$(api GET "/v1/sandboxes/$x" | jq -r .pid)
    ! tr '\0' ' ' <"/proc/$q/cmdline" | grep -q -- '-incoming' || fail "the VM with binds was restored"
    out=$(sb_exec "$x" '{"cmd": ["sh", "-c", "cat /etc/motd /mnt/ro/f; echo x >/mnt/ro/f || echo refused; echo made >/mnt/rw/new"]}')
    assert_eq "$(events_stdout <<<"$out" | tr '\n' ' ')" "base from-host refused " "the binds on the image: $out"
    assert_contains "$(events_stderr <<<"$out")" "Read-only file system"
    assert_eq "$(cat "$bd/ro/f")" from-host "the --ro source"
    assert_eq "$(stat -c %u:%g "$bd/rw/new")" 5151:5252 "the --rw file's owner"
    api_status POST "/v1/sandboxes/$x/fork" -d '{"count": 1}'
    assert_eq "$status_code" 501 "fork of a VM with binds: $body"
    assert_contains "$body" "binds"
    api_status DELETE "/v1/sandboxes/$x"
    assert_eq "$status_code" 200
    assert_eq "$(cd "$STATE/microvm" && ls -l --time-style=+%s.%N snap-* && sha256sum snap-*.vmstate)" "$snaps" "the image's snapshot after a VM with binds"
    # fork: b's running VM saved and restored twice, its processes and
    # memory going on in each copy (docs/levels.md, "Fork at level 3")
    v=$(stdout_of "$b" "$KEEPER")
    [[ "$v" =~ ^[0-9]+$ ]] || fail "the process did not start: $v"
    # refused, nothing made: a command running, paused, a bad count
    api POST "/v1/sandboxes/$b/exec" -d '{"cmd": ["sleep", "30"], "background": true}' >/dev/null
    api_status POST "/v1/sandboxes/$b/fork" -d '{"count": 1}'
    assert_eq "$status_code" 409 "fork with a command running: $body"
    assert_contains "$body" "running"
    api_status POST "/v1/sandboxes/$b/processes/p1/signal" -d '{"signal": "KILL"}'
    for i in $(seq 50); do
        [ "$(api GET "/v1/sandboxes/$b/processes/p1" | jq -r .running)" = false ] && break
        sleep 0.1
    done
    api_status POST "/v1/sandboxes/$b/pause"
    api_status POST "/v1/sandboxes/$b/fork" -d '{"count": 1}'
    assert_eq "$status_code" 409 "fork of a paused VM: $body"
    assert_contains "$body" "resume"
    api_status POST "/v1/sandboxes/$b/resume"
    # a port given up and being made anew (the VMM stopped: an exec cut
    # off by its timeout, the next one's drain of its port unanswered):
    # refused, retry (a save could copy it half made anew in the guest)
    q=$(api GET "/v1/sandboxes/$b" | jq -r .pid)
    kill -STOP "$q"
    sb_exec "$b" '{"cmd": ["sleep", "30"], "timeout": 1}' >/dev/null
    sb_exec "$b" '{"cmd": ["sh", "-c", "echo later"]}' >"$BATS_TEST_TMPDIR/later" &
    local later=$!
    sleep 1 # the exec holds a port (draining it): no save of a stopped VM
    for i in $(seq 100); do
        api_status POST "/v1/sandboxes/$b/fork" -d '{"count": 1}'
        [[ "$body" == *"made anew"* ]] && break
        sleep 0.1
    done
    kill -CONT "$q"
    wait "$later"
    for i in $(seq 120); do
        grep -q 'agent port [0-3] made anew' "$BATS_TEST_TMPDIR/serve.log" && break
        sleep 0.1
    done
    assert_eq "$status_code" 409 "fork with a port being made anew: $body"
    assert_contains "$body" "made anew"
    assert_contains "$body" retry
    assert_eq "$(events_stdout <"$BATS_TEST_TMPDIR/later")" later "the exec after the port's drain: $(cat "$BATS_TEST_TMPDIR/later") $(grep "agent port" "$BATS_TEST_TMPDIR/serve.log")"
    api_status POST "/v1/sandboxes/$b/fork" -d '{"count": 0}'
    assert_eq "$status_code" 400 "fork count 0: $body"
    # no room for the guest's RAM where the save goes (b's VM directory: a
    # 8 MiB tmpfs over it in the service's namespace, its monitor's
    # directory bound back in): 507 before anything is written, nothing
    # left there
    q=$(api GET "/v1/sandboxes/$b" | jq -r .pid)
    vmdir=$(tr '\0' '\n' <"/proc/$q/cmdline" | grep -o '/tmp/agentjail-microvm-[^/,]*' | head -1)
    [ -S "$vmdir/vm/qmp.sock" ] || fail "b's VM directory: $vmdir"
    mkdir "$BATS_TEST_TMPDIR/small"
    nsenter -t "$SVC_PID" -m sh -ec "mount -t tmpfs -o size=8m tmpfs '$BATS_TEST_TMPDIR/small'
        mkdir '$BATS_TEST_TMPDIR/small/vm'; mount --bind '$vmdir/vm' '$BATS_TEST_TMPDIR/small/vm'
        mount --move '$BATS_TEST_TMPDIR/small' '$vmdir'"
    api_status POST "/v1/sandboxes/$b/fork" -d '{"count": 1}'
    left=$(nsenter -t "$SVC_PID" -m ls -A "$vmdir")
    # (lazily: the service holds vm/console open through the bind)
    nsenter -t "$SVC_PID" -m umount -l "$vmdir" || fail "the tmpfs over $vmdir stays"
    assert_eq "$status_code" 507 "a fork whose save has no room: $body"
    assert_contains "$body" insufficient_storage
    assert_contains "$body" "MiB free"
    assert_eq "$left" vm "what the refused fork left in b's directory"
    # a save that fails midway (qemu may write no more than 1 MiB: its
    # write fails): the migration ended, the VM continued; 500, no copy,
    # no save left
    fsize=$(prlimit --pid "$q" --fsize --raw --noheadings -o SOFT)
    prlimit --pid "$q" --fsize=1048576:
    api_status POST "/v1/sandboxes/$b/fork" -d '{"count": 1}'
    prlimit --pid "$q" --fsize="$fsize":
    assert_eq "$status_code" 500 "a fork whose save failed: $body"
    assert_contains "$body" fork_failed
    assert_contains "$body" "the VM's save"
    left=$(find /tmp/agentjail-microvm-* -maxdepth 1 -name 'fork-*' 2>/dev/null || true)
    [ -z "$left" ] || fail "a failed fork's save left: $left"
    assert_eq "$(ask "$b" failed)" "$v failed" "b's process after the failed saves"
    assert_eq "$(api GET /v1/sandboxes | jq '.sandboxes | length')" 1 "no copy was made"
    api_status POST "/v1/sandboxes/$b/fork" -d '{"count": 2}'
    assert_eq "$status_code" 201 "fork: $body"
    mapfile -t kids < <(jq -r '.sandboxes[].id' <<<"$body")
    assert_eq "${#kids[@]}" 2 "two copies: $body"
    assert_eq "$(jq -r '.sandboxes[0].isolation' <<<"$body")" microvm "the copies' level"
    for id in "${kids[@]}"; do
        tr '\0' ' ' <"/proc/$(api GET "/v1/sandboxes/$id" | jq -r .pid)/cmdline" | grep -q -- '-incoming fd:3' ||
            fail "copy $id not restored: $(pgrep -af qemu-system)"
    done
    # the save is gone from the disk once the copies run: no process holds
    # a file of it (deleted or not), nor is its directory left
    held=$(find /proc/[0-9]*/fd -lname '*/fork-*' 2>/dev/null || true)
    [ -z "$held" ] || fail "a fork's save still held: $held $(ls -l $held)"
    left=$(find /tmp/agentjail-microvm-* "$AGENTJAIL_STATE_DIR" -maxdepth 2 -name 'fork-*' 2>/dev/null || true)
    [ -z "$left" ] || fail "a fork's save left: $left"
    assert_eq "$(ask "${kids[0]}" kid0)" "$v kid0" "copy 0's process, with the value only its memory held"
    assert_eq "$(ask "${kids[1]}" kid1)" "$v kid1" "copy 1's process"
    assert_eq "$(stdout_of "${kids[0]}" 'cat /tmp/f')" parent "copy 0's /tmp"
    assert_eq "$(ask "$b" after)" "$v after" "the source after the fork"
    # independent: a file and a process of one are not the others', nor
    # their entropy
    stdout_of "${kids[0]}" 'echo kid0 > /tmp/f; kill -9 $(cat /tmp/p0)' >/dev/null
    assert_eq "$(stdout_of "${kids[1]}" 'cat /tmp/f')" parent "copy 1's /tmp after copy 0 wrote"
    assert_eq "$(stdout_of "${kids[0]}" 'cat /tmp/f')" kid0 "copy 0's own write"
    assert_eq "$(ask "${kids[1]}" again)" "$v again" "copy 1's process after copy 0's were killed"
    o0=$(stdout_of "${kids[0]}" "$peek")
    o1=$(stdout_of "${kids[1]}" "$peek")
    [ "$(sed -n 3p <<<"$o0" | wc -c)" -eq 33 ] && [ "$(sed -n 3p <<<"$o0")" != "$(sed -n 3p <<<"$o1")" ] ||
        fail "two copies gave the same random bytes (or none): $o0 / $o1"
    for id in "$b" "${kids[@]}"; do
        api_status DELETE "/v1/sandboxes/$id"
        assert_eq "$status_code" 200
    done
    # a pooled VM that does not take its identity at hand-out (its qemu
    # stopped): dropped after 5 s, killed, the snapshot removed (its
    # state and RAM), and the create served by a VM booted anew, saved
    pool_is ready 1
    pooled=$(pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm')
    [[ "$pooled" =~ ^[0-9]+$ ]] || fail "not the pool's one VM: $(pgrep -af qemu-system)"
    kill -STOP "$pooled"
    api_status POST /v1/sandboxes -d '{"isolation": "microvm", "image": "tiny"}'
    assert_eq "$status_code" 201 "the create after a failed hand-out: $body $(tail -5 "$BATS_TEST_TMPDIR/serve.log")"
    e=$(jq -er .id <<<"$body")
    for _ in $(seq 50); do kill -0 "$pooled" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$pooled" 2>/dev/null || fail "the stopped pooled VM lives on"
    assert_contains "$(cat "$BATS_TEST_TMPDIR/serve.log")" "failed its hand-out"
    assert_eq "$(stdout_of "$e" 'cat /etc/motd')" base "the sandbox built instead"
    tr '\0' ' ' <"/proc/$(api GET "/v1/sandboxes/$e" | jq -r .pid)/cmdline" | grep -qv -- '-incoming' ||
        fail "the sandbox built instead was restored"
    [ -e "$snapf" ] && [ -e "${snapf%.vmstate}.ram" ] || fail "the new VM's snapshot: $(ls "$STATE/microvm")"
    api_status DELETE "/v1/sandboxes/$e"
    assert_eq "$status_code" 200
    # the pool's refill drained clean at shutdown
    pool_is built 4
    # other env, pids and memory (below the VM's RAM): served from the
    # pool, the limits set in the guest's command cgroup at hand-out
    # (docs/api.md, "Pools"): a write past the memory is OOM-killed,
    # a fork bomb stops at the pids (its agent one of them)
    pool_is ready 1
    hits=$(api GET /v1/pools | jq -r '.pools[0].hits')
    l=$(api POST /v1/sandboxes -d '{"isolation": "microvm", "image": "tiny", "env": {"Y": "why"}, "pids": 12, "memory": "160m"}' | jq -er .id)
    assert_eq "$(api GET /v1/pools | jq -r '.pools[0].hits')" $((hits + 1)) "other limits served by the pool"
    # (the writer the OOM killer's choice; its file unlinked: freed with it)
    out=$(stdout_of "$l" 'echo $Y; sh -c "echo 1000 >/proc/self/oom_score_adj; exec 3>/tmp/big; rm /tmp/big; exec head -c 180000000 /dev/zero >&3"; echo $?')
    assert_eq "$(tr '\n' ' ' <<<"$out")" "why 137 " "the env, and 172 MiB of /tmp written under a 160 MiB memory: $out"
    n=$(stdout_of "$l" 'sh -c "i=0; while [ \$i -lt 40 ]; do sleep 2 </dev/null >/dev/null 2>&1 & i=\$((i + 1)); echo \$i >/tmp/n; done" 2>/dev/null; read n </tmp/n; echo $n')
    [ "$n" -ge 5 ] && [ "$n" -le 14 ] || fail "a fork bomb under pids 12 (16 with the agent ports): $n processes"
    api_status DELETE "/v1/sandboxes/$l"
    assert_eq "$status_code" 200
    # another disk (8 MiB, the pool's 512): the pool's VM itself (its
    # qemu), its writable tmpfs resized at hand-out; a write past it ENOSPC
    pool_is ready 1
    pooled=$(pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm')
    [[ "$pooled" =~ ^[0-9]+$ ]] || fail "not the pool's one VM: $(pgrep -af qemu-system)"
    k=$(api POST /v1/sandboxes -d '{"isolation": "microvm", "image": "tiny", "disk": "8m"}' | jq -er .id)
    assert_eq "$(api GET "/v1/sandboxes/$k" | jq -r .pid)" "$pooled" "another disk served by the pool's VM"
    out=$(stdout_of "$k" 'head -c 6000000 /dev/zero >/tmp/a && echo fits; head -c 3000000 /dev/zero 2>&1 >/tmp/b; echo $?')
    [[ "$(tr '\n' ' ' <<<"$out")" == "fits "*"No space left on device"*" 1 " ]] || fail "6 MB, then 3 MB more, on an 8 MiB disk: $out"
    api_status DELETE "/v1/sandboxes/$k"
    assert_eq "$status_code" 200
    # more memory than the pool's VMs (1 GiB): a fresh VM of that RAM
    big=$(api POST /v1/sandboxes -d '{"isolation": "microvm", "image": "tiny", "memory": "1280m"}' | jq -er .id)
    tr '\0' ' ' <"/proc/$(api GET "/v1/sandboxes/$big" | jq -r .pid)/cmdline" | grep -q -- '-m 1280M ' ||
        fail "the fresh VM's RAM: $(tr '\0' ' ' <"/proc/$(api GET "/v1/sandboxes/$big" | jq -r .pid)/cmdline")"
    api_status DELETE "/v1/sandboxes/$big"
    assert_eq "$status_code" 200
    svc_stop
    mv_none_left
    ! command -v nft >/dev/null || [ -z "$(nft list tables 2>/dev/null | grep agentjail)" ] || fail "nft tables left: $(nft list tables)"
    # a service with the test knobs (docs/levels.md, "Test knobs"): a
    # save's bound of 1 ms, an agent idle cut-off of 2 s; its VM restored
    export AGENTJAIL_MICROVM_TEST_SAVE_MS=1 AGENTJAIL_MICROVM_TEST_AGENT_IDLE_MS=2000
    svc_start
    unset AGENTJAIL_MICROVM_TEST_SAVE_MS AGENTJAIL_MICROVM_TEST_AGENT_IDLE_MS
    f=$(api POST /v1/sandboxes -d '{"isolation": "microvm", "image": "tiny"}' | jq -er .id)
    v=$(stdout_of "$f" "$KEEPER")
    [[ "$v" =~ ^[0-9]+$ ]] || fail "the process did not start: $v"
    # a fork's save not done in its bound: cancelled (its end waited for),
    # the VM goes on with its process, no save left, 500 saying so
    api_status POST "/v1/sandboxes/$f/fork" -d '{"count": 1}'
    assert_eq "$status_code" 500 "a fork whose save was not done in time: $body"
    assert_contains "$body" fork_failed
    assert_contains "$body" "not done in 1 ms"
    left=$(find /tmp/agentjail-microvm-* -maxdepth 1 -name 'fork-*' 2>/dev/null || true)
    [ -z "$left" ] || fail "a cancelled save left: $left"
    assert_eq "$(ask "$f" bound)" "$v bound" "the process after the cancelled save"
    # a file read whose agent a command stopped (SIGSTOP): the host's
    # cut-off after 2 s idle, then its stop, on which the guest's init
    # kills the stopped agent; an error, and the VM serves on
    out=$(stdout_of "$f" "head -c 33554432 /dev/zero >/tmp/big; ${STOPPER//NAME/stopped}")
    assert_eq "$out" started "the stopper"
    t0=$(date +%s)
    code=$(api GET "/v1/sandboxes/$f/files?path=/tmp/big" -o "$BATS_TEST_TMPDIR/big" -w '%{http_code}')
    took=$(($(date +%s) - t0))
    [ "$code" != 200 ] || fail "the read of a stopped agent succeeded ($(stat -c %s "$BATS_TEST_TMPDIR/big") bytes)"
    assert_contains "$(cat "$BATS_TEST_TMPDIR/big")" "sent nothing for 2000 ms"
    [ "$took" -ge 2 ] && [ "$took" -le 20 ] || fail "the cut-off came after $took s"
    n=$(stdout_of "$f" 'cat /tmp/stopped')
    [[ "$n" =~ ^[0-9]+$ ]] || fail "no agent was stopped: $n"
    assert_eq "$(stdout_of "$f" "cat /proc/$n/stat 2>/dev/null || echo gone")" gone "the stopped agent after the host's stop"
    assert_eq "$(stdout_of "$f" 'cat /tmp/f')" parent "an exec after the cut-off"
    api_status GET "/v1/sandboxes/$f/files?path=/tmp/f"
    assert_eq "$status_code $body" "200 parent"$'\n' "a file read after the cut-off"
    # a snapshot's walker stopped before it freezes the guest's commands:
    # init kills it (the host's request unread), the host's cut-off ends
    # the snapshot, nothing stored, the guest's processes not left frozen
    local try
    for try in 1 2 3; do
        out=$(stdout_of "$f" "${STOPPER//NAME/walker}")
        assert_eq "$out" started "the stopper"
        t0=$(date +%s)
        api_status POST "/v1/sandboxes/$f/snapshot" -d '{"name": "stopped-walker"}'
        took=$(($(date +%s) - t0))
        [ "$status_code" = 201 ] || break
        # the walker froze the stoppers (commands too) before they caught
        # it, a race of the test's own (more likely under load): the
        # stoppers catch a later agent instead, whose request is cut off;
        # then they are done, and the test tries again
        "$AJ" image rm stopped-walker >/dev/null
        for _ in 1 2 3 4 5 6 7 8; do
            api_status GET "/v1/sandboxes/$f/files?path=/tmp/walker"
            [ "$status_code" != 200 ] || break
        done
        assert_eq "$status_code" 200 "the stoppers, after a walker they missed"
        for k in "" .1 .2 .3; do
            api_status DELETE "/v1/sandboxes/$f/files?path=/tmp/walker$k"
        done
        echo "# try $try: the snapshot's walker froze its stoppers first" >&3
    done
    assert_eq "$status_code" 500 "a snapshot whose walker was stopped: $body"
    assert_contains "$body" snapshot_failed
    assert_contains "$body" "2000 ms"
    [ "$took" -le 20 ] || fail "the snapshot's cut-off came after $took s"
    n=$(stdout_of "$f" 'cat /tmp/walker')
    [[ "$n" =~ ^[0-9]+$ ]] || fail "no walker was stopped: $n"
    assert_eq "$(stdout_of "$f" "cat /proc/$n/stat 2>/dev/null || echo gone")" gone "the stopped walker after the host's stop"
    assert_eq "$(ask "$f" walk)" "$v walk" "the process after the stopped snapshot"
    run "$AJ" image inspect stopped-walker
    [ "$status" -ne 0 ] || fail "the failed snapshot stored an image: $output"
    api_status DELETE "/v1/sandboxes/$f"
    assert_eq "$status_code" 200
    svc_stop
    mv_none_left
    # `image rm`: the image's squashfs and snapshots go with it (found by
    # what they hold: its digest's files, its marker), the other's stay
    holding "$mark_a" "$STATE/microvm" >/dev/null || fail "the first image's files hold no marker: $(ls "$STATE/microvm")"
    [ "$(holding "$mark_b" "$STATE/microvm" | wc -l)" -ge 2 ] || fail "the other image's squashfs and snapshot: $(ls "$STATE/microvm")"
    digest=$("$AJ" image inspect tiny | jq -r '.digest | sub("sha256:"; "")')
    before=$(cd "$STATE/microvm" && ls | sort)
    run --separate-stderr "$AJ" image rm no-such-image
    assert_status 125
    assert_eq "$(cd "$STATE/microvm" && ls | sort)" "$before" "a failed rm changed the cache"
    "$AJ" image rm tiny
    [ -z "$(holding "$mark_a" "$STATE")" ] || fail "the removed image's files stay: $(holding "$mark_a" "$STATE")"
    [ -z "$(grep -rlF "$digest" "$STATE/microvm" 2>/dev/null; ls "$STATE/microvm" | grep -F "$digest")" ] || fail "named after the removed image: $(ls "$STATE/microvm")"
    [ "$(holding "$mark_b" "$STATE/microvm" | wc -l)" -ge 2 ] || fail "the other image's files went too: $(ls "$STATE/microvm")"
    assert_eq "$(cd "$STATE/microvm" && ls snap-old* | tr '\n' ' ')" "$(grep '^snap-old' <<<"$before" | tr '\n' ' ')" "other snapshots kept"
}
