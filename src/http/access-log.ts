import { Elysia } from 'elysia'
import type { Logger } from '../runtime/log.ts'
import { loggedPath } from './errors.ts'
import { keyIdOf } from './gate.ts'

/** The level of an access line: `error` for a 5xx answer, `warn` for a 4xx, `info` otherwise (pino-http's rule). */
export const accessLevel = (status: number): 'info' | 'warn' | 'error' => (status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info')

/**
 * One log line per answer, after it is sent (`event: request`): its level, request id, method, path,
 * status, the milliseconds from receiving it to having answered (as the metrics' duration) and the
 * id of the key it presented when the key was found (never the key; absent for anonymous requests
 * and keys not found). Without ACCESS_LOG no hook is registered at all: Elysia schedules every
 * after-response hook on the event loop, a cost per request even when it does nothing. The hooks
 * name the context's fields they read: Elysia reads a hook's parameters to decide what to prepare
 * for every request (a hook taking the whole context costs a few microseconds per request).
 */
export function accessLog(deps: { accessLog: boolean; log: Logger }) {
  const plugin = new Elysia({ name: 'access-log' })
  if (!deps.accessLog) return plugin
  const started = new WeakMap<Request, number>()
  return plugin
    .onRequest(({ request }) => {
      started.set(request, performance.now())
    })
    .onAfterResponse({ as: 'global' }, ({ request, set, path }) => {
      const status = Number(set.status ?? 200)
      const ms = performance.now() - (started.get(request) ?? performance.now())
      deps.log.info('request', {
        level: accessLevel(status),
        request_id: set.headers['x-request-id'],
        method: request.method,
        path: loggedPath(path),
        status,
        duration_ms: Math.round(ms * 100) / 100,
        key_id: keyIdOf(request),
      })
    })
}
