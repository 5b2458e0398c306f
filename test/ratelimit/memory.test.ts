import { expect, test } from 'vitest'
import { memoryRateLimiter } from '../../src/ratelimit/memory.ts'
import { rateLimiterContract } from './contract.ts'

rateLimiterContract('memory', async () => memoryRateLimiter())

test('memory: a new hour drops the counters of earlier hours', async () => {
  const limiter = memoryRateLimiter()
  const tenOClock = new Date('2031-05-06T10:30:00Z')
  await limiter.hit('key_a', 5, tenOClock)
  await limiter.hit('key_a', 5, tenOClock)
  await limiter.hit('key_b', 5, new Date('2031-05-06T11:00:00Z'))
  // Only a dropped counter can start again from 1 (clocks do not run backwards in production).
  expect((await limiter.hit('key_a', 5, tenOClock)).used).toBe(1)
})
