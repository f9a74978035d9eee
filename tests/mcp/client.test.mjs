// `agentjail mcp` driven over stdio by the official MCP TypeScript SDK's
// client, against a real service (tests/service/mcp.bats starts it and
// passes AJ, SOCK and WORK: a directory the operator policy lets the
// sandbox mount). Run: node --test tests/mcp/client.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError, ErrorCode } from "@modelcontextprotocol/sdk/types.js";

const { AJ, SOCK, WORK } = process.env;
assert.ok(AJ && SOCK && WORK, "AJ, SOCK and WORK must be set");

let client, transport, negotiated, sandbox;
let stderr = "";

before(async () => {
  transport = new StdioClientTransport({
    command: AJ,
    args: ["mcp", "--socket", SOCK],
    stderr: "pipe",
  });
  transport.stderr.on("data", (d) => (stderr += d));
  // the client tells its transport the revision the server answered
  transport.setProtocolVersion = (v) => (negotiated = v);
  client = new Client({ name: "agentjail-tests", version: "1.0.0" });
  await client.connect(transport);
});

after(async () => {
  if (sandbox) await client.callTool({ name: "sandbox_kill", arguments: { sandbox_id: sandbox } });
  await client.close();
  if (process.env.MCP_STDERR) writeFileSync(process.env.MCP_STDERR, stderr);
});

const call = (name, args, opts) => client.callTool({ name, arguments: args }, undefined, opts);

// A protocol error (JSON-RPC) with this code.
async function rejects(p, code, re) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof McpError, `not an McpError: ${e}`);
    assert.equal(e.code, code, e.message);
    if (re) assert.match(e.message, re);
    return true;
  });
}

test("initialize: server info, tools capability, a revision both speak", async () => {
  const info = client.getServerVersion();
  assert.equal(info.name, "agentjail");
  assert.ok(info.version);
  assert.ok(client.getServerCapabilities().tools, "capabilities.tools");
  // the SDK asks for its latest revision; the server answers its own
  assert.equal(negotiated, "2025-06-18");
  assert.match(client.getInstructions() ?? "", /sandbox_create/);
  await client.ping();
});

test("tools/list: every tool with a JSON Schema", async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, [
    "list_files", "process_list", "process_output", "process_signal", "process_start",
    "read_file", "run_code", "run_command", "sandbox_create", "sandbox_kill", "sandbox_list",
    "sandbox_pause", "sandbox_resume", "write_file",
  ]);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, "object", t.name);
    assert.equal(t.inputSchema.additionalProperties, false, t.name);
    assert.ok(t.description.length > 10, t.name);
  }
  const run = tools.find((t) => t.name === "run_command");
  assert.deepEqual(run.inputSchema.required, ["sandbox_id", "cmd"]);
  assert.deepEqual(run.inputSchema.properties.cmd.type, ["string", "array"]);
});

test("sandbox_create and sandbox_list", async () => {
  const r = await call("sandbox_create", { workspace: WORK, env: { GREETING: "hello" }, timeout: 600 });
  assert.equal(r.isError, false, JSON.stringify(r));
  sandbox = r.structuredContent.id;
  assert.match(sandbox, /^sb-[0-9a-f]{16}-[a-z0-9-]+$/); // its node at the end
  assert.match(r.content[0].text, new RegExp(sandbox));
  const l = await call("sandbox_list", {});
  assert.equal(l.isError, false);
  assert.ok(l.structuredContent.sandboxes.some((s) => s.id === sandbox));
  assert.match(l.content[0].text, new RegExp(sandbox));
});

test("run_command: a shell line and an argv, stdout, stderr, exit code", async () => {
  let r = await call("run_command", {
    sandbox_id: sandbox,
    cmd: "echo $GREETING; echo oops >&2; read x; echo got $x; exit 3",
    stdin: "input\n",
  });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.exit_code, 3);
  assert.equal(r.structuredContent.stdout, "hello\ngot input\n");
  assert.equal(r.structuredContent.stderr, "oops\n");
  assert.match(r.content[0].text, /^exit code 3\n--- stdout\nhello\ngot input\n/);
  r = await call("run_command", { sandbox_id: sandbox, cmd: ["/bin/pwd"], cwd: "/tmp" });
  assert.equal(r.structuredContent.stdout, "/tmp\n");
  assert.equal(r.structuredContent.exit_code, 0);
  r = await call("run_command", { sandbox_id: sandbox, cmd: "sleep 5", timeout: 0.5 });
  assert.equal(r.structuredContent.exit_code, 124);
  assert.equal(r.structuredContent.timed_out, true);
  r = await call("run_command", { sandbox_id: sandbox, cmd: ["/no/such/program"] });
  assert.equal(r.isError, true, "a command that cannot start");
  assert.equal(r.structuredContent.exit_code, 127);
});

