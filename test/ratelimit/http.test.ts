import { createClient } from 'redis'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { loadConfig } from '../../src/config.ts'
import { openPglite } from '../../src/db/pglite.ts'
import { buildApp } from '../../src/app.ts'
import { memoryRateLimiter } from '../../src/ratelimit/memory.ts'
import type { RateLimiter } from '../../src/ratelimit/port.ts'
import { openRedisRateLimiter } from '../../src/ratelimit/redis.ts'
import { type TestSystem, startTestSystem } from '../support/app.ts'

/**
 * Hourly rate limits as an API user sees them (docs/limits.md, docs/errors.md "Order of checks"):
 * the whole API through `app.handle`, real auth, real key index on PGlite, and each limiter adapter.
 * The clock is injected and pinned, so no test depends on when it runs.
 */

const REDIS_URL = process.env.REDIS_URL
/** Every counter this suite writes to Redis starts with it, so parallel runs never collide. */
const keyPrefix = `test:rl-http:${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`
const quiet = () => {}

if (!REDIS_URL) console.warn('[skipped] rate limits over HTTP with the Redis adapter: REDIS_URL not set')

const adapters: Array<{ name: string; open(): Promise<RateLimiter> }> = [
  { name: 'memory', open: async () => memoryRateLimiter() },
  ...(REDIS_URL ? [{ name: 'redis', open: () => openRedisRateLimiter({ url: REDIS_URL, keyPrefix, log: quiet }) }] : []),
]

afterAll(async () => {
  if (!REDIS_URL) return
  const raw = createClient({ url: REDIS_URL })
  await raw.on('error', quiet).connect()
  for await (const keys of raw.scanIterator({ MATCH: `${keyPrefix}:*`, COUNT: 1000 })) if (keys.length) await raw.del(keys)
  raw.destroy()
})

const MID_HOUR = new Date('2031-05-06T10:15:30.250Z')
const unix = (iso: string) => String(Date.parse(iso) / 1000)

type Json = Record<string, unknown>
const countStatuses = (responses: Response[]) => {
  const counts: Record<number, number> = {}
  for (const r of responses) counts[r.status] = (counts[r.status] ?? 0) + 1
  return counts
}
const rateHeaders = (r: Response) => ({
  limit: r.headers.get('x-ratelimit-limit'),
  remaining: r.headers.get('x-ratelimit-remaining'),
  reset: r.headers.get('x-ratelimit-reset'),
})

