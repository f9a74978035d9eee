#!/usr/bin/env bash
# The OCI runtime-spec validation programs of opencontainers/runtime-tools
# (validation/*.go, cmd/runtimetest) run against `agentjail oci`.
#
#   RUNTIME_TOOLS_SRC=DIR tests/oci/conformance.sh [NAME...]
#
# DIR: a checkout of runtime-tools (commit 0105384, the one Debian's
# golang-github-opencontainers-runtime-tools-dev 0.9.0+git20220423 ships).
# Debian ships that package's libraries only, not validation/ nor
# cmd/runtimetest, so nothing here can fetch them: without DIR this exits
# 77 (skipped). Built offline with Debian's golang-go and the checkout's
# vendor/, once, into build/oci-conformance (re-runs only run). Run as root
# (the default limits need cgroups), and through the test lock.
# Each validation's TAP goes to build/oci-conformance/results/NAME.tap;
# a summary line per validation, then the totals. Exit 1 when one of
# EXPECTED_PASS (below) fails, or something is left behind.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 125
top=$PWD
AJ=${AJ:-$top/build/agentjail}
src=${RUNTIME_TOOLS_SRC:-}
out=$top/build/oci-conformance

# Validations that pass on agentjail; each other one fails by design and
# is listed with its reason in docs/oci.md ("Conformance").
EXPECTED_PASS=(
	create delete_only_create_resources kill kill_no_effect linux_ns_nopath
	linux_ns_path_type linux_seccomp misc_props poststart_fail poststop_fail
	prestart_fail process_rlimits_fail state
)
ALL=() # without NAMEs: every validation of the checkout

if [ -z "$src" ] || [ ! -d "$src/validation/util" ] || [ ! -d "$src/cmd/runtimetest" ]; then
	echo "skip: RUNTIME_TOOLS_SRC is not a runtime-tools checkout with validation/ and" \
		"cmd/runtimetest (Debian does not package them; see docs/oci.md, Conformance)" >&2
	exit 77
fi
command -v go >/dev/null || {
	echo "conformance.sh: go is missing (fix: apt-get install golang-go)" >&2
	exit 125
}
[ -x "$AJ" ] || {
	echo "conformance.sh: $AJ is missing (fix: ninja -C build, or AJ=PATH)" >&2
	exit 125
}

# --- build once ---
mkdir -p "$out/bin" "$out/work" "$out/results"
export GOFLAGS=-mod=vendor GOPROXY=off GO111MODULE=on CGO_ENABLED=0 GOCACHE=$out/gocache
if [ ! -x "$out/work/runtimetest" ] || [ "$(cat "$out/bin/.built" 2>/dev/null)" != "$src" ]; then
	echo "building runtimetest and the validations in $out (once)"
	(cd "$src" && go build -p 2 -o "$out/work/runtimetest" ./cmd/runtimetest &&
		go build -p 2 -o "$out/bin/" ./validation/...) || {
		echo "conformance.sh: the build failed (fix: the checkout's vendor/ must be complete)" >&2
		exit 125
	}
	echo "$src" >"$out/bin/.built"
fi
cp -f "$src/rootfs-$(go env GOARCH).tar.gz" "$out/work/"

# agentjail takes the runtime's command line after `oci`; a state root of
# the run's own, checked empty at the end
state=$(mktemp -d /tmp/aj-conformance.XXXXXX)
cat >"$out/work/runtime" <<EOF
#!/bin/sh
exec "$AJ" oci --root "$state" "\$@"
EOF
chmod +x "$out/work/runtime"

if (($#)); then
	names=("$@")
else
	for f in "$out"/bin/*; do
		[ -x "$f" ] && ALL+=("$(basename "$f")")
	done
	names=("${ALL[@]}")
fi

total_ok=0 total_nok=0 total_skip=0 bad=0
start=$SECONDS
printf '%-34s %5s %5s %5s  %s\n' validation ok fail skip status
for n in "${names[@]}"; do
	[ -x "$out/bin/$n" ] || {
		echo "$n: no such validation" >&2
		bad=1
		continue
	}
	tap=$out/results/$n.tap
	(cd "$out/work" && TMPDIR=$out/work RUNTIME=$out/work/runtime timeout 30 "$out/bin/$n" >"$tap" 2>&1)
	rc=$?
	ok=$(grep -cE '^ok ' "$tap")
	skip=$(grep -cE '^ok .*# (skip|SKIP)' "$tap")
	ok=$((ok - skip))
	nok=$(grep -cE '^not ok ' "$tap")
	# a failure too: a program that stopped early (a status), or ran no
	# check and reported an error ("1..0" and an "error" block); one that
	# expects a refusal ends 0 without checks when it had it
	if ((rc != 0)) || { ((ok + nok + skip == 0)) && grep -q '"error":' "$tap"; }; then
		nok=$((nok + 1))
	fi
	status=pass
	((nok == 0)) || status=fail
	expected=fail
	[[ " ${EXPECTED_PASS[*]} " == *" $n "* ]] && expected=pass
	[ "$status" = pass ] || [ "$expected" = fail ] || bad=1
	note=$status
	[ "$status" = "$expected" ] || note="$status (expected $expected)"
	# a container the program left (it deletes its own): agentjail's residue
	# unless `delete --force` ends it; bundles it left are its own affair
	for c in "$state"/*; do
		[ -e "$c" ] || continue
		c=$(basename "$c")
		"$out/work/runtime" delete --force "$c" >/dev/null 2>&1 || {
			note="$note; container $c left and not deletable"
			bad=1
		}
	done
	rm -rf "$out"/work/ocitest*
	printf '%-34s %5d %5d %5d  %s\n' "$n" "$ok" "$nok" "$skip" "$note"
	total_ok=$((total_ok + ok)) total_nok=$((total_nok + nok)) total_skip=$((total_skip + skip))
done

# nothing left: no container state, no bundle
left=$(find "$state" -mindepth 1 -maxdepth 1 2>/dev/null; find "$out/work" -maxdepth 1 -name 'ocitest*')
if [ -n "$left" ]; then
	echo "left behind: $left" >&2
	bad=1
fi
rm -rf "$state"
echo "checks: $total_ok ok, $total_nok failed, $total_skip skipped;" \
	"$((SECONDS - start)) s (TAP in $out/results)"
exit "$bad"
