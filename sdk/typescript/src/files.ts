/** `sb.files`: files of one sandbox, streamed both ways. */
import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { Body, CallOpts, Query, abortableBody, readAll } from "./client.js";
import type { Sandbox } from "./sandbox.js";

/**
 * A path inside the sandbox: a string, or its bytes (a Uint8Array) for a
 * name that is not UTF-8 (sent as `path_b64`).
 */
export type SandboxPath = string | Uint8Array;

/** What `files.write` takes. */
export type WriteData =
  | string
  | Uint8Array
  | ArrayBuffer
  | Blob
  | Readable
  | WebReadableStream<Uint8Array>
  | globalThis.ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array>;

export interface WriteOpts extends CallOpts {
  /** The file's mode (default 0o644). */
  mode?: number;
  /**
   * The number of bytes a stream gives: the API needs it before the body.
   * Needed for a stream, except an fs.ReadStream of a whole file (its size is read).
   */
  size?: number;
}

/** The answer of an upload. */
export interface WriteInfo {
  path: string | null;
  size: number;
  [key: string]: unknown;
}

export interface ReadOpts extends CallOpts {
  /**
   * "text" (default, UTF-8), "bytes" (a Uint8Array), "stream" (a web
   * ReadableStream) or "readable" (a node Readable): the two streams are
   * not held in memory.
   */
  format?: "text" | "bytes" | "stream" | "readable";
}

/** An entry of a directory listing. */
export interface EntryInfo {
  /** The name; null when it is not UTF-8 (then see nameBytes). */
  name: string | null;
  /** The name's bytes, whatever they are. */
  nameBytes: Uint8Array;
  /** "file", "dir", "symlink", ... */
  type: string;
  size: number;
  mode: number;
  mtime: number;
  /** The entry's absolute path (a string when both parts are UTF-8). */
  path: SandboxPath;
}

export interface ListOpts extends CallOpts {
  /** Entries per page (every page is fetched). */
  limit?: number;
}

function pathQuery(path: SandboxPath, more: Query = {}): Query {
  const q: Query =
    typeof path === "string" ? { path } : { path_b64: Buffer.from(path).toString("base64url") };
  return { ...q, ...more };
}

function joinPath(dir: SandboxPath, name: Uint8Array, text: string | null): SandboxPath {
  if (typeof dir === "string" && text !== null) return dir.endsWith("/") ? dir + text : `${dir}/${text}`;
  const d = typeof dir === "string" ? Buffer.from(dir) : Buffer.from(dir);
  const sep = d.length && d[d.length - 1] === 0x2f ? Buffer.alloc(0) : Buffer.from("/");
  return new Uint8Array(Buffer.concat([d, sep, Buffer.from(name)]));
}

function isReadableStream(x: unknown): x is globalThis.ReadableStream<Uint8Array> {
  return typeof x === "object" && x !== null && typeof (x as { getReader?: unknown }).getReader === "function";
}

/** data as a request body. */
async function bodyOf(data: WriteData, size: number | undefined): Promise<Body> {
  if (typeof data === "string") return { bytes: Buffer.from(data, "utf8") };
  if (data instanceof Uint8Array) return { bytes: data };
  if (data instanceof ArrayBuffer) return { bytes: new Uint8Array(data) };
  if (typeof Blob !== "undefined" && data instanceof Blob) {
    return { stream: Readable.fromWeb(data.stream() as WebReadableStream<Uint8Array>), length: data.size };
  }
  let stream: Readable;
  if (data instanceof Readable) stream = data;
  else if (isReadableStream(data)) stream = Readable.fromWeb(data as WebReadableStream<Uint8Array>);
  else stream = Readable.from(data as AsyncIterable<Uint8Array>, { objectMode: false });
  if (size === undefined) {
    // an fs.ReadStream of a whole file: its size
    const f = data as { path?: unknown; start?: unknown; end?: unknown };
    const whole = f.start === undefined && (f.end === undefined || f.end === Infinity);
    if ((typeof f.path === "string" || Buffer.isBuffer(f.path)) && whole) {
      size = (await stat(f.path as string)).size;
    }
  }
  if (size === undefined) {
    throw new TypeError("agentjail: files.write of a stream needs {size} (the API needs its length first)");
  }
  return { stream, length: size };
}

