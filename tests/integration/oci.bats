#!/usr/bin/env bats
# agentjail oci: the OCI runtime command line driven directly, with a
# hand-made bundle (a static busybox root), the way an engine drives it:
# oci_reaper.py plays conmon (a subreaper that waits for the pid file's pid).

load helpers

setup() {
    aj_setup
    command -v busybox >/dev/null || skip "needs busybox-static (scripts/setup.sh)"
    S=$T/state
    B=$T/bundle
    mkdir -p "$B/rootfs/bin" "$B/rootfs/proc" "$B/rootfs/dev" "$B/rootfs/tmp" "$B/rootfs/etc"
    cp "$(command -v busybox)" "$B/rootfs/bin/busybox"
    local t
    for t in sh echo sleep id cat ls grep mkdir; do ln -s busybox "$B/rootfs/bin/$t"; done
    echo base >"$B/rootfs/motd"
    chmod -R a+rX "$T"
}

# A test that failed half-way leaves its containers held: deleted here (a
# monitor left running would fail the next test's residue check)
teardown() {
    local c
    for c in $(ls "$S" 2>/dev/null); do oci delete --force "$c" >/dev/null 2>&1 || true; done
    # the cpu cgroup a test made (its processes gone with the containers)
    local i
    for i in $(seq 50); do
        [ -n "${CPU_PARENT:-}" ] && [ -d "$CPU_PARENT" ] || break
        rmdir "$CPU_PARENT" 2>/dev/null || sleep 0.05
    done
    aj_teardown
}

# bundle_config ARGS_JSON [EXTRA_LINUX_JSON] [ANNOTATIONS_JSON]: config.json
# as Podman writes it, trimmed (its mounts, namespaces, masked paths).
bundle_config() {
    local ann=${3:-"{}"}
    cat >"$B/config.json" <<EOF
{"ociVersion": "1.0.2-dev",
 "process": {"terminal": false, "user": {"uid": 0, "gid": 0}, "args": $1,
   "env": ["PATH=/bin", "GREETING=hello"], "cwd": "/",
   "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
   "noNewPrivileges": true},
 "root": {"path": "rootfs", "readonly": false},
 "hostname": "ocibox",
 "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
   {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
   {"destination": "/dev/pts", "type": "devpts", "source": "devpts"},
   {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["ro"]}],
 "annotations": $ann,
 "linux": {"namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"},
     {"type": "uts"}, {"type": "mount"}${2:-}],
   "resources": {"devices": [{"allow": false, "access": "rwm"}],
     "memory": {"limit": 268435456}, "pids": {"limit": 64}},
   "maskedPaths": ["/proc/kcore", "/sys/firmware"], "readonlyPaths": ["/proc/sys"]}}
EOF
}

oci() {
    timeout -k 5 "$AJ_TIMEOUT" "$AJ" oci --root "$S" "$@" </dev/null
}

# oci_create ID: create under the reaper, in the background; returns when
# create has (the pid file, or the reaper's report of a failed create).
# OCI_WRAP (an array): a command it runs under (a cgroup of the test's).
oci_create() {
    ${OCI_WRAP[@]+"${OCI_WRAP[@]}"} python3 "$BATS_TEST_DIRNAME/oci_reaper.py" "$T/$1.pid" "$T/$1.exit" -- \
        "$AJ" oci --root "$S" create --bundle "$B" --pid-file "$T/$1.pid" "$1" \
        </dev/null >"$T/$1.out" 2>"$T/$1.err" 3>&- &
    AJ_BG_PID=$!
    local i
    for i in $(seq 100); do
        [ -s "$T/$1.pid" ] || [ -s "$T/$1.exit" ] && return 0
        sleep 0.1
    done
    fail "create did not finish"
}

wait_exit() { # ID: the reaper's "exit=N"
    local i
    for i in $(seq 150); do
        [ -s "$T/$1.exit" ] && break
        sleep 0.1
    done
    wait "$AJ_BG_PID" 2>/dev/null || true
    cat "$T/$1.exit"
}

monitor_of() { # ID: the monitor's pid, from the state directory
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pid'])" "$S/$1/state.json"
}

state_field() { # ID FIELD
    oci state "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"
}

# Nothing of the container left: no state, no process of the monitor or
# of the pid file.
assert_gone() { # ID PID...
    [ ! -e "$S/$1" ] || fail "state directory $S/$1 left"
    local p
    for p in "${@:2}"; do
        ! kill -0 "$p" 2>/dev/null || fail "process $p left"
    done
    [ -z "$(pgrep -f "agentjail-oci(-ctr)? $1( |$)" || true)" ] || fail "a process of $1 left"
}

