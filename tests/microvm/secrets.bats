#!/usr/bin/env bats
# The security suite's secret, workspace-guard and hostile-root attacks at
# level 3 (docs/security.md, "Attack x level"): tests/security/secrets.bats,
# workspace_guard.bats, privilege.bats' setuid copy and rootfs.bats with
# level 1's expectations where they apply. A TCG boot costs ~3 s, so
# setup_file boots three VMs: one on the host's staged root that runs every
# secret, mask, guard and setuid case as a script (each case's output after
# a "=== NAME" line, checked case by case; ~25-35 s on TCG, most of it the
# guard's git and the scans), one on a --rootfs with a hostile link at every
# place the guest mounts onto and one with a loop (~6 s both). The host is
# listed before and after (the workspace, the links' targets).

AJ_ISOLATION=microvm
load ../security/helpers
load ../security/guard_helpers

# A fresh canary; the VM is given it reversed (its command line holds no
# canary).
canary() { printf 'ajcanary-%s-%s-zq' "$1" "$(od -An -tx1 -N6 /dev/urandom | tr -d ' \n')"; }
rev_of() { printf '%s' "$1" | rev; }

setup_file() {
    [ "$(id -u)" = 0 ] || return 0
    command -v qemu-system-x86_64 >/dev/null || return 0
    [ -r /var/cache/agentjail/microvm/vmlinux ] || return 0
    export AGENTJAIL_MICROVM_ACCEL=tcg
    local F=$BATS_FILE_TMPDIR T=$BATS_FILE_TMPDIR ws=$BATS_FILE_TMPDIR/ws
    _aj_find_attack
    chmod o+rx "$ATTACK" "$PROBE"
    # the caller's environment, --env/--env-file, two --secret values (one
    # for the scan and placeholder, one the command finds and prints)
    local c1 c2 c3 c4 c5
    c1=$(canary caller) c2=$(canary env) c3=$(canary secret) c4=$(canary leak) c5=$(canary mask)
    printf '%s\n' "$c1" "$c2" "$c3" "$c4" "$c5" >"$F/canaries"
    # a root-owned repository with host-run files (level 1's guard test),
    # secrets to mask and the value the command leaks
    mkdir -p "$ws"
    make_repo "$ws"
    printf 'API_KEY=%s\nDEBUG=1\n' "$c5" >"$ws/.env"
    mkdir -p "$ws/.ssh"
    echo "$c5" >"$ws/.ssh/id_ed25519"
    echo "$c5" >"$ws/id_rsa"
    printf 'registry=http://registry.test/\n//registry.test/:_authToken=%s\n' "$c5" >"$ws/.npmrc"
    echo "$c4" >"$ws/found-it"
    printf 'FROM_FILE=%s-file\n' "$c2" >"$F/envfile"
    write_hostile "$F/hostile.sh"
    mkdir -p "$F/creds/.ssh"
    echo key >"$F/creds/.ssh/id_rsa"
    chmod -R a+rX "$F/hostile.sh"
    listing "$ws" "$T/outside" >"$F/ws.before"
    local t0=$EPOCHREALTIME rc=0
    AJ_SEC_CANARY=$c1 HOME=/root/should-not-leak timeout -k 5 120 "$AJ" run -q --isolation microvm \
        --workspace "$ws" --ro "$ATTACK:/attack" --ro "$F/hostile.sh:/hostile.sh" \
        --env "X=$c2" --env-file "$F/envfile" --secret "AJ_TOKEN=$c3" --secret "AJ_LEAK=$c4" \
        -- /bin/sh -c '
        echo "=== env"; /usr/bin/env
        echo "=== scan_caller"; /attack scan_secret '"$(rev_of "$c1")"'
        echo "=== scan_env_init"; /attack scan_secret '"$(rev_of "$c2")"' pid1
        echo "=== scan_secret"; /attack scan_secret '"$(rev_of "$c3")"'; echo "token=$AJ_TOKEN"
        echo "=== leak"; /attack leak /workspace/found-it
        echo "=== masks"; (cd /workspace && cat .env id_rsa .ssh/id_ed25519 .npmrc 2>&1)
        echo "=== creds"; /attack creds '"$F/creds/.ssh/id_rsa $F/creds"' /root/.ssh /root/.aws /etc/ssh/ssh_host_rsa_key
        echo "root=$(ls -A /root | tr "\n" " ")"; echo "run=$(ls -A /run | tr "\n" " ")"
        echo "var=$(ls -A /var | tr "\n" " ")"; echo "var_tmp=$(ls -A /var/tmp | tr "\n" " ")"
        echo "=== mountinfo"; cat /proc/self/mountinfo
        echo "=== mounts"; cat /proc/self/mounts
        echo "=== cmdline"; cat /proc/cmdline
        echo "=== guard"; /hostile.sh
        echo "=== suid"; /attack suid_copy /tmp/suid; /attack suid_copy /workspace/suid
        echo "=== end"; echo done' </dev/null >"$F/out" 2>"$F/err" || rc=$?
    echo "$rc" >"$F/rc"
    elapsed_since "$t0" >"$F/secs"
    listing "$ws" "$T/outside" >"$F/ws.after"
    find "$ws" -perm /6000 >"$F/setid" 2>&1
    hostile_roots
}

