#!/usr/bin/env bats
# A hostile root can't make agentjail write on the host (issue 20, part 4).
#
# A --rootfs directory, or an image imported from an OCI archive and run
# with --image, plants symlinks at every place agentjail mounts onto (home,
# /tmp, /workspace, /dev, /proc, /etc and extra --ro/--rw destinations),
# and a workspace plants one under a nested bind's destination. The links
# are absolute (`home -> /oldroot/<host dir>`), relative ones that climb out
# (`../../../../oldroot/...`), chained, with `..` after a real directory, a
# host path as such, and a loop. agentjail builds the sandbox's mount tree
# before it pivots, while the host's root is still at /oldroot: every one
# of those targets must be resolved inside the new root (the link followed
# as if the root were /), or refused with exit 125 and a message naming the
# path.
#
# Host check, not by name: a before/after listing (path, owner, group,
# mode, size, mtime) of the host's writable trees (see host_listing): the
# canary directories the links point at (world-writable, so that the
# sandbox's ids could write there) and this test's own tree must not change
# at all; /tmp, /var/tmp, /run, /dev/shm, $HOME and /var/lib/agentjail must
# have no new or changed entry of an owner other than root; and no file in
# them is owned by a sandbox id. Inside: the mount shows up at the place the
# link names inside the root (probe mounts).

load helpers

VARIANTS=(abs rel chain dotdot host loop)
BAD=() # runs that neither went through with the link resolved inside nor were refused

setup() {
    require_root
    require_level
    aj_setup
    export AGENTJAIL_STATE_DIR=$T/state
    mkdir -m 0755 "$AGENTJAIL_STATE_DIR"
    # the host directories the links point at: where the sandbox's ids
    # could write if agentjail followed a link out (every parent 0755)
    CROOT=$(mktemp -d /tmp/ajtest-rootfs.XXXXXX)
    chmod 0755 "$CROOT"
    C=$CROOT/canary
    mkdir -p "$C" "$T/src-ro" "$T/src-rw"
    chmod 1777 "$C"
    echo ro >"$T/src-ro/f"
    chmod -R a+rX "$T"
    BASE=$T/base # a minimal root: /bin/probe and the directories a root has
    mkdir -p "$BASE/bin" "$BASE/etc" "$BASE/usr"
    cp "$PROBE" "$BASE/bin/probe"
    echo image >"$BASE/etc/motd"
    chmod -R a+rX "$BASE"
    # the state directory's caches (/dev and /etc copies) exist before the
    # host is listed: the first run makes them
    aj_timeout "$AJ" run "${AJ_LEVEL[@]}" --rootfs "$BASE" -- /bin/probe exit 0
    aj_timeout "$AJ" run "${AJ_LEVEL[@]}" -- /bin/true
}

teardown() {
    local rc=0
    aj_teardown || rc=1
    rm -rf "${CROOT:?}"
    return $rc
}

# The host's writable trees, one line per file: path, owner, group, mode,
# size, mtime. The trees this test made (the canaries, $T with its state
# directory) must not change at all. The machine's shared trees (/tmp,
# /var/tmp, /run, /dev/shm, $HOME, /var/lib/agentjail) see other work
# beside the suite (root's: builds, services): there, any entry that is not
# root's own must be the same before and after: a sandbox (or agentjail
# for it, before pivot) writes with the sandbox's host ids. The tool
# machinery's job directories and this bats run's own files are left out;
# so are the state directories' caches, made by the first run.
host_listing() {
    local fmt='%p %U %G %m %s %T@\n'
    {
        # (directories without their mtime: the workspace guard's placeholders
        # are made and removed again, protect.c; their manifests' lock stays)
        find "$C" "$T" \( -path "$AGENTJAIL_STATE_DIR/dev-cache" -o -path "$AGENTJAIL_STATE_DIR/etc-cache" \
            -o -path "$AGENTJAIL_STATE_DIR/protect" \) -prune -o -type d -printf "own %p %U %G %m dir\n" \
            -o -printf "own $fmt"
        {
            find /tmp /var/tmp /run /dev/shm \( -path "$BATS_RUN_TMPDIR" -o -path '/tmp/bash_jobs.*' \
                -o -path '/tmp/bash_tool_*' -o -path /run/netns \) -prune -o -printf "$fmt"
            find "$HOME" -maxdepth 1 -path "$HOME/.claude" -prune -o -printf "$fmt"
            find /var/lib/agentjail \( -path '*/dev-cache' -o -path '*/etc-cache' \) -prune \
                -o -printf "$fmt" 2>/dev/null
        } | awk '$2 != 0 || $3 != 0 { print "shared", $0 }'
    } | LC_ALL=C sort
}