test("run_command: output streamed as progress notifications", async () => {
  const seen = [];
  const r = await call(
    "run_command",
    { sandbox_id: sandbox, cmd: "for i in 1 2 3; do echo line$i; sleep 0.2; done" },
    { onprogress: (p) => seen.push(p) },
  );
  assert.equal(r.structuredContent.stdout, "line1\nline2\nline3\n");
  assert.ok(seen.length >= 3, `only ${seen.length} progress notifications`);
  assert.equal(seen.map((p) => p.message).join(""), "line1\nline2\nline3\n");
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress);
});

test("write_file, read_file, list_files (text and binary)", async () => {
  let r = await call("write_file", { sandbox_id: sandbox, path: "/workspace/hello.txt", content: "hi there\n" });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(readFileSync(`${WORK}/hello.txt`, "utf8"), "hi there\n");
  r = await call("write_file", {
    sandbox_id: sandbox, path: "/tmp/bin", content: Buffer.from([0xff, 0, 1, 0xfe]).toString("base64"),
    encoding: "base64", mode: "0600",
  });
  assert.equal(r.isError, false, JSON.stringify(r));
  r = await call("read_file", { sandbox_id: sandbox, path: "/workspace/hello.txt" });
  assert.equal(r.content[0].text, "hi there\n");
  assert.equal(r.structuredContent.encoding, "utf8");
  r = await call("read_file", { sandbox_id: sandbox, path: "/tmp/bin" });
  assert.equal(r.structuredContent.encoding, "base64");
  assert.deepEqual([...Buffer.from(r.structuredContent.content, "base64")], [0xff, 0, 1, 0xfe]);
  r = await call("read_file", { sandbox_id: sandbox, path: "/tmp/bin", max_bytes: 2 });
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /larger than 2 bytes/);
  r = await call("list_files", { sandbox_id: sandbox });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.ok(r.structuredContent.entries.some((e) => e.name === "hello.txt" && e.size === 9));
  assert.match(r.content[0].text, /hello\.txt/);
  // pages of a listing
  writeFileSync(`${WORK}/second.txt`, "2");
  r = await call("list_files", { sandbox_id: sandbox, path: "/workspace", limit: 1 });
  assert.equal(r.structuredContent.entries.length, 1);
  assert.equal(r.structuredContent.truncated, true);
  const first = r.structuredContent.entries[0].name;
  r = await call("list_files", { sandbox_id: sandbox, path: "/workspace", limit: 1, cursor: r.structuredContent.next_cursor });
  assert.equal(r.structuredContent.entries.length, 1);
  assert.notEqual(r.structuredContent.entries[0].name, first);
  r = await call("list_files", { sandbox_id: sandbox, path: "/workspace/hello.txt" });
  assert.equal(r.isError, true, "a file is not listed");
  r = await call("read_file", { sandbox_id: sandbox, path: "/workspace" });
  assert.equal(r.isError, true, "a directory is not read");
  assert.match(r.content[0].text, /directory/);
  r = await call("run_command", { sandbox_id: sandbox, cmd: "stat -c %a /tmp/bin; cat /workspace/hello.txt" });
  assert.equal(r.structuredContent.stdout, "600\nhi there\n");
});

