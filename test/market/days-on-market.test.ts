import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { daysOnMarket, daysOnMarketChangesAt } from '../../src/domain/market/statistics.ts'
import { medianDaysOnMarket, medianDaysOnMarketChangesAt } from '../../src/domain/market/zone-statistics.ts'

const DAY_MS = 86_400_000

describe('when median days on market change (answers are kept until then)', () => {
  it('the value holds until the instant given, and is different from it on', () => {
    const instants = fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 })
    fc.assert(
      fc.property(instants, fc.integer({ min: -5 * DAY_MS, max: 400 * DAY_MS }), fc.boolean(), (listed, age, halfMs) => {
        const median = listed + (halfMs ? 0.5 : 0)
        const now = listed + age
        const at = medianDaysOnMarketChangesAt(now, median, 3)
        const value = medianDaysOnMarket(now, median, 3)
        expect(at).toBeGreaterThan(now)
        expect(medianDaysOnMarket(Math.ceil(at) - 1, median, 3)).toBe(value)
        expect(medianDaysOnMarket(Math.ceil(at), median, 3)).toBeCloseTo(value! + 0.1, 10)
      }),
    )
  })

  it('a tenth of a day steps at its half: 0.1 day = 2.4 h, so 1.2 h after listing', () => {
    const listed = Date.parse('2026-05-01T00:00:00Z')
    expect(medianDaysOnMarketChangesAt(listed, listed, 3)).toBe(Date.parse('2026-05-01T01:12:00Z'))
    expect(medianDaysOnMarketChangesAt(listed - DAY_MS, listed, 3)).toBe(Date.parse('2026-05-01T01:12:00Z'))
  })

  it('never, when there is no median', () => {
    expect(medianDaysOnMarketChangesAt(0, null, 10)).toBe(Number.POSITIVE_INFINITY)
    expect(medianDaysOnMarketChangesAt(0, 0, 2)).toBe(Number.POSITIVE_INFINITY)
  })
})

describe('when a listing\'s days on market change', () => {
  it('the value holds until the instant given, and is one more from it on', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }), fc.integer({ min: -5 * DAY_MS, max: 400 * DAY_MS }), (listed, age) => {
        const now = listed + age
        const at = daysOnMarketChangesAt(now, listed)
        expect(at).toBeGreaterThan(now)
        expect(daysOnMarket(at - 1, listed)).toBe(daysOnMarket(now, listed))
        expect(daysOnMarket(at, listed)).toBe(daysOnMarket(now, listed) + 1)
      }),
    )
  })
})
