# Connect to the abstract unix socket NAME, then signal the server whose pid
# is in PIDFILE (kill -0, then SIGTERM when TERM is given) and init (pid 1).
# One line per step: "STEP ok [data]" or "STEP ERRNO".
import errno
import os
import signal
import socket
import sys
import time

name, pidfile = sys.argv[1], sys.argv[2]
term = len(sys.argv) > 3 and sys.argv[3] == "TERM"
for _ in range(100):
    if os.path.exists(pidfile):
        break
    time.sleep(0.05)


def step(what, fn):
    try:
        r = fn()
        print(what, "ok", r if r is not None else "", flush=True)
    except OSError as e:
        print(what, errno.errorcode.get(e.errno, str(e.errno)), flush=True)


def talk():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect("\0" + name)
    s.sendall(b"ping")
    return s.recv(100).decode()


pid = int(open(pidfile).read()) if os.path.exists(pidfile) else 999999
step("connect", talk)
step("kill0", lambda: os.kill(pid, 0))
step("init_term", lambda: os.kill(1, signal.SIGTERM))
step("init_kill0", lambda: os.kill(1, 0))
if term:
    step("term", lambda: os.kill(pid, signal.SIGTERM))