test("bad arguments: invalid params (-32602), nothing run", async () => {
  await rejects(call("run_command", { sandbox_id: sandbox, cmd: "true", bogus: 1 }), ErrorCode.InvalidParams, /unknown property 'bogus'/);
  await rejects(call("run_command", { sandbox_id: sandbox, cmd: 42 }), ErrorCode.InvalidParams, /cmd: must be of type string or array/);
  await rejects(call("run_command", { sandbox_id: sandbox, cmd: ["a", 1] }), ErrorCode.InvalidParams, /cmd\[1\]/);
  await rejects(call("run_command", { cmd: "true" }), ErrorCode.InvalidParams, /'sandbox_id' is required/);
  await rejects(call("sandbox_create", { memory: 512 }), ErrorCode.InvalidParams, /memory: must be of type string/);
  await rejects(call("sandbox_create", { net: "everything" }), ErrorCode.InvalidParams, /net: must be one of/);
  await rejects(call("write_file", { sandbox_id: sandbox, path: "/tmp/x", content: "@@", encoding: "base64" }), ErrorCode.InvalidParams, /not base64/);
  const l = await call("sandbox_list", {});
  assert.equal(l.structuredContent.sandboxes.length, 1, "a refused create made nothing");
});

test("an unknown tool: invalid params", async () => {
  await rejects(call("run_notebook", { code: "print(1)" }), ErrorCode.InvalidParams, /unknown tool 'run_notebook'/);
});

test("run_code: state kept, a chart as an image, an error's traceback", async () => {
  let r = await call("run_code", { sandbox_id: sandbox, code: "v = 20\nprint('hi')\nv + 1" });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.stdout, "hi\n");
  assert.equal(r.structuredContent.results[0].data["text/plain"], "21");
  assert.match(r.content[0].text, /hi\n21/);
  r = await call("run_code", { sandbox_id: sandbox, code: "import matplotlib.pyplot as plt\nplt.plot([v, 1])\nplt.show()" });
  const img = r.content.find((c) => c.type === "image");
  assert.equal(img.mimeType, "image/png");
  assert.deepEqual([...Buffer.from(img.data, "base64").subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  r = await call("run_code", { sandbox_id: sandbox, code: "v / 0" });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error.name, "ZeroDivisionError");
  assert.match(r.content[0].text, /ZeroDivisionError/);
  assert.doesNotMatch(r.content[0].text, /\u001b/);
  r = await call("run_code", { sandbox_id: sandbox, code: "while True: pass", timeout: 1 });
  assert.equal(r.structuredContent.timed_out, true);
  r = await call("run_code", { sandbox_id: sandbox, code: "v" });
  assert.equal(r.structuredContent.results[0].data["text/plain"], "20");
  await rejects(call("run_code", { sandbox_id: sandbox, code: 1 }), ErrorCode.InvalidParams, /code/);
});

test("the service's errors: a result with isError and its message", async () => {
  let r = await call("run_command", { sandbox_id: "sb-0000000000000000", cmd: "true" });
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /no sandbox 'sb-0000000000000000'.*not_found/);
  r = await call("read_file", { sandbox_id: sandbox, path: "/workspace/absent" });
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /HTTP 404/);
  r = await call("write_file", { sandbox_id: sandbox, path: "/proc/x", content: "x" });
  assert.equal(r.isError, true);
  r = await call("sandbox_create", { workspace: "/etc" });
  assert.equal(r.isError, true, "the operator policy refuses /etc");
  r = await call("sandbox_kill", { sandbox_id: "../../healthz" });
  assert.equal(r.isError, true, "an id is one path segment");
});

test("a cancelled run_command: the command is killed, the server goes on", async () => {
  const ac = new AbortController();
  const p = call("run_command", { sandbox_id: sandbox, cmd: "sleep 2; touch /workspace/late" }, { signal: ac.signal });
  setTimeout(() => ac.abort(), 300);
  await assert.rejects(p);
  const t0 = Date.now();
  await client.ping();
  assert.ok(Date.now() - t0 < 1500, `the ping waited ${Date.now() - t0} ms`);
  await new Promise((r) => setTimeout(r, 2500));
  assert.ok(!existsSync(`${WORK}/late`), "the cancelled command ran on");
  const r = await call("run_command", { sandbox_id: sandbox, cmd: "echo after" });
  assert.equal(r.structuredContent.stdout, "after\n");
});