@test "oci: create holds the command, start runs it, state, exit code, delete" {
    bundle_config '["/bin/sh", "-c", "echo $GREETING from $(cat /motd) on $(busybox hostname); echo err >&2; exit 7"]'
    oci_create c1
    [ ! -s "$T/c1.exit" ] || fail "create failed: $(cat "$T/c1.exit" "$T/c1.err")"
    local pid
    pid=$(cat "$T/c1.pid")
    assert_eq "$(state_field c1 status)" created "status after create"
    # held: state's pid is the sandbox's init (the container's namespaces);
    # the pid file's process (the engine's subreaper waits for it) is in
    # its mount namespace too
    local spid mon
    spid=$(state_field c1 pid)
    mon=$(monitor_of c1)
    assert_eq "$(ps -o ppid= -p "$spid" | tr -d ' ')" "$mon" "state pid: the monitor's child"
    assert_ne "$(readlink /proc/"$spid"/ns/pid)" "$(readlink /proc/self/ns/pid)" "its pid ns"
    assert_eq "$(readlink /proc/"$pid"/ns/mnt)" "$(readlink /proc/"$spid"/ns/mnt)" "pid file's mnt ns"
    assert_eq "$(state_field c1 bundle)" "$B" "bundle"
    # held: built, but nothing of the command has run yet
    assert_eq "$(cat "$T/c1.out")" "" "output before start"
    # never host uid 0: the sandbox's processes run as an unprivileged host uid
    local uids
    uids=$(ps -o uid= --ppid "$mon" | tr -d ' ')
    [ -n "$uids" ] || fail "no sandbox process under the monitor"
    assert_ne "$uids" 0 "host uid of the container's init"
    run oci start c1
    assert_status 0
    assert_eq "$(wait_exit c1)" "exit=7" "container exit status"
    assert_eq "$(cat "$T/c1.out")" "hello from base on ocibox" "stdout"
    assert_eq "$(cat "$T/c1.err")" "err" "stderr"
    assert_eq "$(state_field c1 status)" stopped "status after exit"
    run oci start c1
    assert_status 125
    run oci delete c1
    assert_status 0
    assert_gone c1 "$pid"
    run oci state c1
    assert_status 125
    assert_contains "$output" "does not exist"
}

@test "oci: kill of a running container; delete --force of a held one" {
    bundle_config '["/bin/sleep", "60"]'
    oci_create k1
    local pid
    pid=$(cat "$T/k1.pid")
    run oci start k1
    assert_status 0
    assert_eq "$(state_field k1 status)" running "status after start"
    run oci delete k1
    assert_status 125 # running: needs --force
    run oci kill k1 TERM
    assert_status 0
    assert_eq "$(wait_exit k1)" "exit=143" "exit status after SIGTERM"
    run oci kill k1 KILL
    assert_status 125 # not running any more
    run oci delete k1
    assert_status 0
    assert_gone k1 "$pid"

    oci_create k2
    pid=$(cat "$T/k2.pid")
    assert_eq "$(state_field k2 status)" created
    run oci delete --force k2
    assert_status 0
    assert_eq "$(wait_exit k2)" "exit=137" "a held container killed"
    assert_eq "$(cat "$T/k2.out")" "" "the held command never ran"
    assert_gone k2 "$pid"
}

# The lines the container has written so far
lines() { wc -l <"$T/$1.out"; }

