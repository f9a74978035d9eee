/** `sb.commands`: run commands (streamed NDJSON), background processes. */
import { CallOpts, ndjson } from "./client.js";
import { AgentjailError } from "./errors.js";
import type { Sandbox } from "./sandbox.js";

/** An event of a command's output (docs/api.md, "Commands"). */
export interface OutputEvent {
  type: "stdout" | "stderr" | "gap" | "exit";
  /** stdout/stderr: the text (else data_b64: bytes that are not UTF-8). */
  data?: string;
  data_b64?: string;
  /** A background process's byte offset of this event (output replay). */
  offset?: number;
  /** gap: output before this offset has left the ring. */
  next?: number;
  exit_code?: number | null;
  signal?: number | null;
  timed_out?: boolean;
  oom_killed?: boolean;
  duration_ms?: number;
  error?: { code: string; message: string } | null;
}

/** How a command ended, with its (redacted) output. */
export class CommandResult {
  /** Its status; 128+N for signal N, 124 on timeout, 127 not found. */
  readonly exitCode: number | null;
  readonly signal: number | null;
  readonly timedOut: boolean;
  readonly oomKilled: boolean;
  readonly durationMs: number | null;
  /** Why it could not start ({code: "command_not_found", ...}), else null. */
  readonly error: { code: string; message: string } | null;
  readonly stdout: string;
  readonly stderr: string;

  constructor(exit: OutputEvent, stdout: string, stderr: string) {
    this.exitCode = exit.exit_code ?? null;
    this.signal = exit.signal ?? null;
    this.timedOut = Boolean(exit.timed_out);
    this.oomKilled = Boolean(exit.oom_killed);
    this.durationMs = exit.duration_ms ?? null;
    this.error = exit.error ?? null;
    this.stdout = stdout;
    this.stderr = stderr;
  }

  /** exitCode is 0. */
  get ok(): boolean {
    return this.exitCode === 0;
  }
}

export interface OutputCallbacks {
  /** Each piece of stdout as it comes. */
  onStdout?: (data: string) => void;
  /** Each piece of stderr as it comes. */
  onStderr?: (data: string) => void;
}

export interface RunOpts extends CallOpts, OutputCallbacks {
  /** Seconds; then SIGTERM (SIGKILL after 2 s): exitCode 124, timedOut. */
  timeout?: number;
  /** Start it and return a CommandHandle at once. */
  background?: boolean;
  /** Absolute directory inside the sandbox. */
  cwd?: string;
  /** More environment variables. */
  envs?: Record<string, string>;
  /** The command's whole standard input. */
  stdin?: string | Uint8Array;
}

/** A background process's state (`GET .../processes/{id}`). */
export interface ProcessInfo {
  id: string;
  cmd: string | string[];
  running: boolean;
  output_bytes: number;
  kept_from: number;
  exit?: OutputEvent;
  [key: string]: unknown;
}

export interface OutputOpts extends CallOpts {
  /** The byte offset (of stdout and stderr together) to replay from (default 0). */
  offset?: number;
  /** Stream until the process ends (default: stop at the output so far). */
  follow?: boolean;
}

export type Signal = "TERM" | "KILL" | "INT" | "HUP" | "QUIT" | "USR1" | "USR2" | "STOP" | "CONT" | number;

function eventData(ev: OutputEvent): string {
  if (typeof ev.data === "string") return ev.data;
  return Buffer.from(ev.data_b64 ?? "", "base64").toString("utf8");
}

/** Gather output events up to the exit event. */
export async function collect(events: AsyncIterable<OutputEvent>, cb: OutputCallbacks): Promise<CommandResult> {
  const out: string[] = [];
  const err: string[] = [];
  let end: OutputEvent | undefined;
  for await (const ev of events) {
    if (ev.type === "stdout" || ev.type === "stderr") {
      const d = eventData(ev);
      (ev.type === "stdout" ? out : err).push(d);
      const f = ev.type === "stdout" ? cb.onStdout : cb.onStderr;
      if (f) f(d);
    } else if (ev.type === "exit") {
      end = ev;
    }
  }
  if (!end) throw new AgentjailError(502, "stream_ended", "the output ended without an exit event");
  return new CommandResult(end, out.join(""), err.join(""));
}

/** A background process: follow its output, reattach from an offset, signal it. */
export class CommandHandle {
  constructor(
    readonly sandbox: Sandbox,
    /** Its id in the sandbox ("p1", ...). */
    readonly pid: string,
  ) {}

