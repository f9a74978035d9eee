#!/usr/bin/env bats
# agentjail oci as Podman's runtime: an image imported from a tar of a tiny
# busybox root (no registry), `podman run --rm`, exit codes, output, a
# detached container's logs, exec and stop, nothing left after rm.

load helpers

setup() {
    aj_setup
    require_root
    command -v podman >/dev/null || skip "needs podman (scripts/setup.sh)"
    command -v busybox >/dev/null || skip "needs busybox-static (scripts/setup.sh)"
    local r=$T/img
    mkdir -p "$r/bin" "$r/proc" "$r/dev" "$r/tmp" "$r/etc"
    cp "$(command -v busybox)" "$r/bin/busybox"
    local t
    for t in sh echo sleep id cat true ip nc tail; do ln -s busybox "$r/bin/$t"; done
    echo base >"$r/motd"
    # the security suite's static attack program (tests/security/README.md)
    [ -x "${ATTACK:-}" ] && cp "$ATTACK" "$r/attack"
    tar -C "$r" -cf "$T/img.tar" .
    # a logging wrapper: what Podman passes (conmon calls it); it sets
    # --root itself, as Podman's --runtime-flag does not reach the
    # delete of its cleanup process
    S=$T/state
    printf '#!/bin/sh\necho "$*" >>%q\nexec %q oci --root %q "$@"\n' "$T/calls" "$AJ" "$S" \
        >"$T/runtime"
    chmod 0755 "$T/runtime"
    P=(podman --root "$T/ps" --runroot "$T/pr" --tmpdir "$T/pt" --storage-driver vfs
        --cgroup-manager cgroupfs --events-backend file --runtime "$T/runtime")
    timeout 60 "${P[@]}" import "$T/img.tar" localhost/ajtiny:1 >/dev/null 2>&1 ||
        fail "podman import failed"
}