@test "oci: state's pid is the command's; ps, pause, resume, update" {
    bundle_config '["/bin/sh", "-c", "i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done"]'
    # namespaced sysctls set in its namespaces; the default devices taken
    sed -i 's|"linux": {|"linux": {"sysctl": {"net.ipv4.ip_local_port_range": "40000 50000", "kernel.shmmni": "2048", "net.ipv4.ping_group_range": "0 0"}, "devices": [{"path": "/dev/null", "type": "c", "major": 1, "minor": 3}], |' "$B/config.json"
    # a cpu weight, a cpuset and a memory reservation applied, as runc
    sed -i 's|"resources": {|"resources": {"cpu": {"quota": 100000, "period": 100000, "shares": 512, "cpus": "0", "mems": "0"}, |; s|"memory": {"limit": 268435456}|"memory": {"limit": 268435456, "reservation": 134217728}|' "$B/config.json"
    oci_create p1
    local mon pid ctr
    ctr=$(cat "$T/p1.pid")
    mon=$(monitor_of p1)
    run oci start p1
    assert_status 0
    # runtime-spec's pid: the process of process.args, in its namespaces
    pid=$(state_field p1 pid)
    assert_ne "$pid" "$mon" "state pid is not the monitor's"
    # the pid file's (what Podman's inspect and top read): in its mount and
    # network namespaces, so its /proc is the container's
    assert_eq "$(readlink /proc/"$ctr"/ns/mnt)" "$(readlink /proc/"$pid"/ns/mnt)" "pid file's mnt ns"
    assert_eq "$(readlink /proc/"$ctr"/ns/net)" "$(readlink /proc/"$pid"/ns/net)" "pid file's net ns"
    assert_eq "$(tr '\0' ' ' </proc/"$pid"/cmdline)" "/bin/sh -c i=0; while :; do i=\$((i+1)); echo \$i; sleep 0.05; done " "its command"
    assert_ne "$(readlink /proc/"$pid"/ns/pid)" "$(readlink /proc/self/ns/pid)" "its pid ns"
    assert_ne "$(readlink /proc/"$pid"/ns/mnt)" "$(readlink /proc/self/ns/mnt)" "its mount ns"
    if [ "$(id -u)" -eq 0 ]; then
        assert_eq "$(nsenter -t "$pid" -n cat /proc/sys/net/ipv4/ip_local_port_range | tr -s '\t ' ' ')" "40000 50000" "sysctl in its net ns"
        assert_eq "$(nsenter -t "$pid" -i cat /proc/sys/kernel/shmmni)" 2048 "sysctl in its ipc ns"
        assert_eq "$(nsenter -t "$pid" -n cat /proc/sys/net/ipv4/ping_group_range | tr -s '\t ' ' ')" "1 0" "ping_group_range left unset"
        assert_ne "$(tr -s '\t ' ' ' </proc/sys/net/ipv4/ip_local_port_range)" "40000 50000" "the host's unchanged"
    fi
    # ps: the host pids in the container (its init and the command at least)
    run oci ps --format json p1
    assert_status 0
    python3 -c "import json,sys; p=json.loads(sys.argv[1]); assert $pid in p and len(p)>=2, p" "$output" ||
        fail "ps: $output"
    # pause: nothing runs (no new lines), state paused; resume: it goes on
    run oci pause p1
    assert_status 0
    assert_eq "$(state_field p1 status)" paused
    local n
    n=$(lines p1)
    sleep 0.4
    assert_eq "$(lines p1)" "$n" "output while paused"
    run oci pause p1
    assert_status 125
    assert_contains "$output" "is paused, not running"
    run oci resume p1
    assert_status 0
    assert_eq "$(state_field p1 status)" running
    local i # until a new line (was a fixed 0.4 s), 2 s at most
    for ((i = 0; i < 40; i++)); do [ "$(lines p1)" -gt "$n" ] && break; sleep 0.05; done
    [ "$(lines p1)" -gt "$n" ] || fail "no output after resume"
    run oci resume p1
    assert_status 125
    # update: the live cgroup's limits; bad input changes nothing
    local mem pids
    mem=$(sed -n 's/^[0-9]*:memory://p' /proc/"$pid"/cgroup)
    pids=$(sed -n 's/^[0-9]*:pids://p' /proc/"$pid"/cgroup)
    mem=/sys/fs/cgroup/memory$mem/memory.limit_in_bytes
    pids=/sys/fs/cgroup/pids$pids/pids.max
    [ -f "$mem" ] && [ -f "$pids" ] || skip "needs the v1 memory and pids controllers"
    assert_eq "$(cat "$mem") $(cat "$pids")" "268435456 64" "the bundle's limits"
    echo '{"memory": {"limit": 134217728}, "pids": {"limit": 32}, "cpu": {"quota": 50000, "period": 100000}}' >"$T/res.json"
    run oci update --resources "$T/res.json" p1
    assert_status 0
    assert_eq "$(cat "$mem") $(cat "$pids")" "134217728 32" "updated limits"
    local cpu cg cs
    cg=/sys/fs/cgroup/cpu$(sed -n 's/^[0-9]*:cpu\(,cpuacct\)*://p' /proc/"$pid"/cgroup)
    cpu=$cg/cpu.cfs_quota_us
    assert_eq "$(cat "$cpu")" 50000 "updated cpu quota"
    cs=/sys/fs/cgroup/cpuset$(sed -n 's/^[0-9]*:cpuset://p' /proc/"$pid"/cgroup)
    assert_eq "$(cat "$cg/cpu.shares") $(cat "$cs/cpuset.cpus") $(cat "$cs/cpuset.mems")" "512 0 0" "the bundle's cpu weight and cpuset"
    assert_eq "$(cat "${mem%/*}/memory.soft_limit_in_bytes")" 134217728 "the bundle's memory.reservation"
    # the kubelet's in-place resize (shares with every update), a cpuset
    local all allowed
    all=$(nproc --all)
    allowed=$(cat "${cs%/*}/cpuset.effective_cpus")
    echo '{"cpu": {"shares": 204, "quota": 60000, "period": 100000, "cpus": "'"$allowed"'"}, "memory": {"limit": 201326592, "reservation": 67108864}}' >"$T/res.json"
    run oci update --resources "$T/res.json" p1
    assert_status 0
    assert_eq "$(cat "$cg/cpu.shares") $(cat "$cpu") $(cat "$cs/cpuset.cpus") $(cat "$mem")" "204 60000 $allowed 201326592" "after the kubelet's update"
    assert_eq "$(cat "${mem%/*}/memory.soft_limit_in_bytes")" 67108864 "updated reservation"
    # a cpu the host has not, a bad list, a weight out of range: 125 by
    # name; a write the kernel refuses (a limit below the use) puts back
    # the earlier ones: nothing changed
    run --separate-stderr bash -c "echo '{\"cpu\": {\"shares\": 300, \"cpus\": \"0,$all\"}}' | '$AJ' oci --root '$S' update -r - p1"
    assert_status 125
    assert_contains "$stderr" "cpu $all is not one this container may use"
    run --separate-stderr bash -c "echo '{\"cpu\": {\"cpus\": \"0-\"}}' | '$AJ' oci --root '$S' update -r - p1"
    assert_status 125
    assert_contains "$stderr" "cpu.cpus \"0-\" is not a list of cpus"
    run --separate-stderr bash -c "echo '{\"cpu\": {\"shares\": 1}}' | '$AJ' oci --root '$S' update -r - p1"
    assert_status 125
    assert_contains "$stderr" "cpu.shares 1 is out of range"
    run --separate-stderr bash -c "echo '{\"cpu\": {\"shares\": 300}, \"memory\": {\"limit\": 4096}}' | '$AJ' oci --root '$S' update -r - p1"
    assert_status 125
    assert_contains "$stderr" "memory.limit: the kernel refused 4096"
    assert_eq "$(cat "$cg/cpu.shares") $(cat "$cs/cpuset.cpus") $(cat "$mem")" "204 $allowed 201326592" "after refused updates"
    assert_eq "$(cat "${mem%/*}/memory.kmem.tcp.limit_in_bytes")" 201326592 "the tcp limit put back"
    run --separate-stderr bash -c "echo '{\"pids\": {\"limit\": 16' | '$AJ' oci --root '$S' update --resources - p1"
    assert_status 125
    assert_contains "$stderr" "not valid JSON"
    run --separate-stderr bash -c "echo '{\"pids\": {\"limit\": 16}, \"hugepageLimits\": [{\"pageSize\": \"2MB\", \"limit\": 1}]}' | '$AJ' oci --root '$S' update -r - p1"
    assert_status 125
    assert_contains "$stderr" "hugepageLimits is not supported"
    # a field it would not apply is refused, never passed over, with the
    # rest of the update
    run --separate-stderr bash -c "echo '{\"memory\": {\"limit\": 100663296, \"swap\": 201326592}, \"cpu\": {\"realtimeRuntime\": 1000}}' | '$AJ' oci --root '$S' update -r - p1"
    assert_status 125
    assert_contains "$stderr" "cpu.realtimeRuntime is not applied"
    run --separate-stderr bash -c "echo '{\"pids\": {\"limit\": -1}}' | '$AJ' oci --root '$S' update -r - p1"
    assert_status 125
    assert_contains "$stderr" "pids.limit must be above 0"
    # a cpu quota agentjail cannot express (under 0.001 CPU, over 4096) is
    # refused by name, not dropped
    run --separate-stderr bash -c "echo '{\"cpu\": {\"quota\": 50, \"period\": 100000}}' | '$AJ' oci --root '$S' update -r - p1"
    assert_status 125
    assert_contains "$stderr" "cpu.quota 50 is less than 0.001 CPU"
    run --separate-stderr bash -c "echo '{\"cpu\": {\"quota\": 500000000, \"period\": 100000}}' | '$AJ' oci --root '$S' update -r - p1"
    assert_status 125
    assert_contains "$stderr" "cpu.quota 500000000 is more than 4096 CPUs"
    assert_eq "$(cat "$cpu")" 60000 "cpu quota after refused updates"
    assert_eq "$(cat "$mem") $(cat "$pids")" "201326592 32" "limits after refused updates"
    # kill reaches the command; a paused container still dies with KILL;
    # delete without --force refuses it, as runc, and changes nothing
    run oci pause p1
    assert_status 0
    run --separate-stderr oci delete p1
    assert_status 125
    assert_contains "$stderr" "that is not stopped: it is paused"
    assert_eq "$(state_field p1 status)" paused "after a refused delete"
    kill -0 "$pid" 2>/dev/null || fail "a refused delete killed the command"
    run oci kill p1 KILL
    assert_status 0
    assert_eq "$(wait_exit p1)" "exit=137" "killed while paused"
    ! kill -0 "$pid" 2>/dev/null || fail "the command $pid outlived kill"
    run oci ps p1
    assert_status 125
    run oci delete p1
    assert_status 0
    assert_gone p1 "$mon" "$ctr"
}

@test "oci: an update the kernel refuses half-way puts back every value written before it" {
    # a cpu quota above the parent cgroup's passes every check but the
    # kernel's (cgroup v1: EINVAL at the write), after the memory, the
    # reservation, pids and the period are written: all are put back
    [ "$(id -u)" -eq 0 ] || skip "needs root (a cpu cgroup of the test's)"
    local top=/sys/fs/cgroup/cpu$(sed -n 's/^[0-9]*:cpu\(,cpuacct\)*://p' /proc/self/cgroup)
    [ -f "$top/cpu.cfs_quota_us" ] && [ -f /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes ] ||
        skip "needs the cgroup v1 cpu and memory (with swap accounting) controllers"
    CPU_PARENT=${top%/}/ocirollback-$BASHPID
    mkdir "$CPU_PARENT"
    echo 50000 >"$CPU_PARENT/cpu.cfs_quota_us"
    bundle_config '["/bin/sleep", "60"]'
    sed -i 's|"resources": {|"resources": {"cpu": {"quota": 20000, "period": 100000}, |' "$B/config.json"
    OCI_WRAP=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CPU_PARENT")
    oci_create u1
    run oci start u1
    assert_status 0
    local pid mem pids cpu knobs before
    pid=$(state_field u1 pid)
    mem=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/"$pid"/cgroup)
    pids=/sys/fs/cgroup/pids$(sed -n 's/^[0-9]*:pids://p' /proc/"$pid"/cgroup)
    cpu=/sys/fs/cgroup/cpu$(sed -n 's/^[0-9]*:cpu\(,cpuacct\)*://p' /proc/"$pid"/cgroup)
    [[ "$cpu" == "$CPU_PARENT"/* ]] || fail "the container's cpu cgroup $cpu is not in $CPU_PARENT"
    knobs=("$mem"/memory.{kmem.tcp.limit_in_bytes,limit_in_bytes,memsw.limit_in_bytes,soft_limit_in_bytes}
        "$pids/pids.max" "$cpu"/cpu.{cfs_period_us,cfs_quota_us,shares})
    before=$(cat "${knobs[@]}")
    assert_eq "$(cat "$mem/memory.limit_in_bytes") $(cat "$pids/pids.max") $(cat "$cpu/cpu.cfs_quota_us")" \
        "268435456 64 20000" "the bundle's limits"
    echo '{"memory": {"limit": 134217728, "reservation": 67108864}, "pids": {"limit": 32},
        "cpu": {"quota": 100000, "period": 100000, "shares": 300}}' >"$T/res.json"
    run --separate-stderr oci update --resources "$T/res.json" u1
    assert_status 125
    assert_contains "$stderr" "linux.resources.cpu.quota: the kernel refused 100000 for $cpu/cpu.cfs_quota_us"
    assert_contains "$stderr" "nothing was changed: the values written before it were put back"
    assert_eq "$(cat "${knobs[@]}")" "$before" "every knob after the refused update"
    # the same update within the parent's quota is taken whole
    sed -i 's|"quota": 100000|"quota": 25000|' "$T/res.json"
    run oci update --resources "$T/res.json" u1
    assert_status 0
    assert_eq "$(cat "$mem/memory.limit_in_bytes") $(cat "$mem/memory.soft_limit_in_bytes") $(cat "$pids/pids.max")" \
        "134217728 67108864 32" "after the update"
    assert_eq "$(cat "$cpu/cpu.cfs_period_us") $(cat "$cpu/cpu.cfs_quota_us") $(cat "$cpu/cpu.shares")" \
        "100000 25000 300" "the cpu after the update"
    run oci delete --force u1
    assert_status 0
    wait_exit u1 >/dev/null
}

gone_within() { # PID: gone (or a zombie) within 10 s
    local i
    for i in $(seq 200); do
        [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = "" ] && return 0
        [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ] && return 0
        sleep 0.05
    done
    fail "process $1 still there"
}

@test "oci: the command ends with the pid file's process; a dead monitor's paused one too" {
    bundle_config '["/bin/sleep", "60"]'
    # the pid file's process SIGKILLed (an engine's or a user's kill -9):
    # the container ends with it (the engine thinks it gone), state says so
    oci_create o1
    local ctr mon pid
    ctr=$(cat "$T/o1.pid")
    mon=$(monitor_of o1)
    run oci start o1
    assert_status 0
    pid=$(state_field o1 pid)
    # as an engine's shim: state and delete (no --force) as soon as the
    # process is reaped, the monitor still tearing down (held stopped here)
    kill -STOP "$mon"
    kill -KILL "$ctr"
    assert_eq "$(wait_exit o1)" "signal=9" "the engine's view"
    local st
    st=$(state_field o1 status || true)
    kill -CONT "$mon"
    assert_eq "$st" stopped "right after the pid file's process was reaped"
    run oci delete o1
    assert_status 0
    gone_within "$pid"
    gone_within "$mon" # (a zombie of pid 1's: the reaper went first)
    assert_gone o1 "$ctr" "$pid"
    # the same while paused: the frozen container is thawed and ends
    oci_create o3
    ctr=$(cat "$T/o3.pid")
    mon=$(monitor_of o3)
    run oci start o3
    assert_status 0
    pid=$(state_field o3 pid)
    local cg
    cg=/sys/fs/cgroup/freezer$(sed -n 's/^[0-9]*:freezer://p' /proc/"$pid"/cgroup)
    run oci pause o3
    assert_status 0
    kill -KILL "$ctr"
    assert_eq "$(wait_exit o3)" "signal=9" "the engine's view of a paused one"
    assert_eq "$(state_field o3 status)" stopped "a paused one whose pid file's process was killed"
    gone_within "$pid"
    gone_within "$mon"
    [ ! -d "$cg" ] || fail "freezer cgroup $cg left"
    run oci delete o3
    assert_status 0
    assert_gone o3 "$ctr" "$pid"
    # the monitor SIGKILLed while paused: its frozen container is not left
    # for ever; state says paused; delete --force thaws it and it dies
    oci_create o2
    ctr=$(cat "$T/o2.pid")
    mon=$(monitor_of o2)
    run oci start o2
    assert_status 0
    pid=$(state_field o2 pid)
    run oci pause o2
    assert_status 0
    kill -KILL "$mon"
    gone_within "$mon"
    assert_eq "$(state_field o2 status)" paused "a frozen container whose monitor died"
    run oci delete o2
    assert_status 125
    run oci delete --force o2
    assert_status 0
    gone_within "$pid"
    assert_gone o2 "$ctr" "$mon" "$pid"
}

@test "oci: egress closed by default; annotations open it, and are checked" {
    bundle_config '["/bin/sh", "-c", "ls /sys/class/net 2>&1; cat /proc/net/dev | tail -n +3 | cut -d: -f1"]'
    oci_create n1
    run oci start n1
    assert_status 0
    assert_eq "$(wait_exit n1)" "exit=0"
    # no /sys, and only the loopback device: no route out
    assert_contains "$(cat "$T/n1.out")" "No such file or directory"
    assert_eq "$(tail -n 1 "$T/n1.out" | tr -d ' ')" lo "network devices"
    run oci delete n1
    assert_status 0
    if [ "$(id -u)" -eq 0 ]; then
        # run.agentjail.allow: agentjail's resolver and proxy (no packet is sent)
        bundle_config '["/bin/sh", "-c", "grep -o eth0 /proc/net/dev; echo $HTTPS_PROXY"]' "" \
            '{"run.agentjail.allow": "example.com, *.example.org:443"}'
        oci_create n4
        run oci start n4
        assert_status 0
        assert_eq "$(wait_exit n4)" "exit=0"
        assert_eq "$(head -n 1 "$T/n4.out")" eth0 "a device toward agentjail's proxy"
        assert_contains "$(tail -n 1 "$T/n4.out")" "http://10."
        # a recorded cgroups text leading elsewhere is not swept; the
        # state goes anyway, with a warning
        python3 -c "import json,sys; p=sys.argv[1]; j=json.load(open(p)); j['cgroups']='0::/../../x'; json.dump(j, open(p,'w'))" "$S/n4/state.json"
        run oci delete n4
        assert_status 0
        assert_contains "$output" "recorded cgroups are not valid"
        [ ! -e "$S/n4" ] || fail "n4's state left"
        # its monitor SIGKILLed: delete sweeps what it left (its nft table
        # and cgroups), not the next sandbox
        oci_create n5
        local mon
        mon=$(monitor_of n5)
        nft list tables | grep -q "agentjail-$mon-" || fail "no nft table of n5's"
        kill -KILL "$mon"
        wait_exit n5 >/dev/null
        # only n5's own: another dead agentjail's beside it stays
        local own dead
        own=$(find /sys/fs/cgroup -maxdepth 4 -type d -name "agentjail-$mon-*" | head -n 1)
        dead=$(sh -c 'echo $$')
        mkdir "${own%/*}/agentjail-$dead-other"
        run oci delete n5
        rmdir "${own%/*}/agentjail-$dead-other" || fail "delete swept another's cgroup"
        assert_status 0
        ! nft list tables | grep -q "agentjail-$mon-" || fail "nft table left after delete"
        [ -z "$(find /sys/fs/cgroup -maxdepth 4 -name "agentjail-$mon-*")" ] || fail "cgroups left after delete"
    fi
    bundle_config '["/bin/true"]' "" '{"run.agentjail.net": "bogus"}'
    run --separate-stderr oci create --bundle "$B" n2
    assert_status 125
    assert_contains "$stderr" "annotation run.agentjail.net"
    bundle_config '["/bin/true"]' "" '{"run.agentjail.seccomp-profile": "/etc/passwd"}'
    run --separate-stderr oci create --bundle "$B" n3
    assert_status 125
    assert_contains "$stderr" "run.agentjail.seccomp-profile is not supported"
    [ -z "$(ls -A "$S")" ] || fail "state left: $(ls "$S")"
}

# bad_bundle WHAT: create must fail with exit 125, one clear line, nothing made
bad_bundle() {
    run --separate-stderr oci --log "$T/log.json" --log-format json create --bundle "$B" bad
    assert_status 125
    assert_contains "$stderr" "$1"
    assert_eq "$output" "" "stdout"
    assert_eq "$(printf '%s\n' "$stderr" | wc -l)" 1 "stderr lines"
    [ ! -e "$S/bad" ] || fail "state left for a refused bundle"
    python3 -c "import json,sys; [json.loads(l) for l in open(sys.argv[1])]" "$T/log.json" ||
        fail "--log-format json wrote something else"
    rm -f "$T/log.json"
}

@test "oci: bad bundles and unsupported requests are refused, nothing made" {
    bad_bundle "config.json: No such file or directory"
    echo '{"ociVersion": "1.0.2", "process": ' >"$B/config.json"
    bad_bundle "config.json is not valid JSON"
    bundle_config '["/bin/true"]' ', {"type": "time"}'
    bad_bundle "linux.namespaces: time is not supported"
    bundle_config '["/bin/true"]' ', {"type": "network", "path": "/proc/'$$'/ns/net"}'
    bad_bundle "/proc/$$/ns/net is the runtime's own network namespace"
    # a pod's namespaces by path: checked on the opened file, not by name
    bundle_config '["/bin/true"]' ', {"type": "ipc", "path": "/proc/'$$'/ns/ipc"}'
    bad_bundle "/proc/$$/ns/ipc is the runtime's own ipc namespace"
    bundle_config '["/bin/true"]' ', {"type": "ipc", "path": "/proc/'$$'/ns/uts"}'
    bad_bundle "/proc/$$/ns/uts is a uts namespace, not the ipc namespace asked for"
    bundle_config '["/bin/true"]' ', {"type": "uts", "path": "'$B'/rootfs/motd"}'
    bad_bundle "$B/rootfs/motd is not a namespace file"
    # a FIFO is opened without waiting for a writer (it would hang create)
    mkfifo "$T/fifo"
    bundle_config '["/bin/true"]' ', {"type": "uts", "path": "'$T'/fifo"}'
    AJ_TIMEOUT=5 bad_bundle "$T/fifo is not a namespace file"
    bundle_config '["/bin/true"]' ', {"type": "pid", "path": "/proc/1/ns/pid"}'
    bad_bundle "agentjail's own init is pid 1 of every container's pid namespace"
    bundle_config '[]'
    bad_bundle "process.args must be a non-empty array"
    sed -i 's|"linux": {|"linux": {"seccomp": {"defaultAction": "SCMP_ACT_NOTIFY"}, |' "$B/config.json"
    sed -i 's|"args": \[\]|"args": ["/bin/true"]|' "$B/config.json"
    bad_bundle "linux.seccomp needs a supported defaultAction"
    bundle_config '["/bin/true"]'
    sed -i 's|"linux": {|"linux": {"sysctl": {"net.ipv4.tcp_syncookies": "1", "kernel.randomize_va_space": "0"}, |' "$B/config.json"
    bad_bundle "linux.sysctl: kernel.randomize_va_space is not supported"
    bundle_config '["/bin/true"]'
    sed -i 's|"linux": {|"linux": {"sysctl": {"net.ipv4.tcp_syncookies": "1; reboot"}, |' "$B/config.json"
    bad_bundle "linux.sysctl: net.ipv4.tcp_syncookies: the value must be numbers"
    bundle_config '["/bin/true"]'
    sed -i 's|"linux": {|"linux": {"devices": [{"path": "/dev/null", "type": "c", "major": 1, "minor": 3}, {"path": "/dev/kvm", "type": "c", "major": 10, "minor": 232}], |' "$B/config.json"
    bad_bundle "linux.devices: /dev/kvm is not supported"
    # a cpu the container's parent cgroup has not, a weight out of range
    bundle_config '["/bin/true"]'
    sed -i 's|"resources": {|"resources": {"cpu": {"shares": 512, "cpus": "0,'"$(nproc --all)"'"}, |' "$B/config.json"
    bad_bundle "linux.resources.cpu.cpus \"0,$(nproc --all)\": cpu $(nproc --all) is not one this container may use"
    sed -i 's|"shares": 512|"shares": 262145|' "$B/config.json"
    bad_bundle "linux.resources.cpu.shares 262145 is out of range"
    bundle_config '["/bin/true"]'
    sed -i 's|"terminal": false|"terminal": true|' "$B/config.json"
    bad_bundle "process.terminal needs --console-socket"
    run --separate-stderr oci --systemd-cgroup state x
    assert_status 125
    assert_contains "$stderr" "--systemd-cgroup is not supported"
    run --separate-stderr oci checkpoint x
    assert_status 125
    assert_contains "$stderr" "oci checkpoint is not supported"
    run oci features
    assert_status 0
    assert_eq "$(printf '%s' "$output" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ociVersionMax"])')" 1.2.0
    [ -z "$(ls -A "$S" 2>/dev/null)" ] || fail "state left: $(ls "$S")"
}

@test "oci: the bundle's seccomp filter is loaded on top of agentjail's own" {
    bundle_config '["/bin/sh", "-c", "grep ^Seccomp /proc/self/status; mkdir /tmp/d || exit 9"]'
    sed -i 's|"linux": {|"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat", "no_such_call"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}, {"names": ["no_such_call"], "action": "SCMP_ACT_ALLOW"}]}, |' "$B/config.json"
    run --separate-stderr oci create --bundle "$B" s0
    assert_status 125 # a name libseccomp does not know, in a rule that denies
    assert_contains "$stderr" "syscall no_such_call is not known here"
    sed -i 's|"mkdirat", "no_such_call"|"mkdirat"|' "$B/config.json"
    oci_create s1
    run oci start s1
    assert_status 0
    assert_eq "$(wait_exit s1)" "exit=9" "mkdir denied by the bundle's filter"
    assert_contains "$(cat "$T/s1.err")" "Function not implemented"
    # two filters: agentjail's (init's, inherited) and the bundle's
    assert_contains "$(cat "$T/s1.out")" "Seccomp_filters:	2"
    run oci delete s1
    assert_status 0
    # root.readonly: the root is not writable, /tmp still is
    bundle_config '["/bin/sh", "-c", "grep ^Seccomp_filters /proc/self/status; touch /tmp/ok && ! touch /rw"]'
    sed -i 's|"readonly": false|"readonly": true|' "$B/config.json"
    oci_create s2
    run oci start s2
    assert_eq "$(wait_exit s2)" "exit=0"
    assert_eq "$(cat "$T/s2.out")" "Seccomp_filters:	1" "agentjail's filter alone"
    assert_contains "$(cat "$T/s2.err")" "Read-only file system"
    run oci delete s2
    assert_status 0
    # runtime-tools' bundles: root "./rootfs", a masked_eq whose valueTwo
    # (0) is left out, two conditions on one argument (one rule each, as runc)
    bundle_config '["/bin/sh", "-c", "mkdir /tmp/d || exit 9"]'
    sed -i 's|"path": "rootfs"|"path": "./rootfs"|; s|"linux": {|"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38, "args": [{"index": 1, "value": 0, "op": "SCMP_CMP_MASKED_EQ"}]}, {"names": ["personality"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}, {"index": 0, "value": 8, "op": "SCMP_CMP_EQ"}]}]}, |' "$B/config.json"
    oci_create s3
    run oci start s3
    assert_status 0
    assert_eq "$(wait_exit s3)" "exit=9" "mkdir denied by the masked_eq rule"
    assert_contains "$(cat "$T/s3.err")" "Function not implemented"
    run oci delete s3
    assert_status 0
}

@test "oci: exec joins a running container, under the same walls" {
    bundle_config '["/bin/sh", "-c", "grep ^Seccomp_filters /proc/self/status; exec sleep 60"]'
    sed -i 's|"linux": {|"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}]}, |' "$B/config.json"
    oci_create e1
    run --separate-stderr oci exec e1 /bin/true
    assert_status 125 # held: exec needs a started container
    assert_contains "$stderr" "is created, not running"
    run oci start e1
    assert_status 0
    # output, stderr, exit code, the container's env with --env over it, cwd
    run --separate-stderr oci exec --env X=1 --cwd /bin e1 /bin/sh -c \
        'echo $GREETING $X $(cat /motd) $(busybox hostname) $(pwd); echo err >&2; exit 4'
    assert_status 4
    assert_eq "$output" "hello 1 base ocibox /bin" "stdout"
    assert_eq "$stderr" "err" "stderr"
    # the same pid namespace (the container's sleep), filters (agentjail's
    # and the bundle's: mkdir denied), no capabilities, no_new_privs
    run oci exec e1 /bin/sh -c 'cat /proc/[0-9]*/comm | grep -c sleep;
        grep -E "^(Seccomp_filters|NoNewPrivs|CapEff|CapBnd)" /proc/self/status | tr -d "\t"; mkdir /tmp/x'
    assert_status 1
    assert_eq "${lines[0]}" 1 "the container's command is visible"
    assert_contains "$output" "Seccomp_filters:2"
    assert_contains "$output" "NoNewPrivs:1"
    assert_contains "$output" "CapEff:0000000000000000"
    assert_contains "$output" "CapBnd:0000000000000000"
    assert_contains "$output" "Function not implemented"
    run oci exec --user 1000:1001 e1 /bin/sh -c 'echo $(id -u) $(id -g)'
    assert_status 0
    assert_eq "$output" "1000 1001" "--user"
    run --separate-stderr oci exec --user 65535 e1 /bin/true
    assert_status 125
    run -127 --separate-stderr oci exec e1 /no/such
    assert_status 127
    assert_contains "$stderr" "cannot execute '/no/such'"
    # --process FILE, --detach, --pid-file: the waiter's pid has the status
    cat >"$T/proc.json" <<'P'
{"args": ["/bin/sh", "-c", "sleep 0.3; echo $Y; exit 6"], "env": ["PATH=/bin", "Y=from-process"], "cwd": "/", "user": {"uid": 7, "gid": 7}, "terminal": false}
P
    python3 "$BATS_TEST_DIRNAME/oci_reaper.py" "$T/x.pid" "$T/x.exit" -- \
        "$AJ" oci --root "$S" exec --process "$T/proc.json" --detach --pid-file "$T/x.pid" e1 \
        </dev/null >"$T/x.out" 2>"$T/x.err"
    assert_eq "$(cat "$T/x.exit")" "exit=6" "a detached exec's status"
    assert_eq "$(cat "$T/x.out")" "from-process"
    # in the container's cgroup, never host uid 0: a second command under init
    local init pids p
    init=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["init"])' "$S/e1/state.json")
    oci exec --detach e1 /bin/sleep 30 >/dev/null
    pids=$(ps -o pid= --ppid "$init")
    assert_eq "$(echo $pids | wc -w)" 2 "the command and the exec'd one under init"
    for p in $pids; do
        assert_eq "$(cat /proc/$p/cgroup)" "$(cat /proc/$init/cgroup)" "cgroup of $p"
        assert_ne "$(ps -o uid= -p $p | tr -d ' ')" 0 "host uid of $p"
    done
    local pid
    pid=$(cat "$T/e1.pid")
    run oci delete --force e1
    assert_status 0
    assert_eq "$(wait_exit e1)" "exit=137"
    assert_gone e1 "$pid"
    [ -z "$(ps -o pid= --ppid "$init")" ] || fail "exec'd processes left"
    run --separate-stderr oci exec e1 /bin/true
    assert_status 125
    assert_contains "$stderr" "does not exist"
}