  private get route(): string {
    return `/v1/sandboxes/${this.sandbox.sandboxId}/processes/${this.pid}`;
  }

  /** Its state: running, output_bytes, kept_from, exit once ended. */
  info(opts: CallOpts = {}): Promise<ProcessInfo> {
    return this.sandbox.client.json("GET", this.route, opts);
  }

  /** Its output events from an offset (gap first when it left the ring, exit at the end). */
  async *output(opts: OutputOpts = {}): AsyncGenerator<OutputEvent> {
    const res = await this.sandbox.client.request("GET", `${this.route}/output`, {
      query: { offset: opts.offset ?? 0, follow: opts.follow ?? false },
      signal: opts.signal,
    });
    try {
      yield* ndjson<OutputEvent>(res);
    } finally {
      res.destroy();
    }
  }

  /** Follow its output (from offset) to its end: a CommandResult. */
  wait(opts: OutputCallbacks & OutputOpts = {}): Promise<CommandResult> {
    return collect(this.output({ ...opts, follow: true }), opts);
  }

  /** Signal its process group (a name or a number; default TERM). */
  signal(sig: Signal = "TERM", opts: CallOpts = {}): Promise<Record<string, unknown>> {
    return this.sandbox.client.json("POST", `${this.route}/signal`, { body: { json: { signal: sig } }, signal: opts.signal });
  }

  /** SIGKILL; false when it had ended already. */
  async kill(opts: CallOpts = {}): Promise<boolean> {
    try {
      await this.signal("KILL", opts);
      return true;
    } catch (e) {
      if (e instanceof AgentjailError && e.status === 409) return false;
      throw e;
    }
  }
}

/** The commands of one sandbox. */
export class Commands {
  constructor(private readonly sb: Sandbox) {}

  /**
   * Run cmd (an argv array, or a string for /bin/sh -c) and wait for its
   * end; onStdout/onStderr get its output as it comes. With background:
   * true, a CommandHandle at once. A non-zero exit is a result, not an
   * error. Aborting opts.signal kills the command.
   */
  run(cmd: string | string[], opts: RunOpts & { background: true }): Promise<CommandHandle>;
  run(cmd: string | string[], opts?: RunOpts & { background?: false }): Promise<CommandResult>;
  run(cmd: string | string[], opts?: RunOpts): Promise<CommandResult | CommandHandle>;
  async run(cmd: string | string[], opts: RunOpts = {}): Promise<CommandResult | CommandHandle> {
    const body: Record<string, unknown> = { cmd };
    if (opts.background) body.background = true;
    if (opts.envs && Object.keys(opts.envs).length) body.env = opts.envs;
    if (opts.cwd) body.cwd = opts.cwd;
    if (opts.timeout !== undefined) body.timeout = opts.timeout;
    if (opts.stdin !== undefined) {
      body.stdin = typeof opts.stdin === "string" ? opts.stdin : Buffer.from(opts.stdin).toString("utf8");
    }
    const route = `/v1/sandboxes/${this.sb.sandboxId}/exec`;
    if (opts.background) {
      const r = await this.sb.client.json<{ process: string }>("POST", route, { body: { json: body }, signal: opts.signal });
      return new CommandHandle(this.sb, r.process);
    }
    const res = await this.sb.client.request("POST", route, { body: { json: body }, signal: opts.signal });
    try {
      return await collect(ndjson<OutputEvent>(res), opts);
    } finally {
      res.destroy();
    }
  }

  /** Background processes, newest first. */
  async list(opts: CallOpts = {}): Promise<ProcessInfo[]> {
    const r = await this.sb.client.json<{ processes: ProcessInfo[] }>(
      "GET",
      `/v1/sandboxes/${this.sb.sandboxId}/processes`,
      opts,
    );
    return r.processes;
  }

  /** A handle to a background process by id (after a restart of the client, say). */
  async connect(pid: string, opts: CallOpts = {}): Promise<CommandHandle> {
    const h = new CommandHandle(this.sb, pid);
    await h.info(opts); // 404 for an unknown one
    return h;
  }

  /** Signal a background process. */
  sendSignal(pid: string, sig: Signal = "TERM", opts: CallOpts = {}): Promise<Record<string, unknown>> {
    return new CommandHandle(this.sb, pid).signal(sig, opts);
  }

  /** SIGKILL a background process; false when it had ended. */
  kill(pid: string, opts: CallOpts = {}): Promise<boolean> {
    return new CommandHandle(this.sb, pid).kill(opts);
  }
}
