/**
 * Rate-limit counters in Redis, shared by every API process behind the load balancer.
 *
 * One hit is one round trip: a Lua script (EVALSHA, falling back to EVAL on NOSCRIPT) that, atomically,
 * reads the hour's counter, increments it only while it is below the limit, and sets its expiry in the
 * same step, so no crash can leave a counter without expiry. The key is
 * `${keyPrefix}:${subject}:${windowStartEpochSeconds}`. The expiry is relative (PEXPIRE to the end of the
 * window as seen by the caller's `now`, plus a margin) rather than absolute (PEXPIREAT): with an
 * absolute time, an API host whose clock runs behind the Redis host's would see its counters deleted
 * before the hour ends (and an injected test clock, immediately).
 *
 * Policy when Redis is unavailable: FAIL CLOSED. If Redis is down or unreachable, or a hit takes longer
 * than `commandTimeoutMs` (default 250 ms), `hit` rejects with `service_unavailable` (HTTP 503,
 * `Retry-After: 5`) rather than letting requests through uncounted: the hourly limits are a paid-tier
 * guarantee, and an outage of the counters must not become unlimited access. Nothing waits on a missing
 * connection (no offline queue) and every hit carries a deadline, so a request never hangs longer than
 * the timeout. The client reconnects on its own with capped backoff, so hits succeed again as soon as
 * Redis is back; startup waits at most `connectTimeoutMs` for the first connection. A hit that times out
 * after reaching Redis may still have been counted: fail closed errs toward the customer seeing a 503,
 * never toward exceeding the limit. Outage and recovery are logged once each, not once per request.
 */
import { createClient, defineScript } from 'redis'
import { beforeDeadline, Dependency } from '../runtime/dependency.ts'
import { hourWindow, type RateDecision, rateDecision, type RateLimiter, RateLimiterUnavailable } from './port.ts'

export type RedisRateLimiterOptions = {
  url: string
  /** Prefix of every counter key; tests pass a unique one to isolate themselves. */
  keyPrefix?: string
  /** Deadline of one hit, in milliseconds. */
  commandTimeoutMs?: number
  /** Deadline of one connection attempt, and the longest `openRedisRateLimiter` waits for the first one. */
  connectTimeoutMs?: number
  /** Where a configuration problem is reported, and outage and recovery without `dependency`. */
  log?: (message: string) => void
  /** Told of every outage and recovery (it logs them once each); the monitor's view of Redis. */
  dependency?: Dependency
}

export const defaultKeyPrefix = 'mirador:rl'
/** Keeps a counter a little past its hour, so small clock differences between API hosts never cut it short. */
const EXPIRY_MARGIN_MS = 60_000
const MAX_RECONNECT_DELAY_MS = 2_000


/** KEYS[1] counter; ARGV[1] limit, ARGV[2] expiry in ms. Returns {count after the hit, 1 if counted else 0}. */
const hitScript = defineScript({
  NUMBER_OF_KEYS: 1,
  SCRIPT: `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count >= tonumber(ARGV[1]) then return {count, 0} end
count = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {count, 1}`,
  parseCommand(parser, key: string, limit: number, expiryMs: number) {
    parser.pushKey(key)
    parser.push(String(limit), String(expiryMs))
  },
  transformReply: (reply: unknown) => {
    const [count, counted] = reply as [number, number]
    return { count, counted: counted === 1 }
  },
})

/** Every hit asks Redis: always a promise. `ping` asks whether Redis answers (for the monitor). */
export type RedisRateLimiter = Omit<RateLimiter, 'hit'> & { hit(subject: string, limit: number, now: Date): Promise<RateDecision>; ping(): Promise<void> }

export async function openRedisRateLimiter(options: RedisRateLimiterOptions): Promise<RedisRateLimiter> {
  const keyPrefix = options.keyPrefix ?? defaultKeyPrefix
  const commandTimeoutMs = options.commandTimeoutMs ?? 250
  const connectTimeoutMs = options.connectTimeoutMs ?? 1_000
  const log = options.log ?? ((message: string) => console.warn(message))

  const client = createClient({
    url: options.url,
    scripts: { rateLimitHit: hitScript },
    // Commands issued while disconnected fail at once instead of queueing until Redis returns.
    disableOfflineQueue: true,
    socket: {
      connectTimeout: connectTimeoutMs,
      // Never give up: exponential backoff with jitter, capped, until Redis is back.
      reconnectStrategy: (retries) => Math.min(50 * 2 ** retries, MAX_RECONNECT_DELAY_MS) + Math.floor(Math.random() * 100),
    },
  })

  const dependency =
    options.dependency ??
    new Dependency('rate limiter', (event, fields) =>
      log(event === 'dependency_down' ? `rate limiter: Redis unavailable (${fields.reason}); rate-limited requests get 503 until it is back` : 'rate limiter: Redis available again'),
    )
  const outage = (reason: string, certain = false) => dependency.failed(reason, certain)
  const recovered = () => dependency.answered()
  // Without an 'error' listener a connection failure would crash the process.
  client.on('error', (error: Error) => outage(error.message || error.name, true))
  client.on('ready', recovered)

  let closed = false
  const connected = client.connect().then(
    () => undefined,
    // Connection failures are retried; this rejects only on close() or a failed handshake (e.g. bad
    // credentials), which no retry fixes: say so instead of refusing requests in silence.
    (error: Error) => {
      if (!closed) log(`rate limiter: cannot use Redis (${error.message}); fix the configuration`)
    },
  )
  await within(connected, connectTimeoutMs)

  return {
    async hit(subject, limit, now) {
      const { start, resetAt } = hourWindow(now)
      const key = `${keyPrefix}:${subject}:${start.getTime() / 1000}`
      const expiryMs = resetAt.getTime() - now.getTime() + EXPIRY_MARGIN_MS
      let reply: { count: number; counted: boolean }
      try {
        // Our own deadline: node-redis timeouts stop applying once a command is written to the socket.
        reply = await beforeDeadline(client.rateLimitHit(key, limit, expiryMs), commandTimeoutMs)
      } catch (error) {
        outage(error instanceof Error ? error.message || error.name : String(error))
        throw new RateLimiterUnavailable()
      }
      recovered()
      return rateDecision(limit, reply.count, reply.counted, now)
    },
    async ping() {
      await beforeDeadline(client.ping(), commandTimeoutMs)
    },
    async close() {
      closed = true
      // Let in-flight hits finish, but never wait on a Redis that does not answer.
      await within(
        client.close().catch(() => undefined),
        commandTimeoutMs,
      )
      client.destroy()
    },
  }
}

/** Waits for `promise`, but no longer than `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}