# rootfs.bats' links (plant), one place each, at every place the guest's
# init mounts onto or makes: PLACE VARIANT
HOSTILE="proc:abs sys:rel dev:chain workspace:dotdot home:host tmp:abs root:rel"

# Two VMs on a --rootfs with hostile links: one with a link at each place
# (each must be resolved inside the root; a --ro and a --rw bind through
# two of them too), one with a loop at /proc (the
# run refused, naming it). The links lead to world-writable host canaries
# ($C/NAME): listed before and after, with the root's tree.
hostile_roots() {
    local F=$BATS_FILE_TMPDIR
    C=$F/canary
    local base=$F/base pv r=$F/hostile rc=0
    mkdir -p "$base/bin" "$base/etc" "$base/usr" "$C" "$F/hws" "$F/bsrc"
    cp "$PROBE" "$base/bin/probe"
    chmod -R a+rX "$base"
    cp -a "$base" "$r"
    cp -a "$base" "$F/loop"
    for pv in $HOSTILE; do
        mkdir -m 1777 "$C/${pv%%:*}"
        plant "$r" "${pv%%:*}" "${pv#*:}" "$C/${pv%%:*}" "/${pv%%:*}"
    done
    plant "$F/loop" proc loop "" /proc
    hostile_listing >"$F/hostile.before"
    local t0=$EPOCHREALTIME
    timeout -k 5 120 "$AJ" run -q --isolation microvm --rootfs "$r" --workspace "$F/hws" --user 1000:1000 \
        --ro "$F/bsrc:/root/ro" --rw "$F/bsrc:/tmp/rw" -- /bin/probe mounts </dev/null >"$F/hostile.out" 2>"$F/hostile.err" || rc=$?
    echo "$rc" >"$F/hostile.rc"
    rc=0
    timeout -k 5 120 "$AJ" run -q --isolation microvm --rootfs "$F/loop" -- /bin/probe mounts \
        </dev/null >"$F/loop.out" 2>"$F/loop.err" || rc=$?
    echo "$rc" >"$F/loop.rc"
    elapsed_since "$t0" >"$F/hostile.secs"
    hostile_listing >"$F/hostile.after"
}

hostile_listing() {
    find "$BATS_FILE_TMPDIR/canary" "$BATS_FILE_TMPDIR/hostile" "$BATS_FILE_TMPDIR/loop" "$BATS_FILE_TMPDIR/hws" \
        -printf '%p %U %G %m %s %l\n' | LC_ALL=C sort
}

setup() {
    require_root
    command -v qemu-system-x86_64 >/dev/null || skip "qemu is not installed (scripts/setup.sh)"
    [ -r /var/cache/agentjail/microvm/vmlinux ] || skip "no guest kernel (scripts/setup.sh)"
    aj_setup
    mapfile -t C <"$BATS_FILE_TMPDIR/canaries"
}

# $output and $lines: the part of the VM's output for case NAME
section() { # NAME
    output=$(awk -v n="=== $1" '$0 == n { on = 1; next } /^=== / { on = 0 } on' "$BATS_FILE_TMPDIR/out")
    mapfile -t lines <<<"$output"
    [ -n "$output" ] || fail "no output for $1 (the run: rc $(cat "$BATS_FILE_TMPDIR/rc"), $(head -c 600 "$BATS_FILE_TMPDIR/err"))"
}

