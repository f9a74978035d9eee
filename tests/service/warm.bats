#!/usr/bin/env bats
# Warm interpreters: a pooled sandbox of an image whose warm-up is a Python
# one-liner keeps a zygote that has run it; `python3 -c` execs fork from it,
# under the same walls as any command.

load helpers

# An image with the host's Debian python3 (stdlib only) and a module whose
# import takes 1.5 s and records the pid that imported it; built once.
setup_file() {
    export AGENTJAIL_STATE_DIR=$BATS_FILE_TMPDIR/state
    local d=$BATS_FILE_TMPDIR/tree l
    [ -x /usr/bin/python3.11 ] || return 0
    mkdir -p "$d/bin" "$d/usr/bin" "$d/usr/lib" "$d/etc" "$d/tmp" "$d/proc" "$d/dev" "$d/root"
    cp /usr/bin/python3.11 "$d/usr/bin/python3"
    cp -a /usr/lib/python3.11 "$d/usr/lib/"
    rm -rf "$d"/usr/lib/python3.11/{test,idlelib,tkinter,ensurepip,lib2to3,pydoc_data}
    for b in sh cat ls rm; do cp "$(command -v "$b")" "$d/bin/$b"; done
    for l in $(ldd /usr/bin/python3.11 /bin/sh /bin/ls "$d"/usr/lib/python3.11/lib-dynload/*.so 2>/dev/null | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
        mkdir -p "$d$(dirname "$l")"
        cp -n "$l" "$d$l" 2>/dev/null || true
    done
    printf 'import os, time\ntime.sleep(1.5)\nLOADED_BY = os.getpid()\n' >"$d/usr/lib/python3.11/warm_mod.py"
    chmod -R a+rX "$d"
    "${AJ_REAL:-$AJ}" image build pywarm --from-dir "$d" --warmup "python3 -c 'import warm_mod, json'" 2>/dev/null
}

setup() {
    require_root
    [ -x /usr/bin/python3.11 ] || skip "needs the host's /usr/bin/python3.11 for its test image"
    aj_setup
}

# A sandbox from the pool whose zygote is ready; prints its id.
warm_sandbox() {
    local id i
    for i in $(seq 200); do
        [ "$(api GET /v1/pools | jq '.pools[0].ready')" -ge 1 ] && break
        sleep 0.05
    done
    id=$(sb_create "${1:-{\"image\": \"pywarm\"\}}")
    for i in $(seq 200); do
        [ "$(api GET "/v1/sandboxes/$id" | jq -r .interpreter)" = python3 ] && break
        sleep 0.05
    done
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r .interpreter)" python3 "zygote ready"
    echo "$id"
}

py() { # ID CODE [more exec JSON fields]: run python3 -c CODE, print the events
    sb_exec "$1" "$(jq -nc --arg c "$2" "{cmd: [\"python3\", \"-c\", \$c]} + ${3:-{\}}")"
}

@test "warm: python3 -c forks from the zygote: imports done, argv, env, cwd, stdin, status" {
    svc_start --pool pywarm=1
    assert_eq "$(api GET /v1/pools | jq -r '.pools[0].warmup')" "python3 -c 'import warm_mod, json'"
    id=$(warm_sandbox '{"image": "pywarm", "env": {"E": "from-create"}}')
    # the module was imported by another process (the zygote), ahead of time
    ev=$(py "$id" 'import os, sys, warm_mod; print(warm_mod.LOADED_BY != os.getpid(), sys.argv, os.getcwd(), os.environ["E"], os.environ["X"], sys.stdin.read()); sys.exit(3)' \
        '{cwd: "/tmp", env: {X: "from-exec"}, stdin: "in"}')
    assert_eq "$(events_stdout <<<"$ev")" "True ['-c'] /tmp from-create from-exec in"
    assert_eq "$(events_exit <<<"$ev" | jq -r .exit_code)" 3
    [ "$(events_exit <<<"$ev" | jq -r .duration_ms)" -lt 1500 ] || fail "the import was not warm"
    # arguments after the code, as python3 -c passes them
    ev=$(sb_exec "$id" '{"cmd": ["python3", "-c", "import sys; print(sys.argv)", "a", "b c"]}')
    assert_eq "$(events_stdout <<<"$ev")" "['-c', 'a', 'b c']"
    # an uncaught exception: its traceback (from the user's code only) and status 1
    ev=$(py "$id" 'raise ValueError("boom")')
    assert_eq "$(events_exit <<<"$ev" | jq -r .exit_code)" 1
    assert_eq "$(events_stderr <<<"$ev")" $'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\nValueError: boom'
    # each exec is a fresh fork: no state of the one before
    py "$id" 'import warm_mod; warm_mod.MARK = 1' >/dev/null
    assert_eq "$(py "$id" 'import warm_mod; print(hasattr(warm_mod, "MARK"))' | events_stdout)" False
    # a command that is not INTERP -c CODE runs as usual (cold)
    ev=$(sb_exec "$id" '{"cmd": ["python3", "-S", "-c", "import os, warm_mod; print(warm_mod.LOADED_BY == os.getpid())"]}')
    assert_eq "$(events_stdout <<<"$ev")" True
}

@test "warm: timeouts and signals reach the forked child; secrets stay redacted" {
    svc_start --pool pywarm=1
    id=$(warm_sandbox '{"image": "pywarm", "secret": {"TOK": "warm-s3cret-1"}}')
    ev=$(py "$id" 'import time; time.sleep(30)' '{timeout: 0.5}')
    assert_eq "$(events_exit <<<"$ev" | jq -r '[.exit_code, .timed_out] | @tsv')" $'124\ttrue'
    [ "$(events_exit <<<"$ev" | jq -r .duration_ms)" -lt 5000 ]
    p=$(api POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["python3", "-c", "import time; print(\"up\", flush=True); time.sleep(30)"], "background": true}' | jq -r .process)
    for _ in $(seq 50); do api GET "/v1/sandboxes/$id/processes/$p/output" | grep -q up && break; sleep 0.1; done
    api POST "/v1/sandboxes/$id/processes/$p/signal" -d '{"signal": "TERM"}' >/dev/null
    for _ in $(seq 50); do [ "$(api GET "/v1/sandboxes/$id/processes/$p" | jq -r .running)" = false ] && break; sleep 0.1; done
    assert_eq "$(api GET "/v1/sandboxes/$id/processes/$p" | jq -r '[.exit.exit_code, .exit.signal] | @tsv')" $'143\t15'
    # no forked child is left behind: only init, the zygote, and this command
    # (its client and its forked child)
    n=$(py "$id" 'import os; print(sum(1 for p in os.listdir("/proc") if p.isdigit()))' | events_stdout)
    assert_eq "$n" 4 "processes in the sandbox"
    out=$(py "$id" 'import os; print(os.environ["TOK"]); print("warm-s3cret-1")')
    [[ "$out" != *warm-s3cret-1* ]] || fail "secret in the output: $out"
    [[ "$(events_stdout <<<"$out")" == agentjail-placeholder-TOK-*$'\n[REDACTED]' ]] || fail "$out"
}

@test "warm: a forked child has exactly the walls of a cold command" {
    svc_start --pool pywarm=1
    id=$(warm_sandbox)
    code='import os
print(os.getuid(), os.getgid())
for l in open("/proc/self/status"):
    if l.split(":")[0] in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters"):
        print(l.strip())
try:
    os.mknod("/tmp/dev", 0o600 | 0o020000, os.makedev(1, 3))
except OSError as e:
    print("mknod", e.errno)
try:
    os.kill(1, 9)
except OSError as e:
    print("kill 1", e.errno)'
    warm=$(py "$id" "$code")
    cold=$(sb_exec "$id" "$(jq -nc --arg c "$code" '{cmd: ["python3", "-S", "-c", $c]}')")
    assert_eq "$(events_exit <<<"$warm" | jq -r .exit_code)" 0
    assert_eq "$(events_stdout <<<"$warm")" "$(events_stdout <<<"$cold")" "warm vs cold"
    [[ "$(events_stdout <<<"$warm")" == *"Seccomp:"*2* ]]
    [[ "$(events_stdout <<<"$warm")" == *"CapEff:"*0000000000000000* ]]
    [[ "$(events_stdout <<<"$warm")" == *"mknod 1"* ]] # EPERM
    [[ "$(events_stdout <<<"$warm")" == *"kill 1 1"* ]] # EPERM
}

@test "warm: without its socket, the client runs the interpreter itself" {
    svc_start --pool pywarm=1
    id=$(warm_sandbox)
    sb_exec "$id" '{"cmd": "rm -f /tmp/.agentjail-zygote-*.sock"}' >/dev/null
    ev=$(py "$id" 'import os, sys, warm_mod; print(warm_mod.LOADED_BY == os.getpid(), sys.argv)' '{}')
    assert_eq "$(events_stdout <<<"$ev")" "True ['-c']"
    assert_eq "$(events_exit <<<"$ev" | jq -r .exit_code)" 0
    # a sandbox not from the pool has no zygote (a hostname is not applied at
    # hand-out: never from the pool, however soon it refills)
    cold=$(sb_create '{"image": "pywarm", "hostname": "cold"}')
    assert_eq "$(api GET "/v1/sandboxes/$cold" | jq -r .interpreter)" null
}
