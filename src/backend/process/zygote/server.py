# agentjail warm interpreter (zygote): runs inside a sandbox as an ordinary
# command (the same seccomp filter, Landlock rules and capabilities as any
# exec), runs the image's warm-up code once, then forks a child per request
# that comes on its unix socket. Embedded in the binary (src/backend/process/zygote.c);
# argv: SOCKET-PATH WARMUP-COMMAND.
import os, shlex, signal, socket, sys


def main():
    path, warmup = sys.argv[1], sys.argv[2]
    w = shlex.split(warmup)
    if len(w) < 3 or w[1] != "-c" or "python" not in os.path.basename(w[0]):
        print("no python warm-up: " + warmup, flush=True)
        return None
    exec(compile(w[2], "<warm-up>", "exec"), {"__name__": "__agentjail_warmup__"})
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    old = os.umask(0o077)
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    os.umask(old)
    ls.listen(64)
    rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wfd)
    signal.signal(signal.SIGCHLD, lambda n, f: None)
    import gc
    gc.freeze()  # the warm objects stay out of the children's collections (fewer copied pages)
    print("ready " + w[0], flush=True)
    conns = {}  # socket -> child pid
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ)
    sel.register(rfd, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            if key.fileobj is ls:
                c, _ = ls.accept()
                req = start(c)
                if isinstance(req, dict):  # the child: run it
                    for s in list(conns) + [ls, c]:
                        s.close()
                    sel.close()
                    os.close(rfd)
                    os.close(wfd)
                    return req
                if req:
                    conns[c] = req
                    sel.register(c, selectors.EVENT_READ)
                else:
                    c.close()
            elif key.fileobj == rfd:
                try:
                    os.read(rfd, 512)
                except BlockingIOError:
                    pass
                reap(conns, sel)
            else:
                c = key.fileobj
                data = b""
                try:
                    data = c.recv(64)
                except OSError:
                    pass
                if not data:  # the client is gone: so is its command
                    kill(conns[c], signal.SIGKILL)
                    sel.unregister(c)
                    c.close()
                    conns[c] = -conns[c]  # reaped later, nobody to tell
                for line in data.split(b"\n"):
                    if line.startswith(b"S") and line[1:].isdigit():
                        kill(conns[c], int(line[1:]))


def kill(pid, sig):
    for k in (os.killpg, os.kill):  # its group, and itself should it not lead one yet
        try:
            k(pid, sig)
        except OSError:
            pass


def reap(conns, sel):
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        for c, p in list(conns.items()):
            if abs(p) != pid:
                continue
            if p > 0:
                msg = b"K%d\n" % os.WTERMSIG(st) if os.WIFSIGNALED(st) else b"X%d\n" % os.WEXITSTATUS(st)
                try:
                    c.sendall(msg)
                except OSError:
                    pass
                sel.unregister(c)
                c.close()
            del conns[c]


def recv_exact(c, n, fds):
    buf = b""
    while len(buf) < n:
        if fds is None:
            part = c.recv(n - len(buf))
        else:
            part, got, _, _ = socket.recv_fds(c, n - len(buf), 3)
            fds.extend(got)
        if not part:
            raise EOFError
        buf += part
    return buf


def start(c):
    """A request: its length, then length-prefixed UTF-8 fields (code, cwd,
    argument count, arguments, NAME=VALUE...), with the client's stdin,
    stdout and stderr."""
    fds = []
    try:
        c.settimeout(10)
        n = int.from_bytes(recv_exact(c, 4, fds), "big")
        if n > 64 << 20:
            raise ValueError("request too large")
        body = recv_exact(c, n, None)
        fields, i = [], 0
        while i < len(body):
            k = int.from_bytes(body[i:i + 4], "big")
            fields.append(body[i + 4:i + 4 + k].decode("utf-8", "surrogateescape"))
            i += 4 + k
        nargs = int(fields[2])
        req = {"code": fields[0], "cwd": fields[1], "argv": ["-c"] + fields[3:3 + nargs],
               "env": dict(e.split("=", 1) for e in fields[3 + nargs:] if "=" in e)}
        if len(fds) != 3:
            raise ValueError("expected 3 descriptors")
        c.settimeout(None)
    except Exception as e:
        for fd in fds:
            os.close(fd)
        try:
            c.sendall(b"E%s\n" % str(e).encode())
        except OSError:
            pass
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        return req
    for fd in fds:
        os.close(fd)
    try:
        c.sendall(b"P%d\n" % pid)
    except OSError:
        pass
    return pid


req = main()
if req is None:
    sys.exit(0)
del main, start, reap, kill, recv_exact, shlex
os.chdir(req["cwd"])
os.environ.clear()
os.environ.update(req["env"])
sys.argv = req["argv"]
import types

_m = types.ModuleType("__main__")
sys.modules["__main__"] = _m
_code = compile(req["code"], "<string>", "exec")
del req, types


def _finish(rc):
    """Exit as the interpreter would (threads joined, atexit handlers run,
    output flushed) but without tearing down every object: in a fork of the
    zygote that would copy each page of its heap (~100 ms)."""
    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
    except BaseException:
        pass
    import atexit
    atexit._run_exitfuncs()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            rc = rc or 120
    os._exit(rc)


try:
    exec(_code, _m.__dict__)
    _rc = 0
except SystemExit as _e:
    _c = _e.code
    if _c is None:
        _rc = 0
    elif isinstance(_c, int):
        _rc = _c & 0xFF
    else:
        print(_c, file=sys.stderr)
        _rc = 1
except BaseException as _e:  # as python3 -c would: the traceback without this frame
    _e.__traceback__ = _e.__traceback__.tb_next
    sys.excepthook(type(_e), _e, _e.__traceback__)
    if isinstance(_e, KeyboardInterrupt):  # ends by SIGINT, as python does
        sys.stdout.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    _rc = 1
_finish(_rc)