# every attempt of the section blocked, its summary "blocked"
all_blocked() {
    local l
    for l in "${lines[@]}"; do
        [[ "$l" != *=ESCAPED* ]] || fail "ESCAPED: $l"
    done
    [[ "$(kv result)" == blocked* ]] || fail "no 'result=blocked' line: $output"
}

@test "microvm secrets: one VM ran every case; no canary of the caller, --env, --secret or a mask reached the host's view of the run" {
    assert_eq "$(cat "$BATS_FILE_TMPDIR/rc")" 0 "the run's exit ($(head -c 600 "$BATS_FILE_TMPDIR/err"))"
    local n
    for n in env scan_caller scan_env_init scan_secret leak masks creds mountinfo mounts cmdline guard suid end; do
        section "$n"
    done
    echo "# one TCG boot, $(cat "$BATS_FILE_TMPDIR/secs") s" >&3
    [ -z "$(pgrep -f '^/usr/bin/qemu-system-x86_64 -M microvm')" ] || fail "a qemu is left"
    [ -z "$(pgrep -x virtiofsd)" ] || fail "a virtiofsd is left"
}

@test "microvm secrets: the caller's environment and --env values are in no /proc/*/environ, cmdline or file of the guest but the command's own" {
    section scan_caller
    all_blocked
    assert_held secret
    # the guest's init, its agent, the command and sh: >= 4 processes scanned
    [ "$(info_of scanned | awk '{ print $1 }')" -ge 12 ] || fail "scanned too few /proc files: $output"
    section scan_env_init
    all_blocked
    assert_held secret
    section env
    local names
    # (PWD: sh's own)
    names=$(printf '%s\n' "${lines[@]}" | cut -d= -f1 | grep -vx PWD | sort | tr '\n' ' ')
    # level 1's names, and what the run asked for: X, FROM_FILE, the secrets
    assert_eq "$names" "AJ_LEAK AJ_TOKEN FROM_FILE HOME LANG PATH TERM X " "variables inside"
    assert_eq "$(kv HOME)" /home/agent HOME
    assert_eq "$(kv X)" "${C[1]}" "--env X"
    assert_eq "$(kv FROM_FILE)" "${C[1]}-file" "--env-file"
}

@test "microvm secrets: a --secret value is in no process or file of the guest; NAME holds a placeholder" {
    section scan_secret
    all_blocked
    assert_held secret
    [[ "$(kv token)" == agentjail-placeholder-AJ_TOKEN-* ]] || fail "AJ_TOKEN inside: $(kv token)"
    section env
    [[ "$(kv AJ_LEAK)" == agentjail-placeholder-AJ_LEAK-* ]] || fail "AJ_LEAK inside: $(kv AJ_LEAK)"
    # nowhere in the VM's output, nor in the guest kernel's command line
    local c
    for c in "${C[0]}" "${C[1]}" "${C[2]}"; do
        ! grep -qF "$c" "$BATS_FILE_TMPDIR/err" || fail "a canary on stderr"
    done
    section cmdline
    for c in "${C[@]}"; do [[ "$output" != *"$c"* ]] || fail "a canary on the guest kernel's command line"; done
}

@test "microvm redaction: a secret the command found is printed raw, split, byte by byte, base64, on stderr: never shown" {
    section leak
    local all a enc
    all="$(cat "$BATS_FILE_TMPDIR/out" "$BATS_FILE_TMPDIR/err")"
    [[ "$all" != *"${C[3]}"* ]] || fail "the secret's value reached the caller"
    for a in "" x xy; do
        enc=$(printf '%s%s' "$a" "${C[3]}" | base64 -w0)
        [[ "$all" != *"$enc"* ]] || fail "the secret's base64 (alignment ${#a}) reached the caller"
    done
    assert_eq "$(printf '%s\n' "$output" | awk '$1 == "raw" { print $2 }')" "[REDACTED]" "raw"
    assert_eq "$(printf '%s\n' "$output" | awk '$1 == "split" { print $2 }')" "[REDACTED]" "split over 3 writes"
    assert_eq "$(printf '%s\n' "$output" | awk '$1 == "bytes" { print $2 }')" "[REDACTED]" "one byte per write"
    assert_eq "$(awk '$1 == "stderr" { print $2 }' "$BATS_FILE_TMPDIR/err")" "[REDACTED]" "stderr"
}

