#!/usr/bin/env bash
# Install every Debian package agentjail needs to build, run and test, then
# build it into build/. Idempotent: safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
	build-essential pkg-config meson ninja-build clang clang-format libclang-rt-14-dev
	libseccomp-dev libjansson-dev libcmocka-dev
	libnftables-dev libmnl-dev nftables libldns-dev libhttp-parser-dev libssl-dev mmdebstrap
	arch-test libdistro-info-perl gpg libdpkg-perl
	libwebsockets-dev libcurl4-openssl-dev libarchive-dev
	bats jq iproute2 util-linux procps psmisc python3 curl socat git
	python3-venv python3-setuptools python3-wheel python3-pip
	# the code interpreter (docs/guides/code-interpreter.md): Jupyter kernels
	# in host-root sandboxes, and what users run in them
	python3-ipykernel python3-jupyter-client python3-pandas python3-matplotlib python3-openpyxl
	bubblewrap firejail runsc hyperfine gnuplot-nox
	help2man bash-completion man-db bsdextrautils dpkg-dev binutils systemd
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm for tests/network/npm.bats: Debian's, unless a node with npm is there
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	echo "setup: installing ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The TypeScript SDK (sdk/typescript): Node.js 20+ with npm (on the
# machine: Debian 12's nodejs is 18), its dev tools from the committed
# package-lock.json (npm ci: typescript, type packages, ws), and its build
# (dist/esm, dist/cjs). tests/service/ts_sdk.bats builds it again from the tree.
if ! command -v npm >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
	echo "setup: sdk/typescript needs Node.js 20 or later with npm (node: $(node --version 2>/dev/null || echo none))" >&2
	exit 1
fi
(cd sdk/typescript && npm ci --no-audit --no-fund --loglevel=error >/dev/null && npm run -s build)
echo "setup: built sdk/typescript (npm package agentjail)"

if [ ! -f build/build.ninja ]; then
	meson setup build >/dev/null
fi
ninja -C build >/dev/null
echo "setup: built build/agentjail"

# agentjail mcp's tests (tests/service/mcp.bats): the official MCP
# TypeScript SDK's client, from the committed tests/mcp/package-lock.json.
if ! command -v npm >/dev/null; then
	echo "setup: tests/mcp needs Node.js 20 or later with npm" >&2
	exit 1
fi
(cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
echo "setup: installed tests/mcp (the MCP SDK's client the tests drive agentjail mcp with)"
