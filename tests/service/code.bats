#!/usr/bin/env bats
# The code interpreter end to end (docs/guides/code-interpreter.md): two
# tenants' sandboxes run Python in Jupyter kernels kept inside them
# (POST /v1/sandboxes/{id}/code): a CSV and an .xlsx uploaded, read with
# pandas, a chart shown with plt.show() comes back as a PNG that decodes,
# a variable lives from one call to the next, an error has its traceback,
# an endless loop is interrupted at its timeout and the context still
# answers, contexts are made, listed, restarted and deleted, bad input is
# a 400 that changes nothing, and neither tenant sees the other's files or
# sandbox. Nothing is left behind (the residue check of teardown).

load helpers

PORT=

setup() {
    require_root
    aj_setup
    /usr/bin/python3 -c 'import ipykernel, jupyter_client, pandas, matplotlib, openpyxl' ||
        fail "scripts/setup.sh installs python3-ipykernel, -jupyter-client, -pandas, -matplotlib, -openpyxl"
    printf '[{"tenant": "alice", "token": "alice-token-0123456789"},\n {"tenant": "bob", "token": "bob-token-0123456789ab"}]\n' \
        >"$T/tokens.json"
    chmod 600 "$T/tokens.json"
    PORT=$((20000 + RANDOM % 20000))
    svc_start --listen "127.0.0.1:$PORT" --tokens "$T/tokens.json"
    for _ in $(seq 50); do curl -s "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
}

tok() { [ "$1" = alice ] && echo alice-token-0123456789 || echo bob-token-0123456789ab; }

