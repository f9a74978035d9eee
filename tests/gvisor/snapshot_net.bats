#!/usr/bin/env bats
# Fork and snapshot of level-2 sandboxes with a network (docs/levels.md,
# "Fork and snapshot at level 2"), in the fake world of tests/network (no
# packet to a real address): each copy is restored into a network
# namespace of its own, with its own veth, addresses, nft table, resolver,
# proxy and net-log; the source goes on; nothing is left after.

load ../service/helpers
load ../network/world

DRIVE=${AJGVDRIVE:-$(dirname "${AJ_REAL:-$AJ}")/tests/ajgvdrive}

setup_file() {
    world_setup_file
    world_test_certs "$BATS_FILE_TMPDIR/certs"
}

setup() {
    command -v runsc >/dev/null || skip "runsc is not installed (apt-get install runsc)"
    # for the scoped secret's test, :443 is HTTPS with the test CA's
    # certificates (tls.bats); the others probe plain :443
    CERTS=$BATS_FILE_TMPDIR/certs
    local tls=
    [[ "$BATS_TEST_DESCRIPTION" != *"scoped secret"* ]] || tls=443:$CERTS
    WORLD_TLS=$tls world_setup
    GVBOX_BEFORE=$(ls -d /tmp/agentjail-gvbox-* 2>/dev/null | sort || true)
    # the service runs in the test's "host" netns (its veths, nft tables)
    SVC_WRAP=(nsenter --net="/run/netns/$HNS")
}

teardown() {
    local rc=0
    svc_stop || rc=1
    world_teardown || rc=1
    return $rc
}

gv_create() { # JSON
    api POST /v1/sandboxes -d "$1" | jq -er .id
}

stdout_of() { # ID CMD: the command's stdout (sh -c)
    sb_exec "$1" "$(jq -nc --arg c "$2" '{cmd: ["sh", "-c", $c], timeout: 30}')" | events_stdout
}

# The sandbox's own address (the source of its packets to the fake internet).
MYADDR='python3 -c "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect((\"192.0.2.10\", 80)); print(\"addr\", s.getsockname()[0])"'

# The host netns's veths and nft tables of agentjail.
host_links() { ip -n "$HNS" -o link show | awk -F'[:@]' '$2 ~ /^ aj/ { print $2 }' | sort; }
host_tables() { ip netns exec "$HNS" nft list tables | grep -c agentjail- || true; }

# Nothing of a level-2 sandbox left: no runsc process, no new gvbox
# directory (runsc's state, checkpoints), nothing in the host netns.
gv_nothing_left() {
    local left after
    left=$(pgrep -a -f 'runsc.*--root=' || true)
    [ -z "$left" ] || fail "runsc processes left: $left"
    after=$(ls -d /tmp/agentjail-gvbox-* 2>/dev/null | sort || true)
    [ -z "$(comm -13 <(echo "$GVBOX_BEFORE") <(echo "$after"))" ] ||
        fail "gVisor sandbox directories left: $(comm -13 <(echo "$GVBOX_BEFORE") <(echo "$after"))"
    assert_world_clean
}

