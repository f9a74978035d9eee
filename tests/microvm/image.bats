#!/usr/bin/env bats
# Level 3 on an image (docs/levels.md, "The root"): --image/--rootfs as a
# read-only squashfs on virtio-blk (cached per image digest in the state
# directory), under the guest's tmpfs overlay, with the files agentjail owns
# in /etc over the image's. TCG (forced, as in run.bats): three boots in all.

load ../service/helpers

setup() {
    require_root
    command -v qemu-system-x86_64 >/dev/null || skip "qemu is not installed (scripts/setup.sh)"
    [ -r /var/cache/agentjail/microvm/vmlinux ] || skip "no guest kernel (scripts/setup.sh)"
    export AGENTJAIL_MICROVM_ACCEL=tcg
    MV_BEFORE=$(ls -d /tmp/agentjail-microvm-* 2>/dev/null | sort || true)
    aj_setup
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/state
    mk_tiny_root "$BATS_TEST_TMPDIR/tree" sh cat ls od date tr head
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

@test "microvm --image/--rootfs: the image's root on a read-only disk, the host's /usr unseen" {
    run --separate-stderr timeout -k 5 "$AJ_TIMEOUT" "$AJ" run -q --isolation microvm --image tiny -- /bin/sh -c "$LOOK"
    assert_status 0
    [[ "$output" == base*no-usr*agentjail*w ]] || fail "the image's root: $output ($stderr)"
    # one squashfs per image digest, cached; the image's tree untouched
    digest=$("$AJ" image inspect tiny | jq -r '.digest | sub("sha256:"; "")')
    [ -s "$AGENTJAIL_STATE_DIR/microvm/rootfs-$digest.sqfs" ] || fail "no cached squashfs: $(ls "$AGENTJAIL_STATE_DIR/microvm")"
    [ ! -e "$AGENTJAIL_STATE_DIR/images/$digest/rootfs/bin/new" ] || fail "the guest wrote into the image"
    # a --rootfs directory: its own squashfs, made for the VM and gone with it
    echo other >"$BATS_TEST_TMPDIR/tree/etc/motd"
    run --separate-stderr timeout -k 5 "$AJ_TIMEOUT" "$AJ" run -q --isolation microvm --rootfs "$BATS_TEST_TMPDIR/tree" -- /bin/sh -c "$LOOK"
    assert_status 0
    [[ "$output" == other*no-usr*agentjail*w ]] || fail "the --rootfs: $output ($stderr)"
    [ "$(ls "$AGENTJAIL_STATE_DIR/microvm" | grep -c '\.sqfs$')" -eq 1 ] || fail "a --rootfs was cached"
    mv_none_left
}

@test "serve microvm: a sandbox on an image; the next ones restored from its snapshot, each its own" {
    svc_start
    body='{"isolation": "microvm", "image": "tiny"}'
    # 8 older snapshots of other configurations and a save a dead process
    # left: a save keeps the 7 newest and its own, and removes the leftover
    mkdir -p "$STATE/microvm"
    for i in 1 2 3 4 5 6 7 8; do
        echo old >"$STATE/microvm/snap-old$i.vmstate"
        touch -d "$((10 - i)) hours ago" "$STATE/microvm/snap-old$i.vmstate"
    done
    echo ram >"$STATE/microvm/snap-old1.ram"
    echo partial >"$STATE/microvm/snap-old9.vmstate.999999999.tmp"
    # the first boots, and is saved once ready: its devices in
    # STATE/microvm/snap-KEY.vmstate, its RAM in snap-KEY.ram
    a=$(api POST /v1/sandboxes -d "$body" | jq -er .id)
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
    # the next two: restored (qemu -incoming), not booted
    b=$(api POST /v1/sandboxes -d "$body" | jq -er .id)
    c=$(api POST /v1/sandboxes -d "$body" | jq -er .id)
    qemus=$(pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm.* -incoming defer')
    [ "$(wc -w <<<"$qemus")" -eq 2 ] || fail "not restored: $(pgrep -af qemu-system)"
    # each maps the snapshot's RAM (a sealed memfd of the file) private:
    # copy-on-write; no one can write it, and a guest's writes stay its own
    for q in $qemus; do
        grep -qE "^[0-9a-f-]+ rw-p .* /memfd:$(basename "$ram") \(deleted\)$" "/proc/$q/maps" ||
            fail "qemu $q does not map $ram private: $(grep memfd "/proc/$q/maps")"
        run sh -c "printf x >>/proc/$q/fd/4"
        [ "$status" -ne 0 ] || fail "the snapshot's RAM in qemu $q is writable"
    done
    out=$(sb_exec "$b" '{"cmd": ["sh", "-c", "head -c 16000000 /dev/urandom >/tmp/fill && echo ok"]}')
    assert_eq "$(events_stdout <<<"$out")" ok "a guest write of 16 MB"
    assert_eq "$(sha256sum <"$ram")" "$sum" "the snapshot's RAM file after a guest write"
    cmp -s "$ram" "/proc/${qemus%%$'\n'*}/fd/4" || fail "the RAM qemu maps is not the snapshot's after a guest write"
    # each its own: the image's files and a fresh layer, its own entropy
    # (the same memory would give the same bytes), the host's time
    peek='cat /etc/motd; cat /bin/new 2>/dev/null || echo fresh; od -An -tx1 -N16 /dev/urandom | tr -d " "; date +%s'
    ob=$(sb_exec "$b" "$(jq -nc --arg c "$peek" '{cmd: ["/bin/sh", "-c", $c]}')" | events_stdout)
    oc=$(sb_exec "$c" "$(jq -nc --arg c "$peek" '{cmd: ["/bin/sh", "-c", $c]}')" | events_stdout)
    assert_eq "$(sed -n 1,2p <<<"$ob" | tr '\n' ' ')" "base fresh " "a restored VM's root"
    [ "$(sed -n 3p <<<"$ob" | wc -c)" -eq 33 ] && [ "$(sed -n 3p <<<"$ob")" != "$(sed -n 3p <<<"$oc")" ] ||
        fail "two restored VMs gave the same random bytes (or none): $ob / $oc"
    t=$(sed -n 4p <<<"$oc")
    [ $((t - $(date +%s))) -le 5 ] && [ $(($(date +%s) - t)) -le 30 ] || fail "the restored VM's clock: $t, host $(date +%s): $oc"
    for id in "$a" "$b" "$c"; do
        api_status DELETE "/v1/sandboxes/$id"
        assert_eq "$status_code" 200
    done
    mv_none_left
}
