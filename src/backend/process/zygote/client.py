# agentjail warm interpreter client: the command init starts for a warm
# `python3 -c CODE ARGS...` exec (as python3 -I -S: C modules only, so that
# it starts fast). It hands its stdin/stdout/stderr, cwd, environment and
# arguments to the sandbox's zygote, passes signals on, and ends as the
# forked child ends. When there is no zygote, it runs the interpreter itself.
# argv: SOCKET-PATH INTERPRETER CODE ARGS...
import _signal, _socket, os, sys

path, interp, code, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]


def cold():
    os.execvp(interp, [interp, "-c", code] + args)


def field(s):
    b = s.encode("utf-8", "surrogateescape")
    return len(b).to_bytes(4, "big") + b


def readline():
    line = b""
    while not line.endswith(b"\n"):
        c = s.recv(1)
        if not c:
            return line
        line += c
    return line


s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
try:
    s.connect(path)
    env = [k + "=" + v for k, v in os.environ.items()]
    body = b"".join(field(x) for x in [code, os.getcwd(), str(len(args))] + args + env)
    fds = b"".join(i.to_bytes(4, sys.byteorder) for i in (0, 1, 2))
    s.sendmsg([len(body).to_bytes(4, "big")], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    s.sendall(body)
    first = readline()
except OSError:
    cold()
if not first.startswith(b"P"):
    cold()


def forward(n, _):
    try:
        s.sendall(b"S%d\n" % n)
    except OSError:
        pass


for n in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGCONT", "SIGTSTP"):
    _signal.signal(getattr(_signal, n), forward)
line = readline()
if line.startswith(b"X"):
    os._exit(int(line[1:]))
if line.startswith(b"K"):
    n = int(line[1:])
    _signal.signal(n, _signal.SIG_DFL)
    os.kill(os.getpid(), n)
os.write(2, b"agentjail: the warm interpreter went away\n")
os._exit(125)