teardown() {
    if [ -n "${P+x}" ]; then
        timeout 30 "${P[@]}" rm -af >/dev/null 2>&1 || true
        timeout 30 "${P[@]}" rmi -af >/dev/null 2>&1 || true
    fi
    [ -n "${SRV:-}" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
    [ -n "${NS:-}" ] && ip netns del "$NS" 2>/dev/null
    aj_teardown
}

prun() {
    timeout -k 5 60 "${P[@]}" "$@" </dev/null
}

@test "podman: run --rm, output and exit code; run -d, logs, stop, rm; nothing left" {
    # Podman's default seccomp profile is loaded on top of agentjail's filter
    run --separate-stderr prun run --rm --network none localhost/ajtiny:1 \
        /bin/sh -c 'echo out $(cat /motd); echo err >&2; exit 3'
    assert_status 3
    assert_eq "$output" "out base" "stdout"
    assert_eq "$stderr" "err" "stderr"
    # what Podman passed: create's flags, start, delete
    assert_contains "$(cat "$T/calls")" "create --bundle"
    assert_contains "$(cat "$T/calls")" "--pid-file"
    assert_contains "$(cat "$T/calls")" "delete --force"

    # a terminal: the pty's master goes to conmon over --console-socket
    run prun run --rm -t --network none localhost/ajtiny:1 \
        /bin/sh -c 'ls -l /proc/self/fd/0; echo tty; exit 5'
    assert_status 5
    assert_contains "$output" "-> /dev/pts/0"
    assert_contains "$output" $'tty\r'
    assert_contains "$(cat "$T/calls")" "--console-socket"

    run prun run -d --name ajdet --network none localhost/ajtiny:1 /bin/sh -c 'echo started; exec sleep 60'
    assert_status 0
    local i
    for i in $(seq 50); do
        [ "$(prun logs ajdet 2>/dev/null)" = started ] && break
        sleep 0.1
    done
    assert_eq "$(prun logs ajdet)" started "logs"
    assert_eq "$(prun inspect -f '{{.State.Status}}' ajdet)" running
    # exec: output, stderr, exit code, the container's environment
    run --separate-stderr prun exec -e X=1 ajdet /bin/sh -c 'echo $X $(cat /motd); echo err >&2; exit 5'
    assert_status 5
    assert_eq "$output" "1 base" "exec stdout"
    assert_eq "$stderr" "err" "exec stderr"
    run prun exec ajdet /bin/sh -c 'cat /proc/[0-9]*/comm | grep -c sleep'
    assert_eq "$output" 1 "exec sees the container's processes"
    run -127 prun exec ajdet /no/such
    run prun exec -t ajdet /bin/sh -c 'test -t 0 && echo tty; exit 3'
    assert_status 3
    assert_contains "$output" "tty"
    assert_contains "$(cat "$T/calls")" "exec "
    # exec -i: stdin piped through
    run bash -c "printf 'a\\nb\\n' | timeout -k 5 60 ${P[*]} exec -i ajdet /bin/sh -c 'wc -l; exit 4'"
    assert_status 4
    assert_eq "$(echo $output)" 2 "lines read by exec -i"
    # the pid Podman has (the pid file's) is in the container's mount
    # namespace: top lists the container's processes, not the host's
    local ipid spid
    ipid=$(prun inspect -f '{{.State.Pid}}' ajdet)
    spid=$(timeout 10 "$T/runtime" state "$(ls "$S")" | python3 -c "import json,sys; print(json.load(sys.stdin)['pid'])")
    assert_eq "$(tr '\0' ' ' </proc/"$spid"/cmdline)" "sleep 60 " "state's pid is the command"
    assert_eq "$(readlink /proc/"$ipid"/ns/mnt)" "$(readlink /proc/"$spid"/ns/mnt)" "inspect's pid: mnt ns"
    run prun top ajdet
    assert_status 0
    assert_contains "$output" "sleep 60"
    assert_output_lacks "conmon"
    # pause, unpause (the freezer cgroup); update (the live limits)
    run prun pause ajdet
    assert_status 0
    assert_eq "$(prun inspect -f '{{.State.Status}}' ajdet)" paused
    [ "$(sed -n 's/^State:\t\(.\).*/\1/p' /proc/"$spid"/status)" = D ] || fail "not frozen"
    run prun unpause ajdet
    assert_status 0
    assert_eq "$(prun inspect -f '{{.State.Status}}' ajdet)" running
    local mem
    mem=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/"$spid"/cgroup)/memory.limit_in_bytes
    if [ -f "$mem" ]; then
        run prun update --memory 96m ajdet
        assert_status 0
        assert_eq "$(cat "$mem")" $((96 * 1024 * 1024)) "memory limit after update"
        assert_contains "$(cat "$T/calls")" "update --resources"
        # a cpu weight: v1's cpu.shares (the container's cpu cgroup)
        run prun update --cpu-shares 512 ajdet
        assert_status 0
        assert_eq "$(cat /sys/fs/cgroup/cpu$(sed -n 's/^[0-9]*:cpu://p' /proc/"$spid"/cgroup)/cpu.shares)" 512 "cpu.shares after update"
    fi
    assert_contains "$(cat "$T/calls")" "pause "
    run prun stop -t 5 ajdet
    assert_status 0
    assert_eq "$(prun inspect -f '{{.State.ExitCode}}' ajdet)" 143 "exit code after stop"
    run prun rm ajdet
    assert_status 0
    assert_eq "$(prun ps -aq)" "" "containers left"
    [ -z "$(ls -A "$S")" ] || fail "runtime state left: $(ls "$S")"
    [ -z "$(pgrep -f "agentjail-oci|conmon.*$T" || true)" ] || fail "processes left"
}

@test "podman: what agentjail cannot honour is refused with the fix" {
    # a namespace to join (Podman's default network is one; this one
    # makes no bridge on the host)
    run --separate-stderr prun run --rm --network "ns:/proc/$$/ns/net" localhost/ajtiny:1 /bin/true
    assert_status 126
    assert_contains "$stderr" "--network none"
    # an annotation agentjail does not take
    run --separate-stderr prun run --rm --network none --annotation run.agentjail.net=bogus \
        localhost/ajtiny:1 /bin/true
    assert_status 126
    assert_contains "$stderr" "annotation run.agentjail.net"
    assert_eq "$(prun ps -aq)" "" "containers left"
    [ -z "$(ls -A "$S" 2>/dev/null)" ] || fail "runtime state left: $(ls "$S")"
}

