#!/usr/bin/env python3
# What an engine's monitor (Podman's conmon) does around `agentjail oci
# create`: become a child subreaper, run create, then wait for the
# container's pid (the pid file's) and write its exit status to EXITFILE
# ("exit=N" or "signal=N").
#
#   oci_reaper.py PIDFILE EXITFILE -- agentjail oci ... create ... ID
import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36


def main():
    pidfile, exitfile = sys.argv[1], sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    rc = os.spawnvp(os.P_WAIT, cmd[0], cmd)
    if rc != 0:
        with open(exitfile, "w") as f:
            f.write("create=%d\n" % rc)
        sys.exit(rc)
    pid = int(open(pidfile).read())
    while True:
        p, status = os.waitpid(-1, 0)  # reparented to us when create exited
        if p == pid:
            break
    with open(exitfile + ".tmp", "w") as f:
        if os.WIFEXITED(status):
            f.write("exit=%d\n" % os.WEXITSTATUS(status))
        else:
            f.write("signal=%d\n" % os.WTERMSIG(status))
    os.rename(exitfile + ".tmp", exitfile)


main()
