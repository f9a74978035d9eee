# The shared head of the level-3 service benches (mvnet.sh, mvws.sh):
# sourced with AJ and T set. A busybox image "tiny", the service, and a
# create that prints its wall time and deletes the sandbox.
export AGENTJAIL_STATE_DIR=$T/state AGENTJAIL_MICROVM_ACCEL=tcg
trap 'kill "$SVC" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
mkdir -p "$T/tree/bin" "$T/tree/etc"
cp /bin/busybox "$T/tree/bin/" && ln -s busybox "$T/tree/bin/sh"
"$AJ" image build tiny --from-dir "$T/tree" >/dev/null 2>&1

# mv_serve [PREFIX...] -- [SERVE ARGS...]: the service in the background
# (SVC), run under PREFIX (e.g. a fresh network namespace), ready on $T/s
mv_serve() {
    local pre=()
    while [ "$1" != -- ]; do pre+=("$1") && shift; done
    shift
    "${pre[@]}" "$AJ" serve --quiet --socket "$T/s" --state-dir "$T/state" "$@" \
        </dev/null 2>"$T/serve.log" &
    SVC=$!
    until curl -s --unix-socket "$T/s" http://x/healthz >/dev/null; do sleep 0.1; done
}

# mv_create JSON [HOOK]: the create's wall time in ms; HOOK ID runs on the
# sandbox before its delete, its output after the time
mv_create() {
    local t0 t1 id out extra=""
    t0=$(date +%s%N)
    out=$(curl -sS --max-time 120 --unix-socket "$T/s" -X POST http://x/v1/sandboxes -d "$1")
    t1=$(date +%s%N)
    id=$(jq -er .id <<<"$out") || {
        echo "create failed: $out" >&2
        exit 1
    }
    [ -z "${2:-}" ] || extra=" $("$2" "$id")"
    curl -sS --unix-socket "$T/s" -X DELETE "http://x/v1/sandboxes/$id" >/dev/null
    echo "$(((t1 - t0) / 1000000))$extra"
}

# mv_pid ID: the sandbox's VMM pid
mv_pid() { curl -sS --unix-socket "$T/s" "http://x/v1/sandboxes/$1" | jq -r .pid; }
