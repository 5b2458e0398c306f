/**
 * Errors are values with stable codes. Domain code returns or throws an AppError; the HTTP
 * shell maps the code to a status in exactly one place (`httpStatus`), the CLI to an exit code.
 */
export type ErrorCode =
  | 'auth_required'
  | 'invalid_key'
  | 'tier_required'
  | 'scope_denied'
  | 'rate_limit'
  | 'invalid_request'
  | 'not_found'
  | 'quota_exceeded'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'conflict'
  | 'idempotency_conflict'
  | 'forbidden'
  | 'service_unavailable'
  | 'upstream_error'
  | 'internal'

export const httpStatus: Record<ErrorCode, number> = {
  auth_required: 401,
  invalid_key: 401,
  tier_required: 403,
  scope_denied: 403,
  forbidden: 403,
  rate_limit: 429,
  invalid_request: 400,
  not_found: 404,
  quota_exceeded: 429,
  method_not_allowed: 405,
  payload_too_large: 413,
  conflict: 409,
  idempotency_conflict: 409,
  service_unavailable: 503,
  upstream_error: 502,
  internal: 500,
}

export type FieldError = { field: string; message: string }

/** A backstop for messages that quote input: no error message is longer than this. */
const MAX_MESSAGE = 600

/**
 * An expected failure, answered to the client: it carries no stack trace (capturing one costs more
 * than the rest of a refused request, and none is ever logged: only unexpected errors are, with theirs).
 */
export class AppError extends Error {
  readonly code: ErrorCode
  /** Extra top-level fields of the error body, e.g. `details` or `retry_after_seconds`. */
  readonly extra: Record<string, unknown>
  /** Extra response headers, e.g. `Retry-After`. */
  readonly headers: Record<string, string>

  constructor(code: ErrorCode, message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    const stackTraceLimit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message)
    Error.stackTraceLimit = stackTraceLimit
    this.name = 'AppError'
    this.code = code
    this.extra = extra
    this.headers = headers
  }

  body(): Record<string, unknown> {
    return { ok: false, error: this.code, message: this.message, ...this.extra }
  }
}

/** Longest piece of client input an error message repeats; the rest is cut and marked with "…". */
export const MAX_ECHO = 80

/** Client input as quoted in an error message: JSON-quoted (no control characters) and cut to MAX_ECHO. */
export function echo(input: string): string {
  const cut = input.length > MAX_ECHO ? `${input.slice(0, MAX_ECHO)}…` : input
  return JSON.stringify(cut)
}

export const invalidRequest = (message: string, details: FieldError[] = []) =>
  new AppError('invalid_request', message, { details })

export const notFound = (message: string) => new AppError('not_found', message)

export const isAppError = (value: unknown): value is AppError => value instanceof AppError
