#!/usr/bin/env bats
# Images: build (from a directory, a tar, Debian via mmdebstrap, a recipe),
# the store (digests, names, ls/inspect/rm) and `run --image`.

load helpers

setup() {
    require_root
    aj_setup
    export AGENTJAIL_STATE_DIR=$T/state
    TREE=$T/tree
    mkdir -p "$TREE/bin" "$TREE/etc"
    cp "$PROBE" "$TREE/bin/probe"
    echo "from the image" >"$TREE/etc/motd"
    chmod -R a+rX "$TREE"
}

teardown() { aj_teardown; }

img() { run --separate-stderr aj_timeout "$AJ" image "$@"; }

@test "image build --from-dir: stored by digest, listed, inspected, run read-only" {
    img build tiny --from-dir "$TREE" --warmup "probe true"
    assert_status 0
    [[ "$stderr" == *"image tiny: sha256:"* ]] || fail "$stderr"
    img inspect tiny
    assert_status 0
    local digest
    digest=$(jq -r .digest <<<"$output")
    [[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || fail "digest: $digest"
    assert_eq "$(jq -r .source <<<"$output")" "dir:$TREE" source
    assert_eq "$(jq -r .warmup <<<"$output")" "probe true" warmup
    assert_eq "$(jq -r .files <<<"$output")" 4 files
    [ -d "$AGENTJAIL_STATE_DIR/images/${digest#sha256:}/rootfs/bin" ] || fail "not stored by digest"
    img ls
    assert_status 0
    [[ "$output" == *"tiny "*"${digest:0:19}"*"dir:$TREE"* ]] || fail "ls: $output"
    # the sandbox reads the image and writes over it in its own layer only
    run --separate-stderr aj_timeout "$AJ" run --image tiny -- /bin/probe read /etc/motd
    assert_status 0
    assert_eq "$output" "from the image" motd
    run --separate-stderr aj_timeout "$AJ" run --image tiny -- /bin/probe write /etc/motd changed
    assert_status 0
    run --separate-stderr aj_timeout "$AJ" run --image tiny -- /bin/probe read /etc/motd
    assert_eq "$output" "from the image" "motd after a sandbox wrote it"
    assert_eq "$(cat "$AGENTJAIL_STATE_DIR/images/${digest#sha256:}/rootfs/etc/motd")" "from the image" "stored file"
}

@test "image digests: same content shares one copy, any change is a new digest; rm keeps shared content" {
    img build a --from-dir "$TREE"
    assert_status 0
    (cd "$TREE" && tar --numeric-owner -cf "$T/tree.tar" .)
    img build b --from-tar "$T/tree.tar"
    assert_status 0
    local da db dc
    da=$(aj_timeout "$AJ" image inspect a | jq -r .digest)
    db=$(aj_timeout "$AJ" image inspect b | jq -r .digest)
    assert_eq "$db" "$da" "digest of the same tree from a tar"
    chmod 0600 "$TREE/etc/motd"
    img build c --from-dir "$TREE"
    dc=$(aj_timeout "$AJ" image inspect c | jq -r .digest)
    assert_ne "$dc" "$da" "digest after a mode change"
    assert_eq "$(find "$AGENTJAIL_STATE_DIR/images" -mindepth 1 -maxdepth 1 -name '[0-9a-f]*' | wc -l)" 2 "stored copies"
    img rm a
    assert_status 0
    [ -d "$AGENTJAIL_STATE_DIR/images/${da#sha256:}" ] || fail "content of b removed with a"
    run --separate-stderr aj_timeout "$AJ" run --image b -- /bin/probe read /etc/motd
    assert_eq "$output" "from the image" "b after rm a"
    img rm b
    [ ! -e "$AGENTJAIL_STATE_DIR/images/${da#sha256:}" ] || fail "content left after its last name"
    img rm c
    assert_eq "$(ls -A "$AGENTJAIL_STATE_DIR/images" | tr '\n' ' ')" "names " "what rm leaves"
    img ls --json
    assert_eq "$output" "[]" "ls after rm"
}

@test "bad image input fails with one clear line and changes nothing" {
    img build good --from-dir "$TREE"
    assert_status 0
    local before
    before=$(find "$AGENTJAIL_STATE_DIR" | sort)
    local name
    for name in Upper ../x "" .hidden "$(printf 'a%.0s' {1..70})" "a/b"; do
        img build "$name" --from-dir "$TREE"
        assert_status 125
        assert_one_error_line
    done
    img build x
    assert_status 125
    img build x --from-dir "$TREE" --from-tar "$T/none.tar"
    assert_status 125
    img build x --from-dir relative/dir
    assert_status 125
    img build x --from-dir "$TREE" --packages python3
    assert_status 125
    img build x --from debian:-evil
    assert_status 125
    img build x --from ubuntu:jammy
    assert_status 125
    img build x --from debian:bookworm --packages 'a,--evil'
    assert_status 125
    img build x --from-dir "$T/missing"
    assert_status 125
    img build x --from-tar "$T/missing.tar"
    assert_status 125
    echo '{"from": "debian:bookworm", "packages": "python3"}' >"$T/bad.json"
    img build x --recipe "$T/bad.json"
    assert_status 125
    assert_one_error_line
    img inspect nope
    assert_status 125
    assert_one_error_line
    img rm nope
    assert_status 125
    run --separate-stderr aj_timeout "$AJ" run --image nope -- true
    assert_status 125
    assert_one_error_line
    run --separate-stderr aj_timeout "$AJ" run --image good --rootfs "$TREE" -- true
    assert_status 125
    assert_one_error_line
    run --separate-stderr timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
        env AGENTJAIL_STATE_DIR="$AGENTJAIL_STATE_DIR" "$AJ_REAL" image build y --from-dir "$TREE"
    assert_status 125
    assert_one_error_line
    assert_eq "$(find "$AGENTJAIL_STATE_DIR" | sort)" "$before" "state dir after bad input"
}

@test "image build --from-oci: docker save and OCI layouts, layers, whiteouts; hostile archives refused" {
    mkdir -p "$T/oci" "$T/hostdir"
    echo "host file" >"$T/hostfile"
    echo "inside a host directory" >"$T/hostdir/inside"
    python3 "$BATS_TEST_DIRNAME/mkoci.py" "$T/oci" "$PROBE" "$T/hostdir" "$T/hostfile"
    img build fromdocker --from-oci "$T/oci/docker.tar"
    assert_status 0
    [[ "$stderr" == *"1 device nodes skipped"* ]] || fail "$stderr"
    img build fromoci --from-oci "$T/oci/oci.tar"
    assert_status 0
    local dd do
    dd=$(aj_timeout "$AJ" image inspect fromdocker | jq -r .digest)
    do=$(aj_timeout "$AJ" image inspect fromoci | jq -r .digest)
    assert_eq "$do" "$dd" "the same layers in both layouts give the same digest"
    # (one copy of that content: its record keeps the first source)
    assert_eq "$(aj_timeout "$AJ" image inspect fromoci | jq -r .source)" "oci:$T/oci/docker.tar" source
    # the upper layer wins, whiteouts removed what the lower one made,
    # a symlink replaced by a file never wrote through it
    run --separate-stderr aj_timeout "$AJ" run --image fromoci -- /bin/probe read /etc/motd
    assert_status 0
    assert_eq "$output" "top" motd
    local root=$AGENTJAIL_STATE_DIR/images/${do#sha256:}/rootfs
    [ ! -e "$root/etc/gone" ] || fail "whiteout .wh.gone not applied"
    assert_eq "$(ls "$root/etc/dir" | tr '\n' ' ')" "c " "opaque directory"
    assert_eq "$(cat "$root/etc/foo")" "replaced" "etc/foo"
    [ ! -L "$root/etc/foo" ] || fail "etc/foo is still a link"
    assert_eq "$(cat "$root/etc/motd.link")" "base" "hard link of the first layer's motd"
    [ ! -e "$root/dev/null" ] || fail "device node imported"
    assert_eq "$(cat "$T/hostfile")" "host file" "host file"
    # hostile archives: refused with one line; nothing on the host or in the store
    local before
    before=$(find "$AGENTJAIL_STATE_DIR" | sort)
    local a
    for a in evil-symlink evil-dotdot evil-hardlink evil-hardlink-via-symlink evil-whiteout \
        evil-outer evil-layerpath two-images not-a-tar missing; do
        img build x --from-oci "$T/oci/$a.tar"
        assert_status 125
        mapfile -t stderr_lines < <(grep -v '^agentjail: building image x\.\.\.$' <<<"$stderr")
        assert_one_error_line
    done
    assert_eq "$(ls -A "$T/hostdir")" inside "written through a layer's symlink"
    assert_eq "$(stat -c %h "$T/hostdir/inside")" 1 "a hard link to a host file"
    [ ! -e "$T/pwned" ] && [ ! -e "$T/oci/pwned" ] && [ ! -e "$AGENTJAIL_STATE_DIR/pwned" ] ||
        fail "a member climbed out"
    assert_eq "$(cat "$T/hostfile")" "host file" "host file after the hostile archives"
    assert_eq "$(find "$AGENTJAIL_STATE_DIR" | sort)" "$before" "state dir after hostile archives"
}

@test "image build --recipe from Debian (mmdebstrap): python runs in it" {
    command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed (scripts/setup.sh installs it)"
    # a download of ~40 MB from the Debian mirror: once per suite, in the plain pass
    [ -z "${AJ_SANITIZED:-}" ] || skip "runs in the plain pass"
    cat >"$T/recipe.json" <<'JSON'
{"from": "debian:bookworm", "packages": ["python3-minimal"], "warmup": "python3 -c 'import json'"}
JSON
    run --separate-stderr timeout -k 5 900 "$AJ" image build pymini --recipe "$T/recipe.json"
    assert_status 0
    img inspect pymini
    assert_eq "$(jq -r .source <<<"$output")" "debian:bookworm +python3-minimal" source
    assert_eq "$(jq -r .warmup <<<"$output")" "python3 -c 'import json'" warmup
    echo "1,2,3" >"$WS/data.csv"
    run --separate-stderr aj_timeout "$AJ" run --image pymini --workspace "$WS" -- \
        python3 -c 'import sys; print(sum(int(x) for x in open("data.csv").read().split(",")), sys.version_info[0])'
    assert_status 0
    assert_eq "$output" "6 3" "python in the image"
    # the image's own /etc, not the host's synthesized one; no host shadow
    run --separate-stderr aj_timeout "$AJ" run --image pymini -- sh -c 'cat /etc/debian_version; id -u'
    assert_status 0
    [[ "$output" == 12* ]] || fail "not bookworm: $output"
    jq -e '.packages | index("python3-pandas")' "$BATS_TEST_DIRNAME/../../images/python.json" >/dev/null ||
        fail "the shipped python recipe lost pandas"
}

@test "run --image: the image's own /etc, agentjail's passwd, group, hosts, hostname, resolv.conf, nsswitch.conf over it" {
    mkdir -p "$TREE/etc/chromium.d"
    echo 'export CHROMIUM_FLAGS="--from-image"' >"$TREE/etc/chromium.d/default-flags"
    echo "imageuser:x:4242:4242::/home/imageuser:/bin/sh" >"$TREE/etc/passwd"
    echo "10.9.9.9 imagehost" >"$TREE/etc/hosts"
    echo "host file" >"$T/victim"
    ln -s "$T/victim" "$TREE/etc/hostname" # absolute: a host path if followed outside
    chmod -R a+rX "$TREE"
    img build etcimg --from-dir "$TREE"
    assert_status 0
    local f all=""
    for f in /etc/chromium.d/default-flags /etc/motd /etc/passwd /etc/hosts /etc/hostname; do
        run --separate-stderr aj_timeout "$AJ" run --image etcimg --user 1000 --hostname boxname -- \
            /bin/probe read "$f"
        assert_status 0
        all+="$output"$'\n'
    done
    output=$all
    # the image's own files are there; agentjail's replace its passwd and hosts
    assert_contains "$output" "--from-image"
    assert_contains "$output" "from the image"
    assert_contains "$output" "agent:x:1000:1000"
    assert_contains "$output" "127.0.0.1	localhost"
    assert_contains "$output" "boxname"
    [[ "$output" != *imageuser* && "$output" != *imagehost* ]] || fail "the image's passwd or hosts: $output"
    # the write went into the sandbox's layer: not through the link, not into the image
    assert_eq "$(cat "$T/victim")" "host file" "the host file behind the symlink"
    local d
    d=$(jq -r .digest < <("$AJ" image inspect etcimg))
    [ -L "$AGENTJAIL_STATE_DIR/images/${d#sha256:}/rootfs/etc/hostname" ] || fail "the image was changed"
    assert_contains "$(cat "$AGENTJAIL_STATE_DIR/images/${d#sha256:}/rootfs/etc/passwd")" imageuser
    # the plan says so
    run --separate-stderr "$AJ" run --image etcimg --print-plan -- true
    assert_eq "$(jq -c .etc.synthesized <<<"$output")" \
        '["passwd","group","hosts","hostname","resolv.conf","nsswitch.conf"]'
}
