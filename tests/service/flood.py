#!/usr/bin/env python3
"""Hold N idle TCP connections to the service that never send a byte (a
flood that never authenticates), from several loopback addresses. Stops
by itself after SECONDS. Writes "ready" to READY_FILE once all were opened once. With
"reconnect", a connection the service closes is opened again at once (a
connection storm), else it stays closed (idle connections held open).

usage: flood.py PORT N SECONDS READY_FILE [ADDRESSES [reconnect]]"""
import resource
import selectors
import socket
import sys
import time

port, n, secs, ready = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
addrs = int(sys.argv[5]) if len(sys.argv) > 5 else 16
reconnect = len(sys.argv) > 6 and sys.argv[6] == "reconnect"
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 256, n + 256))
sel = selectors.DefaultSelector()
opened = closed = 0


def open_one(i):
    global opened
    s = socket.socket()
    s.setblocking(False)
    try:
        s.bind(("127.0.0.%d" % (1 + i % addrs), 0))
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    except OSError:
        s.close()
        return
    opened += 1
    sel.register(s, selectors.EVENT_READ, i)


t0 = time.time()
for i in range(n):
    open_one(i)
with open(ready, "w") as f:
    f.write("ready\n")
while time.time() - t0 < secs:
    for key, _ in sel.select(timeout=0.1):
        s = key.fileobj
        try:
            while s.recv(65536):
                pass
        except BlockingIOError:
            continue
        except OSError:
            pass
        sel.unregister(s)
        s.close()
        closed += 1
        if reconnect and time.time() - t0 < secs:
            open_one(key.data)
held = len(sel.get_map())
print("opened %d, closed by the service %d, held at the end %d" % (opened, closed, held))
