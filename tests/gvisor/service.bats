#!/usr/bin/env bats
# Level 2 in the service: a gVisor sandbox that lives across commands,
# behind the same API as level 1 (docs/levels.md, "Level 2 in the
# service"); what level 2 lacks is 501, a level that can't run here 409,
# never a silent level 1.

load ../service/helpers

gv_create() { # [JSON]
    api POST /v1/sandboxes -d "${1:-{\"isolation\": \"gvisor\"\}}" | jq -er .id
}

# No runsc process, bundle or cgroup of a gVisor sandbox is left.
gv_none_left() {
    local left
    left=$(pgrep -a -f 'runsc.*--root=' || true)
    [ -z "$left" ] || fail "runsc processes left: $left"
}

@test "serve gvisor: commands share the sandbox's state; exit codes, stdin, timeout, redaction as level 1" {
    svc_start
    id=$(gv_create '{"isolation": "gvisor", "secret": {"TOKEN": "s3cr3t-value-91"}}')
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$(jq -r .isolation <<<"$body")" gvisor "the sandbox's level"
    # the Sentry's kernel, not the host's: gVisor's dmesg says so
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "dmesg 2>/dev/null | head -n1; echo 41 > /tmp/x"]}')
    [[ "$(events_stdout <<<"$out")" == *"gVisor"* ]] || fail "not gVisor: $out"
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "echo $(( $(cat /tmp/x) + 1 ))"]}')
    assert_eq "$(events_stdout <<<"$out")" "42" "a file written by the exec before"
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "exit 3"]}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 3 "exit code"
    out=$(sb_exec "$id" '{"cmd": ["cat"], "stdin": "from stdin\n"}')
    assert_eq "$(events_stdout <<<"$out")" "from stdin" "stdin"
    out=$(sb_exec "$id" '{"cmd": ["sleep", "30"], "timeout": 1}')
    assert_eq "$(events_exit <<<"$out" | jq -r .exit_code)" 124 "timeout"
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "echo $TOKEN; cat /proc/self/environ"]}')
    [[ "$out" != *"s3cr3t-value-91"* ]] || fail "the secret's value came out: $out"
    out=$(sb_exec "$id" '{"cmd": ["/no/such/command"]}')
    [[ "$out" == *"127"* ]] || fail "a missing command: $out"
    api_status DELETE "/v1/sandboxes/$id"
    assert_eq "$status_code" 200
    gv_none_left
}

# Every way of making a setuid/setgid file, one line each: NAME=ok when it
# worked (an escape), NAME=EPERM when it was refused. Run in the workspace
# (and /data, the --rw bind) by python3 inside the sandbox.
SETID_PY='
import os, errno, sys
def t(name, f):
    try:
        f(); print(name + "=ok")
    except OSError as e:
        print(name + "=" + errno.errorcode.get(e.errno, str(e.errno)))
for d in sys.argv[1:]:
    p = d + "/victim"
    open(p, "w").close()
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    fd = os.open(p, os.O_RDONLY)
    t(d + ":chmod_suid", lambda: os.chmod(p, 0o4755))
    t(d + ":chmod_sgid", lambda: os.chmod(p, 0o2755))
    t(d + ":fchmodat", lambda: os.chmod("victim", 0o4755, dir_fd=dfd))
    t(d + ":fchmod", lambda: os.fchmod(fd, 0o6755))
    t(d + ":open_creat", lambda: os.close(os.open(d + "/made", os.O_CREAT | os.O_WRONLY, 0o4755)))
    t(d + ":mknod", lambda: os.mknod(d + "/node", 0o102755))
'

# No file of the sandbox's (id range) or setid file under DIR, no runsc,
# no new /tmp/agentjail-gvbox-* directory (against $GVBOX_BEFORE).
gv_ws_clean() { # DIR
    local bad
    bad=$(find "$1" \( -perm /6000 -o \! -uid 4242 -o \! -gid 4343 \) -printf '%m %u:%g %p\n' || true)
    [ -z "$bad" ] || fail "setid or foreign-owned files left on the host: $bad"
    gv_none_left
    local after
    after=$(ls -d /tmp/agentjail-gvbox-* 2>/dev/null | sort || true)
    [ -z "$(comm -13 <(echo "$GVBOX_BEFORE") <(echo "$after"))" ] ||
        fail "gVisor sandbox directories left: $(comm -13 <(echo "$GVBOX_BEFORE") <(echo "$after"))"
}

