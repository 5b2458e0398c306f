import { createClient } from 'redis'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type RateLimiter, RateLimiterUnavailable } from '../../src/ratelimit/port.ts'
import { toAppError } from '../../src/http/errors.ts'
import { openRedisRateLimiter } from '../../src/ratelimit/redis.ts'
import { burst, freshSubject, rateLimiterContract } from './contract.ts'
import { startTcpProxy } from './tcp-proxy.ts'

const REDIS_URL = process.env.REDIS_URL
/** Every key this suite writes starts with it, so parallel runs and other suites never collide. */
const keyPrefix = `test:rl:${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`
const quiet = () => {}

if (!REDIS_URL) console.warn('[skipped] RateLimiter on Redis: REDIS_URL not set')

describe.skipIf(!REDIS_URL)('Redis rate limiter', () => {
  const url = REDIS_URL as string
  const raw = createClient({ url })

  beforeAll(async () => {
    await raw.on('error', quiet).connect()
  })
  afterAll(async () => {
    for await (const keys of raw.scanIterator({ MATCH: `${keyPrefix}:*`, COUNT: 1000 })) if (keys.length) await raw.del(keys)
    raw.destroy()
  })

  rateLimiterContract('redis', () => openRedisRateLimiter({ url, keyPrefix, log: quiet }))

  describe('two processes sharing the counters', () => {
    let first: RateLimiter
    let second: RateLimiter
    beforeAll(async () => {
      first = await openRedisRateLimiter({ url, keyPrefix, log: quiet })
      second = await openRedisRateLimiter({ url, keyPrefix, log: quiet })
    })
    afterAll(async () => {
      await first?.close()
      await second?.close()
    })

    test('105 concurrent hits split across two connections: exactly 100 allowed, 20 times over', async () => {
      const now = new Date()
      for (let round = 0; round < 20; round++) {
        const subject = freshSubject()
        const { allowed, decisions } = await burst(
          Array.from({ length: 105 }, (_, i) => () => (i % 2 ? first : second).hit(subject, 100, now)),
        )
        expect({ round, allowed }).toEqual({ round, allowed: 100 })
        expect(decisions.filter((d) => !d.allowed).every((d) => d.used === 100)).toBe(true)
      }
    })

    test('a counter gets its expiry with the first hit: end of the hour plus a margin', async () => {
      const subject = freshSubject()
      const now = new Date('2031-05-06T10:59:00.000Z') // 60 s before the hour
      await first.hit(subject, 10, now)
      const key = `${keyPrefix}:${subject}:${Date.parse('2031-05-06T10:00:00Z') / 1000}`
      expect(await raw.get(key)).toBe('1')
      const ttl = await raw.pTTL(key)
      expect(ttl).toBeGreaterThan(60_000) // outlives the hour...
      expect(ttl).toBeLessThanOrEqual(120_000) // ...by at most the one-minute margin
    })

    test('a rejected hit creates no key and no counter', async () => {
      const subject = freshSubject()
      const now = new Date('2031-05-06T10:30:00.000Z')
      expect((await second.hit(subject, 0, now)).allowed).toBe(false)
      expect(await raw.exists(`${keyPrefix}:${subject}:${Date.parse('2031-05-06T10:00:00Z') / 1000}`)).toBe(0)
    })
  })

  describe('fail closed when Redis is unavailable', () => {
    /** Settles with the outcome of `promise`, or 'hung' if it takes longer than `ms`. */
    const settleWithin = <T>(promise: Promise<T>, ms: number) =>
      Promise.race([
        promise.then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        ),
        new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), ms)),
      ])

    const expectServiceUnavailable = (outcome: unknown) => {
      expect(outcome).toHaveProperty('error')
      const { error } = outcome as { error: unknown }
      expect(error).toBeInstanceOf(RateLimiterUnavailable)
      // What a client then gets: 503 service_unavailable, retry in 5 s.
      const answered = toAppError('UNKNOWN', error, '/api/v1/health')
      expect(answered.code).toBe('service_unavailable')
      expect(answered.headers).toEqual({ 'Retry-After': '5' })
    }

    test('nothing listening: open returns, hit rejects as unavailable (the API answers 503 service_unavailable), the process survives', async () => {
      const logged: string[] = []
      const limiter = await openRedisRateLimiter({
        url: 'redis://127.0.0.1:6390',
        keyPrefix,
        connectTimeoutMs: 500,
        log: (m) => logged.push(m),
      })
      try {
        expectServiceUnavailable(await settleWithin(limiter.hit(freshSubject(), 100, new Date()), 1_000))
        // Let the client fail to reconnect a few more times: each failure is an 'error' event that would
        // crash the process if unhandled, and the outage is logged once, not once per attempt.
        await new Promise((resolve) => setTimeout(resolve, 500))
        expectServiceUnavailable(await settleWithin(limiter.hit(freshSubject(), 100, new Date()), 1_000))
        expect(logged).toHaveLength(1)
        expect(logged[0]).toMatch(/Redis unavailable/)
      } finally {
        await limiter.close()
      }
    })

    test('a stalled Redis: hit rejects at the command deadline instead of hanging', async () => {
      const proxy = await startTcpProxy(url)
      const limiter = await openRedisRateLimiter({ url: proxy.url, keyPrefix, commandTimeoutMs: 250, log: quiet })
      const subject = freshSubject()
      const now = new Date()
      try {
        expect((await limiter.hit(subject, 100, now)).used).toBe(1)
        proxy.stall()
        expectServiceUnavailable(await settleWithin(limiter.hit(subject, 100, now), 1_000))
        proxy.forward()
        // The stalled command reached Redis once the link resumed: fail closed may over-count, never under-count.
        expect(await limiter.hit(subject, 100, now)).toMatchObject({ allowed: true, used: 3 })
      } finally {
        await limiter.close()
        await proxy.close()
      }
    })

    test('started while Redis is down: refuses with 503, then recovers on its own when Redis is back', async () => {
      const proxy = await startTcpProxy(url)
      proxy.down()
      const logged: string[] = []
      const limiter = await openRedisRateLimiter({
        url: proxy.url,
        keyPrefix,
        connectTimeoutMs: 500,
        log: (m) => logged.push(m),
      })
      const subject = freshSubject()
      try {
        expectServiceUnavailable(await settleWithin(limiter.hit(subject, 100, new Date()), 1_000))
        proxy.forward()
        const deadline = Date.now() + 15_000
        let decision = null
        while (!decision && Date.now() < deadline) {
          decision = await limiter.hit(subject, 100, new Date()).catch(() => null)
          if (!decision) await new Promise((resolve) => setTimeout(resolve, 100))
        }
        expect(decision).toMatchObject({ allowed: true, used: 1 })
        // Its return is logged once Redis has answered for a second (a stumbling recovery is one outage).
        for (const stop = Date.now() + 1_500; Date.now() < stop; ) {
          await limiter.hit(subject, 100, new Date())
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        expect(logged.map((m) => m.replace(/ \(.*\)/, ''))).toEqual([
          'rate limiter: Redis unavailable; rate-limited requests get 503 until it is back',
          'rate limiter: Redis available again',
        ])
      } finally {
        await limiter.close()
        await proxy.close()
      }
    })

    test('a connection cut mid-service: refuses with 503, then reconnects', async () => {
      const proxy = await startTcpProxy(url)
      const limiter = await openRedisRateLimiter({ url: proxy.url, keyPrefix, log: quiet })
      const subject = freshSubject()
      const now = new Date()
      try {
        await limiter.hit(subject, 100, now)
        proxy.down()
        expectServiceUnavailable(await settleWithin(limiter.hit(subject, 100, now), 1_000))
        proxy.forward()
        const deadline = Date.now() + 15_000
        let decision = null
        while (!decision && Date.now() < deadline) {
          decision = await limiter.hit(subject, 100, now).catch(() => null)
          if (!decision) await new Promise((resolve) => setTimeout(resolve, 100))
        }
        expect(decision).toMatchObject({ allowed: true, used: 2 })
      } finally {
        await limiter.close()
        await proxy.close()
      }
    })
  })
})
