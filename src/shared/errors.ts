import { type TSchema, Type } from '@sinclair/typebox'

/**
 * The error catalogue: every error code the API, the CLI and the operator socket answer with,
 * built here and nowhere else. Each entry says its HTTP status, the fields its body adds to
 * `{ok: false, error, message}` and the headers it sets; each constructor of `fail` builds exactly
 * that shape, so a new refusal is one call (`throw fail.notFound(...)`) and never a hand-made body.
 * `test/architecture/error-catalogue.test.ts` checks that no other file constructs an AppError.
 * Every layer may import it (src/shared is the bottom); the HTTP shell maps the code to a status
 * (`httpStatus`), the CLI to an exit code.
 */
export type ErrorCode =
  | 'auth_required'
  | 'invalid_key'
  | 'tier_required'
  | 'scope_denied'
  | 'rate_limit'
  | 'invalid_request'
  | 'invalid_cursor'
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

export type FieldError = { field: string; message: string }

/** What the catalogue says of one code: its status, the fields its body adds, the headers it may set. */
export type ErrorKind = { status: number; fields?: Record<string, TSchema>; headers?: readonly string[] }

const FieldErrors = Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), {
  description: 'one entry per bad field',
})

export const ERROR_CATALOGUE: Record<ErrorCode, ErrorKind> = {
  auth_required: { status: 401 },
  invalid_key: { status: 401 },
  tier_required: { status: 403 },
  scope_denied: { status: 403 },
  forbidden: { status: 403 },
  rate_limit: {
    status: 429,
    fields: {
      limit: Type.Integer({ description: 'hourly limit of the tier' }),
      used: Type.Integer({ description: 'requests counted this hour (equals limit)' }),
      retry_after_seconds: Type.Integer({ description: 'seconds until the counter resets at the next UTC hour' }),
    },
    headers: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit-Policy', 'RateLimit', 'Retry-After'],
  },
  invalid_request: { status: 400, fields: { details: FieldErrors } },
  invalid_cursor: { status: 400, fields: { details: FieldErrors } },
  not_found: { status: 404 },
  quota_exceeded: {
    status: 429,
    fields: {
      used: Type.Integer({ description: 'briefings charged this month' }),
      quota: Type.Integer({ description: 'monthly quota of the tier' }),
      resets_at: Type.String({ format: 'date-time', description: 'start of the next UTC month' }),
    },
    headers: ['Retry-After'],
  },
  method_not_allowed: { status: 405, headers: ['Allow'] },
  payload_too_large: { status: 413 },
  conflict: { status: 409 },
  idempotency_conflict: { status: 409 },
  service_unavailable: { status: 503, headers: ['Retry-After'] },
  upstream_error: { status: 502 },
  internal: { status: 500 },
}

/** The HTTP status of each code, from the catalogue. */
export const httpStatus = Object.fromEntries(Object.entries(ERROR_CATALOGUE).map(([code, kind]) => [code, kind.status])) as Record<ErrorCode, number>

/** A backstop for messages that quote input: no error message is longer than this. */
const MAX_MESSAGE = 600

/**
 * An expected failure, answered to the client: it carries no stack trace (capturing one costs more
 * than the rest of a refused request, and none is ever logged: only unexpected errors are, with theirs).
 * Built by `fail` below (a subclass may call the constructor for a typed failure of a port).
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

/** The constructors of the catalogue, one per code: each builds (does not throw) its error. */
export const fail = {
  authRequired: (message: string) => new AppError('auth_required', message),
  invalidKey: (message: string) => new AppError('invalid_key', message),
  tierRequired: (message: string) => new AppError('tier_required', message),
  scopeDenied: (message: string) => new AppError('scope_denied', message),
  forbidden: (message: string) => new AppError('forbidden', message),
  /** `counter`: the rate-limit headers of the spent counter; Retry-After follows them. */
  rateLimit: (message: string, fields: { limit: number; used: number; retryAfterSeconds: number }, counter: Record<string, string>) =>
    new AppError(
      'rate_limit',
      message,
      { limit: fields.limit, used: fields.used, retry_after_seconds: fields.retryAfterSeconds },
      { ...counter, 'Retry-After': String(fields.retryAfterSeconds) },
    ),
  /** Without `details` the body has none (an error no field caused, e.g. of the operator's CLI). */
  invalidRequest: (message: string, details?: FieldError[]) => new AppError('invalid_request', message, details ? { details } : {}),
  /** A cursor of the change feed this store cannot read: not one, another store's, or ahead of its log. */
  invalidCursor: (field: string, message: string) => new AppError('invalid_cursor', `${field}: ${message}`, { details: [{ field, message }] }),
  notFound: (message: string) => new AppError('not_found', message),
  quotaExceeded: (message: string, fields: { used: number; quota: number; resetsAt: string }, retryAfterSeconds: number) =>
    new AppError(
      'quota_exceeded',
      message,
      { used: fields.used, quota: fields.quota, resets_at: fields.resetsAt },
      { 'retry-after': String(retryAfterSeconds) },
    ),
  methodNotAllowed: (message: string, allow: string) => new AppError('method_not_allowed', message, {}, { allow }),
  payloadTooLarge: (message: string) => new AppError('payload_too_large', message),
  conflict: (message: string) => new AppError('conflict', message),
  idempotencyConflict: (message: string) => new AppError('idempotency_conflict', message),
  /** With `retryAfterSeconds` when the client may retry on its own soon (a Retry-After header). */
  serviceUnavailable: (message: string, retryAfterSeconds?: number) =>
    new AppError('service_unavailable', message, {}, retryAfterSeconds === undefined ? {} : { 'Retry-After': String(retryAfterSeconds) }),
  upstreamError: (message: string) => new AppError('upstream_error', message),
  internal: (message: string) => new AppError('internal', message),
} as const

/** Longest piece of client input an error message repeats; the rest is cut and marked with "…". */
export const MAX_ECHO = 80

/** Client input as quoted in an error message: JSON-quoted (no control characters) and cut to MAX_ECHO. */
export function echo(input: string): string {
  const cut = input.length > MAX_ECHO ? `${input.slice(0, MAX_ECHO)}…` : input
  return JSON.stringify(cut)
}

/** An invalid request whose body names the bad fields (`details`, empty when no field is to blame). */
export const invalidRequest = (message: string, details: FieldError[] = []) => fail.invalidRequest(message, details)

export const isAppError = (value: unknown): value is AppError => value instanceof AppError