@test "serve gvisor: a workspace and --rw: files are the owner's, no setid file, hooks protected" {
    GVBOX_BEFORE=$(ls -d /tmp/agentjail-gvbox-* 2>/dev/null | sort || true)
    svc_start
    ws=$BATS_TEST_TMPDIR/ws data=$BATS_TEST_TMPDIR/data
    mkdir "$ws" "$data"
    git init -q "$ws"
    chown -R 4242:4343 "$ws" "$data"
    id=$(gv_create "{\"isolation\": \"gvisor\", \"workspace\": \"$ws\", \"rw\": \"$data:/data\"}")
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "echo made inside > out.txt; echo also > /data/d.txt; pwd"]}')
    assert_eq "$(events_stdout <<<"$out")" /workspace "the command's directory"
    assert_eq "$(cat "$ws/out.txt")" "made inside" "a file written in the workspace"
    assert_eq "$(stat -c %u:%g "$ws/out.txt" "$data/d.txt" | sort -u)" 4242:4343 "their host owner"
    # the commands of a live sandbox are under the setid filter (the agent's)
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "touch s; chmod u+s s; echo u=$?; chmod g+s s; echo g=$?"]}')
    assert_eq "$(events_stdout <<<"$out")" $'u=1\ng=1' "chmod u+s / g+s: $out"
    body=$(jq -n --arg s "$SETID_PY" '{cmd: ["python3", "-", "/workspace", "/data"], stdin: $s}')
    out=$(events_stdout <<<"$(sb_exec "$id" "$body")")
    [ "$(grep -c '=EPERM$' <<<"$out")" = 12 ] || fail "not every setid attempt was refused: $out"
    # and so are its children, and a command started as a background process
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "sh -c \"chmod 4755 /data/d.txt\" && echo escaped"]}')
    [[ "$(events_stdout <<<"$out")" != *escaped* ]] || fail "a child made a setuid file: $out"
    # a protected git hook can't be planted (the workspace guard)
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "echo evil > .git/hooks/pre-commit && echo planted; mkdir -p .vscode && echo x > .vscode/tasks.json && echo planted"]}')
    [[ "$(events_stdout <<<"$out")" != *planted* ]] || fail "a host-run file was written: $out"
    [ ! -e "$ws/.git/hooks/pre-commit" ] || fail "a git hook was planted on the host"
    [ ! -e "$ws/.vscode/tasks.json" ] || fail ".vscode/tasks.json on the host"
    api_status DELETE "/v1/sandboxes/$id"
    assert_eq "$status_code" 200
    assert_eq "$(cat "$ws/out.txt")" "made inside" "the workspace's file after destroy"
    [ -z "$(find "$ws" "$data" -perm /6000)" ] || fail "a setid file on the host: $(find "$ws" "$data" -perm /6000 -ls)"
    gv_ws_clean "$ws"
    gv_ws_clean "$data"
}

@test "serve gvisor: files through the sandbox's own kernel; kernel file systems refused" {
    svc_start
    id=$(gv_create)
    printf 'hello from the host\n' >"$BATS_TEST_TMPDIR/up.txt"
    api_status PUT "/v1/sandboxes/$id/files?path=/tmp/up.txt" --data-binary @"$BATS_TEST_TMPDIR/up.txt"
    [ "$status_code" = 200 ] || [ "$status_code" = 201 ] || fail "upload: $status_code $body"
    out=$(sb_exec "$id" '{"cmd": ["cat", "/tmp/up.txt"]}')
    assert_eq "$(events_stdout <<<"$out")" "hello from the host" "the upload inside"
    sb_exec "$id" '{"cmd": ["sh", "-c", "head -c 3000000 /dev/zero | tr \"\\0\" a > /tmp/big"]}' >/dev/null
    api GET "/v1/sandboxes/$id/files?path=/tmp/big" -o "$BATS_TEST_TMPDIR/big"
    assert_eq "$(stat -c %s "$BATS_TEST_TMPDIR/big")" 3000000 "a 3 MB download"
    api_status POST "/v1/sandboxes/$id/mkdir?path=/tmp/a/b&parents=true"
    [ "$status_code" -lt 300 ] || fail "mkdir: $status_code $body"
    api_status GET "/v1/sandboxes/$id/files?path=/tmp"
    jq -e '.entries | map(.name) | index("up.txt") and index("a") and index("big")' <<<"$body" >/dev/null ||
        fail "listing: $body"
    api_status DELETE "/v1/sandboxes/$id/files?path=/tmp/a&recursive=true"
    assert_eq "$status_code" 200 "rm -r: $body"
    api_status GET "/v1/sandboxes/$id/files?path=/proc/self/environ"
    assert_eq "$status_code" 403 "a kernel file system: $body"
    # the sandbox's /etc/shadow is the sandbox's (no host file through a link)
    sb_exec "$id" '{"cmd": ["ln", "-s", "/etc/shadow", "/tmp/link"]}' >/dev/null
    api_status GET "/v1/sandboxes/$id/files?path=/tmp/link"
    [[ "$body" != *"root:"* ]] || fail "the host's /etc/shadow through a link: $body"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    gv_none_left
}