@test "microvm masks: .env (keys kept), id_rsa, .ssh/, .npmrc hide their contents; the host files intact" {
    section masks
    [[ "$output" != *"${C[4]}"* ]] || fail "a masked file's content is visible inside: $output"
    assert_output_has_line "API_KEY=agentjail-masked"
    assert_output_has_line "DEBUG=agentjail-masked"
    assert_output_has_line "//registry.test/:_authToken=agentjail-masked"
    assert_output_has_line "registry=http://registry.test/"
    grep -q "${C[4]}" "$BATS_FILE_TMPDIR/ws/.env" "$BATS_FILE_TMPDIR/ws/id_rsa" || fail "host workspace files changed"
}

@test "microvm credential files: the host's /root/.ssh, /etc/shadow, /etc/ssh, the caller's keys are absent in the guest" {
    section creds
    local n
    for n in cred_root__ssh cred_etc_shadow cred_etc_gshadow cred_etc_ssh cred_etc_sudoers cred_etc_machine_id \
        cred_home_agent__ssh cred_etc_ssh_ssh_host_ed25519_key cred_etc_pip_conf cred_etc_npmrc cred_root__aws \
        cred_etc_ssh_ssh_host_rsa_key; do
        assert_blocked "$n" ENOENT
    done
    # the caller's files by their host paths
    [ "$(printf '%s\n' "${lines[@]}" | grep -c '^cred_tmp_.*=blocked errno=ENOENT$')" -eq 2 ] ||
        fail "a host path of the caller's exists in the guest: $output"
    # the guest's init is not dumpable, as level 1's
    assert_blocked cred_proc_1_root_root EACCES
    # level 3: /root (the guest root's home), /run and /var (var/tmp) are
    # the guest's own empty directories, no host content in them
    assert_eq "$(printf '%s\n' "${lines[@]}" | grep '^cred.*=ESCAPED' | cut -d= -f1 | sort | tr '\n' ' ')" \
        "cred_root cred_run cred_var " "what exists in the guest"
    assert_eq "$(kv root)" "" "/root in the guest"
    assert_eq "$(kv run)" "" "/run in the guest"
    assert_eq "$(kv var)" "tmp " "/var in the guest"
    assert_eq "$(kv var_tmp)" "" "/var/tmp in the guest"
}

@test "microvm host paths: the guest's mountinfo, mounts and kernel command line name no host path" {
    local s bad
    for s in mountinfo mounts cmdline; do
        section "$s"
        for bad in "$BATS_RUN_TMPDIR" "$BATS_FILE_TMPDIR" /tmp/agentjail-microvm /var/cache/agentjail /var/lib/agentjail; do
            [[ "$output" != *"$bad"* ]] || fail "host path $bad in the guest's $s: $output"
        done
    done
    section mountinfo
    # every mount point is one the guest's init made (the workspace a
    # virtiofs of its own, /attack and /hostile.sh --ro binds of the root's,
    # the masks over /proc's kernel memory files and SLUB's /sys/kernel/slab)
    bad=$(printf '%s\n' "${lines[@]}" | awk '{ print $5 }' |
        grep -Ev '^(/|/proc|/proc/sys|/proc/sysrq-trigger|/proc/kcore|/proc/kpage(count|flags|cgroup)|/proc/(slabinfo|pagetypeinfo|vmallocinfo)|/sys|/sys/kernel/slab|/dev|/dev/pts|/dev/shm|/workspace|/workspace/.+|/attack|/hostile.sh)$' || true)
    [ -z "$bad" ] || fail "unexpected mount points in the guest: $bad"
    # the root fields: the shares' own roots (a --ro bind its path in the
    # root's share), the guest's procfs, the initramfs's mask, never a host
    # directory
    bad=$(printf '%s\n' "${lines[@]}" | awk '$4 != "/" && $4 != $5 && $9 != "proc" && $4 != "/aj-mask" { print }')
    [ -z "$bad" ] || fail "a mount's root names more than its share: $bad"
}

@test "microvm workspace guard: host-run files can't be written, created, renamed or replaced; nothing left" {
    section guard
    assert_none_escaped
    # the setuid case's copy is the only new file (its own test below)
    diff -u <(grep -v '^\./suid ' "$BATS_FILE_TMPDIR/ws.before") <(grep -v '^\./suid ' "$BATS_FILE_TMPDIR/ws.after" | grep -v ' \./suid$') ||
        fail "the host workspace changed"
    assert_no_placeholder "$BATS_FILE_TMPDIR/ws"
}

