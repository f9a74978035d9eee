#!/usr/bin/env bats
# Host uid ranges of a service under `ip netns exec` (its own network and
# mount namespaces) are reserved host-wide: a `run` on the host never gets
# one of them (issue 20, section 8).

load helpers
load ../security/uid_ranges

teardown() {
    if [ -n "${AJ_BG_PID:-}" ]; then
        kill -TERM "$AJ_BG_PID" 2>/dev/null || true
        wait "$AJ_BG_PID" 2>/dev/null || true
        AJ_BG_PID=
    fi
    if [ -n "${HOLD_PID:-}" ]; then
        kill -TERM "$HOLD_PID" 2>/dev/null || true
        wait "$HOLD_PID" 2>/dev/null || true
    fi
    local rc=0
    svc_stop || rc=1
    [ -z "${UIDNS_NS:-}" ] || ip netns del "$UIDNS_NS" 2>/dev/null || true
    aj_teardown || rc=1
    return $rc
}

@test "a service under ip netns exec and a run on the host never share a host uid range; a SIGKILLed keeper frees its range" {
    command -v ip >/dev/null && command -v python3 >/dev/null || skip "needs ip and python3"
    UIDNS_NS=aj-uidsvc-$$
    ip netns add "$UIDNS_NS"
    SVC_WRAP=(ip netns exec "$UIDNS_NS")
    svc_start
    id=$(sb_create)
    pa=$(api GET "/v1/sandboxes/$id" | jq -r .pid)
    sa=$(uid_slot_of "$pa")
    [ -n "$sa" ] || fail "no uid map for the service's sandbox"
    # a second sandbox of the service: its keeper is SIGKILLed below
    id2=$(sb_create)
    p2=$(api GET "/v1/sandboxes/$id2" | jq -r .pid)
    s2=$(uid_slot_of "$p2")
    assert_ne "$s2" "$sa"
    free=$(((sa + 1 + RANDOM % 16000) % 16384))
    [ "$free" != "$s2" ] || free=$(((free + 1) % 16384))
    coproc HOLD { hold_ranges_but "$free" "$sa" "$s2"; }
    read -r held <&"${HOLD[0]}"
    [ "$held" -gt 16000 ] || fail "the stand-in held only $held ranges"
    tb=$(aj_tag b)
    "$AJ" run --ro "$PROBE:/probe" -- /probe sleep 60 "$tb" >"$T/b.out" 2>"$T/b.err" 3>&- &
    AJ_BG_PID=$!
    pb=$(wait_for_comm "$tb" 10) || { cat "$T/b.err" >&2; fail "the host's sandbox never started"; }
    assert_eq "$(uid_slot_of "$pb")" "$free" "the host's run"
    kill -TERM "$AJ_BG_PID"
    wait "$AJ_BG_PID" 2>/dev/null || true
    AJ_BG_PID=
    # the second sandbox's keeper dies by SIGKILL: its range is free again
    # (the stand-in leaves $free and $s2; a run takes one of them, then the other)
    keeper=$(jq -r "select(.sandbox == \"$id2\" and .keeper != null) | .keeper" "$STATE/audit.log" | head -n1)
    [ -n "$keeper" ] || fail "no keeper for $id2 in the audit log"
    echo "$keeper" >>"$AJ_PIDS_FILE"
    kill -KILL "$keeper"
    local i
    for i in $(seq 100); do kill -0 "$p2" 2>/dev/null || break; sleep 0.05; done
    ! kill -0 "$p2" 2>/dev/null || fail "the sandbox of the killed keeper lives on"
    local got=() t p k
    for k in 1 2; do
        t=$(aj_tag "c$k")
        "$AJ" run --ro "$PROBE:/probe" -- /probe sleep 60 "$t" >"$T/c$k.out" 2>"$T/c$k.err" 3>&- &
        eval "RUN$k=\$!"
        p=$(wait_for_comm "$t" 10) || { cat "$T/c$k.err" >&2; fail "run $k after the keeper died never started"; }
        got+=("$(uid_slot_of "$p")")
    done
    assert_eq "$(printf '%s\n' "${got[@]}" | sort -n | tr '\n' ' ')" "$(printf '%s\n' "$free" "$s2" | sort -n | tr '\n' ' ')" "ranges after the keeper's SIGKILL"
    kill -TERM "$RUN1" "$RUN2"
    wait "$RUN1" "$RUN2" 2>/dev/null || true
    api DELETE "/v1/sandboxes/$id" >/dev/null
}