# Files on those trees owned by a sandbox id (what a sandbox writes there).
sandbox_owned() {
    find /tmp /var/tmp /run /dev/shm "$C" "$T" \( -path '/tmp/bash_jobs.*' -o -path '/tmp/bash_tool_*' \) \
        -prune -o \( -uid +"$((SANDBOX_UID_MIN - 1))" -o -gid +"$((SANDBOX_UID_MIN - 1))" \) -print 2>/dev/null
}

snapshot() {
    host_listing >"$BATS_TEST_TMPDIR/host.before"
    sandbox_owned >"$BATS_TEST_TMPDIR/owned.before"
}

assert_host_unchanged() {
    host_listing >"$BATS_TEST_TMPDIR/host.after"
    sandbox_owned >"$BATS_TEST_TMPDIR/owned.after"
    local d o
    d=$(diff "$BATS_TEST_TMPDIR/host.before" "$BATS_TEST_TMPDIR/host.after" || true)
    o=$(LC_ALL=C comm -13 <(sort "$BATS_TEST_TMPDIR/owned.before") <(sort "$BATS_TEST_TMPDIR/owned.after"))
    [ -z "$d" ] && [ -z "$o" ] && return 0
    echo "--- host changed (before/after listing):" >&2
    printf '%s\n' "$d" >&2
    echo "--- new files owned by a sandbox id:" >&2
    printf '%s\n' "$o" >&2
    fail "the hostile root made agentjail write on the host"
}

# The host first (every run of the test done), then what went wrong inside.
assert_host_unchanged_and_inside() {
    local rc=0
    assert_host_unchanged || rc=1
    if [ "${#BAD[@]}" -gt 0 ]; then
        echo "not resolved inside the root, nor refused: ${BAD[*]}" >&2
        rc=1
    fi
    return $rc
}

# Where the link leads inside the sandbox's root.
resolved() { # VARIANT TARGET
    case $1 in host) echo "$2" ;; *) echo "/oldroot$2" ;; esac
}

# The run went through with the mount at the place the link names inside
# the root, or was refused (exit 125) with one message naming the place.
assert_inside_or_refused() { # LOOP(yes/no) PLACE-IN-ROOT EXPECTED-MOUNT WHAT
    if at_level gvisor; then
        # Level 2: the bundle's skeleton root makes its own mount points for
        # /home, /tmp, /workspace, /dev, /proc (the root's link there is not
        # copied): the mount is at the place itself; a bind's destination
        # below a link of the root's lands where the link names inside the
        # root, as at level 1; or runsc does not start (exit 128, "cannot
        # create sandbox"), nothing run. At both levels the host check holds.
        if [ "$status" = 128 ]; then
            assert_contains "$stderr" "cannot create sandbox" || fail "$4"
            return
        fi
        assert_status 0 || fail "$4" || return
        printf '%s\n' "${lines[@]}" | grep -qxF -e "mount=$2" -e "mount=$3" || { _aj_dump; fail "$4: no mount at $2 or $3"; }
        return
    fi
    if [ "$1" = yes ]; then
        assert_status 125 && assert_contains "$stderr" "$2" || fail "$4"
        return
    fi
    assert_status 0 && assert_output_has_line "mount=$3" || fail "$4"
}

# A loop inside the root: the variant loop, or a host path that passes
# through the link itself (tmp -> /tmp/...).
is_loop() { # VARIANT TARGET INROOT-OF-LINK
    [ "$1" = loop ] || { [ "$1" = host ] && [[ "$2/" == "$3/"* ]]; } && echo yes || echo no
}