@test "serve gvisor: an upload is answered once the whole file is in the sandbox" {
    svc_start
    id=$(gv_create)
    head -c 24M /dev/urandom >"$BATS_TEST_TMPDIR/big.bin"
    want=$(sha256sum <"$BATS_TEST_TMPDIR/big.bin" | cut -d' ' -f1)
    for n in 1 2 3; do
        api_status PUT "/v1/sandboxes/$id/files?path=/tmp/big$n.bin" --data-binary @"$BATS_TEST_TMPDIR/big.bin"
        assert_eq "$status_code" 201 "upload $n: $body"
        assert_eq "$(jq -r .size <<<"$body")" 25165824 "the size answered"
        # at once: the command sees the whole file
        out=$(sb_exec "$id" "{\"cmd\": [\"sha256sum\", \"/tmp/big$n.bin\"]}")
        assert_eq "$(events_stdout <<<"$out" | cut -d' ' -f1)" "$want" "upload $n's bytes inside"
    done
    api DELETE "/v1/sandboxes/$id" >/dev/null
    # a write that fails after the body came (a full /tmp) is the answer's
    # error, not a 201 for a short file
    id=$(gv_create '{"isolation": "gvisor", "disk": "8M"}')
    api_status PUT "/v1/sandboxes/$id/files?path=/tmp/too-big.bin" --data-binary @"$BATS_TEST_TMPDIR/big.bin"
    assert_eq "$status_code" 507 "an upload past --disk: $body"
    assert_contains "$body" "too-big.bin"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    gv_none_left
}

@test "serve gvisor: pause and resume (snapshot and fork: snapshot.bats)" {
    svc_start
    id=$(gv_create)
    api_status POST "/v1/sandboxes/$id/pause"
    assert_eq "$status_code" 200 "pause: $body"
    api_status POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["true"]}'
    assert_eq "$status_code" 409 "exec while paused"
    api_status POST "/v1/sandboxes/$id/resume"
    assert_eq "$status_code" 200 "resume: $body"
    out=$(sb_exec "$id" '{"cmd": ["echo", "awake"]}')
    assert_eq "$(events_stdout <<<"$out")" awake "exec after resume"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    gv_none_left
}

@test "serve gvisor: a terminal (sandbox exec -t) with its size" {
    svc_start
    id=$(gv_create)
    run timeout 30 script -qec "stty rows 33 cols 101; '$AJ' sandbox --socket '$SOCK' exec -t '$id' -- sh -c 'tty; stty size; exit 5'" /dev/null
    assert_status 5
    [[ "$output" == *"/dev/pts/"* ]] || fail "no terminal: $output"
    [[ "$output" == *"33 101"* ]] || fail "the terminal's size did not come in: $output"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    gv_none_left
}

@test "serve gvisor: a pool of level 2 serves level-2 creates only" {
    svc_start --pool gvisor:default=1
    for _ in $(seq 200); do
        [ "$(api GET /v1/pools | jq -r '.pools[] | select(.isolation == "gvisor") | .ready')" = 1 ] && break
        sleep 0.1
    done
    id=$(gv_create)
    assert_eq "$(api GET /v1/pools | jq -r '.pools[] | select(.isolation == "gvisor") | .hits')" 1 "pool hits"
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r .isolation)" gvisor
    id1=$(sb_create '{}')
    assert_eq "$(api GET "/v1/sandboxes/$id1" | jq -r .isolation)" process "a level-1 create from a level-2 pool"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    api DELETE "/v1/sandboxes/$id1" >/dev/null
}

# The host cgroup file KNOB (v1 memory/pids) of the sandbox whose Sentry is PID.
gv_cg_knob() { # PID CONTROLLER KNOB
    local path
    path=$(awk -F: -v c="$2" '$2 == c {print $3}' "/proc/$1/cgroup")
    cat "/sys/fs/cgroup/$2$path/$3"
}

