#!/usr/bin/env bash
# The whole test suite: unit tests (cmocka), integration tests (bats, real
# binary, as root and as an unprivileged user), and one more pass of both
# under AddressSanitizer + UndefinedBehaviorSanitizer.
#
#   tests/run.sh            everything
#   AJ_SKIP_ASAN=1 tests/run.sh   skip the sanitizer pass (quicker, local use)
#
# Ends with one line "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export AJ_TAP=1

passed=0
failed=0
timings=$(mktemp)
skipped=0
failures=()

count_tap() { # LOG NAME
	local p f s
	f=$(grep -cE '^not ok ' "$1")
	s=$(grep -cE '^ok .*# (skip|SKIP)' "$1")
	p=$(($(grep -cE '^ok ' "$1") - s))
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	((f == 0)) || failures+=("$2: $(grep -E '^not ok ' "$1" | head -5 | tr '\n' ';')")
}

build() { # DIR [meson options...]
	local dir=$1
	shift
	local log rc=0
	log=$(mktemp)
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >"$log" 2>&1 || rc=$?
	fi
	((rc)) || ninja -C "$dir" ${AJ_NINJA_JOBS:+-j "$AJ_NINJA_JOBS"} >"$log" 2>&1 || rc=$?
	# a failed build shows why (its errors, or meson's last lines)
	((rc == 0)) || grep -E -A3 'error|ERROR|FAILED' "$log" | head -40
	rm -f "$log"
	return "$rc"
}

unit() { # BUILD-DIR NAME
	local log
	log=$(mktemp)
	echo "== unit tests ($2) (at ${SECONDS}s)"
	# meson's TAP-ish summary is not per-test; run each cmocka binary in TAP mode
	local t rc=0
	for t in "$1"/tests/test_*; do
		[ -f "$t" ] && [ -x "$t" ] || continue
		CMOCKA_MESSAGE_OUTPUT=TAP "$t" >>"$log" 2>&1 || rc=1
	done
	cat "$log"
	count_tap "$log" "unit ($2)"
	if ((rc != 0)) && ! grep -q '^not ok ' "$log"; then
		failed=$((failed + 1))
		failures+=("unit ($2): a test binary crashed")
	fi
	rm -f "$log"
}

integration() { # BUILD-DIR NAME [BATS-FILES...]
	local log dir=$1 name=$2
	shift 2
	log=$(mktemp)
	echo "== $name (at ${SECONDS}s)"
	AJ="$PWD/$dir/agentjail" PROBE="$PWD/build/tests/ajprobe" ATTACK="$PWD/build/tests/ajattack" \
		tests/integration/run.sh "$@" 2>&1 | tee "$log"
	count_tap "$log" "$name"
	# per-test times (bats --timing: "... in N ms"), for the slowest list
	sed -nE "s/^(not )?ok [0-9]+ (.*) in ([0-9]+)ms.*/\3 $name: \2/p" "$log" >>"$timings"
	if ! grep -qE '^(not )?ok ' "$log"; then
		failed=$((failed + 1))
		failures+=("$name: no test ran")
	fi
	rm -f "$log"
}

if ! build build; then
	echo "build failed"
	echo "0 passed, 1 failed"
	exit 1
fi
# the unprivileged tests run the binaries as another user
chmod -R o+rX build 2>/dev/null || true
d=$PWD
while [ "$d" != / ]; do chmod o+x "$d" 2>/dev/null || true; d=$(dirname "$d"); done

# The package's build (package.bats), the sanitizer and fuzz builds (~40 s
# and ~55 s of wall at -j2) and the fuzz targets (20 x 6 s) run in the
# background, at nice 19 and one job at a time, while the bats groups below
# mostly wait on sandboxes, VMs and timeouts; what needs them waits for them
# (docs/performance.md, "CI's wall time"). Steps write DIR/NAME.rc and .log.
bg=$(mktemp -d)
bg_pid=
trap 'rm -f "$timings"; [ -z "$bg_pid" ] || kill -- -"$bg_pid" 2>/dev/null; rm -rf "$bg"' EXIT

