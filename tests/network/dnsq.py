#!/usr/bin/env python3
"""A minimal DNS client (standard library only): dnsq.py [--tcp] SERVER NAME
[TYPE] sends one query over UDP (or TCP) and prints "rcode=N" then one
address per A record (TYPE: A by default, or a number). Exit 0 when an
answer came, 2 on timeout. Used from the host side and inside sandboxes (no
dig there)."""
import random
import socket
import struct
import sys

args = sys.argv[1:]
tcp = args[:1] == ["--tcp"]
if tcp:
    args = args[1:]
server, name = args[0], args[1]
qtype = int(args[2]) if len(args) > 2 else 1
ident = random.randrange(65536)
q = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0)
for label in name.rstrip(".").split("."):
    q += bytes([len(label)]) + label.encode()
q += b"\0" + struct.pack("!HH", qtype, 1)
try:
    if tcp:
        s = socket.create_connection((server, 53), timeout=3)
        s.sendall(struct.pack("!H", len(q)) + q)
        msg = b""
        while len(msg) < 2 or len(msg) < 2 + struct.unpack("!H", msg[:2])[0]:
            chunk = s.recv(4096)
            if not chunk:
                break
            msg += chunk
        msg = msg[2:]
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(3)
        s.sendto(q, (server, 53))
        msg, _ = s.recvfrom(4096)
except socket.timeout:
    print("timeout")
    sys.exit(2)
flags, qd, an = struct.unpack("!HHH", msg[2:8])
print(f"rcode={flags & 15}")
off = 12
for _ in range(qd):
    while msg[off]:
        off += msg[off] + 1
    off += 5
for _ in range(an):
    if msg[off] & 0xC0 == 0xC0:
        off += 2
    else:
        while msg[off]:
            off += msg[off] + 1
        off += 1
    rtype, _, ttl, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
    off += 10
    if rtype == 1 and rdlen == 4:
        print(socket.inet_ntoa(msg[off:off + 4]), f"ttl={ttl}")
    off += rdlen