aj_root() { # ROOT-OPTIONS... -- CMD: the hostile root with every extra mount
    run --separate-stderr timeout -k 5 "$AJ_TIMEOUT" "$AJ" run "${AJ_LEVEL[@]}" --workspace "$WS" \
        --ro "$T/src-ro:/data/ro" --rw "$T/src-rw:/mnt/rw" "$@" </dev/null
}

# One place of the root made hostile at a time, every variant, for a
# --rootfs directory: NAME in the root, the mount point inside it, the
# suffix agentjail adds below the link. The roots and canaries are made
# first, then the host is listed, then the sandboxes run.
one_place() { # NAME MOUNTPOINT SUFFIX
    local name=$1 mp=$2 sfx=$3 v r
    for v in "${VARIANTS[@]}"; do
        R=$T/root-$name-$v
        cp -a "$BASE" "$R"
        mkdir -p "$C/$name-$v"
        chmod 1777 "$C/$name-$v"
        plant "$R" "$name" "$v" "$C/$name-$v" "/$name"
    done
    snapshot
    for v in "${VARIANTS[@]}"; do
        aj_root --rootfs "$T/root-$name-$v" -- /bin/probe mounts
        r=$(resolved "$v" "$C/$name-$v")
        assert_inside_or_refused "$(is_loop "$v" "$C/$name-$v" "/$name")" "$mp" "$r$sfx" "$name: $v" ||
            BAD+=("$name:$v")
    done
    assert_host_unchanged_and_inside
}

@test "--rootfs: a hostile /home can't make agentjail write on the host" {
    one_place home /home/agent /agent
}

@test "--rootfs: a hostile /tmp can't make agentjail write on the host" {
    one_place tmp /tmp ""
}

@test "--rootfs: a hostile /workspace can't make agentjail write on the host" {
    one_place workspace /workspace ""
}

@test "--rootfs: a hostile /dev can't make agentjail write on the host" {
    one_place dev /dev ""
}

@test "--rootfs: a hostile /proc can't make agentjail write on the host" {
    # (host: /proc lands below /tmp, which the scratch /tmp covers next;
    # the probe can't list mounts then, and that is the root's own doing)
    VARIANTS=(abs rel chain dotdot loop)
    one_place proc /proc ""
}

@test "--rootfs: hostile --ro and --rw destinations can't make agentjail write on the host" {
    one_place data /data/ro /ro
    one_place mnt /mnt/rw /rw
}

@test "--rootfs: a hostile /etc leads nowhere on the host" {
    local v
    for v in abs rel chain dotdot host; do
        cp -a "$BASE" "$T/root-etc-$v"
        mkdir -p "$C/etc-$v"
        chmod 1777 "$C/etc-$v"
        plant "$T/root-etc-$v" etc "$v" "$C/etc-$v" /etc
    done
    snapshot
    for v in abs rel chain dotdot host; do
        aj_root --rootfs "$T/root-etc-$v" -- /bin/probe write /etc/motd changed
        # the image's /etc leads nowhere inside the root: nothing to write
        assert_ne "$status" 0 "wrote /etc/motd through $v"
    done
    assert_host_unchanged
}

@test "a link in the workspace under a nested bind's destination stays inside the root" {
    local v r root
    for v in "${VARIANTS[@]}"; do
        mkdir -p "$C/ws-$v" "$T/ws-$v"
        chmod 1777 "$C/ws-$v"
        chmod 0755 "$T/ws-$v"
        plant "$T/ws-$v" sub "$v" "$C/ws-$v" /workspace/sub
    done
    snapshot
    for v in "${VARIANTS[@]}"; do
        # the default root, and a --rootfs one
        for root in "" "--rootfs $BASE"; do
            # shellcheck disable=SC2086 # root: no option or two words
            run --separate-stderr timeout -k 5 "$AJ_TIMEOUT" "$AJ" run "${AJ_LEVEL[@]}" $root --workspace "$T/ws-$v" \
                --ro "$PROBE:/probe" --ro "$T/src-ro:/workspace/sub/x" -- /probe mounts </dev/null
            r=$(resolved "$v" "$C/ws-$v")
            assert_inside_or_refused "$(is_loop "$v" "$C/ws-$v" /workspace/sub)" /workspace/sub/x \
                "$r/x" "workspace link: $v, root: ${root:-default}" || BAD+=("ws:$v:${root:-default}")
        done
    done
    assert_host_unchanged_and_inside
}

