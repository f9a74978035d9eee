/**
 * Interactive commands over the WebSocket exec (the Kubernetes channel
 * convention, docs/api.md): a Session feeds stdin and gets output as it
 * comes; with a pty (`sb.pty.create`) it is a terminal that can be resized.
 */
import WebSocket from "ws";
import { CallOpts, queryString } from "./client.js";
import { makeError } from "./errors.js";
import type { OutputEvent } from "./commands.js";
import type { Sandbox } from "./sandbox.js";

/** The final status of a session (a Kubernetes Status, our exit event under "agentjail"). */
export interface SessionStatus {
  status: "Success" | "Failure";
  reason?: string;
  details?: { causes?: { reason: string; message: string }[] };
  agentjail?: OutputEvent;
  [key: string]: unknown;
}

export interface SessionOpts extends CallOpts {
  /** Keep the command's stdin open to send() (default true). */
  stdin?: boolean;
  /** A pseudo-terminal (output then comes as stdout only). */
  tty?: boolean;
  cwd?: string;
  envs?: Record<string, string>;
  /** Seconds. */
  timeout?: number;
  /** Output bytes as they come (a tty's output is all stdout). */
  onStdout?: (data: Uint8Array) => void;
  onStderr?: (data: Uint8Array) => void;
}

/** What the end of a session gives. */
export interface SessionEnd {
  /** The command's exit code (from the status), null when the connection ended without one. */
  exitCode: number | null;
  status: SessionStatus | null;
}

/** An interactive command over the WebSocket exec. */
export class Session {
  private readonly ws: WebSocket;
  private readonly opened: Promise<void>;
  private readonly ended: Promise<SessionEnd>;
  private statusMsg: SessionStatus | null = null;

  constructor(sb: Sandbox, cmd: string | string[], opts: SessionOpts = {}) {
    opts.signal?.throwIfAborted();
    const argv = Array.isArray(cmd) ? cmd : ["/bin/sh", "-c", cmd];
    const env = Object.entries(opts.envs ?? {}).map(([k, v]) => `${k}=${v}`);
    const qs = queryString({
      command: argv,
      stdin: opts.stdin ?? true,
      tty: opts.tty ? true : undefined,
      cwd: opts.cwd,
      timeout: opts.timeout,
      env,
    });
    const addr = sb.client.wsAddress(`/v1/sandboxes/${sb.sandboxId}/exec?${qs}`);
    this.ws = new WebSocket(addr, ["v4.channel.k8s.io"], { headers: sb.client.authHeaders(), perMessageDeflate: false });
    this.ws.binaryType = "nodebuffer";
    const onAbort = () => this.ws.terminate();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    let failure: Error | undefined; // the connection's error, if any: wait() rejects with it
    this.ws.on("error", (e: Error) => {
      failure ??= e;
    });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once("open", () => resolve());
      this.ws.once("error", reject);
      this.ws.once("unexpected-response", (_req, res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("end", () => {
          const raw = Buffer.concat(parts).toString("utf8");
          let code = "websocket_refused";
          let msg = raw || `HTTP ${res.statusCode}`;
          try {
            const e = JSON.parse(raw).error;
            code = e.code;
            msg = e.message;
          } catch {
            /* not JSON */
          }
          reject(makeError(res.statusCode ?? 0, code, msg));
        });
      });
    });
    this.opened.catch(() => undefined); // seen through wait()
    this.ws.on("message", (data: Buffer, isBinary: boolean) => {
      const buf = isBinary ? data : Buffer.from(data);
      if (!buf.length) return;
      const ch = buf[0];
      const payload = buf.subarray(1);
      if (ch === 1) opts.onStdout?.(payload);
      else if (ch === 2) opts.onStderr?.(payload);
      else if (ch === 3) this.statusMsg = JSON.parse(payload.toString("utf8")) as SessionStatus;
    });
    this.ended = new Promise((resolve, reject) => {
      this.ws.once("close", (code: number, reason: Buffer) => {
        opts.signal?.removeEventListener("abort", onAbort);
        if (opts.signal?.aborted) {
          reject(opts.signal.reason);
          return;
        }
        const st = this.statusMsg;
        if (!st && code === 1008) {
          const why = reason.toString("utf8");
          reject(/^no sandbox/.test(why) ? makeError(404, "not_found", why) : makeError(400, "bad_request", why));
          return;
        }
        if (!st && failure) {
          reject(failure);
          return;
        }
        const exit = st?.agentjail?.exit_code;
        resolve({ exitCode: typeof exit === "number" ? exit : null, status: st });
      });
    });
    this.ended.catch(() => undefined);
  }

  private async sendFrame(channel: number, data: Uint8Array): Promise<void> {
    await this.opened;
    const frame = Buffer.concat([Buffer.from([channel]), Buffer.from(data)]);
    await new Promise<void>((resolve, reject) => this.ws.send(frame, { binary: true }, (e) => (e ? reject(e) : resolve())));
  }

  /** Resolves once the connection is open (rejects when refused). */
  async ready(): Promise<void> {
    await this.opened;
  }

  /** Send to the command's stdin (to the terminal, with a pty). */
  sendInput(data: string | Uint8Array): Promise<void> {
    const b = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    if (!b.length) return Promise.resolve(); // an empty frame would be EOF: closeStdin()
    return this.sendFrame(0, b);
  }

  /** Close the command's stdin (EOF). */
  closeStdin(): Promise<void> {
    return this.sendFrame(0, new Uint8Array(0));
  }

  /** Resize the terminal (tty sessions). */
  resize(size: { cols: number; rows: number }): Promise<void> {
    return this.sendFrame(4, Buffer.from(JSON.stringify({ Width: size.cols, Height: size.rows })));
  }

  /** Wait for the end: the exit code and the final status. */
  async wait(): Promise<SessionEnd> {
    await this.opened;
    return this.ended;
  }

  /** Drop the connection: the service kills the command. */
  kill(): void {
    this.ws.terminate();
  }
}

export interface PtyOpts extends CallOpts {
  /** The command (default ["/bin/sh", "-i"]). */
  cmd?: string | string[];
  cols?: number;
  rows?: number;
  cwd?: string;
  envs?: Record<string, string>;
  /** Seconds. */
  timeout?: number;
  /** The terminal's output as it comes. */
  onData: (data: Uint8Array) => void;
}

/** `sb.pty`: terminal sessions. */
export class Pty {
  constructor(private readonly sb: Sandbox) {}

  /** Start a command on a pseudo-terminal (80x24 unless cols/rows say otherwise). */
  async create(opts: PtyOpts): Promise<Session> {
    const s = new Session(this.sb, opts.cmd ?? ["/bin/sh", "-i"], {
      tty: true,
      stdin: true,
      cwd: opts.cwd,
      envs: opts.envs,
      timeout: opts.timeout,
      signal: opts.signal,
      onStdout: opts.onData,
    });
    await s.ready();
    if (opts.cols !== undefined || opts.rows !== undefined) {
      await s.resize({ cols: opts.cols ?? 80, rows: opts.rows ?? 24 });
    }
    return s;
  }
}

