#!/usr/bin/env bats
# The service on a cluster (docs/kubernetes.md), simulated: three
# `agentjail serve --node NAME` in three network namespaces of the test's
# own, nginx (Debian's) in a fourth with the shipped deploy/nginx/agentjail.conf
# in front; sandbox ids name their node, the proxy routes by id.
#
#   client, nginx :8080 in $PNS --veth p1/p2/p3--> $NS1 10.231.1.2:8080 ip-10-231-1-2
#                                                  $NS2 10.231.2.2:8080 ip-10-231-2-2
#                                                  $NS3 10.231.3.2:8080 gamma (by the map)

load helpers
load ../network/world

setup_file() { world_setup_file; }

NODES=(ip-10-231-1-2 ip-10-231-2-2 gamma)

# Everything the test starts is stopped here, whatever failed.
teardown() {
    local rc=0 i
    for i in 0 1 2; do node_stop "$i" || rc=1; done
    if [ -n "${NGINX_PID:-}" ]; then
        kill -QUIT "$NGINX_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    for n in ${NSS[@]+"${NSS[@]}"}; do ip netns del "$n" 2>/dev/null || true; done
    aj_teardown || rc=1
    return $rc
}

# in the proxy's (and the client's) namespace
pns() { nsenter --net="/run/netns/$PNS" "$@"; }

