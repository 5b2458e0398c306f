import { Elysia } from 'elysia'
import type { Logger } from '../runtime/log.ts'
import { AppError, echo, type ErrorCode, fail, type FieldError, httpStatus } from '../shared/errors.ts'
import { RateLimiterUnavailable } from '../ratelimit/port.ts'
import { ClientAborted } from './body.ts'


type ValidationIssue = { path?: string; message?: string; summary?: string }

/** Elysia's validation issues → our `details`, one per field, named without the leading slash. */
function validationDetails(error: unknown, where: string): FieldError[] {
  const all = ((error as { all?: ValidationIssue[] }).all ?? []) as ValidationIssue[]
  const seen = new Map<string, string>()
  for (const issue of all) {
    const field = (issue.path ?? '').replace(/^\//, '').replaceAll('/', '.') || where
    if (!seen.has(field)) seen.set(field, issue.summary ?? issue.message ?? 'invalid value')
  }
  return [...seen].map(([field, message]) => ({ field, message }))
}

/** A request to a path no route serves. Outside the API prefix the answer says where the API is. */
export const noEndpoint = (path: string, outsideApi = false) =>
  fail.notFound(`no endpoint at ${echo(path)}; ${outsideApi ? 'the API lives under /api/v1' : 'GET /api/v1/openapi.json lists every endpoint'}`)

/** A known path asked with a method it does not take. */
export const methodNotAllowed = (method: string, allow: string) =>
  fail.methodNotAllowed(`${echo(method)} is not allowed here; use ${allow}`, allow)

/** A request whose URL is not absolute: its Host header was missing or malformed. */
export const hostRefused = () =>
  fail.invalidRequest('the Host header is missing or malformed', [{ field: 'host', message: 'Expected a host name, optionally with a port' }])

/** The 503 of a rate limiter that cannot count (its port's typed failure): retry in a few seconds. */
export const rateLimiterUnavailable = () => fail.serviceUnavailable('rate limiter unavailable; retry shortly', 5)

/** A bug: never its details, which only the server log has. */
export const internalError = () => fail.internal('internal error; the request id identifies it in the server log')

/** Maps every failure to the JSON error envelope, in one place. `path` is Elysia's reading of the request. */
export function toAppError(code: string | number, error: unknown, path: string): AppError {
  if (error instanceof AppError) return error
  if (error instanceof RateLimiterUnavailable) return rateLimiterUnavailable()
  if (error instanceof ClientAborted) return fail.invalidRequest(error.message)
  switch (code) {
    case 'VALIDATION': {
      const where = String((error as { type?: string }).type ?? 'request')
      const details = validationDetails(error, where)
      return fail.invalidRequest(`invalid ${where}: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`, details)
    }
    case 'PARSE':
      return fail.invalidRequest('the request body could not be parsed', [{ field: 'body', message: 'malformed body' }])
    case 'NOT_FOUND':
      return noEndpoint(path, true)
    default:
      return internalError()
  }
}

/** The one Content-Type of every JSON body, success or error: the one Bun's `Response.json` and Elysia write. */
export const JSON_TYPE = 'application/json;charset=utf-8'

/** `bytes` (a JSON answer serialised once: src/shared/ready-bytes.ts) as a route's answer, typed as JSON: Elysia cannot tell. */
export function jsonBytes(set: { headers: Record<string, unknown> }, bytes: Uint8Array): Uint8Array {
  set.headers['content-type'] = JSON_TYPE
  return bytes
}

/** The code of each error body serialised once (`errorBytes`): what the request metrics count it as. */
const codeOfBytes = new WeakMap<Uint8Array, ErrorCode>()

/** `error`'s body serialised once, for a refusal that is always the same (no headers, a fixed message). */
export function errorBytes(error: AppError): Uint8Array {
  const bytes = new TextEncoder().encode(JSON.stringify(error.body()))
  codeOfBytes.set(bytes, error.code)
  return bytes
}

/** The error code of a body made by `errorBytes`, if `body` is one. */
export const codeOfErrorBytes = (body: unknown): ErrorCode | undefined => (body instanceof Uint8Array ? codeOfBytes.get(body) : undefined)

/** The answer to `error`: its headers and JSON content type go on `set`; returns the body. */
export function errorBody(error: AppError, set: { headers: Record<string, unknown> }): Record<string, unknown> {
  for (const [name, value] of Object.entries(error.headers)) set.headers[name] = value
  set.headers['content-type'] = JSON_TYPE
  return error.body()
}

/**
 * Every failure becomes the JSON envelope with its status, whatever threw it. A bug is logged with
 * its cause and answered `500 internal` without a stack trace; a client that went away mid-body is
 * logged as such (info), not as a server error. Never parses `request.url`: the path is Elysia's.
 */
export function errorPlugin(log: Logger) {
  return new Elysia({ name: 'errors' }).onError({ as: 'global' }, ({ code, error, set, request, path }) => {
    const appError = toAppError(code, error, path)
    const where = { request_id: set.headers['x-request-id'], method: request.method, path: loggedPath(path) }
    if (error instanceof ClientAborted) log.info('client_aborted', where)
    else if (appError.code === 'internal') {
      log.error('unhandled_error', {
        ...where,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        stack: error instanceof Error ? error.stack : undefined,
      })
    }
    set.status = httpStatus[appError.code]
    return errorBody(appError, set)
  })
}

const MAX_LOGGED_PATH = 200

/** A request path as written to the log: cut, so a client cannot fill the log with one request. */
export const loggedPath = (path: string): string => (path.length > MAX_LOGGED_PATH ? `${path.slice(0, MAX_LOGGED_PATH)}…` : path)
