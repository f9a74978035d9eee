#!/usr/bin/env python3
"""Container image archives for image.bats, made without docker:
docker.tar (docker save layout) and oci.tar (OCI image layout, gzip'ed
layers) of the same two layers, and hostile ones.

usage: mkoci.py OUTDIR PROBE HOSTDIR HOSTFILE
"""
import gzip
import hashlib
import io
import json
import sys
import tarfile

out, probe, hostdir, hostfile = sys.argv[1:5]


def tar(members):
    """members: (name, kind, data-or-target, mode)"""
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, kind, data, mode in members:
            i = tarfile.TarInfo(name)
            i.mode, i.uid, i.gid, i.mtime = mode, 0, 0, 1700000000
            if kind == "dir":
                i.type = tarfile.DIRTYPE
                t.addfile(i)
            elif kind == "sym":
                i.type, i.linkname = tarfile.SYMTYPE, data
                t.addfile(i)
            elif kind == "link":
                i.type, i.linkname = tarfile.LNKTYPE, data
                t.addfile(i)
            elif kind == "chr":
                i.type, i.devmajor, i.devminor = tarfile.CHRTYPE, 1, 3
                t.addfile(i)
            else:
                i.size = len(data)
                t.addfile(i, io.BytesIO(data))
    return b.getvalue()


with open(probe, "rb") as f:
    probe_bin = f.read()

layer1 = tar([
    ("bin", "dir", None, 0o755),
    ("bin/probe", "file", probe_bin, 0o755),
    ("etc", "dir", None, 0o755),
    ("etc/motd", "file", b"base\n", 0o644),
    ("etc/gone", "file", b"x\n", 0o644),
    ("etc/dir", "dir", None, 0o755),
    ("etc/dir/a", "file", b"a\n", 0o644),
    ("etc/dir/b", "file", b"b\n", 0o644),
    ("etc/foo", "sym", hostfile, 0o777),
    ("etc/motd.link", "link", "etc/motd", 0o644),
    ("dev", "dir", None, 0o755),
    ("dev/null", "chr", None, 0o666),
])
layer2 = tar([
    ("etc/.wh.gone", "file", b"", 0o644),
    ("etc/dir/.wh..wh..opq", "file", b"", 0o644),
    ("etc/dir/c", "file", b"c\n", 0o644),
    ("etc/motd", "file", b"top\n", 0o644),
    ("etc/foo", "file", b"replaced\n", 0o644),
])


def outer(path, members):
    with open(f"{out}/{path}", "wb") as f:
        f.write(tar(members))


config = json.dumps({"architecture": "amd64", "os": "linux"}).encode()
outer("docker.tar", [
    ("cfg.json", "file", config, 0o644),
    ("l1", "dir", None, 0o755),
    ("l1/layer.tar", "file", layer1, 0o644),
    ("l2", "dir", None, 0o755),
    ("l2/layer.tar", "file", gzip.compress(layer2), 0o644),
    ("l3", "dir", None, 0o755),
    ("l3/layer.tar", "sym", "../l2/layer.tar", 0o777),  # docker links repeated layers
    ("manifest.json", "file", json.dumps([{"Config": "cfg.json", "RepoTags": ["t:1"],
                                            "Layers": ["l1/layer.tar", "l2/layer.tar", "l3/layer.tar"]}]).encode(), 0o644),
])


def blob(data):
    return hashlib.sha256(data).hexdigest(), data


blobs = {}
desc = []
for layer in (layer1, layer2):
    h, d = blob(gzip.compress(layer))
    blobs[h] = d
    desc.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": f"sha256:{h}", "size": len(d)})
ch, cd = blob(config)
blobs[ch] = cd
mh, md = blob(json.dumps({"schemaVersion": 2, "config": {"digest": f"sha256:{ch}", "size": len(cd)},
                          "layers": desc}).encode())
blobs[mh] = md
index = {"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                            "digest": f"sha256:{mh}", "size": len(md),
                                            "platform": {"os": "linux", "architecture": "amd64"}}]}
outer("oci.tar", [("oci-layout", "file", b'{"imageLayoutVersion":"1.0.0"}', 0o644),
                  ("index.json", "file", json.dumps(index).encode(), 0o644),
                  ("blobs", "dir", None, 0o755), ("blobs/sha256", "dir", None, 0o755)]
      + [(f"blobs/sha256/{h}", "file", d, 0o644) for h, d in blobs.items()])


def one_layer_image(path, *layers):
    outer(path, [(f"l{i}.tar", "file", l, 0o644) for i, l in enumerate(layers)]
          + [("manifest.json", "file", json.dumps([{"Layers": [f"l{i}.tar" for i in range(len(layers))]}]).encode(), 0o644)])


# a layer plants a symlink to a host directory, the next writes through it
one_layer_image("evil-symlink.tar", tar([("evil", "sym", hostdir, 0o777)]),
                tar([("evil/pwned", "file", b"pwned\n", 0o644)]))
# a member climbing out with ".."
one_layer_image("evil-dotdot.tar", tar([("../../pwned", "file", b"pwned\n", 0o644)]))
# a hard link to a host file
one_layer_image("evil-hardlink.tar", tar([("h", "link", hostfile, 0o644)]))
# a hard link through a lower layer's symlink to a host directory
one_layer_image("evil-hardlink-via-symlink.tar", tar([("evil", "sym", hostdir, 0o777)]),
                tar([("h", "link", "evil/inside", 0o644)]))
# a whiteout that climbs out
one_layer_image("evil-whiteout.tar", tar([("x", "file", b"", 0o644)]), tar([("x/../../.wh.victim", "file", b"", 0o644)]))
# the outer archive climbing out
outer("evil-outer.tar", [("../pwned", "file", b"pwned\n", 0o644)])
# a manifest naming a layer outside the archive
outer("evil-layerpath.tar", [("manifest.json", "file", json.dumps([{"Layers": [hostfile]}]).encode(), 0o644)])
# two images: which one?
outer("two-images.tar", [("l.tar", "file", layer2, 0o644),
                         ("manifest.json", "file", json.dumps([{"Layers": ["l.tar"]}, {"Layers": ["l.tar"]}]).encode(), 0o644)])
with open(f"{out}/not-a-tar.tar", "wb") as f:
    f.write(b"hello, this is not a tar archive\n" * 100)
