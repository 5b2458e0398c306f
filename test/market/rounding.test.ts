import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DEFAULT_FX, toUsd } from '../../src/domain/market/fx.ts'
import { divideRounded, sharesSummingToOne } from '../../src/domain/market/rounding.ts'

describe('rounding of published numbers', () => {
  it('rounds halves away from zero, like PostgreSQL round(numeric)', () => {
    expect(divideRounded(5, 2)).toBe(3)
    expect(divideRounded(-5, 2)).toBe(-3)
    expect(divideRounded(7, 3)).toBe(2)
    expect(divideRounded(-7, 3)).toBe(-2)
    expect(divideRounded(1, 4)).toBe(0)
  })

  it('converts local prices to USD cents with the rate it reports', () => {
    expect(toUsd(775, 'GTQ', DEFAULT_FX)).toEqual({ price_usd: 100, fx_rate: 7.75 })
    expect(toUsd(1, 'GTQ', DEFAULT_FX)).toEqual({ price_usd: 0.13, fx_rate: 7.75 })
    // 0.01 BZD is exactly half a US cent: rounds up.
    expect(toUsd(0.01, 'BZD', DEFAULT_FX)).toEqual({ price_usd: 0.01, fx_rate: 2 })
    expect(toUsd(250_000, 'USD', DEFAULT_FX)).toEqual({ price_usd: 250_000, fx_rate: 1 })
  })

  it('gives shares that sum to exactly 1 and stay within one unit of the exact ratio', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(100_000), { minLength: 1, maxLength: 6 }), (counts) => {
        const total = counts.reduce((a, b) => a + b, 0)
        const shares = sharesSummingToOne(counts)
        if (total === 0) {
          expect(shares.every((s) => s === 0)).toBe(true)
          return
        }
        expect(shares.reduce((a, b) => a + Math.round(b * 10_000), 0)).toBe(10_000)
        shares.forEach((share, i) => expect(Math.abs(share - counts[i]! / total)).toBeLessThan(0.0001 + 1e-12))
      }),
    )
  })

  it('makes two shares add up to exactly 1 in floating point, whatever the split', () => {
    fc.assert(
      fc.property(fc.nat(5000), fc.nat(5000), (a, b) => {
        fc.pre(a + b > 0)
        const [x, y] = sharesSummingToOne([a, b])
        expect(x! + y!).toBe(1)
      }),
    )
  })
})