test("background processes: process_start, process_list, process_output from an offset, process_signal", async () => {
  let r = await call("process_start", {
    sandbox_id: sandbox, cmd: "echo first; echo err >&2; while :; do sleep 0.1; [ -e /tmp/go ] && break; done; echo second; exec sleep 60",
  });
  assert.equal(r.isError, false, JSON.stringify(r));
  const pid = r.structuredContent.process;
  assert.match(pid, /^p[0-9]+$/);
  assert.match(r.content[0].text, new RegExp(pid));
  // what it printed so far; it still runs
  let out;
  for (let i = 0; i < 50; i++) {
    out = await call("process_output", { sandbox_id: sandbox, process_id: pid });
    if (out.structuredContent.output.includes("err")) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(out.isError, false, JSON.stringify(out));
  assert.equal(out.structuredContent.output, "first\nerr\n");
  assert.equal(out.structuredContent.running, true);
  assert.equal(out.structuredContent.next_offset, 10);
  assert.equal(out.structuredContent.exit, null);
  r = await call("process_list", { sandbox_id: sandbox });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.ok(r.structuredContent.processes.some((p) => p.id === pid && p.running), JSON.stringify(r));
  assert.match(r.content[0].text, new RegExp(`${pid} running`));
  // on from next_offset: only what came after
  await call("run_command", { sandbox_id: sandbox, cmd: "touch /tmp/go" });
  for (let i = 0; i < 50; i++) {
    out = await call("process_output", { sandbox_id: sandbox, process_id: pid, offset: 10 });
    if (out.structuredContent.output) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(out.structuredContent.output, "second\n");
  assert.equal(out.structuredContent.next_offset, 17);
  // a signal ends it: its exit is in the output's answer
  r = await call("process_signal", { sandbox_id: sandbox, process_id: pid, signal: "KILL" });
  assert.equal(r.isError, false, JSON.stringify(r));
  for (let i = 0; i < 50; i++) {
    out = await call("process_output", { sandbox_id: sandbox, process_id: pid, offset: 17 });
    if (!out.structuredContent.running) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(out.structuredContent.running, false);
  assert.equal(out.structuredContent.exit.exit_code, 137, JSON.stringify(out));
  assert.match(out.content[0].text, /^exited with code 137/);
  // errors: an ended process (409), an unknown one (404), a bad signal
  r = await call("process_signal", { sandbox_id: sandbox, process_id: pid });
  assert.equal(r.isError, true, "a signal to an ended process");
  r = await call("process_output", { sandbox_id: sandbox, process_id: "p999" });
  assert.equal(r.isError, true, "an unknown process");
  assert.match(r.content[0].text, /HTTP 404/);
  await rejects(call("process_signal", { sandbox_id: sandbox, process_id: pid, signal: "SEGV" }), ErrorCode.InvalidParams, /signal: must be one of/);
  await rejects(call("process_output", { sandbox_id: sandbox, process_id: pid, offset: -1 }), ErrorCode.InvalidParams, /offset/);
  await rejects(call("process_start", { sandbox_id: sandbox }), ErrorCode.InvalidParams, /'cmd' is required/);
  await rejects(call("process_list", { sandbox_id: sandbox, process_id: pid }), ErrorCode.InvalidParams, /unknown property 'process_id'/);
});

test("sandbox_pause and sandbox_resume", async () => {
  let r = await call("sandbox_pause", { sandbox_id: sandbox });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.state, "paused");
  r = await call("run_command", { sandbox_id: sandbox, cmd: "true" });
  assert.equal(r.isError, true, "a command in a paused sandbox");
  assert.match(r.content[0].text, /sandbox_paused/);
  r = await call("sandbox_pause", { sandbox_id: sandbox });
  assert.equal(r.isError, true, "pausing a paused sandbox");
  r = await call("sandbox_resume", { sandbox_id: sandbox });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.state, "running");
  r = await call("run_command", { sandbox_id: sandbox, cmd: "echo thawed" });
  assert.equal(r.structuredContent.stdout, "thawed\n");
  await rejects(call("sandbox_resume", {}), ErrorCode.InvalidParams, /'sandbox_id' is required/);
});

test("sandbox_kill", async () => {
  const r = await call("sandbox_kill", { sandbox_id: sandbox });
  assert.equal(r.isError, false, JSON.stringify(r));
  const l = await call("sandbox_list", {});
  assert.equal(l.structuredContent.sandboxes.length, 0);
  sandbox = undefined;
});