/** Files of one sandbox; paths resolve inside the sandbox only (docs/api.md, "Files"). */
export class Files {
  constructor(private readonly sb: Sandbox) {}

  private get route(): string {
    return `/v1/sandboxes/${this.sb.sandboxId}/files`;
  }

  /** Write data to path (created or replaced); a stream is sent as it is read. */
  async write(path: SandboxPath, data: WriteData, opts: WriteOpts = {}): Promise<WriteInfo> {
    const body = await bodyOf(data, opts.size);
    const q = pathQuery(path, { mode: opts.mode === undefined ? undefined : opts.mode.toString(8) });
    const res = await this.sb.client.request("PUT", this.route, {
      query: q,
      body,
      headers: { "Content-Type": "application/octet-stream" },
      signal: opts.signal,
    });
    return JSON.parse((await readAll(res)).toString("utf8")) as WriteInfo;
  }

  /** The file's contents: text (default), bytes, or a stream. */
  read(path: SandboxPath, opts?: ReadOpts & { format?: "text" }): Promise<string>;
  read(path: SandboxPath, opts: ReadOpts & { format: "bytes" }): Promise<Uint8Array>;
  read(path: SandboxPath, opts: ReadOpts & { format: "stream" }): Promise<globalThis.ReadableStream<Uint8Array>>;
  read(path: SandboxPath, opts: ReadOpts & { format: "readable" }): Promise<Readable>;
  async read(
    path: SandboxPath,
    opts: ReadOpts = {},
  ): Promise<string | Uint8Array | Readable | globalThis.ReadableStream<Uint8Array>> {
    const res = await this.sb.client.request("GET", this.route, { query: pathQuery(path), signal: opts.signal });
    switch (opts.format ?? "text") {
      case "readable":
        return abortableBody(res);
      case "stream":
        return Readable.toWeb(abortableBody(res)) as unknown as globalThis.ReadableStream<Uint8Array>;
      case "bytes":
        return new Uint8Array(await readAll(res));
      default:
        return (await readAll(res)).toString("utf8");
    }
  }

  /** The entries of a directory (every page of a large one). */
  async list(path: SandboxPath, opts: ListOpts = {}): Promise<EntryInfo[]> {
    const out: EntryInfo[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await this.sb.client.json<{ entries: any[]; next_cursor?: string | null }>("GET", this.route, {
        query: pathQuery(path, { limit: opts.limit, cursor }),
        signal: opts.signal,
      });
      for (const e of page.entries) {
        const nameBytes = new Uint8Array(e.name_b64 ? Buffer.from(e.name_b64, "base64") : Buffer.from(e.name, "utf8"));
        out.push({
          name: e.name ?? null,
          nameBytes,
          type: e.type,
          size: e.size,
          mode: e.mode,
          mtime: e.mtime,
          path: joinPath(path, nameBytes, e.name ?? null),
        });
      }
      cursor = page.next_cursor ?? undefined;
      if (!cursor) return out;
    }
  }

  /** Whether path exists (a file or a directory). */
  async exists(path: SandboxPath, opts: CallOpts = {}): Promise<boolean> {
    try {
      const res = await this.sb.client.request("GET", this.route, { query: pathQuery(path, { limit: 1 }), signal: opts.signal });
      res.destroy();
      return true;
    } catch (e) {
      if ((e as { status?: number }).status === 404) return false;
      throw e;
    }
  }

  /** Make a directory (parents: like mkdir -p). */
  async makeDir(path: SandboxPath, opts: CallOpts & { parents?: boolean } = {}): Promise<Record<string, unknown>> {
    return this.sb.client.json("POST", `/v1/sandboxes/${this.sb.sandboxId}/mkdir`, {
      query: pathQuery(path, { parents: opts.parents ?? false }),
      signal: opts.signal,
    });
  }

  /** Remove a file or an empty directory (recursive: a whole tree). */
  async remove(path: SandboxPath, opts: CallOpts & { recursive?: boolean } = {}): Promise<Record<string, unknown>> {
    return this.sb.client.json("DELETE", this.route, {
      query: pathQuery(path, { recursive: opts.recursive ?? false }),
      signal: opts.signal,
    });
  }
}
