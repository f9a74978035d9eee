#!/usr/bin/env python3
"""A fake recursive resolver for the network tests' "internet" (standard
library only). It is also the attacker's authoritative server for
*.evil.test: every query it receives is appended to LOG as "NAME TYPE", so a
test can count what reached it. Usage: fakedns.py ADDR PORT LOG"""
import socket
import struct
import sys

A, CNAME = 1, 5
ZONE = {
    "allowed.test": [(A, "192.0.2.10", 60)],
    "www.allowed.test": [(A, "203.0.113.10", 60)],
    "short.allowed.test": [(A, "198.51.100.77", 1)],
    "sub.wild.test": [(A, "192.0.2.10", 60)],
    "deep.sub.wild.test": [(A, "203.0.113.10", 60)],
    "wild.test": [(A, "192.0.2.10", 60)],
    "rebind.allowed.test": [(A, "169.254.169.254", 60), (A, "192.0.2.10", 60)],
    "lan.allowed.test": [(A, "10.0.0.5", 60)],
    "loop.allowed.test": [(A, "127.0.0.1", 60)],
    "cname.allowed.test": [(CNAME, "web.other.test", 60)],
    "web.other.test": [(A, "203.0.113.10", 60)],
    "other.test": [(A, "203.0.113.10", 60)],
    "notallowed.test": [(A, "192.0.2.10", 60)],
}


def qname(msg, off):
    labels = []
    while True:
        n = msg[off]
        off += 1
        if n == 0:
            return ".".join(labels), off
        labels.append(msg[off:off + n].decode("latin-1"))
        off += n


def encode(name):
    out = b""
    for label in name.split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def answer(msg):
    ident, flags = struct.unpack("!HH", msg[:4])
    name, off = qname(msg, 12)
    qtype, _ = struct.unpack("!HH", msg[off:off + 4])
    question = msg[12:off + 4]
    key = name.lower()
    records = []
    while True:
        recs = ZONE.get(key)
        if recs is None and key.endswith(".evil.test"):
            recs = [(A, "192.0.2.10", 60)]
        if not recs:
            break
        for kind, value, ttl in recs:
            if kind == A and qtype == A:
                rdata = socket.inet_aton(value)
            elif kind == CNAME:
                rdata = encode(value)
            else:
                continue
            records.append(encode(key) + struct.pack("!HHIH", kind, 1, ttl, len(rdata)) + rdata)
        if recs[0][0] == CNAME:
            key = recs[0][1]
            continue
        break
    known = key in ZONE or key.endswith(".evil.test")
    rcode = 0 if known else 3
    head = struct.pack("!HHHHHH", ident, 0x8180 | (flags & 0x0100) | rcode, 1, len(records), 0, 0)
    return head + question + b"".join(records), name, qtype


def main():
    addr, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))
    while True:
        msg, peer = s.recvfrom(4096)
        try:
            reply, name, qtype = answer(msg)
        except (IndexError, struct.error, UnicodeDecodeError):
            continue
        with open(log, "a") as f:
            f.write(f"{name} {qtype}\n")
        s.sendto(reply, peer)


main()
