#!/usr/bin/env bats
# Level 2 behind the seam: a persistent gVisor sandbox (aj_backend_gvisor,
# src/backend/gvisor/box.c) driven by tests/gvisor/drive.c (ajgvdrive, built
# next to the tests) without the service: create from a policy JSON, many
# commands, a terminal, pause, files, destroy; a crash sweep from the state
# record; refusals. Every test checks that nothing is left behind (runsc's
# processes, /tmp/agentjail-gvbox-*, the cgroups: the residue check).

load ../security/helpers

DRIVE=${AJGVDRIVE:-$(dirname "$AJ")/tests/ajgvdrive}

drive() { # POLICY [MODE]
    timeout -k 5 120 "$DRIVE" "$@" </dev/null
}

setup() {
    require_root
    command -v runsc >/dev/null || skip "runsc is not installed (apt-get install runsc)"
    aj_setup
    # a user's repository as the workspace (the guard's .git/config)
    mkdir -p "$WS/.git"
    printf '[core]\n' >"$WS/.git/config"
    chown -R 4242:4343 "$WS"
}

policy() { # EXTRA-JSON-MEMBERS
    printf '{"workspace": "%s", "env": {"TOKEN_X": "s3cr3t-value-42"}, "redact": ["s3cr3t-value-42"], "memory": "512M"%s}\n' "$WS" "${1:-}" >"$T/policy.json"
}

@test "gvisor box: commands, terminal, pause, files in one live sandbox, then nothing left" {
    [ -x "$DRIVE" ] || fail "no $DRIVE (the persistent gvisor backend is not built)"
    policy
    run drive "$T/policy.json"
    echo "$output"
    assert_status 0
    assert_contains "$output" "ok 5 - state persists between commands"
    assert_contains "$output" "destroy leaves nothing"
    assert_output_lacks "not ok"
    assert_eq "$(cat "$WS/.git/config")" "[core]" "the host's .git/config"
    assert_eq "$(stat -c %u "$WS/ws")" 4242 "a file the sandbox wrote belongs to the workspace's owner"
}

@test "gvisor box: the sweep removes a sandbox whose creator died, from its state" {
    [ -x "$DRIVE" ] || fail "no $DRIVE"
    policy
    run drive "$T/policy.json" --sweep
    echo "$output"
    assert_status 0
    assert_contains "$output" "sweep leaves nothing"
}

@test "gvisor box: create without runsc or without the agent stops with a clear error" {
    [ -x "$DRIVE" ] || fail "no $DRIVE"
    policy
    AGENTJAIL_RUNSC=/nonexistent/runsc run drive "$T/policy.json" --refused
    echo "$output"
    assert_status 0
    assert_contains "$output" "ok 1 - create refused: isolation level gvisor is not usable here"
    AGENTJAIL_GVISOR_AGENT=/nonexistent/agent run drive "$T/policy.json" --refused
    echo "$output"
    assert_status 0
    assert_contains "$output" "the sandbox agent /nonexistent/agent is missing"
}

@test "gvisor box: a command past --memory: 137 and oom_killed, then nothing left" {
    [ -x "$DRIVE" ] || fail "no $DRIVE"
    echo '{"memory": "256M"}' >"$T/policy.json"
    run drive "$T/policy.json" --oom
    echo "$output"
    assert_status 0
    assert_contains "$output" "ok 4 - out of memory: 137, oom_killed"
}

# One agent-protocol exchange with agentjail-agent run directly (REQUEST
# JSON in, the frames out as "TYPE payload" lines); with CG, as a
# microVM's agent ("cg": guarded, fd 3 the cgroup2 directory CG, whose
# "cmd" the commands' cgroups go under)
agent_call_cg() { # CG REQUEST-JSON
    python3 -c '
import os, struct, subprocess, sys
args, fds = [sys.argv[1]], ()
if sys.argv[2]:
    fd = os.open(sys.argv[2], os.O_RDONLY | os.O_DIRECTORY)
    os.dup2(fd, 3, inheritable=True)
    args, fds = [sys.argv[1], "cg"], (3,)
req = sys.argv[3].encode()
p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=fds)
p.stdin.write(b"Q" + struct.pack("<I", len(req)) + req + b"I\0\0\0\0")
p.stdin.flush()  # kept open until the end: its close kills the command
while True:
    h = p.stdout.read(5)
    if len(h) < 5:
        break
    b = p.stdout.read(struct.unpack("<I", h[1:5])[0])
    print(chr(h[0]), b.decode(errors="replace"))
    if h[0:1] == b"X":
        break
p.stdin.close()
p.wait(timeout=20)
' "$(dirname "${AJ_REAL:-$AJ}")/agentjail-agent" "$1" "$2"
}
agent_call() { agent_call_cg "" "$1"; } # REQUEST-JSON

@test "gvisor agent: a wall it can't set fails the exec closed, with the wall named" {
    # a good request runs the command (on this host: the agent is static)
    run agent_call "{\"op\": \"exec\", \"argv\": [\"sh\", \"-c\", \"echo ran; grep ^Seccomp: /proc/self/status\"], \"env\": [], \"cwd\": \"$T\", \"rlimits\": {\"core\": [0, 0]}}"
    assert_status 0
    [[ "$output" == *"O ran"* && "$output" == *"Seccomp:	2"* ]] || fail "the command, filtered: $output"
    # an rlimit it can't set: not run, and said why (not a 126)
    run agent_call "{\"op\": \"exec\", \"argv\": [\"touch\", \"$T/ran\"], \"env\": [], \"cwd\": \"$T\", \"rlimits\": {\"bogus\": [1, 1]}}"
    assert_status 0
    [[ "$output" == *'"confine":"rlimits"'* ]] || fail "no confine error: $output"
    [ ! -e "$T/ran" ] || fail "the command ran without its walls"
}


@test "microvm agent: an exec without uid/gid is refused, not run as root; each command's cgroup gives its CPU time" {
    local cg=/sys/fs/cgroup/unified
    [ "$(stat -f -c %T "$cg" 2>/dev/null)" = cgroup2fs ] || cg=/sys/fs/cgroup
    [ "$(stat -f -c %T "$cg")" = cgroup2fs ] || skip "no cgroup2 hierarchy on this host"
    local d="$cg/ajtest-agent-$$"
    mkdir -p "$d/cmd"
    # the host always sends them (level 3): a request without is refused
    run agent_call_cg "$d" "{\"op\": \"exec\", \"argv\": [\"touch\", \"$T/ran\"], \"env\": [], \"cwd\": \"/\"}"
    local refused=$output left
    left=$(find "$d/cmd" -mindepth 1 -type d)
    # with them: the command in cmd/x<agent pid>, its CPU time in the answer
    run agent_call_cg "$d" '{"op": "exec", "argv": ["sh", "-c", "grep ^0:: /proc/self/cgroup; i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done"], "env": [], "cwd": "/", "uid": 0, "gid": 0}'
    left+=$(find "$d/cmd" -mindepth 1 -type d)
    find "$d" -depth -type d -exec rmdir {} +
    [[ "$refused" == *'"confine":"user"'* ]] || fail "not refused: $refused"
    [ ! -e "$T/ran" ] || fail "the command ran as root"
    [[ "$output" =~ "O 0::/ajtest-agent-$$/cmd/x"[0-9]+ ]] || fail "not in a cgroup of its own: $output"
    local us
    us=$(sed -n 's/^X .*"cpu_user_us":\([0-9]*\).*/\1/p' <<<"$output")
    ((${us:-0} > 100000)) || fail "no CPU time of the command: $output"
    [ -z "$left" ] || fail "the command's cgroup is left: $left"
}
