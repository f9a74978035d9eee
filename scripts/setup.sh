#!/usr/bin/env bash
# Install every Debian package agentjail needs to build, run and test, then
# build it into build/. Idempotent: safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
	build-essential pkg-config meson ninja-build clang clang-format libclang-rt-14-dev
	libseccomp-dev libjansson-dev libcmocka-dev
	libnftables-dev libmnl-dev nftables libldns-dev libhttp-parser-dev libssl-dev libnghttp2-dev mmdebstrap
	arch-test libdistro-info-perl gpg libdpkg-perl
	libwebsockets-dev libcurl4-openssl-dev libarchive-dev
	bats jq iproute2 util-linux procps psmisc python3 curl socat git
	# tests/network: the fake world's HTTP/2 server (h2echo.py)
	python3-h2
	python3-venv python3-setuptools python3-wheel python3-pip
	# the code interpreter (docs/guides/code-interpreter.md): Jupyter kernels
	# in host-root sandboxes, and what users run in them
	python3-ipykernel python3-jupyter-client python3-pandas python3-matplotlib python3-openpyxl
	# the browser job (docs/guides/browser.md): Debian's Chromium, run in
	# host-root sandboxes, and fonts for its pages
	chromium fonts-liberation fonts-dejavu-core
	bubblewrap firejail runsc hyperfine gnuplot-nox
	help2man bash-completion man-db bsdextrautils dpkg-dev binutils systemd
	qemu-system-x86 cpio xz-utils squashfs-tools
	# agentjail oci (docs/oci.md): Podman and containerd drive it (tests/integration/oci_*.bats),
	# a static busybox is the tests' bundle root
	podman busybox-static containerd
	# containerd's CRI driven as a kubelet would (oci_cri.bats): a gRPC client
	# compiled from the CRI's proto at test time, CNI's bridge for the pod
	python3-grpcio python3-grpc-tools containernetworking-plugins
	# the service on a cluster (docs/kubernetes.md): nginx routes by sandbox
	# id in tests/service/cluster.bats (a process of the test's own)
	nginx-light
	# deploy/kubernetes/image/bundle.sh (tests/integration/kubernetes.bats)
	patchelf
	# level 4 (--isolation wasm): the suite builds its WASI test modules from C
	wasi-libc lld-14 libclang-rt-14-dev-wasm32
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
# npm ci caches only the lockfile's tarballs; an offline install of the
# packed SDK (what ts_sdk.bats checks) resolves its dependency's range to
# the newest release: cache that one and its metadata
(cd sdk/typescript && npm cache add "ws@$(node -p 'require("./package.json").dependencies.ws')" \
	--loglevel=error >/dev/null)
echo "setup: built sdk/typescript (npm package agentjail)"

# Level 4 (--isolation wasm, docs/levels.md): the runner node executes and
# the interpreters it loads, compiled to WebAssembly (Pyodide for python3,
# QuickJS for node), pinned by src/backend/wasm/runtime/package-lock.json.
(cd src/backend/wasm/runtime && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
echo "setup: installed src/backend/wasm/runtime (Pyodide and QuickJS for --isolation wasm)"

# Level 3 (--isolation microvm, docs/levels.md): the guest kernel and the
# modules its initramfs loads, taken out of Debian's linux-image .deb (not
# installed on the host) into /var/cache/agentjail/microvm. The kernel is
# the vmlinux inside the vmlinuz (cut at the xz magic): qemu boots it
# directly (PVH), ~3x faster than the bzImage under TCG.
MV_DIR=/var/cache/agentjail/microvm
mv_kernel=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -n "$mv_kernel" ] && { [ "$(cat "$MV_DIR/kernel" 2>/dev/null)" != "$mv_kernel" ] ||
	[ ! -f "$MV_DIR/modules/fs/squashfs/squashfs.ko" ] ||
	[ ! -f "$MV_DIR/modules/drivers/net/virtio_net.ko" ] ||
	[ ! -f "$MV_DIR/modules/drivers/virtio/virtio_pci.ko" ]; }; then
	echo "setup: unpacking $mv_kernel for --isolation microvm into $MV_DIR"
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO="sudo"
	mv_tmp=$(mktemp -d)
	chmod 0755 "$mv_tmp"
	(cd "$mv_tmp" && apt-get download -q "$mv_kernel" >/dev/null 2>&1 && dpkg-deb -x ./*.deb x)
	mv_z=$(ls "$mv_tmp"/x/boot/vmlinuz-*)
	# every reader here reads to the end: under pipefail one that stops early
	# (head, xz --single-stream before the trailing data) fails by SIGPIPE
	mv_off=$(LC_ALL=C grep -abo $'\xfd7zXZ\x00' "$mv_z" | cut -d: -f1 | sed -n 1p)
	tail -c +$((mv_off + 1)) "$mv_z" >"$mv_tmp/vmlinux.xz"
	xz -dc --single-stream "$mv_tmp/vmlinux.xz" >"$mv_tmp/vmlinux"
	$SUDO mkdir -p "$MV_DIR"
	$SUDO rm -rf "$MV_DIR/modules"
	$SUDO cp "$mv_tmp/vmlinux" "$MV_DIR/vmlinux"
	# only what the initramfs loads (src/backend/microvm/vm.c: guest_modules)
	for m in drivers/virtio/virtio.ko drivers/virtio/virtio_ring.ko \
		drivers/virtio/virtio_mmio.ko drivers/char/virtio_console.ko fs/fuse/fuse.ko \
		fs/fuse/virtiofs.ko fs/overlayfs/overlay.ko drivers/char/hw_random/virtio-rng.ko \
		net/core/failover.ko drivers/net/net_failover.ko drivers/net/virtio_net.ko \
		drivers/block/virtio_blk.ko fs/squashfs/squashfs.ko \
		drivers/virtio/virtio_pci_legacy_dev.ko drivers/virtio/virtio_pci_modern_dev.ko \
		drivers/virtio/virtio_pci.ko; do
		$SUDO install -D -m 0644 "$mv_tmp"/x/lib/modules/*/kernel/$m "$MV_DIR/modules/$m"
	done
	echo "$mv_kernel" | $SUDO tee "$MV_DIR/kernel" >/dev/null
	rm -rf "$mv_tmp"
fi

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

# tests/integration/kubernetes.bats: the manifests of deploy/kubernetes
# checked offline against the Kubernetes schemas kubernetes-models bundles,
# from the committed tests/kubernetes/package-lock.json
(cd tests/kubernetes && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
echo "setup: installed tests/kubernetes (kubernetes-models, yaml)"

# tests/network/browser.bats: Playwright (playwright-core only: no browser
# download) drives a sandboxed Chromium, from the committed
# tests/browser/package-lock.json
(cd tests/browser && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
echo "setup: installed tests/browser (playwright-core)"
