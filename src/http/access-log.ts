import { Elysia } from 'elysia'
import type { Logger } from '../runtime/log.ts'
import { loggedPath } from './errors.ts'
import type { KeyedContext } from './gate.ts'

/** The level of an access line: `error` for a 5xx answer, `warn` for a 4xx, `info` otherwise (pino-http's rule). */
export const accessLevel = (status: number): 'info' | 'warn' | 'error' => (status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info')

/** What the access log reads of a request's context: when it started, and its key's id if the gate found one. */
type Logged = KeyedContext & { accessStarted?: number; request: Request; path: string; set: { status?: number | string; headers: Record<string, unknown> } }

/**
 * One log line per answer, after it is sent (`event: request`): its level, request id, method, path,
 * status, the milliseconds from receiving it to having answered (as the metrics' duration) and the
 * id of the key it presented when the key was found (never the key; absent for anonymous requests
 * and keys not found). Without ACCESS_LOG no hook is registered at all: Elysia schedules every
 * after-response hook on the event loop, a cost per request even when it does nothing.
 */
export function accessLog(deps: { accessLog: boolean; log: Logger }) {
  const plugin = new Elysia({ name: 'access-log' })
  if (!deps.accessLog) return plugin
  return plugin
    .onRequest((context) => {
      ;(context as unknown as Logged).accessStarted = performance.now()
    })
    .onAfterResponse({ as: 'global' }, (context) => {
      const { request, set, path, keyId, accessStarted } = context as unknown as Logged
      const status = Number(set.status ?? 200)
      const ms = accessStarted === undefined ? 0 : performance.now() - accessStarted
      deps.log.info('request', {
        level: accessLevel(status),
        request_id: set.headers['x-request-id'],
        method: request.method,
        path: loggedPath(path),
        status,
        duration_ms: Math.round(ms * 100) / 100,
        key_id: keyId,
      })
    })
}
