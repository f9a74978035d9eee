# SPDX-License-Identifier: MIT
# agentjail's code bridge (docs/guides/code-interpreter.md): started inside a
# sandbox by the service (an exec whose stdin and stdout are the service's),
# it keeps Jupyter kernels (ipykernel, driven with jupyter_client over the
# real Jupyter protocol) as named contexts. Requests come one JSON object a
# line on stdin: {"id", "op": run|create|list|restart|interrupt|delete|
# warm, ...}; answers go one JSON object a line on stdout, each with the
# request's "id": the events of a run (stdout, stderr, display, result,
# error, end) or one {"type": "reply"} / {"type": "fail"} for the others.
import json
import os
import queue
import sys
import threading
import time

from jupyter_client import KernelManager

RUN_DIR = os.environ.get("AJ_CODE_DIR") or "/tmp/.agentjail-code"
MIMES = ("image/png", "image/svg+xml", "image/jpeg", "text/html", "text/markdown",
         "text/latex", "application/json", "application/javascript", "text/plain")
# Debian's matplotlib reads /etc/matplotlibrc, which a host-root sandbox's
# synthesized /etc lacks: point the kernels at the packaged copy instead.
_RC = "/usr/share/matplotlib/mpl-data/matplotlibrc"
if not os.path.exists("/etc/matplotlibrc") and os.path.exists(_RC):
    os.environ.setdefault("MATPLOTLIBRC", _RC)
os.environ.setdefault("MPLCONFIGDIR", os.path.join(RUN_DIR, "mpl"))
# ipykernel's debugger (debugpy) warns on the kernel's stderr at each start;
# that stderr is ours (the service keeps its tail to say why we failed)
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
OUT = sys.stdout
OUT_MU = threading.Lock()


def send(obj):
    line = json.dumps(obj, separators=(",", ":"), default=str) + "\n"
    with OUT_MU:
        OUT.write(line)
        OUT.flush()


BUNDLE_MAX = 12 << 20  # the service takes lines up to 16 MiB


def bundle(data):
    out = {k: v for k, v in (data or {}).items() if k in MIMES}
    for k in [k for k, v in out.items() if len(json.dumps(v)) > BUNDLE_MAX]:
        del out[k]  # too big to send: said in text/plain instead
        out["text/plain"] = "[%s output over %d MiB left out]" % (k, BUNDLE_MAX >> 20)
    return out


class Context:
    def __init__(self, name, cwd=None):
        self.name = name
        self.cwd = cwd
        self.mu = threading.Lock()  # one run at a time
        self.km = None
        self.kc = None
        self.count = 0
        self.busy = False
        self.restarts = 0

    def start(self):
        os.makedirs(RUN_DIR, mode=0o700, exist_ok=True)
        km = KernelManager(kernel_name="python3", transport="ipc",
                           ip=os.path.join(RUN_DIR, self.name),
                           connection_file=os.path.join(RUN_DIR, self.name + ".json"))
        kw = {"cwd": self.cwd} if self.cwd else {}
        km.start_kernel(**kw)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        self.km, self.kc = km, kc

    def alive(self):
        return self.km is not None and self.km.is_alive()

    def exit_signal(self):
        try:
            rc = self.km.provisioner.process.poll()
        except Exception:
            rc = None
        return -rc if rc is not None and rc < 0 else 0

    def stop(self):
        if self.kc:
            self.kc.stop_channels()
        if self.km:
            try:
                self.km.shutdown_kernel(now=True)
            except Exception:
                pass
        self.km = self.kc = None

    def restart(self):
        self.stop()
        self.count = 0
        self.restarts += 1
        self.start()

    def describe(self):
        return {"id": self.name, "language": "python", "cwd": self.cwd,
                "state": "busy" if self.busy else "idle",
                "execution_count": self.count, "restarts": self.restarts}

    def run(self, rid, code, timeout, history=True):
        """Run code; events as they come; the end event last. history=False
        (a warm-up): the execution count stays as it was."""
        t0 = time.monotonic()
        kc = self.kc
        msg_id = kc.execute(code, store_history=history, allow_stdin=False)
        deadline = t0 + timeout if timeout else None
        timed_out = died = False
        idle = False
        count = None
        grace = None  # after an interrupt: how long we wait for idle
        while not idle:
            now = time.monotonic()
            if deadline and not timed_out and now >= deadline:
                timed_out = True
                self.km.interrupt_kernel()
                grace = now + 5
            if grace and now >= grace:
                break  # the interrupt did not stop it: restarted below
            try:
                msg = kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                if not self.km.is_alive():
                    died = True
                    break
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, c = msg["msg_type"], msg["content"]
            if kind == "stream":
                send({"id": rid, "type": "stdout" if c.get("name") == "stdout" else "stderr",
                      "data": c.get("text", "")})
            elif kind in ("display_data", "update_display_data"):
                send({"id": rid, "type": "display", "data": bundle(c.get("data"))})
            elif kind == "execute_result":
                count = c.get("execution_count")
                send({"id": rid, "type": "result", "data": bundle(c.get("data")),
                      "execution_count": count})
            elif kind == "error":
                if not timed_out:
                    send({"id": rid, "type": "error", "name": c.get("ename", ""),
                          "value": c.get("evalue", ""), "traceback": c.get("traceback", [])})
            elif kind == "execute_input" and history:
                count = c.get("execution_count", count)
            elif kind == "status" and c.get("execution_state") == "idle":
                idle = True
        end = {"id": rid, "type": "end", "timed_out": timed_out}
        if died or (grace and not idle):
            sig = self.exit_signal() if died else 0
            send({"id": rid, "type": "error", "name": "KernelDied" if died else "TimeoutError",
                  "value": ("the kernel ended (signal %d); the context was restarted" % sig
                            if died else
                            "the code did not stop at its interrupt; the context was restarted"),
                  "traceback": []})
            end["kernel_died"] = died
            end["signal"] = sig
            end["restarted"] = True
            try:
                self.restart()
            except Exception as e:  # the restart itself failed: say so
                end["restart_error"] = str(e)
        elif timed_out:
            send({"id": rid, "type": "error", "name": "TimeoutError",
                  "value": "the code ran past its timeout of %gs and was interrupted" % timeout,
                  "traceback": []})
        if count is not None:
            self.count = count
        end["execution_count"] = count
        end["duration_ms"] = int((time.monotonic() - t0) * 1000)
        send(end)


