"""The Python SDK (the installed package) against a real `agentjail serve`
($AGENTJAIL_SOCKET)."""

import io
import os
import random
import socket
import tempfile
import threading
import time
import unittest

# the installed package (tests/service/sdk.bats installs it in a venv of its
# own): this folder is sys.path[0], the source tree's sdk/python is not
from agentjail import AgentjailError, Client, Sandbox, _http


class RecvBufTest(unittest.TestCase):
    """The SDK's receive buffer (no service needed): every byte in order
    whatever the sizes of sends and reads, growth for a read larger than
    the buffer, bounded size for small reads, the end of the connection."""

    def stream(self, data, chunks):
        a, b = socket.socketpair()
        rnd = random.Random(7)

        def writer():
            i = 0
            while i < len(data):
                n = rnd.choice(chunks)
                a.sendall(data[i:i + n])
                i += n
            a.close()

        t = threading.Thread(target=writer)
        t.start()
        return b, t

    def test_reads_every_byte_in_order(self):
        data = os.urandom(3 << 20)
        sock, t = self.stream(data, [1, 7, 100, 4096, 70000, 300000])
        rb, rnd, got = _http.RecvBuf(b"head"), random.Random(3), []
        data = b"head" + data  # what the handshake's read left comes first
        total, have = len(data), 0
        while have < total:
            n = min(rnd.choice([1, 2, 9, 1000, 65535, 200000, 700000]), total - have)
            self.assertTrue(rb.fill(sock, n))
            got.append(rb.take(n))
            self.assertEqual(len(got[-1]), n)
            have += n
        self.assertFalse(rb.fill(sock, 1))  # the end
        t.join()
        sock.close()
        self.assertEqual(b"".join(got), data)
        self.assertGreaterEqual(len(rb.buf), 700000)  # grown for the largest read

    def test_small_reads_keep_it_small(self):
        data = os.urandom(8 << 20)
        sock, t = self.stream(data, [65536])
        rb, out = _http.RecvBuf(), []
        while rb.fill(sock, 3):
            out.append(rb.take(3))
        out.append(rb.take(len(rb)))
        t.join()
        sock.close()
        self.assertEqual(b"".join(out), data)
        self.assertLessEqual(len(rb.buf), 2 * _http._RECV_MAX)

    def test_lines_and_a_short_end(self):
        a, b = socket.socketpair()
        a.sendall(b"one\ntwo\nthr")
        a.close()
        c = _http._Conn(b, False)
        self.assertEqual(c.readline(), b"one\n")
        self.assertEqual(c.readline(), b"two\n")
        self.assertEqual(c.readline(), b"thr")
        self.assertEqual(c.readline(), b"")
        self.assertEqual(c.read_some(10), b"")
        with self.assertRaises(ConnectionError):
            c.read_exact(1)
        b.close()