# as TENANT METHOD PATH [curl args]: sets $status_code and $body.
as() {
    local who=$1 m=$2 p=$3 out
    shift 3
    out=$(curl -sSN --max-time 120 -H "Authorization: Bearer $(tok "$who")" -X "$m" \
        "http://127.0.0.1:$PORT$p" "$@" -w '\n%{http_code}')
    status_code=${out##*$'\n'}
    body=${out%$'\n'*}
}

# run_code TENANT SANDBOX JSON: the run's NDJSON events in $body.
run_code() {
    as "$1" POST "/v1/sandboxes/$2/code" -d "$3"
    assert_eq "$status_code" 200 "run: $body"
    assert_eq "$(jq -sc 'last | .type' <<<"$body")" '"end"' "the last event is the end"
}

@test "code: two tenants' interpreters: files in, a PNG chart out, state, errors, timeouts" {
    local a b png dims
    as alice POST /v1/sandboxes -d '{"memory": "1G"}'
    assert_eq "$status_code" 201 "create: $body"
    a=$(jq -r .id <<<"$body")
    as bob POST /v1/sandboxes -d '{}'
    b=$(jq -r .id <<<"$body")

    # alice's data: a CSV and an .xlsx made on the host with openpyxl
    printf 'region,month,sales\nnorth,1,120\nnorth,2,135\nsouth,1,90\nsouth,2,160\n' >"$T/sales.csv"
    /usr/bin/python3 -c 'import openpyxl, sys
wb = openpyxl.Workbook(); ws = wb.active
for row in (["item", "qty"], ["apples", 3], ["pears", 4]): ws.append(row)
wb.save(sys.argv[1])' "$T/targets.xlsx"
    as alice PUT "/v1/sandboxes/$a/files?path=/tmp/sales.csv" --data-binary @"$T/sales.csv"
    assert_eq "$status_code" 201
    as alice PUT "/v1/sandboxes/$a/files?path=/tmp/targets.xlsx" --data-binary @"$T/targets.xlsx"
    assert_eq "$status_code" 201
    echo bob-private >"$T/bob.txt"
    as bob PUT "/v1/sandboxes/$b/files?path=/tmp/bob.txt" --data-binary @"$T/bob.txt"
    assert_eq "$status_code" 201

    # pandas reads both; the DataFrame comes back as text/html and text/plain
    run_code alice "$a" "$(jq -n --arg c 'import pandas as pd
df = pd.read_csv("/tmp/sales.csv")
xl = pd.read_excel("/tmp/targets.xlsx")
total = int(df.sales.sum()) + int(xl.qty.sum())
print("total", total)
df.groupby("region").sales.sum().to_frame()' '{code: $c}')"
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body")" 'total 512'
    jq -es 'map(select(.type == "result"))[0].data | (.["text/html"] | test("<table")) and (.["text/plain"] | test("north"))' <<<"$body" >/dev/null ||
        fail "no DataFrame as text/html and text/plain: $body"

    # a chart with plt.show(), never saved by the code: a PNG that decodes
    run_code alice "$a" "$(jq -n --arg c 'import matplotlib.pyplot as plt
fig = plt.figure(figsize=(4, 3), dpi=100)
plt.plot(df.month, df.sales, "o-")
plt.title("sales")
plt.show()' '{code: $c}')"
    jq -rs '[.[] | select(.type == "display") | .data["image/png"]][0]' <<<"$body" | base64 -d >"$T/chart.png"
    png=$(head -c 8 "$T/chart.png" | od -An -tx1 | tr -d ' \n')
    assert_eq "$png" 89504e470d0a1a0a "the PNG signature"
    assert_eq "$(dd if="$T/chart.png" bs=1 skip=12 count=4 2>/dev/null)" IHDR
    dims=$(/usr/bin/python3 -c 'import struct, sys
d = open(sys.argv[1], "rb").read(); w, h = struct.unpack(">II", d[16:24]); print(w, h)' "$T/chart.png")
    read -r w h <<<"$dims"
    [ "$w" -ge 200 ] && [ "$w" -le 400 ] && [ "$h" -ge 150 ] && [ "$h" -le 300 ] ||
        fail "the chart is ${w}x$h, not about 4x3 inches at 100 dpi"

    # the second call uses the first's variable (one kernel, one state)
    run_code alice "$a" '{"code": "total * 2"}'
    assert_eq "$(jq -rs 'map(select(.type == "result"))[0].data["text/plain"]' <<<"$body")" 1024
    assert_eq "$(jq -s 'last | .execution_count' <<<"$body")" 3

    # an error: its name, value and traceback
    run_code alice "$a" '{"code": "def f():\n    return 1 / 0\nf()"}'
    assert_eq "$(jq -cs 'map(select(.type == "error"))[0] | [.name, .value]' <<<"$body")" \
        '["ZeroDivisionError","division by zero"]'
    jq -es 'map(select(.type == "error"))[0].traceback | length > 1 and (join("\n") | gsub("\u001b\\[[0-9;]*m"; "") | test("----> 3 f\\(\\)"))' \
        <<<"$body" >/dev/null || fail "no traceback: $body"

    # an endless loop: interrupted at its timeout; the context still answers
    local t0 t1
    t0=$(date +%s%N)
    run_code alice "$a" '{"code": "n = 0\nwhile True:\n    n += 1", "timeout": 2}'
    t1=$(date +%s%N)
    assert_eq "$(jq -cs 'last | [.timed_out, .restarted]' <<<"$body")" '[true,false]'
    assert_eq "$(jq -rs 'map(select(.type == "error"))[0].name' <<<"$body")" TimeoutError
    [ $(((t1 - t0) / 1000000)) -lt 10000 ] || fail "the timeout of 2 s took $(((t1 - t0) / 1000000)) ms"
    run_code alice "$a" '{"code": "print(total, n > 0)"}'
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body")" '512 True'

    # contexts: a second one has its own variables; restart empties it
    as alice POST "/v1/sandboxes/$a/code/contexts" -d '{"id": "scratch"}'
    assert_eq "$status_code" 201
    run_code alice "$a" '{"code": "print(\"total\" in dir())\nz = 7", "context": "scratch"}'
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body")" 'False'
    as alice GET "/v1/sandboxes/$a/code/contexts"
    assert_eq "$(jq -c '[.contexts[].id] | sort' <<<"$body")" '["default","scratch"]'
    as alice POST "/v1/sandboxes/$a/code/contexts/scratch/restart"
    assert_eq "$status_code" 200
    run_code alice "$a" '{"code": "print(\"z\" in dir())", "context": "scratch"}'
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body")" 'False'
    as alice POST "/v1/sandboxes/$a/code/contexts/scratch/interrupt"
    assert_eq "$status_code" 200
    as alice DELETE "/v1/sandboxes/$a/code/contexts/scratch"
    assert_eq "$status_code" 200
    as alice POST "/v1/sandboxes/$a/code" -d '{"code": "1", "context": "scratch"}'
    assert_eq "$status_code" 404

    # bad input: a JSON 400, and nothing ran (the state is as it was)
    local bad
    for bad in '{"code": 1}' '{}' '{"code": "x = 0", "bogus": 1}' '{"code": "x = 0", "language": "r"}' \
        '{"code": "x = 0", "timeout": "2"}' '{"code": "x = 0", "timeout": -1}' \
        '{"code": "x = 0", "context": "../x"}' '[]'; do
        as alice POST "/v1/sandboxes/$a/code" -d "$bad"
        assert_eq "$status_code" 400 "$bad"
        assert_eq "$(jq -r .error.code <<<"$body")" bad_request "$bad"
    done
    as alice POST "/v1/sandboxes/$a/code/contexts" -d '{"id": "Bad Name"}'
    assert_eq "$status_code" 400
    as alice POST "/v1/sandboxes/$a/code/contexts/default/restart" -d '{"bogus": 1}'
    assert_eq "$status_code" 400
    run_code alice "$a" '{"code": "print(total)"}'
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body")" '512'
    as alice GET "/v1/sandboxes/$a/code/contexts"
    assert_eq "$(jq -c '[.contexts[].id]' <<<"$body")" '["default"]'

    # the tenants are apart: bob cannot reach alice's sandbox nor its files
    as bob POST "/v1/sandboxes/$a/code" -d '{"code": "1"}'
    assert_eq "$status_code" 404
    as bob GET "/v1/sandboxes/$a/code/contexts"
    assert_eq "$status_code" 404
    run_code bob "$b" "$(jq -n --arg c 'import os
print(sorted(os.listdir("/tmp")))
print(os.path.exists("/tmp/sales.csv"), open("/tmp/bob.txt").read().strip())
print([p for p in os.listdir("/proc") if p.isdigit() and "sales" in open("/proc/%s/cmdline" % p).read()])' '{code: $c}')"
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body" | sed -n 2,3p)" \
        $'False bob-private\n[]'
    [[ "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body" | head -1)" != *sales* ]] ||
        fail "bob sees alice's files: $body"
    run_code alice "$a" '{"code": "import os\nprint(os.path.exists(\"/tmp/bob.txt\"))"}'
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body")" 'False'

    # the kernels run inside the sandboxes, as their user, not on the host
    local kpid kpids
    kpids=$(pgrep -f 'ipykernel_launcher -f /tmp/.agentjail-code/' || true)
    [ -n "$kpids" ] || fail "no kernel process"
    for kpid in $kpids; do
        [ "$(host_uid_of "$kpid")" -ne 0 ] || fail "a kernel runs as host root"
    done

    as alice DELETE "/v1/sandboxes/$a"
    assert_eq "$status_code" 200
    as bob DELETE "/v1/sandboxes/$b"
    assert_eq "$status_code" 200
    for kpid in $kpids; do # each kernel ended with its sandbox
        for _ in $(seq 50); do kill -0 "$kpid" 2>/dev/null || break; sleep 0.1; done
        ! kill -0 "$kpid" 2>/dev/null || fail "kernel $kpid outlived its sandbox"
    done
}

@test "code: a kernel that runs out of memory is reported and its context restarts" {
    local a
    as alice POST /v1/sandboxes -d '{"memory": "300M"}'
    a=$(jq -r .id <<<"$body")
    run_code alice "$a" '{"code": "keep = 1"}'
    run_code alice "$a" '{"code": "a = []\nwhile True:\n    a.append(bytearray(32 << 20))"}'
    assert_eq "$(jq -cs 'last | [.oom_killed, .restarted]' <<<"$body")" '[true,true]'
    assert_eq "$(jq -rs 'map(select(.type == "error"))[0].name' <<<"$body")" OutOfMemory
    run_code alice "$a" '{"code": "print(\"keep\" in dir(), 6 * 7)"}'
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body")" 'False 42'
    # the sandbox deleted during a run: the run's stream ends, saying so
    curl -sSN --max-time 60 -H "Authorization: Bearer $(tok alice)" -X POST \
        "http://127.0.0.1:$PORT/v1/sandboxes/$a/code" -d '{"code": "import time\nprint(1, flush=True)\ntime.sleep(60)"}' \
        >"$T/run.out" &
    local cpid=$!
    wait_for_file_line "$T/run.out" stdout 20
    as alice DELETE "/v1/sandboxes/$a"
    assert_eq "$status_code" 200
    wait "$cpid"
    assert_eq "$(jq -cs 'map(.type)' <"$T/run.out")" '["stdout","error","end"]'
    assert_eq "$(jq -rs '.[1].name' <"$T/run.out")" BridgeEnded
}

@test "code: agentjail sandbox code reads stdin, prints results, writes images to files" {
    local a out
    a=$(AGENTJAIL_SOCKET=$SOCK "$AJ" sandbox create)
    mkdir "$T/out"
    echo keep >"$T/out/code-1.png"
    out=$(printf 'import matplotlib.pyplot as plt\nv = 21\nprint("hi")\nplt.plot([1, 3, 2])\nplt.show()\nv * 2\n' |
        AGENTJAIL_SOCKET=$SOCK "$AJ" sandbox code --out "$T/out" "$a")
    assert_eq "$out" "hi
[image/png: $T/out/code-2.png]
42"
    assert_eq "$(cat "$T/out/code-1.png")" keep "a file that was there is kept"
    assert_eq "$(head -c 8 "$T/out/code-2.png" | od -An -tx1 | tr -d ' \n')" 89504e470d0a1a0a
    run bash -c "echo 'v / 0' | AGENTJAIL_SOCKET=$SOCK $AJ sandbox code $a"
    assert_status 1
    [[ "$output" == *ZeroDivisionError* ]] || fail "no traceback: $output"
    run bash -c "echo 'while True: pass' | AGENTJAIL_SOCKET=$SOCK $AJ sandbox code --timeout 1 $a"
    assert_status 124
    run bash -c "echo 'print(v)' | AGENTJAIL_SOCKET=$SOCK $AJ sandbox code --context nope $a"
    assert_status 125
    [[ "$output" == *"no code context 'nope'"* ]] || fail "$output"
    out=$(echo 'print(v)' | AGENTJAIL_SOCKET=$SOCK "$AJ" sandbox code "$a")
    assert_eq "$out" 21
    AGENTJAIL_SOCKET=$SOCK "$AJ" sandbox rm "$a"
}

@test "code: a pool starts kernels ahead with pandas imported; drained, nothing is left" {
    # the pool's warm kernels are not parsing: the bridge's lines and the
    # code requests are parsed under ASan by the tests above (tests/run.sh)
    [ -z "${AJ_SANITIZED:-}" ] || skip "runs in the plain pass"
    svc_stop
    svc_start --pool default=1,code
    local p a
    for _ in $(seq 300); do
        p=$(api GET /v1/pools | jq -c '.pools[0] | [.ready, .code_kernels]')
        [ "$p" = "[1,1]" ] && break
        sleep 0.1
    done
    assert_eq "$p" "[1,1]" "the pooled sandbox's kernel is ready"
    a=$(sb_create '{}')
    # the warm-up imported pandas and matplotlib, and did not count as a cell
    body=$(api POST "/v1/sandboxes/$a/code" -d '{"code": "import sys\nprint(\"pandas\" in sys.modules, \"matplotlib.pyplot\" in sys.modules)"}')
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body")" 'True True'
    assert_eq "$(jq -s 'last | .execution_count' <<<"$body")" 1
    # a create with env gets a kernel with that env (the warm one is ended)
    for _ in $(seq 300); do
        [ "$(api GET /v1/pools | jq -c '.pools[0].code_kernels')" = 1 ] && break
        sleep 0.1
    done
    local e
    e=$(sb_create '{"env": {"MODE": "ci"}}')
    body=$(api POST "/v1/sandboxes/$e/code" -d '{"code": "import os\nprint(os.environ.get(\"MODE\"))"}')
    assert_eq "$(jq -rs 'map(select(.type == "stdout") | .data) | add' <<<"$body")" 'ci'
    api DELETE "/v1/sandboxes/$a" >/dev/null
    api DELETE "/v1/sandboxes/$e" >/dev/null
    # the service stops with a pooled sandbox whose bridge holds it: drained
    svc_stop
}
