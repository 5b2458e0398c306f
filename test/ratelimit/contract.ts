import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { RateDecision, RateLimiter } from '../../src/ratelimit/port.ts'

/** A subject no other test (or suite run) has used, so tests share one limiter without interfering. */
export const freshSubject = () => `key_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`

/** Starts every hit at once; returns how many were allowed and all decisions. */
export async function burst(hits: Array<() => RateDecision | Promise<RateDecision>>) {
  const decisions = await Promise.all(hits.map((hit) => hit()))
  return { allowed: decisions.filter((d) => d.allowed).length, decisions }
}

/** The behaviour every RateLimiter adapter must show (docs/limits.md). */
export function rateLimiterContract(adapter: string, open: () => Promise<RateLimiter>) {
  describe(`RateLimiter contract: ${adapter}`, () => {
    let limiter: RateLimiter
    beforeAll(async () => {
      limiter = await open()
    })
    afterAll(async () => {
      await limiter?.close()
    })

    const midHour = new Date('2031-05-06T10:15:30.250Z')

    test('counts up to the limit, then rejects with used === limit and remaining 0', async () => {
      const subject = freshSubject()
      const seen = []
      for (let i = 0; i < 4; i++) seen.push(await limiter.hit(subject, 3, midHour))
      expect(seen.map((d) => [d.allowed, d.used, d.remaining])).toEqual([
        [true, 1, 2],
        [true, 2, 1],
        [true, 3, 0],
        [false, 3, 0],
      ])
      expect(seen.every((d) => d.limit === 3)).toBe(true)
    })

    test('rejected requests are not counted', async () => {
      const subject = freshSubject()
      for (let i = 0; i < 2; i++) await limiter.hit(subject, 2, midHour)
      for (let i = 0; i < 5; i++) expect((await limiter.hit(subject, 2, midHour)).used).toBe(2)
      // Had the five rejections counted, the counter would stand at 7 and a limit of 4 would still reject.
      const raised = await limiter.hit(subject, 4, midHour)
      expect(raised).toMatchObject({ allowed: true, used: 3, remaining: 1 })
    })

    test('a limit lowered mid-hour (tier downgrade) rejects with used === the new limit', async () => {
      const subject = freshSubject()
      for (let i = 0; i < 5; i++) await limiter.hit(subject, 10, midHour)
      expect(await limiter.hit(subject, 3, midHour)).toMatchObject({ allowed: false, limit: 3, used: 3, remaining: 0 })
    })

    test('separate subjects are counted independently', async () => {
      const [a, b] = [freshSubject(), freshSubject()]
      await limiter.hit(a, 2, midHour)
      await limiter.hit(a, 2, midHour)
      expect((await limiter.hit(a, 2, midHour)).allowed).toBe(false)
      expect(await limiter.hit(b, 2, midHour)).toMatchObject({ allowed: true, used: 1, remaining: 1 })
    })

    test('105 concurrent hits with limit 100: exactly 100 allowed, 5 rejected', async () => {
      const subject = freshSubject()
      const { allowed, decisions } = await burst(Array.from({ length: 105 }, () => () => limiter.hit(subject, 100, midHour)))
      expect(allowed).toBe(100)
      const usedByAllowed = decisions.filter((d) => d.allowed).map((d) => d.used)
      expect(new Set(usedByAllowed).size).toBe(100) // every allowed hit got its own count
      expect(Math.max(...usedByAllowed)).toBe(100)
      expect(decisions.filter((d) => !d.allowed).every((d) => d.used === 100 && d.remaining === 0)).toBe(true)
    })

    test('the window resets exactly at the UTC hour boundary', async () => {
      const subject = freshSubject()
      const hourStart = new Date('2031-05-06T10:00:00.000Z')
      const lastMs = new Date('2031-05-06T10:59:59.999Z')
      const nextHour = new Date('2031-05-06T11:00:00.000Z')

      expect((await limiter.hit(subject, 2, hourStart)).used).toBe(1)
      const last = await limiter.hit(subject, 2, lastMs) // same window as 10:00:00.000
      expect(last).toMatchObject({ allowed: true, used: 2, retryAfterSeconds: 1 })
      const rejected = await limiter.hit(subject, 2, lastMs)
      expect(rejected).toMatchObject({ allowed: false, used: 2, retryAfterSeconds: 1 })
      expect(rejected.resetAt.toISOString()).toBe('2031-05-06T11:00:00.000Z')

      const fresh = await limiter.hit(subject, 2, nextHour)
      expect(fresh).toMatchObject({ allowed: true, used: 1, remaining: 1, retryAfterSeconds: 3600 })
      expect(fresh.resetAt.toISOString()).toBe('2031-05-06T12:00:00.000Z')
    })

    test('resetAt is the start of the next UTC hour and retryAfterSeconds counts up to it', async () => {
      const decision = await limiter.hit(freshSubject(), 5, midHour)
      expect(decision.resetAt.toISOString()).toBe('2031-05-06T11:00:00.000Z')
      expect(decision.retryAfterSeconds).toBe(2670) // 44 min 29.75 s, rounded up
    })
  })
}
