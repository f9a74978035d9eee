/**
 * Errors of the service: every HTTP error answer of the API
 * (`{"error": {"code", "message"}}`) becomes an {@link AgentjailError} of
 * the class of its status, carrying the API's `code` and the HTTP `status`.
 */

/** An error answer of the service (or a stream that ended too early). */
export class AgentjailError extends Error {
  /** The HTTP status (0 when there was no HTTP answer, e.g. a WebSocket refusal). */
  readonly status: number;
  /** The API's error code: `not_found`, `bad_request`, `sandbox_paused`... (docs/api.md). */
  readonly code: string;
  /** For a 403 of the operator policy or a tenant's caps: the policy key to change. */
  readonly policyKey: string | undefined;
  /** The service's message as it sent it (without status and code). */
  readonly apiMessage: string;

  constructor(status: number, code: string, message: string, policyKey?: string) {
    super(`${message} (HTTP ${status}, ${code})`);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.policyKey = policyKey;
    this.apiMessage = message;
  }
}

/** 400: malformed JSON, wrong types, unknown fields, bad options, bad paths. */
export class BadRequestError extends AgentjailError {}
/** 401: no token or a wrong one (TCP). */
export class AuthenticationError extends AgentjailError {}
/** 403: refused by the operator policy (see `policyKey`), a read-only or kernel path. */
export class ForbiddenError extends AgentjailError {}
/** 404: no such sandbox, process, file or route. */
export class NotFoundError extends AgentjailError {}
/** 409: a state conflict: paused, not running, exists, not empty, limits unenforceable. */
export class ConflictError extends AgentjailError {}
/** 429: too many sandboxes, processes or streams. */
export class RateLimitError extends AgentjailError {}
/** 501: what the sandbox's isolation level lacks. */
export class NotSupportedError extends AgentjailError {}
/** 507: no room (a snapshot past the store's room, a full disk). */
export class InsufficientStorageError extends AgentjailError {}
/** Other 5xx: the service failed (create_failed, busy, unavailable...). */
export class ServerError extends AgentjailError {}

/** The error class for an HTTP status. */
export function errorClassFor(status: number): typeof AgentjailError {
  switch (status) {
    case 400:
      return BadRequestError;
    case 401:
      return AuthenticationError;
    case 403:
      return ForbiddenError;
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    case 429:
      return RateLimitError;
    case 501:
      return NotSupportedError;
    case 507:
      return InsufficientStorageError;
    default:
      return status >= 500 ? ServerError : AgentjailError;
  }
}

/** An error of the class for status. */
export function makeError(
  status: number,
  code: string,
  message: string,
  policyKey?: string,
): AgentjailError {
  const C = errorClassFor(status);
  return new C(status, code, message, policyKey);
}
