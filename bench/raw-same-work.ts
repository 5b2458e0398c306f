/**
 * The baseline of issue 34's per-answer goal: a bare `Bun.serve` doing the same work as Mirador for a
 * data answer that is ready in memory (`GET /zones`, `/zone/{slug}`, a `/listings` page), and nothing
 * else: the Bearer key looked up in a map, the hour's counter counted and its rate-limit headers set
 * (both forms, as src/ratelimit/port.ts), a request id, and the bytes of the real answer with the
 * headers it carried (ETag, provenance). Mirador's answers to those paths are fetched once at start
 * from the running server (MIRADOR, with KEY), so the bytes are the same; an unknown path is a 404, an
 * unknown key a 401. The gap between the two is what the framework and our own per-request work cost.
 *
 *   PORT=0 MIRADOR=http://127.0.0.1:3000 KEY=mk_… PATHS='/api/v1/zones?country=GT,…' bun bench/raw-same-work.ts
 */
export {}
const { MIRADOR, KEY, PATHS } = process.env
if (!MIRADOR || !KEY || !PATHS) throw new Error('MIRADOR, KEY and PATHS are needed')

/** Headers of the real answer that are the same for every request (per-request ones are made below). */
const PER_REQUEST = /^(date|content-length|x-request-id|x-ratelimit-.*|ratelimit.*|connection|keep-alive)$/i
type Ready = { bytes: Uint8Array<ArrayBuffer>; headers: [string, string][] }
const answers = new Map<string, Ready>()
for (const path of PATHS.split(',')) {
  // Identity, as wrk asks: the bytes Mirador sends the benchmark's client.
  const response = await fetch(`${MIRADOR}${path}`, { headers: { authorization: `Bearer ${KEY}`, 'accept-encoding': 'identity' } })
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${await response.text()}`)
  const headers: [string, string][] = []
  response.headers.forEach((value, name) => PER_REQUEST.test(name) || headers.push([name, value]))
  answers.set(path, { bytes: new Uint8Array(await response.arrayBuffer()), headers })
}

const HOUR_MS = 3_600_000
const LIMIT = 1_000_000_000
/** The keys this server knows (the one key, by its text) and each key's counter for the current hour. */
const keys = new Map([[KEY, { id: 'bench', count: 0, hour: 0 }]])
const requestPrefix = crypto.randomUUID().slice(0, 24)
let requests = 0

function refusal(status: number, error: string) {
  return new Response(JSON.stringify({ ok: false, error, message: error }), { status, headers: { 'content-type': 'application/json' } })
}

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(process.env.PORT ?? 0),
  fetch(request) {
    const authorization = request.headers.get('authorization')
    const key = authorization?.startsWith('Bearer ') ? keys.get(authorization.slice(7)) : undefined
    if (!key) return refusal(401, 'invalid_key')
    const url = request.url
    const ready = answers.get(url.slice(url.indexOf('/', 8)))
    if (!ready) return refusal(404, 'not_found')
    const now = Date.now()
    const hour = Math.floor(now / HOUR_MS)
    if (hour !== key.hour) Object.assign(key, { hour, count: 0 })
    key.count++
    const remaining = LIMIT - key.count
    const resetAt = (hour + 1) * HOUR_MS
    const headers = new Headers(ready.headers)
    headers.set('x-request-id', requestPrefix + (requests++).toString(16).padStart(12, '0'))
    headers.set('x-ratelimit-limit', String(LIMIT))
    headers.set('x-ratelimit-remaining', String(remaining))
    headers.set('x-ratelimit-reset', String(resetAt / 1000))
    headers.set('ratelimit-policy', `"hour";q=${LIMIT};w=3600`)
    headers.set('ratelimit', `"hour";r=${remaining};t=${Math.ceil((resetAt - now) / 1000)}`)
    return new Response(ready.bytes, { headers })
  },
})
console.log(JSON.stringify({ event: 'listening', port: server.port }))
process.on('SIGTERM', () => {
  void server.stop(true)
  process.exit(0)
})