class SDKTest(unittest.TestCase):
    def setUp(self):
        self.client = Client()
        self.assertTrue(self.client.healthy())

    def test_exec_streams_and_result(self):
        chunks = []
        with Sandbox.create(memory="128M", timeout=120) as sb:
            t0 = time.monotonic()
            first = []

            def on_out(s):
                if not first:
                    first.append(time.monotonic() - t0)
                chunks.append(s)

            r = sb.exec("echo a; echo b >&2; sleep 1; echo c; exit 3", on_stdout=on_out)
            self.assertEqual(r.exit_code, 3)
            self.assertEqual(r.stdout, "a\nc\n")
            self.assertEqual(r.stderr, "b\n")
            self.assertEqual("".join(chunks), "a\nc\n")
            self.assertLess(first[0], 0.9)  # streamed, not at the end
            r = sb.exec(["sh", "-c", "cat; echo $X; pwd"], env={"X": "y"}, cwd="/tmp",
                        stdin="in\n")
            self.assertEqual(r.stdout, "in\ny\n/tmp\n")
            r = sb.exec(["sleep", "10"], timeout=0.3)
            self.assertTrue(r.timed_out)
            self.assertEqual(r.exit_code, 124)
            r = sb.exec(["no-such-command"])
            self.assertEqual(r.exit_code, 127)
            self.assertEqual(r.error["code"], "command_not_found")
        self.assertNotIn(sb.id, [s["id"] for s in self.client.sandboxes()])

    def test_run_code(self):
        # the code interpreter: state between calls, rich results, errors
        with Sandbox.create(timeout=120) as sb:
            out, res = [], []
            ex = sb.run_code("x = 41\nprint('hi')\nx + 1", on_stdout=out.append,
                             on_result=res.append)
            self.assertEqual(ex.logs.stdout, ["hi\n"])
            self.assertEqual(out, ["hi\n"])
            self.assertEqual(ex.text, "42")
            self.assertEqual(res[0].text, "42")
            self.assertIsNone(ex.error)
            ex = sb.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")
            png = ex.results[0].png_bytes()
            self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
            self.assertIn("png", ex.results[0].formats())
            ex = sb.run_code("import pandas as pd\npd.DataFrame({'a': [x]})")
            self.assertIn("<table", ex.results[0].html)
            ex = sb.run_code("undefined_name")
            self.assertEqual(ex.error.name, "NameError")
            self.assertIn("undefined_name", ex.error.traceback)
            ex = sb.run_code("while True: pass", timeout=1)
            self.assertTrue(ex.timed_out)
            self.assertEqual(ex.error.name, "TimeoutError")
            ctx = sb.create_code_context()
            self.assertEqual(sb.run_code("'x' in dir()", context=ctx).text, "False")
            self.assertEqual(sorted(c["id"] for c in sb.list_code_contexts()),
                             sorted(["default", ctx["id"]]))
            sb.remove_code_context(ctx)
            with self.assertRaises(AgentjailError) as e:
                sb.run_code("1", context=ctx)
            self.assertEqual(e.exception.status, 404)
            self.assertEqual(sb.run_code("x").text, "41")

    def test_secrets(self):
        with Sandbox.create(secret={"TOKEN": "tok-1234567890"}) as sb:
            r = sb.exec("echo $TOKEN; echo tok-1234567890")
            self.assertNotIn("tok-1234567890", r.stdout)
            self.assertIn("[REDACTED]", r.stdout)
            self.assertTrue(r.stdout.startswith("agentjail-placeholder-TOKEN-"))

    def test_files(self):
        with Sandbox.create() as sb:
            sb.files.write("/tmp/a.txt", "hello\n")
            self.assertEqual(sb.files.read("/tmp/a.txt"), b"hello\n")
            self.assertEqual(sb.exec("cat /tmp/a.txt").stdout, "hello\n")
            data = os.urandom(1 << 20)
            with tempfile.TemporaryFile() as f:
                f.write(data)
                f.seek(0)
                sb.files.write("/tmp/big", f)
            out = io.BytesIO()
            sb.files.read("/tmp/big", into=out)
            self.assertEqual(out.getvalue(), data)
            sb.files.mkdir("/tmp/d/e", parents=True)
            sb.files.write("/tmp/d/e/x", b"x", mode=0o600)
            names = {e["name"]: e for e in sb.files.list("/tmp/d/e")}
            self.assertEqual(names["x"]["mode"], 0o600)
            with self.assertRaises(AgentjailError) as cm:
                sb.files.remove("/tmp/d")
            self.assertEqual(cm.exception.status, 409)
            sb.files.remove("/tmp/d", recursive=True)
            with self.assertRaises(AgentjailError) as cm:
                sb.files.read("/tmp/d/e/x")
            self.assertEqual(cm.exception.status, 404)
            sb.exec("ln -s /etc/shadow /tmp/s")
            with self.assertRaises(AgentjailError) as cm:
                sb.files.read("/tmp/s")
            self.assertEqual(cm.exception.code, "not_found")

    def test_files_any_name_and_pages(self):
        with Sandbox.create() as sb:
            # names the sandbox makes, UTF-8 or not: listed, read, removed
            sb.exec("mkdir /tmp/n && cd /tmp/n && touch \"$(printf 'a\\377b')\" "
                    "\"$(printf 'new\\nline')\" && seq 1 30 | xargs touch")
            entries = sb.files.list("/tmp/n", limit=7)  # five pages
            names = {e["name_bytes"] for e in entries}
            self.assertEqual(len(entries), 32)
            self.assertIn(b"a\377b", names)
            self.assertIn(b"new\nline", names)
            odd = [e for e in entries if e["name_bytes"] == b"a\377b"][0]
            self.assertIsNone(odd["name"])
            sb.files.write(b"/tmp/n/a\377b", b"bytes")
            self.assertEqual(sb.files.read(b"/tmp/n/a\377b"), b"bytes")
            sb.files.remove(b"/tmp/n/a\377b")
            sb.files.remove(b"/tmp/n/new\nline")
            self.assertEqual(len(sb.files.list("/tmp/n")), 30)
            # the kernel's views are refused, however they are reached
            sb.exec("ln -s /proc /tmp/p")
            with self.assertRaises(AgentjailError) as cm:
                sb.files.read("/tmp/p/1/status")
            self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden_path"))

    def test_background(self):
        with Sandbox.create() as sb:
            p = sb.exec("for i in 1 2 3; do echo l$i; sleep 0.2; done; exit 5", background=True)
            self.assertTrue(p.info()["running"])
            seen = []
            r = p.wait(on_stdout=seen.append)
            self.assertEqual(r.exit_code, 5)
            self.assertEqual(r.stdout, "l1\nl2\nl3\n")
            # replay from an offset
            evs = list(p.events(offset=3))
            self.assertEqual(evs[0], {"type": "stdout", "data": "l2\n", "offset": 3})
            self.assertEqual(evs[-1]["type"], "exit")
            q = sb.exec(["sleep", "60"], background=True)
            q.signal("TERM")
            r = q.wait()
            self.assertEqual((r.exit_code, r.signal), (143, 15))
            self.assertEqual([x["id"] for x in sb.processes()], [q.id, p.id])
            with self.assertRaises(AgentjailError) as cm:
                q.signal("KILL")
            self.assertEqual(cm.exception.status, 409)

    def test_websocket_session(self):
        with Sandbox.create(secret={"TOKEN": "tok-1234567890"}) as sb:
            s = sb.attach(["sh", "-c", "while read l; do echo got:$l; echo e:$l >&2; done; exit 3"])
            s.send("hello\n")
            self.assertEqual(s.recv(), (1, b"got:hello\n"))
            self.assertEqual(s.recv(), (2, b"e:hello\n"))
            s.send(b"")  # EOF on stdin
            st = s.run()
            self.assertEqual(st["status"], "Failure")
            self.assertEqual(st["details"]["causes"][0], {"reason": "ExitCode", "message": "3"})
            self.assertEqual(st["agentjail"]["exit_code"], 3)
            s.close()
            out = []
            st = sb.attach("echo $TOKEN; echo tok-1234567890", stdin=False).run(on_stdout=out.append)
            self.assertEqual(st["status"], "Success")
            self.assertNotIn(b"tok-1234567890", b"".join(out))
            self.assertIn(b"[REDACTED]", b"".join(out))
            # a pty: a terminal of 80x24, resized, with echo
            t = sb.attach(["sh", "-c", "stty size; read l; echo got:$l; stty size"], tty=True)
            # a pty's output may come in pieces ("24 80", then "\r\n")
            first = b""
            while not first.endswith(b"\n"):
                ch, data = t.recv()
                self.assertEqual(ch, 1, data)
                first += data
            self.assertEqual(first, b"24 80\r\n")
            t.resize(100, 30)
            time.sleep(0.2)
            t.send("hi\n")
            out = []
            self.assertEqual(t.run(on_stdout=out.append)["status"], "Success")
            self.assertEqual(b"".join(out), b"hi\r\ngot:hi\r\n30 100\r\n")
            # the pty is the sandbox's own (its devpts), owned by its root user;
            # an ended exec's pty is gone when its end is told, even with its
            # stream still open (t is kept)
            out = []
            t2 = sb.attach(["sh", "-c", "tty; stat -c %U /dev/pts/0; ls /dev/pts"], tty=True)
            self.assertEqual(t2.run(on_stdout=out.append)["status"], "Success")
            self.assertEqual(b"".join(out), b"/dev/pts/0\r\nroot\r\n0  ptmx\r\n")
            t.close()
            t2.close()
            # refused: an unknown sandbox
            bad = Sandbox(self.client, {"id": "sb-0000000000000000"})
            ch, reason = bad.attach("true").recv()
            self.assertIsNone(ch)
            self.assertIn("no sandbox", reason)

    def test_ttl_and_kill(self):
        sb = Sandbox.create(timeout=30)
        self.assertGreater(sb.refresh()["timeout_remaining"], 20)
        sb.extend(600)
        self.assertGreater(sb.refresh()["timeout_remaining"], 500)
        sb.kill()
        sb.kill()  # idempotent
        with self.assertRaises(AgentjailError) as cm:
            sb.exec("true")
        self.assertEqual(cm.exception.status, 404)

    def test_pause_resume(self):
        with Sandbox.create(timeout=600) as sb:
            p = sb.exec("i=0; while :; do i=$((i+1)); echo $i >/tmp/n; sleep 0.05; done",
                        background=True)
            time.sleep(0.5)
            self.assertEqual(sb.pause()["state"], "paused")
            with self.assertRaises(AgentjailError) as cm:
                sb.exec("true")
            self.assertEqual((cm.exception.status, cm.exception.code), (409, "sandbox_paused"))
            with self.assertRaises(AgentjailError) as cm:
                sb.pause()
            self.assertEqual(cm.exception.status, 409)
            self.assertEqual(sb.resume()["state"], "running")
            self.assertTrue(int(sb.files.read("/tmp/n")) > 0)
            p.signal("KILL")

    def test_connections_kept(self):
        c = Client()
        for _ in range(5):
            self.assertTrue(c.healthy())
        self.assertEqual(len(c._pool._idle), 1)  # one connection for all five
        conn = c._pool._idle[0]
        conn.sock.shutdown(socket.SHUT_RDWR)  # as when the service closed it meanwhile
        self.assertTrue(c.healthy())  # noticed before use: a new connection
        self.assertEqual(len(c._pool._idle), 1)
        self.assertIsNot(c._pool._idle[0], conn)
        with Sandbox.create(client=c) as sb:  # a stream, then requests again
            self.assertEqual(sb.exec("echo hi").stdout, "hi\n")
            self.assertEqual(sb.refresh()["id"], sb.id)
        c.close()
        self.assertEqual(c._pool._idle, [])

    def test_errors(self):
        with self.assertRaises(AgentjailError) as cm:
            Sandbox.create(memory="lots")
        self.assertEqual(cm.exception.status, 400)
        with self.assertRaises(AgentjailError) as cm:
            Sandbox.create(bogus_option="x")
        self.assertIn("bogus-option", cm.exception.message)
        # a host path the operator policy does not list (the tests' lists
        # their own directory and the source tree): 403, and what to change
        with self.assertRaises(AgentjailError) as cm:
            Sandbox.create(rw=["/etc:/hostetc"])
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.policy_key),
                         (403, "forbidden", "bind_roots"))


if __name__ == "__main__":
    unittest.main()
