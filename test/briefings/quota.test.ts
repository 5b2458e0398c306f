import { expect, test } from 'vitest'
import { decideCharge, quotaExceeded, quotaMonth, usageOf } from '../../src/domain/briefings/quota.ts'

const policy = { pro: 50, enterprise: 500 }

test('the quota month is the UTC calendar month', () => {
  expect(quotaMonth(new Date('2026-05-31T23:59:59.999Z'))).toBe('2026-05')
  expect(quotaMonth(new Date('2026-06-01T00:00:00.000Z'))).toBe('2026-06')
  // 20:00 on 31 May in Guatemala (UTC-6) is already June in UTC
  expect(quotaMonth(new Date('2026-05-31T20:00:00-06:00'))).toBe('2026-06')
})

test('a charge appends at the expected revision until the quota is used up', () => {
  expect(decideCharge(policy, 'pro', 'no_stream')).toEqual({ kind: 'append', expected: 'no_stream' })
  expect(decideCharge(policy, 'pro', 48)).toEqual({ kind: 'append', expected: 48 })
  expect(decideCharge(policy, 'pro', 49)).toEqual({ kind: 'exhausted', usage: { used: 50, quota: 50, unlimited: false } })
  expect(decideCharge(policy, 'enterprise', 49)).toEqual({ kind: 'append', expected: 49 })
  expect(decideCharge(policy, 'admin', 100_000)).toEqual({ kind: 'append', expected: 'any' })
  expect(decideCharge({ pro: 0, enterprise: 0 }, 'pro', 'no_stream')).toMatchObject({ kind: 'exhausted' })
})

test('usage: admins are unlimited with quota 0', () => {
  expect(usageOf(policy, 'admin', 7)).toEqual({ used: 7, quota: 0, unlimited: true })
  expect(usageOf(policy, 'enterprise', 7)).toEqual({ used: 7, quota: 500, unlimited: false })
})

test('quota_exceeded carries used, quota and the reset time, and a Retry-After until then', () => {
  const error = quotaExceeded({ used: 50, quota: 50, unlimited: false }, '2026-12', new Date('2026-12-31T23:59:30Z'))
  expect(error.code).toBe('quota_exceeded')
  expect(error.body()).toMatchObject({ ok: false, error: 'quota_exceeded', used: 50, quota: 50, resets_at: '2027-01-01T00:00:00.000Z' })
  expect(error.headers).toEqual({ 'retry-after': '30' })
})
