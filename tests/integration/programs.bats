#!/usr/bin/env bats
# One user-facing `agentjail`, helper programs for the heavy parts
# (src/cli/main.c): `run` without a network loads none of the network,
# crypto, HTTP or WebSocket libraries; the helpers are found next to the
# program (never through $PATH); a missing helper is a clear 125.

load helpers

# The shared objects a program needs (ELF DT_NEEDED).
needed() {
    readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

# Fails when a line of TEXT starts with one of the NAMES (then SUFFIX).
none_of() { # TEXT SUFFIX NAMES...
    local text=$1 suffix=$2 name
    shift 2
    for name in "$@"; do
        if echo "$text" | grep -q "^$name$suffix"; then
            fail "agentjail has $name (it belongs in a helper): $(echo "$text" | grep "^$name$suffix" | head -3)"
        fi
    done
}

@test "programs: agentjail itself needs no network, crypto, HTTP or WebSocket library" {
    command -v readelf >/dev/null || skip "readelf not installed (binutils)"
    local libs
    libs=$(needed "$AJ_REAL")
    if readelf -l "$AJ_REAL" | grep -q 'INTERP'; then
        [ -n "$libs" ] || fail "no NEEDED entries read from $AJ_REAL"
        echo "$libs" | grep -q '^libc\.so' || fail "libc not among: $libs"
        none_of "$libs" '\.' libnftables libmnl libldns libhttp_parser libcrypto libssl libwebsockets libcurl
    else
        # a static PIE (meson -Dstatic_cli, docs/performance.md round 12):
        # no shared object at all, still position-independent, and none of
        # the heavy libraries' code linked in
        [ -z "$libs" ] || fail "no interpreter but NEEDED entries: $libs"
        readelf -h "$AJ_REAL" | grep -q 'DYN' || fail "static agentjail is not a PIE"
        readelf -d "$AJ_REAL" | grep -q 'BIND_NOW' || fail "static agentjail without BIND_NOW"
        readelf -l "$AJ_REAL" | grep -q 'GNU_RELRO' || fail "static agentjail without RELRO"
        local syms
        syms=$(readelf -sW "$AJ_REAL" | awk '$4 == "FUNC" {print $8}')
        [ -n "$syms" ] || skip "stripped: no symbols to check"
        echo "$syms" | grep -q '^seccomp_' || fail "no libseccomp code in the static agentjail"
        none_of "$syms" '' nft_ctx_new mnl_socket_open ldns_ http_parser_init EVP_ SSL_ lws_ curl_
    fi
    # and the helpers do need theirs
    needed "$(dirname "$AJ_REAL")/agentjail-net" | grep -q '^libnftables\.' || fail "agentjail-net without libnftables"
    needed "$(dirname "$AJ_REAL")/agentjail-service" | grep -q '^libwebsockets\.' || fail "agentjail-service without libwebsockets"
    needed "$(dirname "$AJ_REAL")/agentjail-image" | grep -q '^libcrypto\.' || fail "agentjail-image without libcrypto"
}

@test "programs: each command reaches its helper (image, serve, sandbox)" {
    run --separate-stderr "$AJ" image --help
    assert_status 0
    [[ "$output" == *"agentjail image build"* ]] || fail "image help: $output"
    run --separate-stderr "$AJ" serve --help
    assert_status 0
    [[ "$output" == *"Usage: agentjail serve"* ]] || fail "serve help: $output"
    run --separate-stderr "$AJ" sandbox --help
    [[ "$output$stderr" == *"agentjail sandbox"* ]] || fail "sandbox help: $output $stderr"
}

@test "programs: a missing helper is exit 125 and one line that says which and where" {
    local d=$T/alone
    mkdir -p "$d"
    cp "$AJ_REAL" "$d/agentjail"
    run --separate-stderr "$d/agentjail" serve --help
    assert_status 125
    assert_one_error_line
    [[ "$stderr" == *"cannot start $d/agentjail-service"* || "$stderr" == *"cannot start"*"/agentjail-service"* ]] ||
        fail "no helper path in: $stderr"
    # plain run needs no helper
    run --separate-stderr "$d/agentjail" "${AJ_QUIET[@]}" run -- /bin/true
    assert_status 0
}

@test "programs: helpers are never taken from \$PATH or the current directory" {
    local d=$T/alone fake=$T/fake
    mkdir -p "$d" "$fake"
    cp "$AJ_REAL" "$d/agentjail"
    printf '#!/bin/sh\necho FAKE-HELPER-RAN\n' >"$fake/agentjail-service"
    chmod 0755 "$fake/agentjail-service"
    cd "$fake"
    run --separate-stderr env PATH="$fake:$PATH" "$d/agentjail" serve --help
    assert_status 125
    [[ "$output$stderr" != *FAKE-HELPER-RAN* ]] || fail "a helper from \$PATH ran"
}

@test "programs: a helper refuses the commands it does not serve" {
    run --separate-stderr "$(dirname "$AJ_REAL")/agentjail-image" run -- /bin/true
    assert_status 125
    assert_one_error_line
}

@test "programs: the service's keeper command refuses to run from a command line" {
    local args
    for args in "" "3" "3 4" "abc def" "0 1"; do
        # shellcheck disable=SC2086
        run --separate-stderr "$AJ" __keeper $args
        assert_status 125
        assert_one_error_line
    done
    # a descriptor that is no seqpacket socket: still refused
    run --separate-stderr "$AJ" __keeper 5 6 5</dev/null 6</dev/null
    assert_status 125
    assert_one_error_line
    # the right kinds of descriptor, but its parent did not make the socket
    # (the service makes it, then starts the keeper): refused before it
    # reads the policy (a sandbox built here would wait on the socket)
    run --separate-stderr python3 -c '
import os, socket, subprocess, sys
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
fd = os.memfd_create("policy", 0)
os.write(fd, b"{}")
pid = os.fork()
if pid == 0:
    r = subprocess.run([sys.argv[1], "__keeper", str(b.fileno()), str(fd)],
                       pass_fds=(b.fileno(), fd), timeout=20)
    os._exit(r.returncode)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))' "$AJ"
    assert_status 125
    assert_one_error_line
    [[ "$stderr" == *"not the process that made CTL-FD"* ]] || fail "$stderr"
}