fuzz_bg() { # DIR SECONDS: build-fuzz, then each target, one at a time
	if ! command -v clang >/dev/null || ! CC=clang build build-fuzz -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug >"$1/fuzzbuild.log" 2>&1; then
		echo 1 >"$1/fuzzbuild.rc"
		return
	fi
	echo 0 >"$1/fuzzbuild.rc"
	local t d
	for t in build-fuzz/tests/fuzz_*; do
		[ -f "$t" ] && [ -x "$t" ] || continue
		d=$1/${t##*/}
		mkdir -p "$d/corpus"
		cp tests/fuzz/corpus/"${t##*/fuzz_}"/* "$d/corpus"/ 2>/dev/null
		# UBSan's options as the ASan pass exports them: a finding fails the target
		ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp \
			UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98 \
			"$t" -max_total_time="$2" -rss_limit_mb=1024 "$d/corpus" >"$d/log" 2>&1
		echo $? >"$d/rc"
	done
}

background() { # DIR START (the run's $SECONDS at the start)
	renice -n 19 -p "$BASHPID" >/dev/null
	export AJ_NINJA_JOBS=1
	# package.bats' build-deb (package.sh takes a lock: a test that comes
	# first waits for it, then finds it built)
	scripts/package.sh --build-only >"$1/deb.log" 2>&1
	echo "build-deb $(($2 + SECONDS))s" >>"$1/times"
	if [ -z "${AJ_SKIP_ASAN:-}" ]; then
		build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
			>"$1/asan.log" 2>&1
		echo $? >"$1/asan.rc"
		echo "build-asan $(($2 + SECONDS))s" >>"$1/times"
	fi
	if [ -z "${AJ_SKIP_FUZZ:-}" ]; then
		fuzz_bg "$1" "${AJ_FUZZ_SECONDS:-6}"
		echo "fuzz $(($2 + SECONDS))s" >>"$1/times"
	fi
	touch "$1/done"
}

# Wait for the background's DIR/NAME.rc; print it (1 if the background died).
bg_wait() {
	while [ ! -f "$bg/$1.rc" ]; do
		kill -0 "$bg_pid" 2>/dev/null || { cat "$bg/$1.rc" 2>/dev/null || echo 1; return; }
		sleep 1
	done
	cat "$bg/$1.rc"
}

export -f build fuzz_bg background
# its own process group (setsid), so that an interrupted run ends it whole
setsid bash -c 'background "$1" "$2"' _ "$bg" "$SECONDS" </dev/null >/dev/null 2>&1 &
bg_pid=$!

lint() {
	echo "== clang-format (at ${SECONDS}s)"
	if ! command -v clang-format >/dev/null; then
		failed=$((failed + 1))
		failures+=("clang-format not installed")
	elif clang-format --dry-run --Werror $(find src -name '*.[ch]' | sort) tests/unit/*.c \
		tests/fuzz/*.c tests/probe/*.c tests/security/*.[ch]; then
		echo "ok - sources are clang-formatted"
		passed=$((passed + 1))
	else
		echo "not ok - run: clang-format -i on the files above"
		failed=$((failed + 1))
		failures+=("clang-format: sources not formatted")
	fi
}

# the layout: includes point down only (tests/layout.sh)
layout() {
	echo "== layout (at ${SECONDS}s)"
	if tests/layout.sh; then
		echo "ok - includes point down (cli -> daemon -> backend -> net/image -> linux -> core)"
		passed=$((passed + 1))
	else
		echo "not ok - an include points up: move the code down or see tests/layout.allow"
		failed=$((failed + 1))
		failures+=("layout: an include points up (tests/layout.sh)")
	fi
}

lint
layout
unit build plain
integration build "integration tests" tests/integration/*.bats
integration build "security suite" tests/security/*.bats
# the same attacks at level 2 (gVisor), with what that level must show
# where its wall differs (tests/security/helpers.bash AJ_ISOLATION; ~1.5 min)
AJ_ISOLATION=gvisor integration build "security suite (level 2: gvisor)" tests/security/*.bats
integration build "network tests" tests/network/*.bats
integration build "service tests" tests/service/*.bats
integration build "gvisor level" tests/gvisor/*.bats
# level 3 on TCG (~20 boots and restores, ~3.5 min; docs/performance.md,
# "The level-3 tests' wall time")
integration build "microvm level" tests/microvm/*.bats
# level 4: WASI modules built from C here, python3 once (~1.5 min)
integration build "wasm level" tests/wasm/*.bats

if [ -z "${AJ_SKIP_ASAN:-}" ]; then
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98
	echo "== waiting for the asan build (background) (at ${SECONDS}s)"
	if [ "$(bg_wait asan)" = 0 ]; then
		chmod -R o+rX build-asan 2>/dev/null || true
		unit build-asan asan+ubsan
		# the sanitizer pass is for the C that parses input: flags, policy
		# files, archives and images, HTTP/JSON requests, NDJSON, MCP, the
		# ports proxy (the fuzz targets below take the parsers further).
		# A test of these files that feeds no parser beyond its neighbours
		# skips itself here (AJ_SANITIZED; each says why): the code pool's
		# warm kernels, /readyz over 64 pooled sandboxes.
		AJ_SANITIZED=1 integration build-asan "integration tests (asan+ubsan)" \
			tests/integration/{badinput,help,image,run_basic}.bats
		AJ_SANITIZED=1 integration build-asan "service tests (asan+ubsan)" \
			tests/service/{api,api_strict,cli,code,files,mcp,operator,ports}.bats
	else
		head -40 "$bg/asan.log" # build's errors
		failed=$((failed + 1))
		failures+=("asan build failed")
	fi
fi

# One step counted as one test: RC NAME FAILURE [LOG, its tail shown on failure]
step() {
	if (($1 == 0)); then
		echo "ok - $2"
		passed=$((passed + 1))
	else
		echo "not ok - $2"
		[ -z "${4:-}" ] || tail -30 "$4"
		failed=$((failed + 1))
		failures+=("$3")
	fi
}

fuzz() { # seconds per target; the background ran them (fuzz_bg above)
	echo "== fuzz targets (libFuzzer, ${1}s each, in the background) (at ${SECONDS}s)"
	if [ "$(bg_wait fuzzbuild)" != 0 ]; then
		head -40 "$bg/fuzzbuild.log" # build's errors
		failed=$((failed + 1))
		failures+=("fuzz build failed (its errors above; needs clang + libclang-rt-14-dev)")
		return
	fi
	while [ ! -f "$bg/done" ] && kill -0 "$bg_pid" 2>/dev/null; do sleep 1; done
	echo "# the background's steps ended at: $(tr '\n' ' ' <"$bg/times" 2>/dev/null)"
	local t
	for t in build-fuzz/tests/fuzz_*; do
		[ -f "$t" ] && [ -x "$t" ] || continue
		local d=$bg/${t##*/}
		step "$(cat "$d/rc" 2>/dev/null || echo 1)" "${t##*/} ($(grep -oE 'Done [0-9]+ runs' "$d/log"))" \
			"${t##*/}: crash (reproducer in the log above)" "$d/log"
	done
}

[ -n "${AJ_SKIP_FUZZ:-}" ] || fuzz "${AJ_FUZZ_SECONDS:-6}"

# The benchmark's quick mode, so it cannot rot: it must run and write a
# valid report; its figures are not judged here.
bench_quick() {
	echo "== benchmark, quick mode (at ${SECONDS}s)"
	local out log
	out=$(mktemp -d)
	log=$(mktemp)
	AJ="$PWD/build/agentjail" timeout 120 bench/run.sh --quick --out "$out" >"$log" 2>&1 &&
		python3 bench/check.py "$out" >>"$log" 2>&1
	step $? "bench/run.sh --quick writes valid JSON, report and plots" \
		"bench/run.sh --quick failed (log above)" "$log"
	rm -rf "$out" "$log"
}

bench_quick

echo
echo "== the 15 slowest tests (ms)"
sort -rn "$timings" | head -15
echo
for f in "${failures[@]}"; do echo "FAILED: $f"; done
echo "(took ${SECONDS}s)"
echo "tests: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