# An OCI image layout archive (index.json, blobs) of the tree DIR.
make_oci() { # DIR OUT.tar
    local o=$T/oci.$$ h c m
    rm -rf "$o"
    mkdir -p "$o/blobs/sha256"
    (cd "$1" && ls -A | tar --numeric-owner --owner=0 --group=0 -cf "$o/layer.tar" -T -)
    h=$(sha256sum "$o/layer.tar" | cut -d' ' -f1)
    mv "$o/layer.tar" "$o/blobs/sha256/$h"
    echo '{"architecture":"amd64","os":"linux"}' >"$o/config"
    c=$(sha256sum "$o/config" | cut -d' ' -f1)
    mv "$o/config" "$o/blobs/sha256/$c"
    printf '{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
        "$c" "$(stat -c %s "$o/blobs/sha256/$c")" "$h" "$(stat -c %s "$o/blobs/sha256/$h")" >"$o/manifest"
    m=$(sha256sum "$o/manifest" | cut -d' ' -f1)
    printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s}]}' \
        "$m" "$(stat -c %s "$o/manifest")" >"$o/index.json"
    mv "$o/manifest" "$o/blobs/sha256/$m"
    echo '{"imageLayoutVersion":"1.0.0"}' >"$o/oci-layout"
    tar -C "$o" -cf "$2" oci-layout index.json blobs
    rm -rf "$o"
}

@test "an OCI image with hostile links at every mount place stays inside its root (--image)" {
    local v n places=(home tmp workspace dev proc data mnt etc)
    for v in abs rel chain dotdot loop; do
        R=$T/oci-$v
        rm -rf "$R"
        cp -a "$BASE" "$R"
        rm -rf "${R:?}/etc"
        for n in "${places[@]}"; do
            mkdir -p "$C/oci-$v-$n"
            chmod 1777 "$C/oci-$v-$n"
            plant "$R" "$n" "$v" "$C/oci-$v-$n" "/$n"
        done
        make_oci "$R" "$T/hostile-$v.tar"
        run --separate-stderr aj_timeout "$AJ" image build "hostile-$v" --from-oci "$T/hostile-$v.tar"
        assert_status 0
        # the places below which agentjail makes directories, alone
        R=$T/oci-some-$v
        cp -a "$BASE" "$R"
        for n in home data mnt; do
            mkdir -p "$C/some-$v-$n"
            chmod 1777 "$C/some-$v-$n"
            plant "$R" "$n" "$v" "$C/some-$v-$n" "/$n"
        done
        make_oci "$R" "$T/some-$v.tar"
        run --separate-stderr aj_timeout "$AJ" image build "some-$v" --from-oci "$T/some-$v.tar"
        assert_status 0
    done
    snapshot
    for v in abs rel chain dotdot loop; do
        aj_root --image "hostile-$v" -- /bin/probe mounts
        if [ "$v" = loop ]; then
            # /proc: the first place agentjail mounts onto
            assert_inside_or_refused yes /proc "" "image: loop" || BAD+=("image:loop")
            continue
        fi
        r=$(resolved "$v" "$C/oci-$v")
        for n in "home-/agent" "tmp-" "workspace-" "dev-" "dev-/pts" "dev-/shm" "proc-" "data-/ro" "mnt-/rw"; do
            assert_inside_or_refused no "/${n%%-*}${n#*-}" "$r-${n%%-*}${n#*-}" "image: $v" || BAD+=("image:$v:${n%%-*}")
        done
        aj_root --image "some-$v" -- /bin/probe mounts
        r=$(resolved "$v" "$C/some-$v")
        for n in "home-/agent" "data-/ro" "mnt-/rw"; do
            assert_inside_or_refused no "/${n%%-*}${n#*-}" "$r-${n%%-*}${n#*-}" "image: $v" || BAD+=("some:$v:${n%%-*}")
        done
    done
    assert_host_unchanged_and_inside
}

