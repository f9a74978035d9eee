#!/usr/bin/env bats
# The Debian package (scripts/package.sh, docs/install.md): it installs with
# dpkg -i (its Depends are what scripts/setup.sh installs), its systemd
# units pass systemd-analyze verify, the installed program runs sandboxes
# with its helpers from /usr/libexec/agentjail, the service and the Python
# SDK work from the installed paths, and dpkg -P leaves nothing of it.
# (systemd is not PID 1 here: the units are verified, not started; the
# socket unit's part is played by systemd-socket-activate.)

load helpers

setup() {
    require_root
    # the package is built from the tree, not from the sanitized build
    [ -z "${AJ_SANITIZED:-}" ] || skip "the package is not the sanitized build"
    aj_setup
    if dpkg-query -W -f='${Status}' agentjail 2>/dev/null | grep -q installed; then
        fail "a package agentjail is installed already: not touching it"
    fi
    [ ! -e /usr/bin/agentjail ] || fail "/usr/bin/agentjail exists without the package"
}

teardown() {
    local rc=0
    [ -z "${SVC_PID:-}" ] || { kill "$SVC_PID" 2>/dev/null; wait "$SVC_PID" 2>/dev/null || true; }
    if dpkg-query -W -f='${Status}' agentjail 2>/dev/null | grep -q installed; then
        dpkg -P agentjail >/dev/null 2>&1 || rc=1
    fi
    aj_teardown || rc=1
    return $rc
}

@test "package: builds, installs, verifies its units, runs from /usr, purges clean" {
    command -v systemd-analyze >/dev/null || fail "systemd-analyze is missing (apt-get install systemd)"
    local deb list d f left=()
    deb=$(AJ_DEB_BUILD="$_aj_root/build-deb" "$_aj_root/scripts/package.sh" "$BATS_TEST_TMPDIR")
    [ -f "$deb" ] || fail "no package: $deb"
    # the dirs the package has that exist before it: the rest must go with it
    dpkg-deb -c "$deb" | awk '{print substr($6, 2)}' | sed 's|/$||; /^$/d' >"$BATS_TEST_TMPDIR/contents"
    while IFS= read -r d; do [ -e "$d" ] && echo "$d"; done <"$BATS_TEST_TMPDIR/contents" >"$BATS_TEST_TMPDIR/before"

    run dpkg -i "$deb"
    assert_eq "$status" 0 "dpkg -i: $output"
    list=$(dpkg -L agentjail)
    for f in /usr/bin/agentjail /usr/libexec/agentjail/agentjail-net /usr/libexec/agentjail/agentjail-image \
        /usr/libexec/agentjail/agentjail-service /usr/lib/systemd/system/agentjail.service \
        /usr/lib/systemd/system/agentjail.socket /usr/share/man/man1/agentjail.1.gz \
        /usr/share/bash-completion/completions/agentjail /usr/lib/python3/dist-packages/agentjail/__init__.py; do
        grep -qx "$f" <<<"$list" || fail "the package lacks $f"
    done
    ls /usr/bin/agentjail-* 2>/dev/null && fail "helpers in /usr/bin"

    # the units, as systemd reads them
    run systemd-analyze verify /usr/lib/systemd/system/agentjail.service /usr/lib/systemd/system/agentjail.socket
    assert_eq "$status" 0 "systemd-analyze verify: $output"
    [ -z "$output" ] || fail "systemd-analyze verify warned: $output"
    grep -qx 'Delegate=yes' /usr/lib/systemd/system/agentjail.service || fail "no Delegate=yes"
    grep -qx 'ExecStart=/usr/bin/agentjail serve --quiet --state-dir /run/agentjail' \
        /usr/lib/systemd/system/agentjail.service || fail "ExecStart is not the installed program"

    # the installed program: doctor, a sandbox, a helper (image: agentjail-image)
    run /usr/bin/agentjail doctor
    assert_eq "$status" 0 "doctor: $output"
    run /usr/bin/agentjail run -- sh -c 'echo inside; exit 7'
    assert_eq "$status:$output" "7:inside" "a sandbox from /usr/bin"
    run env AGENTJAIL_STATE_DIR="$BATS_TEST_TMPDIR/images" /usr/bin/agentjail image ls
    assert_eq "$status" 0 "image ls (agentjail-image from /usr/libexec/agentjail): $output"
    run man -w agentjail
    assert_eq "$output" /usr/share/man/man1/agentjail.1.gz "man finds the page"

    # the service as agentjail.socket starts it, and the SDK from dist-packages
    local sock=$BATS_TEST_TMPDIR/aj.sock
    systemd-socket-activate -l "$sock" /usr/bin/agentjail serve --quiet \
        --state-dir "$BATS_TEST_TMPDIR/state" 2>"$BATS_TEST_TMPDIR/serve.log" &
    SVC_PID=$!
    for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
    # shellcheck disable=SC2016
    run env -i PATH=/usr/bin:/bin AGENTJAIL_SOCKET="$sock" python3 -c '
import agentjail
print(agentjail.__file__)
with agentjail.Sandbox.create() as sb:
    print(sb.exec("echo from the sdk").stdout.strip())'
    assert_eq "$output" "$(printf '%s\n%s' /usr/lib/python3/dist-packages/agentjail/__init__.py 'from the sdk')" \
        "the SDK: $(cat "$BATS_TEST_TMPDIR/serve.log")"
    kill "$SVC_PID"
    wait "$SVC_PID" || fail "serve exited with $?: $(cat "$BATS_TEST_TMPDIR/serve.log")"
    SVC_PID=

    run dpkg -P agentjail
    assert_eq "$status" 0 "dpkg -P: $output"
    dpkg-query -W agentjail >/dev/null 2>&1 && fail "the package is still known to dpkg"
    while IFS= read -r f; do
        [ "$f" = /. ] && continue
        grep -qx "$f" "$BATS_TEST_TMPDIR/before" && continue
        [ -e "$f" ] || [ -L "$f" ] && left+=("$f")
    done <<<"$list"
    [ ${#left[@]} -eq 0 ] || fail "left after dpkg -P: ${left[*]}"
}
