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
	bats jq iproute2 util-linux procps psmisc python3 curl socat
	python3-venv python3-setuptools python3-wheel python3-pip
	bubblewrap firejail runsc hyperfine gnuplot-nox
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	echo "setup: installing ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f build/build.ninja ]; then
	meson setup build >/dev/null
fi
ninja -C build >/dev/null
echo "setup: built build/agentjail"
