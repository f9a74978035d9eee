"""What the benchmarks share to measure from a quiet machine: the share
of CPU time busy, a wait for quiet, and a millisecond clock."""
import time


def cpu_busy(window=0.02):
    """The share of all CPUs' time not idle over window seconds (/proc/stat)."""
    def snap():
        v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return sum(v) - v[3] - v[4], sum(v)  # not idle, not iowait
    b0, t0 = snap()
    time.sleep(window)
    b1, t1 = snap()
    return (b1 - b0) / max(1, t1 - t0)


def settle(limit=0.05, timeout=2.0):
    """Wait until the machine is quiet: a window with under limit of the
    CPUs busy (at most timeout seconds). Returns the last window's share."""
    end = time.monotonic() + timeout
    busy = cpu_busy()
    while busy > limit and time.monotonic() < end:
        busy = cpu_busy()
    return busy


def ms(t0):
    """Milliseconds since t0 (a perf_counter_ns value)."""
    return (time.perf_counter_ns() - t0) / 1e6
