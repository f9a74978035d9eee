/**
 * The connection to `agentjail serve`: a unix socket (node:http with
 * `socketPath`), or a URL with a bearer token. Idle connections are kept for
 * the next request (an http.Agent with keepAlive).
 */
import * as http from "node:http";
import * as https from "node:https";
import { PassThrough, Readable } from "node:stream";
import { AgentjailError, makeError } from "./errors.js";

/** Where the service is; each key falls back to its environment variable. */
export interface ConnectionOpts {
  /** A unix socket ($AGENTJAIL_SOCKET, default /run/agentjail/agentjail.sock). */
  socketPath?: string;
  /** http(s)://host:port of `serve --listen` ($AGENTJAIL_URL); wins over the socket. */
  url?: string;
  /** The bearer token for the URL ($AGENTJAIL_TOKEN). */
  token?: string;
}

/** Options every call takes. */
export interface CallOpts {
  /** Aborts the call: its request is dropped (an exec's command is then killed). */
  signal?: AbortSignal;
}

export const DEFAULT_SOCKET = "/run/agentjail/agentjail.sock";

export type QueryValue = string | number | boolean | undefined | null;
export type Query = Record<string, QueryValue | QueryValue[]>;

/** A request body: JSON (any object), bytes, or a stream with its length. */
export type Body =
  | { json: unknown }
  | { bytes: Uint8Array }
  | { stream: Readable; length: number };

export interface RequestOpts extends CallOpts {
  query?: Query;
  body?: Body;
  headers?: Record<string, string>;
}

/** The AbortSignal of each open response: its body's readers throw its reason. */
const signals = new WeakMap<Readable, AbortSignal>();

/** e, or the abort's reason when res's signal was aborted (a DOMException AbortError/TimeoutError). */
function why(res: Readable | undefined, signal: AbortSignal | undefined, e: unknown): unknown {
  const s = signal ?? (res ? signals.get(res) : undefined);
  return s?.aborted ? s.reason : e;
}

const IDEMPOTENT = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);

/** The query string of q (without "?"); undefined and null values are left out. */
export function queryString(q: Query | undefined): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q ?? {})) {
    for (const x of Array.isArray(v) ? v : [v]) {
      if (x !== undefined && x !== null) p.append(k, String(x));
    }
  }
  return p.toString();
}

/** A connection to the service. */
export class Client {
  readonly url: string | undefined;
  readonly socketPath: string;
  readonly token: string | undefined;
  private readonly agent: http.Agent;
  private readonly base: URL | undefined;

  constructor(opts: ConnectionOpts = {}) {
    const env = process.env;
    this.url = opts.url ?? (env.AGENTJAIL_URL || undefined);
    this.socketPath = opts.socketPath ?? (env.AGENTJAIL_SOCKET || DEFAULT_SOCKET);
    this.token = opts.token ?? (env.AGENTJAIL_TOKEN || undefined);
    if (this.url) {
      this.base = new URL(this.url);
      if (this.base.protocol !== "http:" && this.base.protocol !== "https:") {
        throw new TypeError(`agentjail: the URL must be http:// or https://, not ${this.url}`);
      }
    }
    const tls = this.base?.protocol === "https:";
    const agentOpts = { keepAlive: true, maxFreeSockets: 8 };
    this.agent = tls ? new https.Agent(agentOpts) : new http.Agent(agentOpts);
  }

  /** Close the idle kept connections (later requests open new ones). */
  close(): void {
    this.agent.destroy();
  }

  /** Headers every request carries (the token). */
  authHeaders(): Record<string, string> {
    return this.token ? { Authorization: `Bearer ${this.token}` } : {};
  }

  /** The ws:// (or ws+unix:) address of path, for the WebSocket exec. */
  wsAddress(path: string): string {
    if (this.base) {
      const u = new URL(path, this.base);
      u.protocol = this.base.protocol === "https:" ? "wss:" : "ws:";
      return u.toString();
    }
    return `ws+unix:${this.socketPath}:${path}`;
  }