for (const adapter of adapters) {
  describe(`hourly rate limits over HTTP (${adapter.name})`, () => {
    let system: TestSystem
    let limiter: RateLimiter
    let now = MID_HOUR
    const limits = loadConfig({}).rateLimits

    beforeAll(async () => {
      limiter = await adapter.open()
      system = await startTestSystem(await openPglite(), { limiter, limits, clock: () => now })
    })
    afterAll(async () => {
      await system?.close()
      await limiter?.close()
    })
    beforeEach(() => {
      now = MID_HOUR
    })

    const health = (key: string) => system.request('/api/v1/health', { key })
    /** `n` requests, at most `width` in flight at once (wide bursts would only measure event-loop lag). */
    async function inWaves(n: number, width: number, send: () => Promise<Response>) {
      const responses: Response[] = []
      for (let sent = 0; sent < n; sent += width) {
        responses.push(...(await Promise.all(Array.from({ length: Math.min(width, n - sent) }, send))))
      }
      return responses
    }

    test('105 concurrent requests with one pro key: exactly 100 × 200 and 5 × 429 with the contract body', async () => {
      const pro = await system.ownerWithKey('burst', 'pro', ['read'])
      const responses = await Promise.all(Array.from({ length: 105 }, () => health(pro.key)))
      expect(countStatuses(responses)).toEqual({ 200: 100, 429: 5 })

      const allowed = responses.filter((r) => r.status === 200)
      for (const r of allowed) expect(rateHeaders(r)).toMatchObject({ limit: '100', reset: unix('2031-05-06T11:00:00Z') })
      // Every allowed request saw its own place in the count: 99 left, 98 left, … 0 left.
      const remaining = allowed.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b)
      expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => i))

      for (const r of responses.filter((r) => r.status === 429)) {
        expect(r.headers.get('content-type')).toContain('application/json')
        expect(await r.json()).toEqual({
          ok: false,
          error: 'rate_limit',
          message: expect.any(String),
          limit: 100,
          used: 100,
          retry_after_seconds: 2670, // 10:15:30.250 → 11:00:00, rounded up
        })
        expect(r.headers.get('retry-after')).toBe('2670')
        expect(rateHeaders(r)).toEqual({ limit: '100', remaining: '0', reset: unix('2031-05-06T11:00:00Z') })
      }

      // The five 429s were not counted: the hour's counter stands at exactly 100, so one more hit is the 101st.
      expect(await limiter.hit(pro.keyId, 1000, now)).toMatchObject({ allowed: true, used: 101 })
    })

    test('remaining counts down, and /health reports the same counters as the headers', async () => {
      const pro = await system.ownerWithKey('counter', 'pro', ['read'])
      for (const used of [1, 2, 3]) {
        const response = await health(pro.key)
        expect(response.status).toBe(200)
        expect(rateHeaders(response)).toEqual({ limit: '100', remaining: String(100 - used), reset: unix('2031-05-06T11:00:00Z') })
        expect(((await response.json()) as Json).rate_limit).toEqual({
          limit: 100,
          used,
          remaining: 100 - used,
          reset_at: '2031-05-06T11:00:00.000Z',
        })
      }
    })

    test('an enterprise key gets 1000 an hour; an admin key is never limited and carries no X-RateLimit headers', async () => {
      const enterprise = await system.ownerWithKey('bigco', 'enterprise', ['read'])
      const admin = await system.ownerWithKey('staff', 'admin', ['read'])

      const enterpriseResponses = await inWaves(1001, 50, () => health(enterprise.key))
      expect(countStatuses(enterpriseResponses)).toEqual({ 200: 1000, 429: 1 })
      const rejected = enterpriseResponses.find((r) => r.status === 429)!
      expect(await rejected.json()).toMatchObject({ error: 'rate_limit', limit: 1000, used: 1000 })

      const adminResponses = await inWaves(1001, 50, () => health(admin.key))
      expect(countStatuses(adminResponses)).toEqual({ 200: 1001 })
      const rateLimitHeaderNames = new Set<string>()
      for (const r of adminResponses) r.headers.forEach((_, name) => name.startsWith('x-ratelimit') && rateLimitHeaderNames.add(name))
      expect([...rateLimitHeaderNames]).toEqual([])
      expect(((await adminResponses[0]!.json()) as Json).rate_limit).toBeNull()
      // Nothing was counted for the admin key: a first hit on its counter is the first of the hour.
      expect(await limiter.hit(admin.keyId, 10, now)).toMatchObject({ used: 1 })
    })

    test('the limits are configuration: RATE_LIMIT_PRO and RATE_LIMIT_ENTERPRISE are honoured', async () => {
      const pro = await system.ownerWithKey('tinypro', 'pro', ['read'])
      const enterprise = await system.ownerWithKey('tinyent', 'enterprise', ['read'])
      const configured = buildApp({
        keys: system.keys,
        limiter,
        limits: loadConfig({ RATE_LIMIT_PRO: '3', RATE_LIMIT_ENTERPRISE: '5' }).rateLimits,
        clock: () => now,
        log: { info: quiet, error: quiet },
        accessLog: true,
        zones: system.zones,
        inventory: system.inventory,
        feed: system.feed,
        briefings: system.briefings,
        webhooks: system.webhooks,
        quota: system.quota,
      })
      const get = (key: string) =>
        configured.handle(new Request('http://localhost/api/v1/health', { headers: { authorization: `Bearer ${key}` } }))

      const proStatuses = []
      for (let i = 0; i < 4; i++) proStatuses.push((await get(pro.key)).status)
      expect(proStatuses).toEqual([200, 200, 200, 429])
      const entStatuses = []
      for (let i = 0; i < 6; i++) entStatuses.push((await get(enterprise.key)).status)
      expect(entStatuses).toEqual([200, 200, 200, 200, 200, 429])
      expect(rateHeaders(await get(enterprise.key))).toMatchObject({ limit: '5', remaining: '0' })
    })

    test('auth failures (401, 403) are never counted; a request that passes the scope check counts even if it then fails', async () => {
      const reader = await system.ownerWithKey('reader', 'pro', ['read'])
      const lapsed = await system.ownerWithKey('lapsed', 'free', ['read'])
      const mangled = reader.key.slice(0, -1) + (reader.key.endsWith('a') ? 'b' : 'a')

      for (let i = 0; i < 3; i++) {
        const denied = await system.request('/api/v1/briefings/investor', { method: 'POST', key: reader.key, body: '{}' })
        expect(denied.status).toBe(403)
        expect(await denied.json()).toMatchObject({ error: 'scope_denied' })

        const badKey = await health(mangled)
        expect(badKey.status).toBe(401)
        expect(badKey.headers.get('x-ratelimit-limit')).toBeNull()

        const free = await health(lapsed.key)
        expect(free.status).toBe(403)
        expect(await free.json()).toMatchObject({ error: 'tier_required' })
        expect(free.headers.get('x-ratelimit-limit')).toBeNull()
      }

      const unknownPath = await system.request('/api/v1/nowhere', { key: reader.key })
      expect(unknownPath.status).toBe(404)
      expect(rateHeaders(unknownPath)).toMatchObject({ limit: '100', remaining: '99' })

      const after = await health(reader.key)
      expect(((await after.json()) as Json).rate_limit).toMatchObject({ used: 2, remaining: 98 })
      expect(await limiter.hit(lapsed.keyId, 100, now)).toMatchObject({ used: 1 })
    })

    test('the counter resets exactly at the UTC hour boundary (10:59:59.999 → 11:00:00.000)', async () => {
      const pro = await system.ownerWithKey('boundary', 'pro', ['read'])

      now = new Date('2031-05-06T10:59:59.999Z')
      const lastMillisecond = await inWaves(101, 101, () => health(pro.key))
      expect(countStatuses(lastMillisecond)).toEqual({ 200: 100, 429: 1 })
      const refused = lastMillisecond.find((r) => r.status === 429)!
      expect(await refused.json()).toMatchObject({ error: 'rate_limit', used: 100, retry_after_seconds: 1 })
      expect(refused.headers.get('retry-after')).toBe('1')
      expect(rateHeaders(refused)).toEqual({ limit: '100', remaining: '0', reset: unix('2031-05-06T11:00:00Z') })

      now = new Date('2031-05-06T11:00:00.000Z')
      const first = await health(pro.key)
      expect(first.status).toBe(200)
      expect(rateHeaders(first)).toEqual({ limit: '100', remaining: '99', reset: unix('2031-05-06T12:00:00Z') })
      expect(((await first.json()) as Json).rate_limit).toEqual({
        limit: 100,
        used: 1,
        remaining: 99,
        reset_at: '2031-05-06T12:00:00.000Z',
      })

      const restOfHour = await inWaves(100, 100, () => health(pro.key))
      expect(countStatuses(restOfHour)).toEqual({ 200: 99, 429: 1 })
      const refusedAgain = restOfHour.find((r) => r.status === 429)!
      expect(await refusedAgain.json()).toMatchObject({ used: 100, retry_after_seconds: 3600 })
      expect(refusedAgain.headers.get('retry-after')).toBe('3600')
    })
  })
}
