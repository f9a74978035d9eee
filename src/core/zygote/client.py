# agentjail warm interpreter client: the command init starts for a warm
# `python3 -c CODE ARGS...` exec. It hands its stdin/stdout/stderr, cwd,
# environment and arguments to the sandbox's zygote, passes signals on, and
# ends as the forked child ends. When there is no zygote, it runs the
# interpreter itself. argv: SOCKET-PATH INTERPRETER CODE ARGS...
import array, json, os, signal, socket, sys

path, interp, code, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]


def cold():
    os.execvp(interp, [interp, "-c", code] + args)


s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(path)
    body = json.dumps({"code": code, "argv": ["-c"] + args, "cwd": os.getcwd(),
                       "env": dict(os.environ)}).encode()
    s.sendmsg([len(body).to_bytes(4, "big")],
               [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    s.sendall(body)
    f = s.makefile("rb")
    first = f.readline()
except OSError:
    cold()
if not first.startswith(b"P"):
    cold()


def forward(n, _):
    try:
        s.sendall(b"S%d\n" % n)
    except OSError:
        pass


for n in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
          signal.SIGUSR2, signal.SIGCONT, signal.SIGTSTP):
    signal.signal(n, forward)
line = f.readline()
if line.startswith(b"X"):
    os._exit(int(line[1:]))
if line.startswith(b"K"):
    n = int(line[1:])
    signal.signal(n, signal.SIG_DFL)
    os.kill(os.getpid(), n)
os.write(2, b"agentjail: the warm interpreter went away\n")
os._exit(125)