@test "microvm workspace guard: bad --writable values are refused with exit 125, nothing changed" {
    make_repo "$WS"
    listing "$WS" >"$T/before"
    local v
    for v in /etc .. ../x .vscode/../src src file.txt '' ./.vscode .git//hooks; do
        run --separate-stderr "$AJ" run --isolation microvm --writable "$v" --workspace "$WS" -- touch /workspace/ran
        assert_status 125
        [[ "$stderr" == *"--writable"* ]] || fail "unclear message for '$v': $stderr"
    done
    run --separate-stderr "$AJ" run --isolation microvm --writable .vscode -- true
    assert_status 125
    [[ "$stderr" == *"no --workspace"* ]] || fail "$stderr"
    listing "$WS" >"$T/after"
    diff -u "$T/before" "$T/after" || fail "the host workspace changed"
}

@test "microvm privilege: a setuid copy cannot be made, in /tmp or in the workspace (EPERM), none on the host" {
    section suid
    assert_eq "$(printf '%s\n' "${lines[@]}" | grep -c '^chmod failed: EPERM')" 2 "chmod u+s refused in /tmp and /workspace"
    assert_eq "$(cat "$BATS_FILE_TMPDIR/setid")" "" "setuid/setgid files in the host workspace"
    [ -e "$BATS_FILE_TMPDIR/ws/suid" ] || fail "the copy in the workspace was not made at all"
}

@test "microvm --rootfs: hostile links at every place the guest mounts onto (binds too) are resolved inside the root; a loop and a bind below the workspace are refused; the host unchanged" {
    local F=$BATS_FILE_TMPDIR pv p v at
    echo "# two TCG boots on hostile roots: $(cat "$F/hostile.secs") s" >&3
    diff -u "$F/hostile.before" "$F/hostile.after" || fail "the host's canaries or the root's tree changed"
    assert_eq "$(cat "$F/hostile.rc")" 0 "the run on the hostile root ($(head -c 600 "$F/hostile.err"))"
    output=$(cat "$F/hostile.out")
    mapfile -t lines <<<"$output"
    # each mount where the link names inside the root (level 1's
    # expectation: rootfs.bats assert_inside_or_refused)
    for pv in $HOSTILE; do
        p=${pv%%:*} v=${pv#*:}
        case $v in host) at=$F/canary/$p ;; *) at=/oldroot$F/canary/$p ;; esac
        case $p in
        proc | sys | workspace) assert_output_has_line "mount=$at" ;;
        dev) assert_output_has_line "mount=$at" && assert_output_has_line "mount=$at/pts" &&
            assert_output_has_line "mount=$at/shm" ;;
        esac
    done
    assert_output_has_line "mount=/oldroot$F/canary/proc/sys"
    local m
    for m in kcore kpagecount kpageflags kpagecgroup slabinfo pagetypeinfo vmallocinfo; do
        assert_output_has_line "mount=/oldroot$F/canary/proc/$m" # guest init's masks
    done
    assert_output_has_line "mount=/oldroot$F/canary/sys/kernel/slab" # SLUB's counts
    # the binds' destinations through root:rel and tmp:abs, as level 1's
    assert_output_has_line "mount=/oldroot$F/canary/root/ro"
    assert_output_has_line "mount=/oldroot$F/canary/tmp/rw"
    # nothing mounted anywhere else but the root
    [ "$(grep -c '^mount=' <<<"$output")" -eq 19 ] || fail "mounts: $output"
    assert_eq "$(cat "$F/loop.rc")" 125 "the run on a root with a loop at /proc"
    assert_contains "$(cat "$F/loop.err")" "proc"
    # a --ro destination below the workspace (rootfs.bats' nested bind):
    # refused before anything is made
    mkdir -p "$T/src"
    run --separate-stderr "$AJ" run -q --isolation microvm --workspace "$F/hws" --ro "$T/src:/workspace/sub/x" \
        -- /bin/probe mounts </dev/null
    assert_status 125
    assert_contains "$stderr" "microvm"
    hostile_listing >"$T/hostile.final"
    diff -u "$F/hostile.before" "$T/hostile.final" || fail "a refused run changed the host"
}