CONTEXTS = {}
CTX_MU = threading.Lock()


def get_or_make(name, cwd=None, create=True):
    with CTX_MU:
        ctx = CONTEXTS.get(name)
        if ctx is None and create:
            ctx = CONTEXTS[name] = Context(name, cwd)
    return ctx


def ensure_started(ctx):
    if ctx.km is None:
        ctx.start()
    elif not ctx.alive():
        ctx.restart()


def op_run(req):
    rid = req["id"]
    ctx = get_or_make(req.get("context") or "default", req.get("cwd"),
                      create=not req.get("context") or req.get("context") == "default")
    if ctx is None:
        send({"id": rid, "type": "fail", "status": 404, "code": "not_found",
              "message": "no code context '%s'" % req.get("context")})
        return
    with ctx.mu:
        ctx.busy = True
        try:
            ensure_started(ctx)
            ctx.run(rid, req.get("code", ""), req.get("timeout") or 0)
        except Exception as e:
            send({"id": rid, "type": "error", "name": type(e).__name__, "value": str(e),
                  "traceback": []})
            send({"id": rid, "type": "end", "execution_count": None, "duration_ms": 0,
                  "timed_out": False})
        finally:
            ctx.busy = False


def op_control(req):
    rid, op = req["id"], req["op"]
    name = req.get("context") or "default"
    if op == "list":
        with CTX_MU:
            ctxs = list(CONTEXTS.values())
        send({"id": rid, "type": "reply", "body": {"contexts": [c.describe() for c in ctxs]}})
        return
    if op == "create":
        with CTX_MU:
            if name in CONTEXTS:
                send({"id": rid, "type": "fail", "status": 409, "code": "conflict",
                      "message": "the code context '%s' exists" % name})
                return
            ctx = CONTEXTS[name] = Context(name, req.get("cwd"))
        with ctx.mu:
            try:
                ctx.start()
            except Exception as e:
                with CTX_MU:
                    CONTEXTS.pop(name, None)
                send({"id": rid, "type": "fail", "status": 500, "code": "kernel_failed",
                      "message": "the kernel did not start: %s" % e})
                return
        send({"id": rid, "type": "reply", "status": 201, "body": ctx.describe()})
        return
    ctx = get_or_make(name, create=name == "default")  # the default: made when used
    if ctx is None:
        send({"id": rid, "type": "fail", "status": 404, "code": "not_found",
              "message": "no code context '%s'" % name})
        return
    if op == "interrupt":  # not under ctx.mu: a run holds it
        if ctx.km is not None:
            ctx.km.interrupt_kernel()
    elif op == "restart":
        if ctx.km is not None:
            ctx.km.interrupt_kernel()  # a run in progress ends, then we restart
        with ctx.mu:
            if ctx.km is None:
                ctx.start()
            else:
                ctx.restart()
    elif op == "delete":
        with CTX_MU:
            CONTEXTS.pop(name, None)
        if ctx.km is not None:
            ctx.km.interrupt_kernel()
        with ctx.mu:
            ctx.stop()
        send({"id": rid, "type": "reply", "body": {"id": name, "deleted": True}})
        return
    elif op == "warm":  # a pool's warm-up: the kernel started, imports done
        with ctx.mu:
            ensure_started(ctx)
            ctx.run(rid, req.get("code", ""), 0, history=False)
        return
    send({"id": rid, "type": "reply", "body": ctx.describe()})


def handle(req):
    try:
        (op_run if req.get("op") == "run" else op_control)(req)
    except Exception as e:
        send({"id": req.get("id"), "type": "fail", "status": 500, "code": "bridge_error",
              "message": "%s: %s" % (type(e).__name__, e)})


def main():
    send({"id": 0, "type": "ready", "pid": os.getpid()})
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            continue
        if isinstance(req, dict) and isinstance(req.get("id"), int):
            threading.Thread(target=handle, args=(req,), daemon=True).start()
    with CTX_MU:  # the service closed our stdin: end every kernel
        ctxs = list(CONTEXTS.values())
    for c in ctxs:
        c.stop()


main()
