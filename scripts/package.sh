#!/usr/bin/env bash
# Build a Debian package of agentjail from the tree (docs/install.md):
#
#   scripts/package.sh [OUT-DIR]    (default: the build directory; prints the .deb's path)
#   scripts/package.sh --build-only (the build only: tests/run.sh makes it ahead)
#
# agentjail in /usr/bin, its helper programs in /usr/libexec/agentjail (the
# program finds them there: meson's libexecdir, src/core/util.c), the
# systemd units agentjail.service and agentjail.socket, the man page, the
# bash completion, the Python SDK as a python3 module and the docs.
# The build is meson's (its own build directory, $AJ_DEB_BUILD, default
# build-deb/, kept for the next run); the Depends line is dpkg-shlibdeps'
# reading of the programs; dpkg-deb makes the archive.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath -m "${AJ_DEB_BUILD:-build-deb}")
build_only=
[ "${1:-}" != --build-only ] || { build_only=1; shift; }
out=$(realpath -m "${1:-$build}")

for tool in meson ninja dpkg-deb dpkg-shlibdeps dpkg-architecture; do
	command -v "$tool" >/dev/null || {
		echo "package: $tool is missing (scripts/setup.sh installs it)" >&2
		exit 1
	}
done

# one build at a time in $build (tests/run.sh may be making it in the background)
mkdir -p "$build"
exec 9>"$build/.package.lock"
flock 9
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" --prefix=/usr --libexecdir=libexec --sysconfdir=/etc \
		--buildtype=debugoptimized -Dtests=false >/dev/null
fi
ninja -C "$build" ${AJ_NINJA_JOBS:+-j "$AJ_NINJA_JOBS"} >/dev/null
[ -z "$build_only" ] || exit 0

# the staging tree is where dpkg-shlibdeps expects it: debian/PACKAGE of a
# source tree (with a debian/control of its own, made here for it)
src=$(mktemp -d /tmp/agentjail-deb.XXXXXX)
trap 'rm -rf --one-file-system "$src"' EXIT
stage=$src/debian/agentjail
mkdir -p "$stage/DEBIAN"
chmod 0755 "$stage"
printf 'Source: agentjail\n\nPackage: agentjail\nArchitecture: any\n' >"$src/debian/control"
DESTDIR=$stage meson install -C "$build" --no-rebuild --quiet >/dev/null

version=$("$build/agentjail" --version | awk '{print $2}')
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
doc=$stage/usr/share/doc/agentjail

# the Python SDK: pure Python, no dependency (sdk/python/pyproject.toml)
py=$stage/usr/lib/python3/dist-packages
mkdir -p "$py"
cp -r sdk/python/agentjail "$py/"
find "$py" -name __pycache__ -prune -exec rm -rf {} +
# the docs, and Debian's layout: compressed man page and changelog, copyright
mkdir -p "$doc"
cp README.md docs/*.md "$doc/"
gzip -9n "$stage/usr/share/man/man1/agentjail.1"
cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: agentjail

Files: *
License: MIT
EOF
printf 'agentjail (%s) unstable; urgency=medium\n\n  * Built from the tree by scripts/package.sh.\n\n -- agentjail <agentjail@localhost>  %s\n' \
	"$version" "$(date -R -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")" |
	gzip -9n >"$doc/changelog.gz"

# Depends: the shared libraries the programs link, as dpkg-shlibdeps
# finds them (the static programs link none)
bins=()
while IFS= read -r f; do
	readelf -d "$f" 2>/dev/null | grep -q NEEDED && bins+=("$f")
done < <(find "$stage/usr/bin" "$stage/usr/libexec" -type f)
depends=$(cd "$src" && dpkg-shlibdeps -O "${bins[@]#"$src"/}" | sed -n 's/^shlibs:Depends=//p')

cat >"$stage/DEBIAN/control" <<EOF
Package: agentjail
Version: $version
Architecture: $arch
Maintainer: agentjail <agentjail@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends
Recommends: python3, bash-completion
Suggests: runsc, nftables, python3-ipykernel, python3-jupyter-client
Section: admin
Priority: optional
Description: sandboxes for AI agents' commands
 agentjail runs untrusted commands (an AI agent's shell lines, generated
 code, a stranger's npm install) in isolated, limited, throw-away
 sandboxes: namespaces, seccomp, Landlock, cgroups, and at level 2
 gVisor. It has a service with an HTTP API (agentjail serve, with systemd
 units), an MCP server for agent hosts and a Python SDK.
EOF
# systemd: the units are known after an install, and nothing is started
# (the operator enables agentjail.socket: docs/install.md); the SDK's
# bytecode, made by its first import as root, goes with the package.
cat >"$stage/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
EOF
cat >"$stage/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
	systemctl stop agentjail.socket agentjail.service 2>/dev/null || true
fi
rm -rf /usr/lib/python3/dist-packages/agentjail/__pycache__
EOF
cat >"$stage/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
EOF
chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"

mkdir -p "$out"
deb=$out/agentjail_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