  /**
   * Send a request; resolves to the open response (status < 400), rejects
   * with an {@link AgentjailError} for an error answer.
   */
  async request(method: string, path: string, opts: RequestOpts = {}): Promise<http.IncomingMessage> {
    opts.signal?.throwIfAborted();
    const qs = queryString(opts.query);
    const full = qs ? `${path}?${qs}` : path;
    const headers: Record<string, string> = {
      Accept: "application/json",
      ...this.authHeaders(),
      ...(opts.headers ?? {}),
    };
    let payload: Uint8Array | undefined;
    const b = opts.body;
    if (b && "json" in b) {
      payload = Buffer.from(JSON.stringify(b.json));
      headers["Content-Type"] = "application/json";
    } else if (b && "bytes" in b) {
      payload = b.bytes;
    }
    if (b && "stream" in b) {
      headers["Content-Length"] = String(b.length);
    } else {
      // never chunked: the service wants a Content-Length (411 otherwise)
      headers["Content-Length"] = String(payload?.byteLength ?? 0);
    }
    const again = IDEMPOTENT.has(method) && !(b && "stream" in b);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, full, headers, payload, b && "stream" in b ? b.stream : undefined, opts.signal);
      } catch (e) {
        // a kept connection the service closed meanwhile: once more on a new one
        const err = e as NodeJS.ErrnoException & { reused?: boolean };
        if (attempt || !again || !err.reused || err.code !== "ECONNRESET") throw e;
      }
    }
  }

  private once(
    method: string,
    path: string,
    headers: Record<string, string>,
    payload: Uint8Array | undefined,
    stream: Readable | undefined,
    signal: AbortSignal | undefined,
  ): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      const o: http.RequestOptions = { method, path, headers, agent: this.agent };
      if (signal) o.signal = signal;
      let req: http.ClientRequest;
      if (this.base) {
        o.hostname = this.base.hostname.replace(/^\[|\]$/g, "");
        o.port = this.base.port || (this.base.protocol === "https:" ? 443 : 80);
        req = (this.base.protocol === "https:" ? https : http).request(o);
      } else {
        o.socketPath = this.socketPath;
        o.headers = { Host: "agentjail", ...headers };
        req = http.request(o);
      }
      req.on("error", (e: Error & { reused?: boolean }) => {
        e.reused = req.reusedSocket;
        reject(why(undefined, signal, e));
      });
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        if (status < 400) {
          if (signal) signals.set(res, signal);
          resolve(res);
          return;
        }
        readAll(res).then(
          (raw) => reject(parseError(status, raw)),
          (e) => reject(why(undefined, signal, e)),
        );
      });
      if (stream) {
        const counted = Readable.from(exactly(stream, Number(headers["Content-Length"])), { objectMode: false });
        counted.on("error", (e) => req.destroy(e));
        counted.pipe(req);
      } else {
        req.end(payload);
      }
    });
  }

  /** A request whose JSON answer is returned. */
  async json<T = any>(method: string, path: string, opts: RequestOpts = {}): Promise<T> {
    const res = await this.request(method, path, opts);
    const raw = await readAll(res);
    return (raw.length ? JSON.parse(raw.toString("utf8")) : null) as T;
  }

  /** The service answers `/healthz` with status ok. */
  async healthy(opts: CallOpts = {}): Promise<boolean> {
    const r = await this.json<{ status?: string }>("GET", "/healthz", opts);
    return r?.status === "ok";
  }
}

/**
 * The chunks of stream, checked to add up to length bytes: the service
 * would wait for missing ones (a stream shorter than its size) and take
 * extra ones as the next request.
 */
async function* exactly(stream: Readable, length: number): AsyncGenerator<Buffer> {
  let n = 0;
  for await (const chunk of stream) {
    const u = chunk as Uint8Array | string;
    const b = typeof u === "string" ? Buffer.from(u) : Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
    n += b.length;
    if (n > length) throw new RangeError(`agentjail: the stream gave more than its size (${length} bytes)`);
    yield b;
  }
  if (n < length) throw new RangeError(`agentjail: the stream ended after ${n} bytes, short of its size (${length})`);
}

/**
 * res for a reader of its own: when its call's signal aborts it, the
 * reader's error is the signal's reason (as for every other call).
 */
export function abortableBody(res: Readable): Readable {
  const signal = signals.get(res);
  if (!signal) return res;
  const out = new PassThrough();
  res.on("error", (e) => out.destroy(why(res, undefined, e) as Error));
  out.on("close", () => {
    if (!res.readableEnded) res.destroy();
  });
  res.pipe(out);
  return out;
}

/** The whole body of a response. */
export async function readAll(res: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  try {
    for await (const chunk of res) parts.push(chunk as Buffer);
  } catch (e) {
    throw why(res, undefined, e);
  }
  return Buffer.concat(parts);
}

/** The API's error answer as an AgentjailError. */
export function parseError(status: number, raw: Buffer): AgentjailError {
  try {
    const e = JSON.parse(raw.toString("utf8")).error;
    if (e && typeof e === "object") {
      return makeError(status, String(e.code ?? "http_error"), String(e.message ?? ""), e.policy_key ?? undefined);
    }
  } catch {
    /* not JSON: below */
  }
  return makeError(status, "http_error", raw.toString("utf8"));
}

/** The lines of an NDJSON body, parsed, as they come. */
export async function* ndjson<T = any>(res: Readable): AsyncGenerator<T> {
  let pend: Buffer = Buffer.alloc(0);
  const it = res[Symbol.asyncIterator]();
  for (;;) {
    let next: IteratorResult<Buffer>;
    try {
      next = await it.next();
    } catch (e) {
      throw why(res, undefined, e);
    }
    if (next.done) break;
    pend = pend.length ? Buffer.concat([pend, next.value]) : next.value;
    let i: number;
    while ((i = pend.indexOf(10)) >= 0) {
      const line = pend.subarray(0, i);
      pend = pend.subarray(i + 1);
      if (line.length) yield JSON.parse(line.toString("utf8")) as T;
    }
  }
  if (pend.length) yield JSON.parse(pend.toString("utf8")) as T;
}

const defaults = new Map<string, Client>();

/**
 * The Client of calls made without one: one per service address (the
 * environment's), shared, so that its kept connections serve them all.
 */
export function defaultClient(opts: ConnectionOpts = {}): Client {
  const c = new Client(opts);
  const key = JSON.stringify([c.url, c.socketPath, c.token]);
  const had = defaults.get(key);
  if (had) {
    c.close();
    return had;
  }
  defaults.set(key, c);
  return c;
}

/** opts.client, else the shared client of opts' address. */
export function clientOf(opts: ConnectionOpts & { client?: Client }): Client {
  return opts.client ?? defaultClient(opts);
}
