#!/bin/bash
# Run the agentjail integration tests (bats).
#
#   tests/integration/run.sh [BATS-FILE...]      (default: all *.bats)
#
# Environment: AJ (agentjail binary), PROBE (static probe), both default to
# build/agentjail and build/tests/ajprobe; AJ_TAP=1 forces TAP output.
# Prints a one-line summary and exits non-zero if any test failed.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 125

export AJ=${AJ:-$root/build/agentjail}
export PROBE=${PROBE:-$root/build/tests/ajprobe}

if ! command -v bats >/dev/null; then
    echo "integration: bats not installed (apt-get install bats)" >&2
    exit 125
fi
for f in "$AJ" "$PROBE"; do
    if [ ! -x "$f" ]; then
        echo "integration: $f not found; build first: meson setup build && ninja -C build" >&2
        exit 125
    fi
done

if [ $# -gt 0 ]; then files=("$@"); else files=("$here"/*.bats); fi

if [ -t 1 ] && [ -z "${AJ_TAP:-}" ]; then
    bats --pretty --print-output-on-failure "${files[@]}" </dev/null
    exit $?
fi

log=$(mktemp /tmp/ajtest-integration.XXXXXX)
trap 'rm -f "$log"' EXIT
bats --tap --timing --print-output-on-failure "${files[@]}" </dev/null | tee "$log"
rc=${PIPESTATUS[0]}
total=$(grep -cE '^(not )?ok ' "$log")
failed=$(grep -cE '^not ok ' "$log")
skipped=$(grep -cE '^ok .* # skip' "$log")
echo "integration: $total tests, $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
if [ "$rc" -eq 0 ] && [ "$failed" -ne 0 ]; then rc=1; fi
exit "$rc"
