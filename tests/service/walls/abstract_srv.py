# Listen on the abstract unix socket NAME, write our pid to PIDFILE once
# listening, answer one connection ("pong " + what came), then wait to be
# signalled (at most 30 s).
import os
import socket
import sys
import time

name, pidfile = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + name)
s.listen(1)
with open(pidfile + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(pidfile + ".tmp", pidfile)
c, _ = s.accept()
data = c.recv(100)
print("served", flush=True)  # before the answer: the client signals us after it
c.sendall(b"pong " + data)
c.close()
time.sleep(30)
print("not signalled", flush=True)
