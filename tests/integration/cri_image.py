#!/usr/bin/python3
"""An OCI image archive for oci_cri.bats (no registry, no docker): one
layer holding a static busybox, its command sleeping (the pod's pause
container runs it; the test's containers give their own command).

usage: cri_image.py OUT.tar NAME BUSYBOX"""
import hashlib
import io
import json
import sys
import tarfile

out, name, busybox = sys.argv[1:4]


def add(t, name, kind, data=b"", mode=0o755):
    i = tarfile.TarInfo(name)
    i.mode, i.mtime = mode, 1700000000
    if kind == "dir":
        i.type = tarfile.DIRTYPE
        t.addfile(i)
    elif kind == "sym":
        i.type, i.linkname = tarfile.SYMTYPE, data
        t.addfile(i)
    else:
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))


b = io.BytesIO()
with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
    for d in ("bin", "dev", "etc", "proc", "run", "sys", "tmp"):
        add(t, d, "dir")
    with open(busybox, "rb") as f:
        add(t, "bin/busybox", "file", f.read())
    for tool in ("sh", "sleep", "cat", "echo", "id", "hostname", "ls"):
        add(t, "bin/" + tool, "sym", "busybox")
    add(t, "etc/motd", "file", b"cri\n", 0o644)
layer = b.getvalue()


def blob(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


config = json.dumps({
    "architecture": "amd64", "os": "linux",
    "config": {"Entrypoint": ["/bin/sleep", "100000"], "Env": ["PATH=/bin"]},
    "rootfs": {"type": "layers", "diff_ids": [blob(layer)]},
}).encode()
manifest = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
               "digest": blob(config), "size": len(config)},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": blob(layer), "size": len(layer)}],
}).encode()
index = json.dumps({
    "schemaVersion": 2,
    "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                   "digest": blob(manifest), "size": len(manifest),
                   "annotations": {"io.containerd.image.name": name,
                                   "org.opencontainers.image.ref.name": name.split(":")[-1]}}],
}).encode()
with tarfile.open(out, "w") as t:
    add(t, "oci-layout", "file", b'{"imageLayoutVersion": "1.0.0"}', 0o644)
    add(t, "index.json", "file", index, 0o644)
    add(t, "blobs", "dir")
    add(t, "blobs/sha256", "dir")
    for data in (layer, config, manifest):
        add(t, "blobs/sha256/" + blob(data)[7:], "file", data, 0o644)
