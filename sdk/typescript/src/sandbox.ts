/** Sandbox: one sandbox of the service (E2B's JS idioms). */
import { CallOpts, Client, ConnectionOpts, clientOf } from "./client.js";
import {
  CodeContext,
  Execution,
  RunCodeOpts,
  codeContextOp,
  createCodeContext,
  listCodeContexts,
  runCode,
} from "./code.js";
import { Commands } from "./commands.js";
import { AgentjailError } from "./errors.js";
import { Files } from "./files.js";
import { Pty, Session, SessionOpts } from "./pty.js";

/** A sandbox as the service describes it (`GET /v1/sandboxes/{id}`). */
export interface SandboxInfo {
  id: string;
  state: "running" | "paused" | string;
  created_at?: string;
  expires_at?: string | null;
  timeout_remaining?: number | null;
  pid?: number;
  limits?: Record<string, number>;
  workspace?: string | null;
  net?: string;
  execs?: number;
  isolation?: string;
  [key: string]: unknown;
}

/** An image made by a snapshot. */
export interface ImageInfo {
  name: string;
  digest: string;
  source?: string;
  created?: string;
  size_bytes?: number;
  files?: number;
  [key: string]: unknown;
}

/** A seccomp profile of `--seccomp-profile`'s format. */
export interface SeccompProfile {
  default_action: "allow" | "errno" | "kill" | "trap" | "log";
  default_errno?: number;
  syscalls: Array<{
    names: string[];
    action: "allow" | "errno" | "kill" | "trap" | "log";
    errno?: number;
    args?: Array<{ index: number; op: "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "masked_eq"; value: number; mask?: number }>;
  }>;
}

/** Where the service is (or a Client), and an AbortSignal. */
export interface SandboxApiOpts extends ConnectionOpts, CallOpts {
  /** A Client to use (else a shared one for the address). */
  client?: Client;
}

/**
 * A create's options: the long options of `agentjail run` as keys
 * (camelCase or kebab-case: `killAfter` is `kill-after`), values as the
 * API takes them (docs/api.md, "POST /v1/sandboxes").
 */
export interface SandboxOpts extends SandboxApiOpts {
  /** The sandbox's time to live in seconds (default 3600, 0: none). */
  timeout?: number;
  /** An image of the store (`agentjail image ls`); none: the host-root sandbox. */
  image?: string;
  /** Environment variables of every command. */
  envs?: Record<string, string>;
  /** Secrets: the sandbox sees placeholders; their values are redacted from output. */
  secrets?: Record<string, string>;
  memory?: string | number;
  pids?: number;
  cpus?: number;
  disk?: string | number;
  /** An absolute host directory bound at /workspace (operator policy permitting). */
  workspace?: string;
  ro?: string[];
  rw?: string[];
  net?: "none" | "open" | string;
  allow?: string[];
  /** The isolation level: "process" (default), "gvisor" (docs/levels.md). */
  isolation?: string;
  /**
   * A seccomp profile, the profile itself (docs/security.md, "A profile of
   * your own"); sent as `seccomp-profile`. Refused at level 2.
   */
  seccompProfile?: SeccompProfile;
  /** Any other option of the API. */
  [option: string]: unknown;
}

const API_KEYS = new Set(["client", "socketPath", "url", "token", "signal"]);

function kebab(k: string): string {
  return k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** The create body of opts. */
function createBody(opts: SandboxOpts): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(opts)) {
    if (API_KEYS.has(k) || v === undefined) continue;
    if (k === "envs") body.env = v;
    else if (k === "secrets") body.secret = v;
    else body[kebab(k)] = v;
  }
  return body;
}

/** A sandbox of the service. */
export class Sandbox {
  /** The sandbox's id ("sb-..."). */
  readonly sandboxId: string;
  /** Its files. */
  readonly files: Files;
  /** Its commands and background processes. */
  readonly commands: Commands;
  /** Terminal sessions. */
  readonly pty: Pty;
  /** What the service said of it last. */
  info: SandboxInfo;

  constructor(
    readonly client: Client,
    info: SandboxInfo,
  ) {
    this.info = info;
    this.sandboxId = info.id;
    this.files = new Files(this);
    this.commands = new Commands(this);
    this.pty = new Pty(this);
  }

  private get route(): string {
    return `/v1/sandboxes/${this.sandboxId}`;
  }

  /**
   * Run Python in a code context (a Jupyter kernel kept in the sandbox:
   * variables persist between calls): an Execution with results (.png,
   * .html, .text), logs and error. opts.onStdout/onResult get each piece
   * as it comes; opts.timeout (seconds) interrupts the kernel.
   */
  runCode(code: string, opts: RunCodeOpts = {}): Promise<Execution> {
    return runCode(this, code, opts);
  }

  /** A new code context (its kernel started). */
  createCodeContext(opts: CallOpts & { id?: string; cwd?: string; language?: "python" } = {}): Promise<CodeContext> {
    return createCodeContext(this, opts);
  }

  /** The sandbox's code contexts. */
  listCodeContexts(opts: CallOpts = {}): Promise<CodeContext[]> {
    return listCodeContexts(this, opts);
  }

