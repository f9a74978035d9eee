#!/usr/bin/env python3
"""The second job (issue 22), measured: `npm install && npm test` of a
repository, in a sandbox and bare, in interleaved rounds from a quiet
machine.

The repository depends on --packages local tarballs (file: dependencies,
so nothing leaves the machine), a third of them with a postinstall script
(each one a `node` process, as real installs spawn), and its test requires
every package. Each round copies the pristine repository to a fresh
workspace and runs, one after the other:

  direct    sh -c 'npm install && npm test' on the host, no sandbox, as
            the workspace's owner (uid 1000), its home (npm's cache) and
            TMPDIR on a tmpfs, as the sandboxes' are
  bwrap     the same under bubblewrap as that user (--unshare-all, the host read-only,
            the workspace bound at its own path, a tmpfs /tmp and home)
  level1    agentjail run --workspace WS (the default walls and limits)
  level2    agentjail run --isolation gvisor --workspace WS (runsc)

Network: none in every case (npm runs --offline; a registry in a fake
world is what tests/network/npm.bats exercises). Needs npm, bwrap, runsc.
Usage: bench/npm.py [--rounds 5] [--packages 30] [--aj build/agentjail]
                    [--no-gvisor] [--json OUT]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from quiet import ms, settle  # noqa: E402

NPM_ENV = ["npm_config_audit=false", "npm_config_fund=false",
           "npm_config_update_notifier=false", "npm_config_offline=true",
           "npm_config_loglevel=error"]
JOB = "npm install && npm test"
OWNER = 1000  # the workspace's owner on the host


def make_repo(root, n):
    """The repository: package.json with n file: tarballs, and its test."""
    repo = os.path.join(root, "repo")
    pkgs = os.path.join(repo, "pkgs")
    os.makedirs(pkgs)
    deps = {}
    for i in range(n):
        name = f"p{i:03d}"
        src = os.path.join(root, "src", name)
        os.makedirs(src)
        meta = {"name": name, "version": "1.0.0", "main": "index.js"}
        if i % 3 == 0:
            meta["scripts"] = {"postinstall": "node -e \"require('fs').writeFileSync"
                                              "('built.txt', String(6 * 7))\""}
        with open(os.path.join(src, "package.json"), "w") as f:
            json.dump(meta, f)
        with open(os.path.join(src, "index.js"), "w") as f:
            f.write(f"module.exports = (x) => x + {i};\n")
        for j in range(5):  # a few more files, as packages have
            with open(os.path.join(src, f"lib{j}.js"), "w") as f:
                f.write(f"// {name} part {j}\n" + "exports.v = 1;\n" * 50)
        tgz = os.path.join(pkgs, f"{name}-1.0.0.tgz")
        with tarfile.open(tgz, "w:gz") as t:
            t.add(src, arcname="package")
        deps[name] = f"file:pkgs/{name}-1.0.0.tgz"
    with open(os.path.join(repo, "package.json"), "w") as f:
        json.dump({"name": "bench-repo", "version": "0.1.0", "private": True,
                   "dependencies": deps, "scripts": {"test": "node test.js"}}, f)
    with open(os.path.join(repo, "test.js"), "w") as f:
        f.write(f"let s = 0;\nfor (let i = 0; i < {n}; i++)\n"
                "  s += require('p' + String(i).padStart(3, '0'))(0);\n"
                f"if (s !== {n * (n - 1) // 2}) process.exit(1);\n"
                "console.log('tests passed');\n")
    return repo


def cases(a, ws, home):
    env = ["env"] + NPM_ENV
    # the peers run as the workspace's owner, as a developer would
    user = ["setpriv", f"--reuid={OWNER}", f"--regid={OWNER}", "--clear-groups"]
    c = {"direct": user + env + [f"HOME={home}", f"TMPDIR={home}/tmp", "sh", "-c",
                                 f"mkdir -p {home}/tmp && cd {ws} && {JOB}"],
         "bwrap": user + ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                   "--tmpfs", "/tmp", "--tmpfs", "/root", "--bind", ws, ws, "--chdir", ws, "--unshare-all", "--die-with-parent",
                   "--setenv", "HOME", "/root"] + env + ["sh", "-c", JOB],
         "level1": [a.aj, "run", "--quiet", "--workspace", ws]
         + [x for e in NPM_ENV for x in ("--env", e)] + ["--", "sh", "-c", JOB]}
    if not a.no_gvisor:
        c["level2"] = [a.aj, "run", "--quiet", "--isolation", "gvisor", "--workspace", ws] \
            + [x for e in NPM_ENV for x in ("--env", e)] + ["--", "sh", "-c", JOB]
    return c


def stats(xs):
    xs = sorted(xs)
    return {"median": round(statistics.median(xs), 1), "min": round(xs[0], 1),
            "max": round(xs[-1], 1), "n": len(xs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--packages", type=int, default=30)
    ap.add_argument("--aj", default=os.path.join(HERE, "..", "build", "agentjail"))
    ap.add_argument("--no-gvisor", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    a.aj = os.path.abspath(a.aj)
    for tool in ("npm", "bwrap") + (() if a.no_gvisor else ("runsc",)):
        if not shutil.which(tool):
            raise SystemExit(f"bench/npm.py: {tool} is not installed (scripts/setup.sh)")
    tmp = tempfile.mkdtemp(prefix="aj-bench-npm-")
    shm = tempfile.mkdtemp(prefix="aj-bench-npm-", dir="/dev/shm")
    os.chmod(tmp, 0o755)
    os.chmod(shm, 0o755)
    res = {}
    try:
        repo = make_repo(tmp, a.packages)
        for r in range(a.rounds):
            for name in cases(a, "", "").keys():
                ws = os.path.join(tmp, f"ws-{name}")
                # npm's cache is in home: tmpfs for all, as the sandboxes' is
                home = os.path.join(shm, "home")
                shutil.rmtree(ws, ignore_errors=True)
                shutil.rmtree(home, ignore_errors=True)
                shutil.copytree(repo, ws)
                os.makedirs(home)
                os.chown(home, OWNER, OWNER)
                # a user's workspace: level 2 never maps host root, so a
                # root-owned one would be read-only to its command
                for d, _, fs in os.walk(ws):
                    for x in [d] + [os.path.join(d, f) for f in fs]:
                        os.chown(x, OWNER, OWNER)
                cmd = cases(a, ws, home)[name]
                settle(timeout=3.0)
                t0 = time.perf_counter_ns()
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
                t = ms(t0)
                out = p.stdout.decode(errors="replace")
                if p.returncode != 0 or "tests passed" not in out:
                    raise SystemExit(f"bench/npm.py: {name} failed ({p.returncode}):\n{out}")
                built = os.path.join(ws, "node_modules", "p000", "built.txt")
                if open(built).read() != "42":
                    raise SystemExit(f"bench/npm.py: {name}: the postinstall did not run")
                res.setdefault(name, []).append(t)
            print(f"round {r + 1}/{a.rounds}: " + ", ".join(
                f"{k} {v[-1]:.0f} ms" for k, v in res.items()), file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)
    out = {k: stats(v) for k, v in res.items()}
    d = out["direct"]["median"]
    out["ratios"] = {f"{k} / direct": round(v["median"] / d, 2)
                     for k, v in out.items() if k != "direct"}
    out["conditions"] = {"cpus": os.cpu_count(), "rounds": a.rounds,
                         "packages": a.packages, "load1": round(os.getloadavg()[0], 2),
                         "npm": subprocess.run(["npm", "--version"], capture_output=True,
                                               text=True).stdout.strip()}
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