@test "oci: hooks run where the runtime-spec says; a failing one fails create" {
    local h kinds='"prestart": [{"path": "/bin/sh", "args": ["sh", "-c", "cat >'$T'/h.prestart; echo >>'$T'/h.prestart; echo $HV >>'$T'/h.prestart"], "env": ["HV=v1"]}], "createRuntime": [{"path": "/bin/sh", "args": ["sh", "-c", "cat >'$T'/h.createRuntime"]}, {"path": "/usr/bin/python3", "args": ["python3", "-c", "import json,os,sys; p=json.load(sys.stdin)[\\"pid\\"]; open(sys.argv[1], \\"w\\").write(os.readlink(\\"/proc/%d/ns/user\\" % p) + \\" \\" + os.readlink(\\"/proc/%d/ns/pid\\" % p) + chr(10))", "'$T'/h.ns"], "env": []}], "poststart": [{"path": "/bin/sh", "args": ["sh", "-c", "cat >'$T'/h.poststart"], "timeout": 5}], "poststop": [{"path": "/bin/sh", "args": ["sh", "-c", "cat >'$T'/h.poststop"]}]'
    bundle_config '["/bin/sh", "-c", "echo ran"]'
    sed -i "s|\"hostname\": \"ocibox\",|\"hostname\": \"ocibox\", \"hooks\": {$kinds},|" "$B/config.json"
    oci_create h1
    [ -s "$T/h.prestart" ] || fail "prestart did not run at create: $(cat "$T/h1.err")"
    [ ! -e "$T/h.poststart" ] || fail "poststart ran before start"
    for h in prestart createRuntime; do
        assert_eq "$(head -n 1 "$T/h.$h" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["id"], s["status"], s["bundle"])')" "h1 creating $B" "$h's state"
    done
    assert_eq "$(tail -n 1 "$T/h.prestart")" v1 "a hook's env"
    # the state's pid is the container's process: its namespaces, not ours
    read -r hu hp <"$T/h.ns" || fail "the createRuntime hook saw no process: $(cat "$T/h1.err")"
    assert_ne "$hu" "$(readlink /proc/self/ns/user)" "the hook's pid's user namespace"
    assert_ne "$hp" "$(readlink /proc/self/ns/pid)" "the hook's pid's pid namespace"
    run oci start h1
    assert_status 0
    assert_eq "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["status"], s["pid"] > 0)' "$T/h.poststart")" "running True"
    assert_eq "$(wait_exit h1)" "exit=0"
    [ ! -e "$T/h.poststop" ] || fail "poststop ran before delete"
    run oci delete h1
    assert_status 0
    assert_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$T/h.poststop")" stopped
    # a failing createRuntime hook (or one past its timeout) fails create
    # with the reason, nothing left; the container's command never ran
    sed -i 's|cat >[^"]*/h.createRuntime|exit 3|' "$B/config.json"
    run --separate-stderr oci create --bundle "$B" h2
    assert_status 125
    assert_contains "$stderr" "hooks.createRuntime[0] failed: /bin/sh exited with status 3"
    sed -i 's|"exit 3"\]|"sleep 30"], "timeout": 1|' "$B/config.json"
    run --separate-stderr oci create --bundle "$B" h3
    assert_status 125
    assert_contains "$stderr" "did not end within its timeout (1s)"
    # the kinds run inside the container's namespaces are refused
    bundle_config '["/bin/true"]'
    sed -i 's|"hostname": "ocibox",|"hostname": "ocibox", "hooks": {"createContainer": [{"path": "/bin/true"}]},|' "$B/config.json"
    bad_bundle "hooks.createContainer is not supported"
    [ -z "$(ls -A "$S" 2>/dev/null)" ] || fail "state left: $(ls "$S")"
    # the state holds hooks the runtime runs: a root others may write, or
    # another user's, is refused
    bundle_config '["/bin/true"]'
    mkdir -p "$T/wroot" "$T/uroot"
    chmod 0777 "$T/wroot"
    chown 4242 "$T/uroot"
    for r in wroot uroot; do
        run --separate-stderr "$AJ" oci --root "$T/$r" create --bundle "$B" w1
        assert_status 125
        assert_contains "$stderr" "the state root is another user's or writable by others"
        [ -z "$(ls -A "$T/$r")" ] || fail "$r: state made: $(ls "$T/$r")"
    done
    rmdir "$T/wroot" "$T/uroot"
}