  /** Start a context's kernel again (its variables are gone). */
  restartCodeContext(ctx: string | CodeContext, opts: CallOpts = {}): Promise<Record<string, unknown>> {
    return codeContextOp(this, ctx, "restart", opts);
  }

  /** Interrupt what a context runs. */
  interruptCodeContext(ctx: string | CodeContext, opts: CallOpts = {}): Promise<Record<string, unknown>> {
    return codeContextOp(this, ctx, "interrupt", opts);
  }

  /** End a context's kernel. */
  removeCodeContext(ctx: string | CodeContext, opts: CallOpts = {}): Promise<Record<string, unknown>> {
    return codeContextOp(this, ctx, "delete", opts);
  }

  /** Create a sandbox. */
  static async create(opts: SandboxOpts = {}): Promise<Sandbox> {
    const client = clientOf(opts);
    const info = await client.json<SandboxInfo>("POST", "/v1/sandboxes", {
      body: { json: createBody(opts) },
      signal: opts.signal,
    });
    return new Sandbox(client, info);
  }

  /** A Sandbox object for an existing sandbox (404: NotFoundError). */
  static async connect(sandboxId: string, opts: SandboxApiOpts = {}): Promise<Sandbox> {
    const client = clientOf(opts);
    const info = await client.json<SandboxInfo>("GET", `/v1/sandboxes/${encodeURIComponent(sandboxId)}`, opts);
    return new Sandbox(client, info);
  }

  /** The live sandboxes (of the caller's tenant). */
  static async list(opts: SandboxApiOpts = {}): Promise<SandboxInfo[]> {
    const r = await clientOf(opts).json<{ sandboxes: SandboxInfo[] }>("GET", "/v1/sandboxes", opts);
    return r.sandboxes;
  }

  /** Destroy a sandbox by id; false when there was none. */
  static async kill(sandboxId: string, opts: SandboxApiOpts = {}): Promise<boolean> {
    try {
      await clientOf(opts).json("DELETE", `/v1/sandboxes/${encodeURIComponent(sandboxId)}`, opts);
      return true;
    } catch (e) {
      if (e instanceof AgentjailError && e.status === 404) return false;
      throw e;
    }
  }

  /** Fetch its state again. */
  async getInfo(opts: CallOpts = {}): Promise<SandboxInfo> {
    this.info = await this.client.json<SandboxInfo>("GET", this.route, opts);
    return this.info;
  }

  /** It still exists and is not paused. */
  async isRunning(opts: CallOpts = {}): Promise<boolean> {
    try {
      return (await this.getInfo(opts)).state === "running";
    } catch (e) {
      if (e instanceof AgentjailError && e.status === 404) return false;
      throw e;
    }
  }

  /** Live `seconds` more from now (0: no time limit). Seconds, like the API. */
  async setTimeout(seconds: number, opts: CallOpts = {}): Promise<SandboxInfo> {
    this.info = await this.client.json<SandboxInfo>("PATCH", this.route, {
      body: { json: { timeout: seconds } },
      signal: opts.signal,
    });
    return this.info;
  }

  /** Freeze every process (memory kept, TTL stopped); exec and files answer 409 until resume(). */
  async pause(opts: CallOpts = {}): Promise<SandboxInfo> {
    this.info = await this.client.json<SandboxInfo>("POST", `${this.route}/pause`, { body: { json: {} }, signal: opts.signal });
    return this.info;
  }

  /** Let a paused sandbox run again. */
  async resume(opts: CallOpts = {}): Promise<SandboxInfo> {
    this.info = await this.client.json<SandboxInfo>("POST", `${this.route}/resume`, { body: { json: {} }, signal: opts.signal });
    return this.info;
  }

  /** Store its root filesystem as a new image `name` (a sandbox made from an image). */
  snapshot(name: string, opts: CallOpts = {}): Promise<ImageInfo> {
    return this.client.json<ImageInfo>("POST", `${this.route}/snapshot`, { body: { json: { name } }, signal: opts.signal });
  }

  /** `count` new sandboxes from a copy of its files (timeout: their TTL, seconds). */
  async fork(count = 1, opts: CallOpts & { timeout?: number } = {}): Promise<Sandbox[]> {
    const body: Record<string, unknown> = { count };
    if (opts.timeout !== undefined) body.timeout = opts.timeout;
    const r = await this.client.json<{ sandboxes: SandboxInfo[] }>("POST", `${this.route}/fork`, {
      body: { json: body },
      signal: opts.signal,
    });
    return r.sandboxes.map((info) => new Sandbox(this.client, info));
  }

  /** An interactive command over the WebSocket (stdin, output as it comes). */
  async attach(cmd: string | string[], opts: SessionOpts = {}): Promise<Session> {
    const s = new Session(this, cmd, opts);
    await s.ready();
    return s;
  }

  /** Destroy it and everything in it; false when it was gone already (idempotent). */
  async kill(opts: CallOpts = {}): Promise<boolean> {
    try {
      await this.client.json("DELETE", this.route, opts);
      return true;
    } catch (e) {
      if (e instanceof AgentjailError && e.status === 404) return false;
      throw e;
    }
  }
}
