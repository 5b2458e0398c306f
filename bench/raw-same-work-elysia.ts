/**
 * bench/raw-same-work.ts's work done by a minimal Elysia app: one GET route per path, no hooks, the
 * same key map, counter and rate-limit headers, request id and bytes of the real answer (fetched once
 * from MIRADOR with KEY). Beside the raw server it shows what Elysia itself costs per answer; beside
 * Mirador, what our own hooks and per-request work cost.
 *
 *   PORT=0 MIRADOR=http://127.0.0.1:3000 KEY=mk_… PATHS='/api/v1/zones?country=GT,…' bun bench/raw-same-work-elysia.ts
 */
import { Elysia } from 'elysia'

const { MIRADOR, KEY, PATHS } = process.env
if (!MIRADOR || !KEY || !PATHS) throw new Error('MIRADOR, KEY and PATHS are needed')

/** Headers of the real answer that are the same for every request (as bench/raw-same-work.ts). */
const PER_REQUEST = /^(date|content-length|x-request-id|x-ratelimit-.*|ratelimit.*|connection|keep-alive)$/i
const answers = new Map<string, { bytes: Uint8Array<ArrayBuffer>; headers: Record<string, string> }>()
for (const path of PATHS.split(',')) {
  const response = await fetch(`${MIRADOR}${path}`, { headers: { authorization: `Bearer ${KEY}`, 'accept-encoding': 'identity' } })
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${await response.text()}`)
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => PER_REQUEST.test(name) || (headers[name] = value))
  answers.set(path, { bytes: new Uint8Array(await response.arrayBuffer()), headers })
}

const HOUR_MS = 3_600_000
const LIMIT = 1_000_000_000
const keys = new Map([[KEY, { id: 'bench', count: 0, hour: 0 }]])
const requestPrefix = crypto.randomUUID().slice(0, 24)
let requests = 0

const app = new Elysia()
for (const [path, ready] of answers) {
  app.get(new URL(path, 'http://x').pathname, ({ request, set, status }) => {
    const authorization = request.headers.get('authorization')
    const key = authorization?.startsWith('Bearer ') ? keys.get(authorization.slice(7)) : undefined
    if (!key) return status(401, { ok: false, error: 'invalid_key', message: 'invalid_key' })
    const now = Date.now()
    const hour = Math.floor(now / HOUR_MS)
    if (hour !== key.hour) Object.assign(key, { hour, count: 0 })
    key.count++
    const remaining = LIMIT - key.count
    const resetAt = (hour + 1) * HOUR_MS
    Object.assign(set.headers, ready.headers)
    set.headers['x-request-id'] = requestPrefix + (requests++).toString(16).padStart(12, '0')
    set.headers['x-ratelimit-limit'] = String(LIMIT)
    set.headers['x-ratelimit-remaining'] = String(remaining)
    set.headers['x-ratelimit-reset'] = String(resetAt / 1000)
    set.headers['ratelimit-policy'] = `"hour";q=${LIMIT};w=3600`
    set.headers['ratelimit'] = `"hour";r=${remaining};t=${Math.ceil((resetAt - now) / 1000)}`
    return ready.bytes
  })
}
app.listen({ hostname: '127.0.0.1', port: Number(process.env.PORT ?? 0) })
console.log(JSON.stringify({ event: 'listening', port: app.server?.port }))
process.on('SIGTERM', () => {
  void app.stop(true)
  process.exit(0)
})
