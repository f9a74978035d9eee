#!/usr/bin/env bats
# The third job (issue 22): a headless Chromium in a sandbox, on a hostile
# page, driven by Playwright on the host over CDP through the service's
# ports proxy (docs/guides/browser.md): no host port is published for it.
# The page (hostile.py, on 192.0.2.10 in the fake world of world.bash)
# tries to reach the host's loopback services (the API among them), the
# host's addresses, the metadata address, the LAN, file:/// and, with
# WebRTC, UDP to the same; loggers on those addresses (hostile.py again,
# in the "internet" and in the "host" namespace where the service runs)
# record whatever arrives: nothing may, while the page's own requests and
# a public control address do. Nothing here sends a packet to a real
# address.

load ../service/helpers
load world

# the fake internet's own web servers stay off port 80: hostile.py has it
WORLD_WEB_PORTS=8443
PW=$BATS_TEST_DIRNAME/../browser

setup_file() { world_setup_file; }
setup() {
    world_setup
    command -v chromium >/dev/null || skip "chromium not installed (scripts/setup.sh)"
    [ -d "$PW/node_modules/playwright-core" ] || skip "playwright-core not installed (scripts/setup.sh)"
    SVC_WRAP=(nsenter --net="/run/netns/$HNS")
}
teardown() {
    local rc=0
    svc_stop || rc=1
    world_teardown || rc=1
    return $rc
}

# hostile.py in netns NS: HTTP on port HTTP, UDP on 3478, its log LOG.
logger() { # NS HTTP LOG
    : >"$3"
    rm -f "$3.ready"
    ip netns exec "$1" python3 "$NET_DIR/hostile.py" --http "$2" --udp 3478 --log "$3" \
        --ready "$3.ready" >/dev/null 2>&1 3>&- &
    WORLD_PIDS+=($!)
    for _ in $(seq 100); do [ -e "$3.ready" ] && return 0; sleep 0.05; done
    fail "hostile.py did not start in $1"
}

