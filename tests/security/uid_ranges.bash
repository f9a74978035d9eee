# Helpers for the host-wide uid range tests (privilege.bats and
# tests/service/uidrange.bats).

# The host uid range (its slot: (base - 1e9) / 65536) of sandboxed pid.
uid_slot_of() {
    awk 'NR == 1 { print ($2 - 1000000000) / 65536 }' "/proc/$1/uid_map"
}

# Stand-in for other agentjails on the host: hold every range's lock
# (byte S of /var/lib/agentjail/uid-ranges.lock, docs/security.md) but
# those named, until stdin closes. Ranges someone else holds are skipped.
hold_ranges_but() { # SLOT...
    python3 -c '
import fcntl, os, struct, sys
free = {int(a) for a in sys.argv[1:]}
os.makedirs("/var/lib/agentjail", mode=0o755, exist_ok=True)
fd = os.open("/var/lib/agentjail/uid-ranges.lock", os.O_RDWR | os.O_CREAT, 0o600)
held = 0
for s in range(16384):
    if s in free:
        continue
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, s, 1, 0) + bytes(8))
        held += 1
    except OSError:
        pass
print(held, flush=True)
sys.stdin.read()
' "$@"
}