@test "serve gvisor: a pooled sandbox is handed out with the create's env, secrets and limits" {
    svc_start --pool gvisor:default=1
    gv_pool_ready() {
        for _ in $(seq 300); do
            [ "$(api GET /v1/pools | jq -r '.pools[] | select(.isolation == "gvisor") | .ready')" = 1 ] && return 0
            sleep 0.1
        done
        fail "the level-2 pool did not fill"
    }
    gv_pool_ready
    sleep 2 # the pooled sandbox is 2 s old at least: not one built for the create
    id=$(gv_create '{"isolation": "gvisor", "env": {"HANDOUT": "yes"}, "secret": {"TOKEN": "s3cr3t-handout-57"}, "memory": "300M", "pids": 40}')
    assert_eq "$(api GET /v1/pools | jq -r '.pools[] | select(.isolation == "gvisor") | .hits')" 1 "pool hits"
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "echo $HANDOUT; ulimit -p; echo s3cr3t-handout-57; test -n \"$TOKEN\" && echo token-set"]}')
    assert_eq "$(events_stdout <<<"$out")" $'yes\n40\n[REDACTED]\ntoken-set' "env, RLIMIT_NPROC, redaction of the new secret: $out"
    [[ "$out" != *"s3cr3t-handout-57"* ]] || fail "the new secret's value came out: $out"
    pid=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
    [ "$(ps -o etimes= -p "$pid")" -ge 2 ] || fail "not the pooled sandbox (built $(ps -o etimes= -p "$pid") s ago)"
    assert_eq "$(gv_cg_knob "$pid" memory memory.limit_in_bytes)" 314572800 "the cgroup's memory limit"
    assert_eq "$(gv_cg_knob "$pid" pids pids.max)" $((192 + 16 * 40)) "the cgroup's pids ceiling"
    assert_eq "$(api GET "/v1/sandboxes/$id" | jq -r '[.limits.memory, .limits.pids] | @tsv')" $'314572800\t40'
    api DELETE "/v1/sandboxes/$id" >/dev/null
    # what a live level-2 sandbox can't change is built fresh (the pooled
    # one is dropped): a higher pids limit (RLIMIT_NPROC inside only goes
    # down), the disk
    gv_pool_ready
    id=$(gv_create '{"isolation": "gvisor", "pids": 1000}')
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "ulimit -p"]}')
    assert_eq "$(events_stdout <<<"$out")" 1000 "the fresh sandbox's RLIMIT_NPROC"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    gv_pool_ready
    id=$(gv_create '{"isolation": "gvisor", "disk": "16M"}')
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "head -c 32000000 /dev/zero > /tmp/f 2>/dev/null; echo $?"]}')
    assert_eq "$(events_stdout <<<"$out")" 1 "--disk 16M holds (a fresh sandbox)"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    kill "$SVC_PID"
    wait "$SVC_PID" 2>/dev/null || true
    SVC_PID=
    gv_none_left
}

@test "serve gvisor: a SIGKILLed service's level-2 sandboxes are swept at the next start" {
    svc_start
    id=$(gv_create)
    sb_exec "$id" '{"cmd": ["true"]}' >/dev/null
    svc_crash
    svc_start
    api_status GET "/v1/sandboxes/$id"
    assert_eq "$status_code" 404
    for _ in $(seq 50); do
        pgrep -f 'runsc.*--root=' >/dev/null || break
        sleep 0.1
    done
    gv_none_left
}

@test "serve gvisor: a level that can't run here is 409 with the fix; a bad level 400; never level 1" {
    SVC_WRAP=(env AGENTJAIL_RUNSC=/nonexistent/runsc)
    svc_start
    api_status POST /v1/sandboxes -d '{"isolation": "gvisor"}'
    assert_eq "$status_code" 409 "create: $body"
    assert_eq "$(jq -r .error.code <<<"$body")" isolation_unavailable
    assert_contains "$body" "fix:"
    api_status POST /v1/sandboxes -d '{"isolation": "bogus"}'
    assert_eq "$status_code" 400
    api_status POST /v1/sandboxes -d '{"isolation": "microvm", "memory": "64m"}'
    assert_eq "$status_code" 400 "microvm below its kernel's memory: $body"
    api_status GET /v1/sandboxes
    assert_eq "$(jq -r 'if type == "array" then length else (.sandboxes | length) end' <<<"$body")" 0 "sandboxes after the refused creates"
}