@test "podman: the security suite's attacks fail inside a Podman container" {
    [ -x "$T/img/attack" ] || skip "needs ATTACK (build/tests/ajattack)"
    run --separate-stderr prun run --rm --network none localhost/ajtiny:1 /attack privsweep
    assert_status 0
    assert_eq "${lines[-1]}" "result=blocked" "privileged syscalls"
    assert_contains "$output" "reboot=blocked errno=EPERM"
    assert_contains "$output" "init_module=blocked errno=EPERM"
    run --separate-stderr prun run --rm --network none localhost/ajtiny:1 /attack keyring
    assert_status 0
    assert_eq "${lines[-1]}" "result=blocked" "kernel keyring"
    # the same walls for a command exec'd into a running container
    run prun run -d --name ajatt --network none localhost/ajtiny:1 /bin/sleep 60
    assert_status 0
    local t
    for t in privsweep keyring; do
        run --separate-stderr prun exec ajatt /attack $t
        assert_status 0
        assert_eq "${lines[-1]}" "result=blocked" "exec: $t"
    done
    run prun rm -f -t 0 ajatt
    assert_status 0
    # the container's processes are never host uid 0
    run prun run -d --name ajuid --network none localhost/ajtiny:1 /bin/sleep 60
    assert_status 0
    local pid uids
    pid=$(cat "$S"/*/state.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
    uids=$(ps -o uid= --ppid "$pid" | tr -d ' ')
    [ -n "$uids" ] || fail "no sandbox process under the monitor"
    assert_ne "$uids" 0 "host uid of the container's init"
    run prun rm -f -t 0 ajuid
    assert_status 0
    [ -z "$(ls -A "$S")" ] || fail "runtime state left: $(ls "$S")"
}

@test "podman: its default network, a namespace to join, is walled" {
    # Podman (and its CNI bridge, firewall rules, the container's network
    # namespace) in a namespace of the test's own: nothing on the host's
    # network; a server there on the bridge's gateway address
    NS=aj-ocinet-$$
    ip netns add "$NS"
    ip -n "$NS" link set lo up
    ip netns exec "$NS" python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8099)); s.listen(8)
while True:
    c, _ = s.accept(); c.recv(4096)
    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nreach\n"); c.close()' &
    SRV=$!
    local i
    for i in $(seq 50); do # listening before the first container asks
        ip netns exec "$NS" ss -ltn | grep -q ':8099 ' && break
        sleep 0.1
    done
    P=(nsenter --net="/run/netns/$NS" "${P[@]}")
    # (busybox's wget crashes in a static build: nc)
    local get='echo GET | nc -w 3 10.88.0.1 8099 | tail -n 1 | grep reach'
    # open: the engine's network as it is, the server answers (the test's
    # own check that it can be reached)
    run --separate-stderr prun run --rm --annotation run.agentjail.net=open localhost/ajtiny:1 \
        /bin/sh -c "$get"
    assert_status 0
    assert_eq "$output" "reach" "the server through Podman's network"
    assert_contains "$(cat "$T/calls")" "create --bundle"
    # by default: Podman's eth0, and nothing but the loopback gets through
    run prun run -d --name ajnet localhost/ajtiny:1 /bin/sleep 60
    assert_status 0
    run --separate-stderr prun exec ajnet /bin/sh -c "ip -o addr | grep -c 10.88.; $get"
    assert_eq "${lines[0]}" 1 "Podman's address on eth0"
    assert_ne "$status" 0 "the server reached through the wall"
    assert_eq "${#lines[@]}" 1 "the server's answer through the wall"
    # the container can't take the wall down: no CAP_NET_ADMIN over it
    run --separate-stderr prun exec ajnet /bin/ip link set lo down
    assert_ne "$status" 0
    local pid
    pid=$(cat "$S"/*/state.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
    run nsenter --net=/proc/$pid/ns/net nft list table inet agentjail-oci
    assert_status 0
    assert_contains "$output" "policy drop"
    run prun rm -f -t 0 ajnet
    assert_status 0
    [ -z "$(ls -A "$S")" ] || fail "runtime state left: $(ls "$S")"
}
