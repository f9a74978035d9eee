#!/usr/bin/env bats
# The network policy through the service: sandboxes with --net open and
# --allow, in the fake world of tests/network (nothing here sends a packet
# to a real address); nothing of them is left in the host netns.

load helpers
load ../network/world

setup_file() { world_setup_file; }

setup() {
    world_setup
    # the service runs in the test's "host" netns (its veths, nft tables)
    SVC_WRAP=(nsenter --net="/run/netns/$HNS")
}

teardown() {
    local rc=0
    svc_stop || rc=1
    world_teardown || rc=1
    return $rc
}

probe_body() { # TARGETS...: an exec body running probe.py
    jq -cn --args '{cmd: (["python3", "/probe.py"] + $ARGS.positional), timeout: 30}' "$@"
}

@test "service: --net open sandbox reaches TEST-NET, never metadata, LAN or the host" {
    svc_start
    id=$(sb_create "{\"net\": \"open\", \"ro\": [\"$NET_PROBE:/probe.py\"]}")
    output=$(sb_exec "$id" "$(probe_body web1=192.0.2.10:80 metadata=169.254.169.254:80 \
        lan=10.0.0.5:80 host-public=198.51.100.2:8080)" | events_stdout)
    assert_served web1 inet-ok
    assert_refused metadata
    assert_refused lan
    assert_refused host-public
    # a second command in the same sandbox, same network
    output=$(sb_exec "$id" "$(probe_body web2=203.0.113.10:80)" | events_stdout)
    assert_served web2 inet-ok
    api DELETE "/v1/sandboxes/$id" >/dev/null
    assert_world_clean
}

@test "service: --allow lets one destination through and nothing else" {
    svc_start
    id=$(sb_create "{\"allow\": [\"192.0.2.10:80\"], \"ro\": [\"$NET_PROBE:/probe.py\"]}")
    output=$(sb_exec "$id" "$(probe_body web1=192.0.2.10:80 web2=203.0.113.10:80 \
        metadata=169.254.169.254:80)" | events_stdout)
    assert_served web1 inet-ok
    [[ "$(result_of web2)" != inet-ok* ]] || fail "web2 is not allowed: $(result_of web2)"
    [[ "$(result_of metadata)" != inet-ok* ]] || fail "metadata: $(result_of metadata)"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    assert_world_clean
}

@test "service: a secret scoped to a host reaches that host only; hosts outside allow are 400" {
    svc_start
    local value='sk-svc-Zq8-value'
    # the secret's host is not in allow: refused, with the fix
    api_status POST /v1/sandboxes -d "{\"allow\": [\"other.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": {\"API_KEY\": {\"value\": \"$value\", \"hosts\": [\"allowed.test\"]}}}"
    [ "$status_code" = 400 ] || fail "status $status_code: $body"
    [[ "$body" == *"allowed.test"* && "$body" != *"$value"* ]] || fail "$body"
    id=$(sb_create "{\"allow\": [\"allowed.test\", \"other.test\"], \"dns\": \"192.0.2.53\",
        \"secret\": {\"API_KEY\": {\"value\": \"$value\", \"hosts\": [\"allowed.test\"],
        \"header\": \"Authorization\"}}}")
    output=$(sb_exec "$id" '{"cmd": ["sh", "-c", "curl -s -m 5 -o /dev/null -H \"Authorization: Bearer $API_KEY\" -H \"x-api-key: $API_KEY\" http://allowed.test/svc-a; curl -s -m 5 -o /dev/null -H \"Authorization: Bearer $API_KEY\" http://other.test/svc-b; echo $API_KEY"], "timeout": 30}' | events_stdout)
    local ph=$output
    [[ "$ph" == agentjail-placeholder-API_KEY-* ]] || fail "inside: $ph"
    req() { jq -c "select(.path == \"$1\")" "$WEB_LOG"; }
    [ "$(req /svc-a | jq -r '.headers.Authorization')" = "Bearer $value" ] || fail "/svc-a: $(req /svc-a)"
    # "header": Authorization only
    [ "$(req /svc-a | jq -r '.headers["x-api-key"]')" = "$ph" ] || fail "/svc-a x-api-key: $(req /svc-a)"
    [ "$(req /svc-b | jq -r '.headers.Authorization')" = "Bearer $ph" ] || fail "/svc-b: $(req /svc-b)"
    api DELETE "/v1/sandboxes/$id" >/dev/null
    assert_world_clean
}

@test "service: SIGKILL with --net open sandboxes: the next start leaves the host netns clean" {
    svc_start
    sb_create '{"net": "open"}' >/dev/null
    sb_create '{"net": "open"}' >/dev/null
    svc_crash
    svc_start
    for _ in $(seq 20); do [ -z "$(world_residue)" ] && break; sleep 0.1; done
    assert_world_clean
}