@test "gvisor fork --allow: each copy its own address, resolver, proxy and filter; the source goes on" {
    svc_start
    id=$(gv_create "{\"isolation\": \"gvisor\", \"allow\": [\"allowed.test\"], \"dns\": \"192.0.2.53\",
        \"ro\": [\"$NET_PROBE:/probe.py\"]}")
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 2}'
    assert_eq "$status_code" 201 "fork: $body"
    mapfile -t kids < <(jq -r '.sandboxes[].id' <<<"$body")
    assert_eq "${#kids[@]}" 2 "two copies: $body"
    # three sandboxes: three veths and tables on the host side
    assert_eq "$(host_links | wc -l)" 3 "veths: $(host_links)"
    assert_eq "$(host_tables)" 3 "nft tables"
    local addrs=() gws=() who extra=
    for who in src kid0 kid1; do
        case $who in kid0) s=${kids[0]} ;; kid1) s=${kids[1]} ;; src) s=$id ;; esac
        # one python per party (each start costs under gVisor): its address
        # and resolver, the proxy, then probe.py's direct connections (a
        # copy's also to the source's proxy and resolver: refused, as for a
        # process that still has the source's address from before the fork)
        output=$(stdout_of "$s" "python3 -c '
import socket, sys, urllib.request, urllib.error
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect((\"192.0.2.10\", 80))
print(\"addr\", s.getsockname()[0])
print([l.strip() for l in open(\"/etc/resolv.conf\") if l.startswith(\"nameserver\")][0])
for u in (\"http://allowed.test/$who\", \"http://other.test/$who\"):
    try: print(u, urllib.request.urlopen(u, timeout=5).read().decode().strip())
    except urllib.error.HTTPError as e: print(u, e.code)
    except Exception as e: print(u, \"error\", e)
sys.argv = [\"probe\", \"direct=192.0.2.10:80\", \"metadata=169.254.169.254:80\"] + \"$extra\".split()
exec(open(\"/probe.py\").read())
'")
        echo "$who: $output"
        assert_contains "$output" "http://allowed.test/$who inet-ok"
        assert_contains "$output" "http://other.test/$who 403"
        assert_refused direct
        assert_refused metadata
        # its resolver and proxy are on its own gateway: its address - 1
        a=$(awk '$1 == "addr" { print $2 }' <<<"$output")
        gw=$(awk '$1 == "nameserver" { print $2 }' <<<"$output")
        [ "${a%.*}" = "${gw%.*}" ] && [ "${a##*.}" = $((${gw##*.} + 1)) ] ||
            fail "$who: address $a, resolver $gw"
        addrs+=("$a")
        if [ "$who" = src ]; then
            extra="srcproxy=$gw:3128 srcdns=$gw:53"
        else
            assert_refused srcproxy
            assert_refused srcdns
        fi
    done
    assert_eq "$(printf '%s\n' "${addrs[@]}" | sort -u | wc -l)" 3 "three addresses: ${addrs[*]}"
    # each went through its own proxy to the allowed host; no DNS query
    # for other.test left the host
    for who in kid0 kid1 src; do
        assert_eq "$(jq -r "select(.path == \"/$who\") | .path" "$WEB_LOG")" "/$who" "$who at the web server"
    done
    assert_eq "$(dns_seen 'other\.test')" 0 "other.test was asked upstream"
    for s in "${kids[@]}" "$id"; do
        api_status DELETE "/v1/sandboxes/$s"
        assert_eq "$status_code" 200 "delete $s"
    done
    gv_nothing_left
}

@test "gvisor fork with a scoped secret: each copy intercepts HTTPS with a CA of its own" {
    # the old code tunnelled HTTPS at level 2: curl failed, the test CA untrusted
    svc_start --upstream-ca "$CERTS/ca.crt"
    local value='sk-gvfork-Zq8!x' curl='curl -sS -m 10 -H "Authorization: Bearer $TOKEN" -w "api %{http_code}\n" -o /dev/null'
    id=$(gv_create "{\"isolation\": \"gvisor\", \"allow\": [\"api.example.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": {\"TOKEN\": {\"value\": \"$value\", \"hosts\": [\"api.example.test\"]}}}")
    # the source reads its bundle before the fork (a fork copies no
    # connection: runsc checkpoint refuses a TCP endpoint)
    local src kid
    src=$(stdout_of "$id" 'md5sum </etc/ssl/certs/ca-certificates.crt')
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 1}'
    assert_eq "$status_code" 201 "fork: $body"
    kid=$(jq -r '.sandboxes[0].id' <<<"$body")
    output=$(stdout_of "$kid" "md5sum </etc/ssl/certs/ca-certificates.crt; $curl https://api.example.test/kid")
    mapfile -t lines <<<"$output"
    assert_output_has_line "api 200"
    [ "$(head -1 <<<"$output")" != "$src" ] || fail "the copy trusts the source's CA: $output"
    output=$(stdout_of "$id" "$curl https://api.example.test/src")
    mapfile -t lines <<<"$output"
    assert_output_has_line "api 200"
    local p
    for p in /kid /src; do
        [ "$(jq -r "select(.path == \"$p\") | .headers.Authorization" "$WEB_LOG")" = "Bearer $value" ] ||
            fail "$p: $(cat "$WEB_LOG")"
    done
    # each sandbox's netd logs its own injection to the audit log
    [ "$(jq -c "select(.event == \"secret_injected\" and (.sandbox == \"$id\" or .sandbox == \"$kid\"))" "$STATE/audit.log" | wc -l)" -eq 2 ] ||
        fail "audit: $(cat "$STATE/audit.log")"
    api DELETE "/v1/sandboxes/$kid" >/dev/null
    api DELETE "/v1/sandboxes/$id" >/dev/null
    gv_nothing_left
}

@test "gvisor fork --net open: copies reach the fake internet, never metadata, LAN or the host; a listener goes on" {
    svc_start
    id=$(gv_create "{\"isolation\": \"gvisor\", \"net\": \"open\", \"ro\": [\"$NET_PROBE:/probe.py\"]}")
    # a server on the sandbox's own loopback, detached: it goes on in each copy
    stdout_of "$id" 'mkdir /tmp/www && echo own-ok > /tmp/www/index.html
setsid python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/www </dev/null >/dev/null 2>&1 &
python3 /probe.py own=127.0.0.1:8000' >/dev/null
    api_status POST "/v1/sandboxes/$id/fork" -d '{"count": 1}'
    assert_eq "$status_code" 201 "fork: $body"
    kid=$(jq -r '.sandboxes[0].id' <<<"$body")
    for s in "$kid" "$id"; do
        output=$(stdout_of "$s" 'python3 /probe.py web1=192.0.2.10:80 web2=203.0.113.10:443 \
            metadata=169.254.169.254:80 lan=10.0.0.5:80 host-public=198.51.100.2:8080 \
            host-lo=127.0.0.1:8080 own=127.0.0.1:8000')
        echo "$s: $output"
        assert_served web1 inet-ok
        assert_served web2 inet-ok
        assert_served own own-ok
        for t in metadata lan host-public host-lo; do assert_refused "$t"; done
    done
    for s in "$kid" "$id"; do
        api_status DELETE "/v1/sandboxes/$s"
        assert_eq "$status_code" 200 "delete $s"
    done
    gv_nothing_left
}

@test "gvisor snapshot --net open: a create with the same network goes on from it in a namespace of its own" {
    export AGENTJAIL_STATE_DIR=$T/state
    mk_tiny_root "$T/tree" sh bash cat tail timeout
    aj_timeout "$AJ" image build tinynet --from-dir "$T/tree" 2>/dev/null
    svc_start
    id=$(gv_create '{"isolation": "gvisor", "image": "tinynet", "net": "open"}')
    stdout_of "$id" 'PATH=/bin; echo kept > /tmp/v' >/dev/null
    api_status POST "/v1/sandboxes/$id/snapshot" -d '{"name": "gnet"}'
    assert_eq "$status_code" 201 "snapshot: $body"
    new=$(gv_create '{"isolation": "gvisor", "image": "gnet", "net": "open"}')
    # TCP by bash: "NAME served BODY", else "NAME refused"
    TCP='PATH=/bin; for t in web1=192.0.2.10/80 metadata=169.254.169.254/80; do n=${t%%=*}
        timeout 5 bash -c "exec 3<>/dev/tcp/${t#*=} && printf \"GET / HTTP/1.0\r\n\r\n\" >&3 && echo $n served \$(tail -n 1 <&3)" 2>/dev/null || echo "$n refused"; done; cat /tmp/v'
    for s in "$new" "$id"; do
        output=$(stdout_of "$s" "$TCP")
        echo "$s: $output"
        assert_contains "$output" "web1 served inet-ok"
        assert_contains "$output" "metadata refused"
        assert_contains "$output" kept
    done
    assert_eq "$(host_links | wc -l)" 2 "veths: $(host_links)"
    # without the network: another shape than the saved one
    api_status POST /v1/sandboxes -d '{"isolation": "gvisor", "image": "gnet"}'
    assert_eq "$status_code" 409 "a create from it without the network: $body"
    assert_contains "$body" "saved memory"
    for s in "$new" "$id"; do
        api_status DELETE "/v1/sandboxes/$s"
        assert_eq "$status_code" 200 "delete $s"
    done
    gv_nothing_left
}

@test "gvisor fork at the seam --allow --net-log: each copy's net-log has its own traffic only" {
    [ -x "$DRIVE" ] || fail "no $DRIVE"
    printf '{"dns": "192.0.2.53", "allow": ["allowed.test"], "net-log": "%s"}\n' "$T/net.jsonl" >"$T/p.json"
    # a refused name and a refused direct connection per party (its port)
    run timeout -k 5 120 nsenter --net="/run/netns/$HNS" "$DRIVE" "$T/p.json" --fork 2 'port=$((7000 + ${#WHO})); case $WHO in copy1) port=7009 ;; esac
        getent hosts $WHO.evil.test; timeout 5 bash -c "exec 3<>/dev/tcp/203.0.113.10/$port" 2>/dev/null && echo d served || echo d refused' </dev/null
    echo "$output"
    assert_status 0
    assert_output_lacks "not ok"
    for who in src copy0 copy1 src2; do assert_contains "$output" "$who: d refused"; done
    # src (port 7003) and src2 (7004) in the source's log, copy0 (7005) and copy1 (7009) in theirs
    log_has() { # FILE PORTS NAMES: exactly those connect ports and query names
        assert_eq "$(jq -r 'select(.event == "connect") | .port' "$1" | sort -u | xargs)" "$2" "connects in $1: $(cat "$1")"
        assert_eq "$(jq -r 'select(.event == "dns") | .name' "$1" | sort -u | xargs)" "$3" "queries in $1"
    }
    log_has "$T/net.jsonl" "7003 7004" "src.evil.test src2.evil.test"
    log_has "$T/net.jsonl.0" "7005" "copy0.evil.test"
    log_has "$T/net.jsonl.1" "7009" "copy1.evil.test"
}
