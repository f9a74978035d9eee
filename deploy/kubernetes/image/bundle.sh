#!/bin/sh
# Make agentjail a self-contained tree for nodes that are not Debian 12
# (deploy/kubernetes/image/Containerfile): OUT/bin has agentjail and its
# helper programs, OUT/lib the shared libraries they load, and each dynamic
# program loads those from PREFIX/lib (its interpreter and RPATH set with
# patchelf), PREFIX being where the tree will be: /opt/agentjail on the node.
#
#   bundle.sh OUT [PREFIX] [BINDIR] [LIBEXECDIR]
set -eu
OUT=$1
PREFIX=${2:-/opt/agentjail}
BINDIR=${3:-/usr/bin}
LIBEXEC=${4:-/usr/libexec/agentjail}
mkdir -p "$OUT/bin" "$OUT/lib"
cp -L "$BINDIR/agentjail" "$OUT/bin/"
for f in "$LIBEXEC"/agentjail-*; do
	[ -f "$f" ] && [ -x "$f" ] && cp -L "$f" "$OUT/bin/"
done
dynamic() { patchelf --print-interpreter "$1" >/dev/null 2>&1; } # static ones stay as they are
for f in "$OUT"/bin/*; do
	dynamic "$f" || continue
	ldd "$f" | awk '/=> \// { print $3 } /^[[:space:]]*\/[^ ]*ld-linux/ { print $1 }' |
		while read -r l; do cp -Ln "$l" "$OUT/lib/" 2>/dev/null || true; done
done
interp=$(basename "$(ls "$OUT"/lib/ld-linux-*.so.* | head -n1)")
for f in "$OUT"/bin/*; do
	dynamic "$f" || continue
	patchelf --set-interpreter "$PREFIX/lib/$interp" --force-rpath --set-rpath "$PREFIX/lib" "$f"
done
