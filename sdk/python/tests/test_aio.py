"""The asyncio client (agentjail.aio, the installed package) against a real
`agentjail serve` ($AGENTJAIL_SOCKET): the blocking client's surface, on
asyncio streams in one thread."""

import asyncio
import io
import os
import tempfile
import threading
import time
import unittest

import agentjail
from agentjail import AgentjailError, AsyncClient, AsyncSandbox


class AioTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.client = AsyncClient()
        self.assertTrue(await self.client.healthy())

    async def asyncTearDown(self):
        await self.client.aclose()

    async def test_exec_streams_and_result(self):
        chunks, first = [], []
        async with await AsyncSandbox.create(client=self.client, memory="128M",
                                             timeout=120) as sb:
            t0 = time.monotonic()

            async def on_out(s):  # a coroutine callback
                if not first:
                    first.append(time.monotonic() - t0)
                chunks.append(s)

            r = await sb.exec("echo a; echo b >&2; sleep 1; echo c; exit 3", on_stdout=on_out)
            self.assertEqual((r.exit_code, r.stdout, r.stderr), (3, "a\nc\n", "b\n"))
            self.assertEqual("".join(chunks), "a\nc\n")
            self.assertLess(first[0], 0.9)  # streamed, not at the end
            r = await sb.exec(["sh", "-c", "cat; echo $X; pwd"], env={"X": "y"}, cwd="/tmp",
                              stdin="in\n")
            self.assertEqual(r.stdout, "in\ny\n/tmp\n")
            r = await sb.exec(["sleep", "10"], timeout=0.3)
            self.assertEqual((r.timed_out, r.exit_code), (True, 124))
            self.assertEqual((await sb.refresh())["id"], sb.id)
        self.assertNotIn(sb.id, [s["id"] for s in await self.client.sandboxes()])

    async def test_run_code(self):
        async with await AsyncSandbox.create(client=self.client, timeout=120) as sb:
            got = []

            async def on_result(r):
                got.append(r.text)

            ex = await sb.run_code("y = 6 * 7\ny", on_result=on_result)
            self.assertEqual(ex.text, "42")
            self.assertEqual(got, ["42"])
            ex = await sb.run_code("y + 1")
            self.assertEqual(ex.text, "43")

    async def test_concurrent_in_one_thread(self):
        # three sandboxes, each running `sleep 1`, at once: about 1 s, not 3,
        # and no thread besides the event loop's
        sbs = await asyncio.gather(*(AsyncSandbox.create(client=self.client) for _ in range(3)))
        try:
            t0 = time.monotonic()
            seen = set()

            async def one(sb):
                seen.add(threading.active_count())
                return await sb.exec("sleep 1; echo done")

            rs = await asyncio.gather(*(one(sb) for sb in sbs))
            self.assertLess(time.monotonic() - t0, 2.5)
            self.assertEqual([r.stdout for r in rs], ["done\n"] * 3)
            self.assertEqual(seen, {1})
            self.assertEqual(threading.active_count(), 1)
        finally:
            await asyncio.gather(*(sb.kill() for sb in sbs))

    async def test_files(self):
        async with await AsyncSandbox.create(client=self.client) as sb:
            await sb.files.write("/tmp/a.txt", "hello\n")
            self.assertEqual(await sb.files.read("/tmp/a.txt"), b"hello\n")
            data = os.urandom(1 << 20)
            with tempfile.TemporaryFile() as f:  # a file object: streamed
                f.write(data)
                f.seek(0)
                await sb.files.write("/tmp/big", f)
            out = io.BytesIO()
            await sb.files.read("/tmp/big", into=out)
            self.assertEqual(out.getvalue(), data)
            parts = [c async for c in sb.files.stream("/tmp/big")]
            self.assertEqual(b"".join(parts), data)
            await sb.files.mkdir("/tmp/d/e", parents=True)
            await sb.files.write("/tmp/d/e/x", b"x", mode=0o600)
            names = {e["name"]: e for e in await sb.files.list("/tmp/d/e")}
            self.assertEqual(names["x"]["mode"], 0o600)
            await sb.files.write(b"/tmp/d/a\377b", b"bytes")
            self.assertIn(b"a\377b", [e["name_bytes"] for e in await sb.files.list("/tmp/d")])
            with self.assertRaises(AgentjailError) as cm:
                await sb.files.remove("/tmp/d")
            self.assertEqual(cm.exception.status, 409)
            await sb.files.remove("/tmp/d", recursive=True)
            with self.assertRaises(AgentjailError) as cm:
                await sb.files.read("/tmp/d/e/x")
            self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))

    async def test_background_and_pause(self):
        async with await AsyncSandbox.create(client=self.client, timeout=600) as sb:
            p = await sb.exec("for i in 1 2 3; do echo l$i; sleep 0.2; done; exit 5",
                              background=True)
            self.assertTrue((await p.info())["running"])
            r = await p.wait()
            self.assertEqual((r.exit_code, r.stdout), (5, "l1\nl2\nl3\n"))
            evs = [ev async for ev in p.events(offset=3)]
            self.assertEqual(evs[0], {"type": "stdout", "data": "l2\n", "offset": 3})
            q = await sb.exec(["sleep", "60"], background=True)
            self.assertEqual([x["id"] for x in await sb.processes()], [q.id, p.id])
            self.assertEqual((await sb.pause())["state"], "paused")
            with self.assertRaises(AgentjailError) as cm:
                await sb.exec("true")
            self.assertEqual((cm.exception.status, cm.exception.code), (409, "sandbox_paused"))
            self.assertEqual((await sb.resume())["state"], "running")
            await q.signal("TERM")
            r = await q.wait()
            self.assertEqual((r.exit_code, r.signal), (143, 15))
            self.assertGreater((await sb.extend(900))["timeout_remaining"], 800)

    async def test_websocket_session(self):
        async with await AsyncSandbox.create(client=self.client) as sb:
            s = await sb.attach(["sh", "-c", "while read l; do echo got:$l; done; exit 3"])
            await s.send("hello\n")
            self.assertEqual(await s.recv(), (1, b"got:hello\n"))
            await s.send(b"")  # EOF on stdin
            st = await s.run()
            self.assertEqual(st["agentjail"]["exit_code"], 3)
            await s.close()
            t = await sb.attach(["sh", "-c", "stty size"], tty=True)
            out = []
            self.assertEqual((await t.run(on_stdout=out.append))["status"], "Success")
            self.assertEqual(b"".join(out), b"24 80\r\n")
            await t.close()

    async def test_errors_and_own_client(self):
        with self.assertRaises(AgentjailError) as cm:
            await AsyncSandbox.create(client=self.client, memory="lots")
        self.assertEqual(cm.exception.status, 400)
        with self.assertRaises(AgentjailError) as cm:
            await AsyncSandbox.create(client=self.client, rw=["/etc:/hostetc"])
        self.assertEqual((cm.exception.status, cm.exception.policy_key), (403, "bind_roots"))
        async with await AsyncSandbox.create() as sb:  # a Client of its own (the env's socket)
            self.assertEqual((await sb.exec("echo x")).stdout, "x\n")
        self.assertEqual(sb.client._idle, [])  # closed with the sandbox

    async def test_connections_kept(self):
        for _ in range(5):
            self.assertTrue(await self.client.healthy())
        self.assertEqual(len(self.client._idle), 1)

    def test_installed_package(self):
        self.assertNotIn(os.sep + "sdk" + os.sep + "python" + os.sep, agentjail.__file__)
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(agentjail.__file__),
                                                    "py.typed")))


if __name__ == "__main__":
    unittest.main()