# agentjail as nobody (the exec chain keeps its pid for the residue check).
nr_exec() {
    cd "$NRDIR" && exec timeout -k 5 60 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
        env -i PATH=/usr/bin:/bin HOME="$NRDIR" LANG=C "$NRDIR/agentjail" "$1" "${AJ_LEVEL[@]}" "${@:2}" </dev/null
}

@test "unprivileged: a hostile --rootfs can't make agentjail write where its caller can" {
    command -v setpriv >/dev/null || skip "setpriv not installed"
    AJ_EXTRA_UID=65534
    NRDIR=$(mktemp -d /tmp/ajtest-nonroot.XXXXXX)
    AJ_MARKERS+=("$(basename "$NRDIR")")
    chmod 0755 "$NRDIR"
    aj_copy_programs "$NRDIR"
    local v r
    if at_level gvisor; then
        # level 2 needs root (runsc's rootless mode is not wired in): refused
        # with the fix, before anything is made
        cp -a "$BASE" "$NRDIR/root-abs"
        snapshot
        run --separate-stderr nr_exec run --limits best-effort --rootfs "$NRDIR/root-abs" -- /bin/probe mounts
        assert_status 125
        assert_contains "$stderr" "isolation level gvisor is not usable here: it needs root"
        assert_host_unchanged
        rm -rf "${NRDIR:?}"
        return
    fi
    for v in abs rel chain dotdot loop; do
        cp -a "$BASE" "$NRDIR/root-$v"
        # a directory of the caller's own: what agentjail may write as it
        mkdir -p "$C/nr-$v"
        chown 65534:65534 "$C/nr-$v"
        plant "$NRDIR/root-$v" home "$v" "$C/nr-$v" /home
        plant "$NRDIR/root-$v" data "$v" "$C/nr-$v" /data
    done
    (nr_exec run --limits best-effort --rootfs "$NRDIR/root-abs" -- /bin/probe exit 0) || true # its state, made once
    snapshot
    for v in abs rel chain dotdot loop; do
        run --separate-stderr nr_exec run --limits best-effort --rootfs "$NRDIR/root-$v" --ro "$NRDIR/agentjail:/data/x" -- /bin/probe mounts
        r=$(resolved "$v" "$C/nr-$v")
        assert_inside_or_refused "$(is_loop "$v" "" "")" /home/agent "$r/agent" "nobody: $v" ||
            BAD+=("nobody:$v")
        [ "$v" = loop ] || assert_output_has_line "mount=$r/x" || BAD+=("nobody:$v:data")
    done
    local rc=0
    assert_host_unchanged_and_inside || rc=1
    rm -rf "${NRDIR:?}"
    return $rc
}

@test "image build --from-tar: a member can't write through a link an earlier member planted" {
    mkdir -p "$C/tar"
    chmod 1777 "$C/tar"
    python3 - "$T/evil.tar" "$C/tar" <<'PY'
import io, sys, tarfile
out, host = sys.argv[1:3]
with tarfile.open(out, "w") as t:
    for name, target in [("bin", None), ("abs", host), ("rel", "../../../../../../../.." + host), ("chain", "c1"), ("c1", "abs")]:
        i = tarfile.TarInfo(name)
        if target is None:
            i.type, i.mode = tarfile.DIRTYPE, 0o755
        else:
            i.type, i.linkname = tarfile.SYMTYPE, target
        t.addfile(i)
    for name in ("abs/pwned", "rel/pwned", "chain/pwned"):
        i = tarfile.TarInfo(name)
        i.size = 2
        t.addfile(i, io.BytesIO(b"x\n"))
PY
    # the store is agentjail's to change (its build directory comes and
    # goes): outside the listed trees for this test
    export AGENTJAIL_STATE_DIR=$BATS_TEST_TMPDIR/store
    snapshot
    run --separate-stderr aj_timeout "$AJ" image build eviltar --from-tar "$T/evil.tar"
    assert_status 125
    run --separate-stderr aj_timeout "$AJ" image inspect eviltar
    assert_status 125
    assert_host_unchanged
    assert_eq "$(ls -A "$AGENTJAIL_STATE_DIR/images")" "" "the store after a refused build"
}
