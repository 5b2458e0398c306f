import { describe, expect, test } from 'vitest'
import { briefingGenerated } from '../../src/domain/briefings/events.ts'
import { type ChargeBriefing, lastChargeAt, type QuotaEvent, quotaDecider, quotaExceeded, quotaMonth, usageOf, usedAt } from '../../src/domain/briefings/quota.ts'
import { localAnalyst } from '../../src/domain/briefings/writer.ts'
import { PERSONAS } from '../../src/domain/briefings/personas/index.ts'
import { specify } from '../support/given-when-then.ts'
import { facts } from './fixtures.ts'

const policy = { pro: 50, enterprise: 500 }
const input = PERSONAS.investor.parse({ zone: 'Zona 10', profile: 'balanced' })
const draft = await localAnalyst.write(PERSONAS.investor, input, facts())

/** A briefing generated for acme at `at`, charged to the month of `at`. */
const generated = (at: string, n = 1) =>
  briefingGenerated({
    briefingId: `brf_${n}`,
    asker: { ownerId: 'acme', keyId: 'key_a' },
    persona: 'investor',
    input,
    cacheKey: 'investor:GT:{}',
    month: quotaMonth(new Date(at)),
    draft,
    attempt: null,
    at: new Date(at),
  })
const charge = (tier: ChargeBriefing['tier'], at = '2026-05-20T10:00:00Z'): ChargeBriefing => ({ type: 'ChargeBriefing', tier, briefing: generated(at), now: new Date(at) })
const charged = (n: number): QuotaEvent[] => Array.from({ length: n }, (_, i) => ({ type: 'BriefingGenerated', data: generated('2026-05-02T00:00:00Z', i) }))

describe('the quota decider (one owner, one month)', () => {
  const quota = specify(quotaDecider(policy))

  test('a charge is recorded while the tier allows one more this month', () => {
    quota.given([]).when(charge('pro')).then([{ type: 'BriefingGenerated', data: charge('pro').briefing }])
    quota.given(charged(49)).when(charge('pro')).thenState({ used: 50 })
    quota.given(charged(499)).when(charge('enterprise')).thenState({ used: 500 })
  })

  test('used up: quota_exceeded with used, quota and the reset time, and nothing recorded', () => {
    quota.given(charged(50)).when(charge('pro')).thenRefused({ code: 'quota_exceeded', message: /quota of 50 is used up \(50 used\); it resets at 2026-06-01T00:00:00.000Z/ })
    const refused = (() => {
      try {
        quotaDecider(policy).decide(charge('pro'), { used: 50 })
      } catch (error) {
        return error as ReturnType<typeof quotaExceeded>
      }
      throw new Error('charged')
    })()
    expect(refused.extra).toEqual({ used: 50, quota: 50, resets_at: '2026-06-01T00:00:00.000Z' })
    specify(quotaDecider({ pro: 0, enterprise: 0 })).given([]).when(charge('pro')).thenRefused({ code: 'quota_exceeded' })
  })

  test('admins are unlimited: charged whatever the count', () => {
    quota.given(charged(1000)).when(charge('admin')).thenState({ used: 1001 })
  })

  test('the reset is the first instant of the next UTC month, also across a year', () => {
    specify(quotaDecider({ pro: 1, enterprise: 1 }))
      .given(charged(1))
      .when(charge('pro', '2026-12-31T23:59:30Z'))
      .thenRefused({ code: 'quota_exceeded', message: /resets at 2027-01-01T00:00:00.000Z/ })
  })
})

test('the quota month is the UTC calendar month', () => {
  expect(quotaMonth(new Date('2026-05-31T23:59:59.999Z'))).toBe('2026-05')
  expect(quotaMonth(new Date('2026-06-01T00:00:00.000Z'))).toBe('2026-06')
  // 20:00 on 31 May in Guatemala (UTC-6) is already June in UTC
  expect(quotaMonth(new Date('2026-05-31T20:00:00-06:00'))).toBe('2026-06')
})

test('the usage is the quota stream\'s length: n charges end at revision n - 1, the fold and every reading agree', () => {
  const decider = quotaDecider(policy)
  for (const n of [0, 1, 2, 50]) {
    const folded = charged(n).reduce(decider.evolve, decider.initialState)
    const lastRevision = n === 0 ? 'no_stream' : n - 1
    expect(usedAt(lastRevision)).toBe(folded.used)
    expect(lastChargeAt(folded.used)).toBe(lastRevision)
  }
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
