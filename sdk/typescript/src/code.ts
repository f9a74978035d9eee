/**
 * The code interpreter (docs/guides/code-interpreter.md): Python run in a
 * Jupyter kernel kept in the sandbox (`POST /v1/sandboxes/{id}/code`).
 * The names follow E2B's code interpreter SDK: an Execution has results
 * (each a MIME bundle: png, html, text, ...), logs and error.
 */
import { CallOpts, ndjson } from "./client.js";
import { AgentjailError } from "./errors.js";
import type { Sandbox } from "./sandbox.js";

/** One event of a run, as the API sends it. */
export interface CodeEvent {
  type: "stdout" | "stderr" | "display" | "result" | "error" | "end" | string;
  data?: any;
  name?: string;
  value?: string;
  traceback?: string[];
  execution_count?: number | null;
  context?: string;
  duration_ms?: number;
  timed_out?: boolean;
  oom_killed?: boolean;
  restarted?: boolean;
}

const NAMES: Record<string, string> = {
  "text/plain": "text",
  "text/html": "html",
  "text/markdown": "markdown",
  "image/svg+xml": "svg",
  "image/png": "png",
  "image/jpeg": "jpeg",
  "application/json": "json",
  "text/latex": "latex",
  "application/javascript": "javascript",
};

/** A rich output: a display (plt.show(), display()) or the cell's value. */
export class Result {
  text?: string;
  html?: string;
  markdown?: string;
  svg?: string;
  /** base64, as Jupyter sends it (pngBytes() decodes) */
  png?: string;
  jpeg?: string;
  json?: unknown;
  latex?: string;
  javascript?: string;
  constructor(
    readonly data: Record<string, any>,
    readonly isMainResult: boolean,
    readonly executionCount?: number | null,
  ) {
    for (const [mime, name] of Object.entries(NAMES)) {
      if (mime in data) (this as any)[name] = data[mime];
    }
  }
  /** The names of the formats present ("png", "html", "text", ...). */
  formats(): string[] {
    return Object.entries(NAMES)
      .filter(([m]) => m in this.data)
      .map(([, n]) => n);
  }
  /** The PNG's bytes, or undefined. */
  pngBytes(): Buffer | undefined {
    return this.png ? Buffer.from(this.png, "base64") : undefined;
  }
}

/** The exception the code raised ("TimeoutError", "OutOfMemory" too). */
export interface ExecutionError {
  name: string;
  value: string;
  traceback: string;
}

/** A run: results, logs, error and how it ended. */
export class Execution {
  results: Result[] = [];
  logs: { stdout: string[]; stderr: string[] } = { stdout: [], stderr: [] };
  error?: ExecutionError;
  executionCount?: number | null;
  context?: string;
  durationMs?: number;
  timedOut = false;
  oomKilled = false;
  restarted = false;
  /** The cell's value as text/plain. */
  get text(): string | undefined {
    return this.results.find((r) => r.isMainResult)?.text;
  }
}

export interface RunCodeOpts extends CallOpts {
  /** A context's id, or what createCodeContext returned; default "default". */
  context?: string | CodeContext;
  /** Seconds (default 300): then the kernel is interrupted. */
  timeout?: number;
  language?: "python";
  onStdout?: (data: string) => unknown;
  onStderr?: (data: string) => unknown;
  onResult?: (r: Result) => unknown;
  onError?: (e: ExecutionError) => unknown;
}

/** A code context (`GET /v1/sandboxes/{id}/code/contexts`). */
export interface CodeContext {
  id: string;
  language: string;
  cwd?: string | null;
  state?: "idle" | "busy";
  execution_count?: number;
  restarts?: number;
}

function ctxId(c: string | CodeContext): string {
  return encodeURIComponent(typeof c === "string" ? c : c.id);
}

export async function runCode(sb: Sandbox, code: string, opts: RunCodeOpts = {}): Promise<Execution> {
  const body: Record<string, unknown> = { code, language: opts.language ?? "python" };
  if (opts.context) body.context = typeof opts.context === "string" ? opts.context : opts.context.id;
  if (opts.timeout !== undefined) body.timeout = opts.timeout;
  const res = await sb.client.request("POST", `/v1/sandboxes/${sb.sandboxId}/code`, {
    body: { json: body },
    signal: opts.signal,
  });
  const ex = new Execution();
  let ended = false;
  try {
    for await (const ev of ndjson<CodeEvent>(res)) {
      if (ev.type === "stdout" || ev.type === "stderr") {
        const d = String(ev.data ?? "");
        (ev.type === "stdout" ? ex.logs.stdout : ex.logs.stderr).push(d);
        await (ev.type === "stdout" ? opts.onStdout : opts.onStderr)?.(d);
      } else if (ev.type === "display" || ev.type === "result") {
        const r = new Result(ev.data ?? {}, ev.type === "result", ev.execution_count);
        ex.results.push(r);
        await opts.onResult?.(r);
      } else if (ev.type === "error") {
        ex.error = { name: ev.name ?? "", value: ev.value ?? "", traceback: (ev.traceback ?? []).join("\n") };
        await opts.onError?.(ex.error);
      } else if (ev.type === "end") {
        ended = true;
        ex.executionCount = ev.execution_count;
        ex.context = ev.context;
        ex.durationMs = ev.duration_ms;
        ex.timedOut = !!ev.timed_out;
        ex.oomKilled = !!ev.oom_killed;
        ex.restarted = !!ev.restarted;
      }
    }
  } finally {
    res.destroy();
  }
  if (!ended) throw new AgentjailError(502, "stream_ended", "the run ended without an end event");
  return ex;
}

export function createCodeContext(
  sb: Sandbox,
  opts: CallOpts & { id?: string; cwd?: string; language?: "python" } = {},
): Promise<CodeContext> {
  const body: Record<string, unknown> = { language: opts.language ?? "python" };
  if (opts.id) body.id = opts.id;
  if (opts.cwd) body.cwd = opts.cwd;
  return sb.client.json<CodeContext>("POST", `/v1/sandboxes/${sb.sandboxId}/code/contexts`, {
    body: { json: body },
    signal: opts.signal,
  });
}

export async function listCodeContexts(sb: Sandbox, opts: CallOpts = {}): Promise<CodeContext[]> {
  const r = await sb.client.json<{ contexts: CodeContext[] }>("GET", `/v1/sandboxes/${sb.sandboxId}/code/contexts`, opts);
  return r.contexts;
}

export function codeContextOp(
  sb: Sandbox,
  ctx: string | CodeContext,
  op: "restart" | "interrupt" | "delete",
  opts: CallOpts = {},
): Promise<Record<string, unknown>> {
  const base = `/v1/sandboxes/${sb.sandboxId}/code/contexts/${ctxId(ctx)}`;
  return op === "delete"
    ? sb.client.json("DELETE", base, opts)
    : sb.client.json("POST", `${base}/${op}`, opts);
}
