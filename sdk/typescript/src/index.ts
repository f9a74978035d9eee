/**
 * agentjail: the TypeScript/JavaScript client of `agentjail serve`.
 *
 *     import { Sandbox } from "agentjail";
 *     const sb = await Sandbox.create({ memory: "512M", timeout: 600 });
 *     const r = await sb.commands.run("echo hi", { onStdout: (s) => process.stdout.write(s) });
 *     await sb.files.write("/tmp/a.txt", "hello");
 *     await sb.kill();
 *
 * The service is found at $AGENTJAIL_SOCKET (default
 * /run/agentjail/agentjail.sock) or $AGENTJAIL_URL with $AGENTJAIL_TOKEN.
 */
export { Client, DEFAULT_SOCKET } from "./client.js";
export type { ConnectionOpts, CallOpts } from "./client.js";
export { Sandbox } from "./sandbox.js";
export type { SandboxInfo, SandboxOpts, SandboxApiOpts, ImageInfo, SeccompProfile } from "./sandbox.js";
export { Commands, CommandHandle, CommandResult } from "./commands.js";
export type { RunOpts, OutputEvent, OutputOpts, OutputCallbacks, ProcessInfo, Signal } from "./commands.js";
export { Execution, Result } from "./code.js";
export type { CodeContext, CodeEvent, ExecutionError, RunCodeOpts } from "./code.js";
export { Files } from "./files.js";
export type { SandboxPath, WriteData, WriteOpts, WriteInfo, ReadOpts, EntryInfo, ListOpts } from "./files.js";
export { Pty, Session } from "./pty.js";
export type { PtyOpts, SessionOpts, SessionEnd, SessionStatus } from "./pty.js";
export {
  AgentjailError,
  BadRequestError,
  AuthenticationError,
  ForbiddenError,
  NotFoundError,
  ConflictError,
  RateLimitError,
  NotSupportedError,
  InsufficientStorageError,
  ServerError,
  errorClassFor,
} from "./errors.js";