@test "browser: Playwright drives a sandboxed Chromium on a hostile page through the ports proxy" {
    logger "$INS" 80 "$T/inet.log"
    logger "$HNS" 9999 "$T/host.log"
    # the host has a session bus and a display, on abstract sockets of its
    # network namespace and in the service's environment
    ip netns exec "$HNS" python3 -c '
import socket, time
socks = []
for name in ("\0/tmp/.X11-unix/X0", "\0/tmp/dbus-ajtest"):
    s = socket.socket(socket.AF_UNIX); s.bind(name); s.listen(); socks.append(s)
time.sleep(600)' 3>&- &
    WORLD_PIDS+=($!)
    head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$T/token"
    PORT=$((20000 + RANDOM % 20000))
    DISPLAY=:0 DBUS_SESSION_BUS_ADDRESS=unix:abstract=/tmp/dbus-ajtest \
        svc_start --listen "127.0.0.1:$PORT" --token-file "$T/token"
    id=$(sb_create '{"net": "open", "memory": "2G", "pids": 1024, "timeout": 300}')
    api POST "/v1/sandboxes/$id/exec" -d '{"background": true, "cmd": ["chromium",
        "--headless", "--no-sandbox", "--remote-debugging-port=9222",
        "--user-data-dir=/tmp/chromium", "--no-first-run", "about:blank"]}' >/dev/null
    for _ in $(seq 600); do
        api_status GET "/v1/sandboxes/$id/ports/9222/json/version"
        [ "$status_code" = 200 ] && break
        sleep 0.1
    done
    assert_eq "$status_code" 200 "Chromium's DevTools through the proxy: $body"
    # the sandbox's gateway: the host's end of its veth
    gw=$(sb_exec "$id" '{"cmd": ["sh", "-c", "awk '\''$2 == \"00000000\" { print $3 }'\'' /proc/net/route"]}' |
        events_stdout | python3 -c 'import sys,socket,struct; print(socket.inet_ntoa(struct.pack("<I", int(sys.stdin.read().strip(), 16))))')
    targets=$(jq -cn --arg p "$PORT" --arg gw "$gw" '{
        "host-loopback": "http://127.0.0.1:9999/steal", "host-api": "http://127.0.0.1:\($p)/v1/sandboxes",
        "host-public": "http://198.51.100.2:9999/steal", "host-veth": "http://\($gw):9999/steal",
        "metadata": "http://169.254.169.254/latest/meta-data/", "lan": "http://10.0.0.5/admin",
        "file": "file:///etc/passwd", "control": "http://203.0.113.10/ok"}')
    stun=$(jq -cn --arg gw "$gw" '["169.254.169.254:3478", "10.0.0.5:3478", "198.51.100.2:3478",
        "\($gw):3478", "127.0.0.1:3478", "192.0.2.10:3478"]')
    url="http://192.0.2.10/hostile.html?targets=$(jq -rn --arg v "$targets" '$v|@uri')&stun=$(jq -rn --arg v "$stun" '$v|@uri')"
    run --separate-stderr timeout 120 nsenter --net="/run/netns/$HNS" node "$PW/drive.mjs" \
        "http://127.0.0.1:$PORT" "$(cat "$T/token")" "$id" "$url" "$T/shot.png"
    echo "$stderr" >&2
    assert_status 0
    echo "$output" >&2
    assert_eq "$(jq -r .title <<<"$output")" done
    [[ "$(jq -r .browser <<<"$output")" == Chrom* ]] || fail "not Chromium: $output"
    # what the page saw: every target but the control blocked
    for k in host-loopback host-api host-public host-veth metadata lan file; do
        r=$(jq -r --arg k "$k" '.results[$k]' <<<"$output")
        [[ "$r" == blocked:* ]] || fail "$k: the page reached it: $r"
    done
    [[ "$(jq -r '.results.control' <<<"$output")" == reached:* ]] || fail "the control was not reached: $output"
    # what the servers saw: the page, its report and the control; nothing else
    cut -c1-100 "$T/inet.log" >&2
    grep -q '^http 192.0.2.10:80 GET /hostile.html' "$T/inet.log"
    grep -q '^http 203.0.113.10:80 GET /ok' "$T/inet.log"
    grep -q '^report {' "$T/inet.log"
    ! grep -E '^(http|udp) (169\.254\.169\.254|10\.0\.0\.5):' "$T/inet.log" || fail "metadata or LAN reached"
    [ ! -s "$T/host.log" ] || fail "the host's servers were reached: $(cat "$T/host.log")"
    # the screenshot is a PNG with a size
    assert_eq "$(head -c 8 "$T/shot.png" | od -An -tx1 | tr -d ' \n')" 89504e470d0a1a0a
    assert_eq "$(dd if="$T/shot.png" bs=1 skip=12 count=4 2>/dev/null)" IHDR
    w=$(od -An -tu1 -j16 -N4 "$T/shot.png" | awk '{ print $1*16777216 + $2*65536 + $3*256 + $4 }')
    [ "$w" -ge 100 ] || fail "screenshot width $w"
    # no host D-Bus, keyring or display inside: no sockets, no variables
    out=$(sb_exec "$id" '{"cmd": ["python3", "-c", "
import os, socket
for p in (\"/run/dbus/system_bus_socket\", \"/var/run/dbus\", \"/run/user\", \"/tmp/.X11-unix\",
          os.path.expanduser(\"~/.local/share/keyrings\"), \"/run/user/0/keyring\"):
    print(p, os.path.exists(p))
for v in (\"DISPLAY\", \"DBUS_SESSION_BUS_ADDRESS\", \"WAYLAND_DISPLAY\"):
    print(v, v in os.environ)
for name in (\"\\u0000/tmp/.X11-unix/X0\", \"\\u0000/tmp/dbus-ajtest\"):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(name); print(name[1:], \"connected\")
    except OSError as e:
        print(name[1:], e.errno)
"]}' | events_stdout)
    echo "$out" >&2
    ! grep -q ' True$' <<<"$out" || fail "visible inside: $out"
    ! grep -q connected <<<"$out" || fail "a host socket answered: $out"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    for _ in $(seq 100); do [ -z "$(world_residue)" ] && break; sleep 0.1; done
    assert_world_clean
}
