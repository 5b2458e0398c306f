import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import {
  hourWindow,
  rateDecision,
  rateLimitExceeded,
  rateLimitHeaders,
  retryAfterSeconds,
} from '../../src/ratelimit/port.ts'

describe('hourWindow', () => {
  test('is the UTC hour containing now', () => {
    const { start, resetAt } = hourWindow(new Date('2031-12-31T23:42:07.5Z'))
    expect(start.toISOString()).toBe('2031-12-31T23:00:00.000Z')
    expect(resetAt.toISOString()).toBe('2032-01-01T00:00:00.000Z')
  })

  test('an instant on the hour starts a new window', () => {
    expect(hourWindow(new Date('2031-05-06T11:00:00.000Z')).start.toISOString()).toBe('2031-05-06T11:00:00.000Z')
    expect(hourWindow(new Date('2031-05-06T10:59:59.999Z')).start.toISOString()).toBe('2031-05-06T10:00:00.000Z')
  })
})

describe('retryAfterSeconds', () => {
  test('rounds up, so it is 1 in the last millisecond and 3600 on the hour', () => {
    expect(retryAfterSeconds(new Date('2031-05-06T10:59:59.999Z'))).toBe(1)
    expect(retryAfterSeconds(new Date('2031-05-06T10:59:59.000Z'))).toBe(1)
    expect(retryAfterSeconds(new Date('2031-05-06T10:59:58.999Z'))).toBe(2)
    expect(retryAfterSeconds(new Date('2031-05-06T11:00:00.000Z'))).toBe(3600)
    expect(retryAfterSeconds(new Date('2031-05-06T11:00:00.001Z'))).toBe(3600)
  })

  test('waiting that long always reaches the next hour, and one second less never does', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_102_444_800_000 }), (ms) => {
        const now = new Date(ms)
        const seconds = retryAfterSeconds(now)
        const reset = hourWindow(now).resetAt.getTime()
        return seconds >= 1 && seconds <= 3600 && ms + seconds * 1000 >= reset && ms + (seconds - 1) * 1000 < reset
      }),
    )
  })
})

describe('HTTP shape of a decision', () => {
  const now = new Date('2031-05-06T10:15:30.250Z')

  test('headers carry limit, remaining and the reset as unix seconds, and the same in the IETF draft form (seconds until the reset)', () => {
    expect(rateLimitHeaders(rateDecision(100, 42, true, now))).toEqual({
      'X-RateLimit-Limit': '100',
      'X-RateLimit-Remaining': '58',
      'X-RateLimit-Reset': String(Date.parse('2031-05-06T11:00:00Z') / 1000),
      'RateLimit-Policy': '"hour";q=100;w=3600',
      // 10:15:30.250 → 11:00:00 is 2669.75 s, rounded up as Retry-After is.
      RateLimit: '"hour";r=58;t=2670',
    })
  })

  test('a rejection is a rate_limit error with the spec §7 fields and Retry-After', () => {
    const error = rateLimitExceeded(rateDecision(100, 100, false, now))
    expect(error.code).toBe('rate_limit')
    expect(error.body()).toMatchObject({ ok: false, error: 'rate_limit', limit: 100, used: 100, retry_after_seconds: 2670 })
    expect(error.message).toMatch(/100/)
    expect(error.headers).toMatchObject({ 'Retry-After': '2670', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Limit': '100' })
  })
})