@test "serve gvisor: the code interpreter's kernel runs inside runsc; state kept; a secret redacted" {
    /usr/bin/python3 -c 'import ipykernel, jupyter_client' || skip "no python3-ipykernel (scripts/setup.sh)"
    svc_start
    id=$(gv_create '{"isolation": "gvisor", "secret": {"TOKEN": "s3cr3t-value-93"}}')
    out=$(api POST "/v1/sandboxes/$id/code" -d '{"code": "import os\nv = 41\nprint(os.uname().release)"}')
    # gVisor's Sentry reports its own kernel release, not the host's
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$out")" "4.4.0"
    assert_ne "$(uname -r)" "4.4.0"
    out=$(api POST "/v1/sandboxes/$id/code" -d '{"code": "print(os.environ[\"TOKEN\"], \"s3cr3t-value-93\")\nv + 1"}')
    [[ "$out" != *"s3cr3t-value-93"* ]] || fail "the secret's value came out: $out"
    assert_eq "$(jq -rs 'map(select(.type == "result"))[0].data["text/plain"]' <<<"$out")" 42
    api_status DELETE "/v1/sandboxes/$id"
    assert_eq "$status_code" 200
    # the bridge's runsc exec ends with the sandbox (its last reference, as
    # a command still running when the sandbox is deleted)
    for _ in $(seq 100); do pgrep -f 'runsc.*--root=' >/dev/null || break; sleep 0.1; done
    gv_none_left
}

@test "serve gvisor: the ports proxy reaches a server on the sandbox's loopback through the agent" {
    svc_start
    id=$(gv_create)
    # busybox's httpd (the host's /usr/bin/busybox) on the Sentry's loopback,
    # with CGI scripts that hold a connection and that flood one
    out=$(sb_exec "$id" '{"cmd": ["sh", "-c", "mkdir -p /tmp/www/cgi-bin && echo from-gvisor >/tmp/www/hello.txt && printf \"#!/bin/sh\\necho x >>/tmp/held\\nexec sleep 600\\n\" >/tmp/www/cgi-bin/hold && printf \"#!/bin/sh\\necho Content-Type: text/plain\\necho\\nexec cat /dev/zero\\n\" >/tmp/www/cgi-bin/flood && chmod +x /tmp/www/cgi-bin/* && busybox httpd -p 127.0.0.1:8080 -h /tmp/www"]}')
    api_status GET "/v1/sandboxes/$id/ports/8080/hello.txt"
    assert_eq "$status_code" 200 "ports: $body $out"
    assert_eq "$body" $'from-gvisor\n' "a file the sandbox's server served"
    api_status GET "/v1/sandboxes/$id/ports/8081/"
    assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 502:port_closed "a closed port: $body"
    # two held connections take the proxy's two: a third is 503 at once,
    # commands still run, and a client's hang-up frees its connection
    curl -s --unix-socket "$SOCK" -o /dev/null --max-time 30 "http://agentjail/v1/sandboxes/$id/ports/8080/cgi-bin/hold" &
    local h1=$!
    curl -s --unix-socket "$SOCK" -o /dev/null --max-time 30 "http://agentjail/v1/sandboxes/$id/ports/8080/cgi-bin/hold" &
    local h2=$! n=0
    for _ in $(seq 50); do
        n=$(sb_exec "$id" '{"cmd": ["sh", "-c", "cat /tmp/held 2>/dev/null | wc -l"]}' | events_stdout)
        [ "${n// /}" -ge 2 ] && break
        sleep 0.2
    done
    assert_eq "${n// /}" 2 "the held connections reached the server"
    api_status GET "/v1/sandboxes/$id/ports/8080/hello.txt"
    assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 503:busy "a third connection: $body"
    out=$(sb_exec "$id" '{"cmd": ["echo", "beside"]}')
    assert_eq "$(events_stdout <<<"$out")" beside "a command beside the held connections"
    kill "$h1" "$h2"
    wait "$h1" "$h2" 2>/dev/null || true
    for _ in $(seq 50); do
        api_status GET "/v1/sandboxes/$id/ports/8080/hello.txt"
        [ "$status_code" = 200 ] && break
        sleep 0.2
    done
    assert_eq "$status_code" 200 "once the held clients hung up: $body"
    # a client that reads a few bytes of a flood and hangs up: the service
    # goes on (no SIGPIPE), the connection ends in the sandbox
    curl -s --unix-socket "$SOCK" --max-time 10 "http://agentjail/v1/sandboxes/$id/ports/8080/cgi-bin/flood" |
        head -c 16 >/dev/null || true
    api_status GET "/v1/sandboxes/$id/ports/8080/hello.txt"
    assert_eq "$status_code" 200 "after a flood's client hung up: $body"
    # a client that does not read a flood: the delete ends its relay
    curl -s --unix-socket "$SOCK" -o /dev/null --max-time 60 --limit-rate 1 "http://agentjail/v1/sandboxes/$id/ports/8080/cgi-bin/flood" &
    local fl=$!
    sleep 1
    api_status DELETE "/v1/sandboxes/$id" --max-time 30
    kill "$fl" 2>/dev/null || true
    wait "$fl" 2>/dev/null || true
    assert_eq "$status_code" 200 "delete with a flooded proxy client: $body"
    gv_none_left
}
