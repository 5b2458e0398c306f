/**
 * The work of issue 34's per-answer baseline, shared by its two servers (bench/raw-same-work.ts on
 * `Bun.serve`, bench/raw-same-work-elysia.ts in a minimal Elysia app): the bytes and headers of
 * Mirador's real answers, fetched once from the running server (MIRADOR, with KEY, for each of PATHS),
 * and per request what Mirador does besides: the Bearer key looked up in a map, the hour's counter and
 * both forms of rate-limit headers (as src/ratelimit/port.ts), a request id.
 */
const { MIRADOR, KEY, PATHS } = process.env
if (!MIRADOR || !KEY || !PATHS) throw new Error('MIRADOR, KEY and PATHS are needed')

/** Headers of the real answer that are made per request (below) or by the server itself. */
const PER_REQUEST = /^(date|content-length|x-request-id|x-ratelimit-.*|ratelimit.*|connection|keep-alive)$/i

export type ReadyAnswer = { bytes: Uint8Array<ArrayBuffer>; headers: Record<string, string> }

/** Mirador's answer to each of PATHS, by path (with its query), as wrk receives it. */
export async function readyAnswers(): Promise<Map<string, ReadyAnswer>> {
  const answers = new Map<string, ReadyAnswer>()
  for (const path of PATHS!.split(',')) {
    // Identity, as wrk asks: the bytes Mirador sends the benchmark's client.
    const response = await fetch(`${MIRADOR}${path}`, { headers: { authorization: `Bearer ${KEY}`, 'accept-encoding': 'identity' } })
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${await response.text()}`)
    const headers: Record<string, string> = {}
    response.headers.forEach((value, name) => PER_REQUEST.test(name) || (headers[name] = value))
    answers.set(path, { bytes: new Uint8Array(await response.arrayBuffer()), headers })
  }
  return answers
}

const HOUR_MS = 3_600_000
const LIMIT = 1_000_000_000
/** The keys the server knows (the one key, by its text) and each key's counter for the current hour. */
const keys = new Map([[KEY, { count: 0, hour: 0 }]])
const requestPrefix = crypto.randomUUID().slice(0, 24)
let requests = 0

/** The request's own headers (id, counter) when its Authorization names the key, else null (a 401). */
export function countedHeaders(authorization: string | null): Record<string, string> | null {
  const key = authorization?.startsWith('Bearer ') ? keys.get(authorization.slice(7)) : undefined
  if (!key) return null
  const now = Date.now()
  const hour = Math.floor(now / HOUR_MS)
  if (hour !== key.hour) Object.assign(key, { hour, count: 0 })
  key.count++
  const remaining = LIMIT - key.count
  const resetAt = (hour + 1) * HOUR_MS
  return {
    'x-request-id': requestPrefix + (requests++).toString(16).padStart(12, '0'),
    'x-ratelimit-limit': String(LIMIT),
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(resetAt / 1000),
    'ratelimit-policy': `"hour";q=${LIMIT};w=3600`,
    ratelimit: `"hour";r=${remaining};t=${Math.ceil((resetAt - now) / 1000)}`,
  }
}

export const INVALID_KEY = { ok: false, error: 'invalid_key', message: 'invalid_key' }