# curl through nginx: METHOD PATH [args]; sets $status_code and $body
px() {
    local m=$1 p=$2 out
    shift 2
    out=$(pns curl -sS --max-time 30 -H "Authorization: Bearer $TOKEN" -X "$m" \
        "http://127.0.0.1:8080$p" -w '\n%{http_code}' "$@")
    status_code=${out##*$'\n'}
    body=${out%$'\n'*}
}

# curl straight to node I's service, past nginx
direct() { # I METHOD PATH
    pns curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "Authorization: Bearer $TOKEN" \
        -X "$2" "http://10.231.$(($1 + 1)).2:8080$3"
}

node_start() { # I
    local i=$1 st=$T/node$1
    mkdir -p "$st"
    nsenter --net="/run/netns/${NSS[$((i + 1))]}" "$AJ" serve --quiet --node "${NODES[$i]}" \
        --socket "$st/aj.sock" --state-dir "$st" --listen "0.0.0.0:8080" \
        --token-file "$T/token" 2>>"$T/serve$i.log" </dev/null 3>&- &
    NODE_PIDS[$i]=$!
}

node_wait() { # I
    local j
    for j in $(seq 200); do
        [ "$(direct "$1" GET /healthz)" = 200 ] && return 0
        kill -0 "${NODE_PIDS[$1]}" 2>/dev/null || break
        sleep 0.05
    done
    cat "$T/serve$1.log" >&2
    fail "node $1's service did not start"
}

# its keepers recorded for the residue check (as svc_stop does)
node_keepers() {
    jq -r 'select(.keeper != null) | .keeper' "$T/node$1/audit.log" >>"$AJ_PIDS_FILE" 2>/dev/null || true
}

node_stop() { # I
    local p=${NODE_PIDS[$1]:-} rc=0
    [ -n "$p" ] || return 0
    node_keepers "$1"
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || rc=$?
    NODE_PIDS[$1]=
    [ "$rc" -eq 0 ] || { cat "$T/serve$1.log" >&2; fail "node $1's service exited with $rc"; }
}

cluster_up() {
    local id=${BATS_TEST_NUMBER:-0}$$ i
    PNS=ajt-px-$id
    NSS=("$PNS" "ajt-n1-$id" "ajt-n2-$id" "ajt-n3-$id")
    NODE_PIDS=()
    for n in "${NSS[@]}"; do
        ip netns add "$n"
        ip -n "$n" link set lo up
    done
    for i in 1 2 3; do
        ip link add "p$i" netns "$PNS" type veth peer name eth0 netns "${NSS[$i]}"
        ip -n "$PNS" addr add "10.231.$i.1/24" dev "p$i"
        ip -n "${NSS[$i]}" addr add "10.231.$i.2/24" dev eth0
        ip -n "$PNS" link set "p$i" up
        ip -n "${NSS[$i]}" link set eth0 up
    done
    TOKEN=cluster-token-0123456789abcdef
    printf '%s\n' "$TOKEN" >"$T/token"
    chmod 0600 "$T/token"
    for i in 0 1 2; do node_start "$i"; done
    # nginx: the shipped config, the test's own prefix, pid and logs
    local nx=$T/nginx
    mkdir -p "$nx/logs" "$nx/tmp"
    cat >"$nx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $nx/nginx.pid;
error_log $nx/logs/error.log;
events { worker_connections 256; }
http {
    access_log $nx/logs/access.log;
    client_body_temp_path $nx/tmp/body;
    proxy_temp_path $nx/tmp/proxy;
    upstream agentjail_any {
        server 10.231.1.2:8080;
        server 10.231.2.2:8080;
        server 10.231.3.2:8080;
    }
    include $_aj_root/deploy/nginx/agentjail.conf;
}
EOF
    echo 'gamma 10.231.3.2:8080;' >"$nx/agentjail-nodes.map"
    nsenter --net="/run/netns/$PNS" nginx -p "$nx" -c "$nx/nginx.conf" \
        2>>"$nx/logs/error.log" </dev/null 3>&- &
    NGINX_PID=$!
    for i in 0 1 2; do node_wait "$i"; done
    for i in $(seq 100); do
        [ "$(pns curl -s -o /dev/null -w '%{http_code}' --max-time 2 http://127.0.0.1:8080/healthz)" = 200 ] &&
            return 0
        sleep 0.05
    done
    cat "$nx/logs/error.log" >&2
    fail "nginx did not start"
}

node_of() { echo "${1#sb-????????????????-}"; }

@test "cluster: ids name their node; nginx routes exec, files, WebSocket by id; a killed node answers 502, the rest work" {
    command -v nginx >/dev/null || skip "nginx not installed (scripts/setup.sh)"
    cluster_up

    # creates spread over the three nodes; each id ends in its node's name
    local ids=() id n i
    for i in 1 2 3 4 5 6; do
        px POST /v1/sandboxes -d '{}'
        assert_eq "$status_code" 201 "create through nginx: $body"
        id=$(jq -r .id <<<"$body")
        [[ "$id" =~ ^sb-[0-9a-f]{16}-(ip-10-231-[123]-2|gamma)$ ]] || fail "id $id"
        ids+=("$id")
    done
    assert_eq "$(for id in "${ids[@]}"; do node_of "$id"; done | sort | uniq -c | awk '{ print $1 }' | tr '\n' ' ')" \
        "2 2 2 " "creates per node"

    # each sandbox is on the node its id names, and on no other
    for id in "${ids[@]}"; do
        n=$(node_of "$id")
        for i in 0 1 2; do
            if [ "${NODES[$i]}" = "$n" ]; then want=200; else want=404; fi
            assert_eq "$(direct "$i" GET "/v1/sandboxes/$id")" "$want" "$id on node $i"
        done
        # exec through nginx reaches it
        px POST "/v1/sandboxes/$id/exec" -d "{\"cmd\": [\"sh\", \"-c\", \"echo in-$id\"]}"
        assert_eq "$status_code" 200 "exec on $id: $body"
        assert_eq "$(events_stdout <<<"$body")" "in-$id" "exec output on $id"
    done

    # files: up and down through nginx, seen by a command on the same node
    id=${ids[1]}
    head -c 300000 /dev/urandom >"$T/blob"
    px PUT "/v1/sandboxes/$id/files?path=/tmp/blob" --data-binary "@$T/blob"
    [[ "$status_code" == 20? ]] || fail "upload: $status_code $body"
    pns curl -sS --max-time 30 -H "Authorization: Bearer $TOKEN" -o "$T/blob.back" \
        "http://127.0.0.1:8080/v1/sandboxes/$id/files?path=/tmp/blob"
    cmp "$T/blob" "$T/blob.back" || fail "download through nginx differs"
    px POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["sh", "-c", "wc -c < /tmp/blob"]}'
    assert_eq "$(events_stdout <<<"$body" | tr -d ' \n')" 300000 "the file on its node"

    # a WebSocket exec (the CLI's exec -t) through nginx: upgrade, stdin, status
    id=${ids[2]}
    run bash -c "printf 'echo ws-\$((6*7))-\nexit 4\n' | timeout 20 nsenter --net=/run/netns/$PNS \
        '$AJ' sandbox --url http://127.0.0.1:8080 --token-file '$T/token' exec -t '$id' -- sh"
    assert_status 4
    [[ "$output" == *"ws-42-"* ]] || fail "WebSocket exec through nginx: $output"

    # a node the proxy does not know: 404 in JSON, nothing sent anywhere
    px GET /v1/sandboxes/sb-0123456789abcdef-nowhere
    assert_eq "$status_code" 404
    assert_eq "$(jq -r .error.code <<<"$body")" unknown_node

    # SIGKILL node 2's service: its sandboxes answer 502 node_unavailable
    # (JSON), the other nodes' sandboxes still run, creates go elsewhere
    node_keepers 1
    kill -KILL "${NODE_PIDS[1]}"
    wait "${NODE_PIDS[1]}" 2>/dev/null || true
    NODE_PIDS[1]=
    for id in "${ids[@]}"; do
        px POST "/v1/sandboxes/$id/exec" -d '{"cmd": ["echo", "alive"]}'
        if [ "$(node_of "$id")" = ip-10-231-2-2 ]; then
            assert_eq "$status_code" 502 "exec on the killed node's $id: $body"
            assert_eq "$(jq -r .error.code <<<"$body")" node_unavailable
            [[ "$(jq -r .error.message <<<"$body")" == *ip-10-231-2-2* ]] || fail "$body"
        else
            assert_eq "$status_code" 200 "exec on $id with node 2 dead: $body"
            assert_eq "$(events_stdout <<<"$body")" alive
        fi
    done
    for i in 1 2 3 4; do
        px POST /v1/sandboxes -d '{}'
        assert_eq "$status_code" 201 "create with node 2 dead: $body"
        id=$(jq -r .id <<<"$body")
        [ "$(node_of "$id")" != ip-10-231-2-2 ] || fail "created on the dead node: $id"
        ids+=("$id")
    done

    # clean: the live nodes' sandboxes deleted through nginx; node 2 started
    # again sweeps what its killed service left
    for id in "${ids[@]}"; do
        [ "$(node_of "$id")" = ip-10-231-2-2 ] && continue
        px DELETE "/v1/sandboxes/$id"
        [[ "$status_code" == 20? ]] || fail "delete $id: $status_code $body"
    done
    node_start 1
    node_wait 1
    assert_eq "$(ls "$T/node1/sandboxes" | wc -l)" 0 "node 2's state after its restart"
}

@test "cluster: serve --node takes only a DNS label" {
    local bad
    for bad in Node1 -a a- a_b "a.b" "" "$(printf 'a%.0s' $(seq 64))"; do
        run --separate-stderr "$AJ" serve --node "$bad" --socket "$T/x.sock" --state-dir "$T/st"
        assert_status 125
        assert_one_error_line
        [[ "$stderr" == *"--node"*"not a DNS label"* ]] || fail "$stderr"
    done
    [ ! -e "$T/x.sock" ] && [ ! -e "$T/st" ] || fail "a refused --node left files"
}
