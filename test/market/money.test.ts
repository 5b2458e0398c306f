import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DEFAULT_FX, toUsd, usdText } from '../../src/domain/market/fx.ts'
import { CURRENCIES } from '../../src/domain/market/vocabulary.ts'

/**
 * Conversion to USD against an independent exact computation: the price and the rate as written
 * (decimal text), the quotient as a rational in BigInt, rounded once to cents, halves away from zero.
 */

/** A decimal text as numerator / 10^places. */
const rational = (text: string) => {
  const [whole, fraction = ''] = text.split('.')
  return { n: BigInt(whole! + fraction), d: 10n ** BigInt(fraction.length) }
}

/** The exact USD amount of `price / rate`, as text with cents. */
function expectedUsd(price: string, rate: string): string {
  const [p, r] = [rational(price), rational(rate)]
  const [n, d] = [p.n * r.d * 100n, p.d * r.n]
  const cents = n / d + (2n * (n % d) >= d ? 1n : 0n)
  return `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`
}

/** A positive decimal of up to 15 significant digits, as a feed would write it. */
const decimalText = (maxWholeDigits: number, maxPlaces: number) =>
  fc
    .tuple(fc.bigInt({ min: 0n, max: 10n ** BigInt(maxWholeDigits) - 1n }), fc.integer({ min: 0, max: maxPlaces }), fc.bigInt({ min: 1n, max: 10n ** 5n - 1n }))
    .map(([whole, places, fraction]) => (places === 0 ? `${whole + 1n}` : `${whole}.${String(fraction % 10n ** BigInt(places)).padStart(places, '0')}`))
    .filter((text) => rational(text).n > 0n && text.replace('.', '').replace(/^0+/, '').length <= 15)

const RATES = CURRENCIES.map((c) => String(DEFAULT_FX[c]))

describe('exact conversion to USD', () => {
  it('equals the exact rational computation, for the reference rates and any other', () => {
    let checked = 0
    fc.assert(
      fc.property(decimalText(10, 5), fc.oneof(fc.constantFrom(...RATES), decimalText(4, 4)), (price, rate) => {
        checked += 1
        expect(usdText(Number(price), Number(rate))).toBe(expectedUsd(price, rate))
      }),
      { numRuns: 20_000 },
    )
    expect(checked).toBe(20_000)
  })

  it('rounds every price that converts to an exact half cent up, away from zero', () => {
    let checked = 0
    for (const currency of CURRENCIES) {
      const rate = rational(String(DEFAULT_FX[currency]))
      fc.assert(
        fc.property(fc.bigInt({ min: 0n, max: 10n ** 9n }), (k) => {
          // (k + ½) cents in local currency: (2k + 1) × rate / 200, a terminating decimal.
          const n = (2n * k + 1n) * rate.n * 10n ** 5n
          const d = 200n * rate.d
          expect(n % d).toBe(0n)
          const scaled = n / d
          const price = `${scaled / 10n ** 5n}.${String(scaled % 10n ** 5n).padStart(5, '0')}`
          checked += 1
          expect(toUsd(Number(price), currency, DEFAULT_FX).price_usd).toBe(Number(k + 1n) / 100)
          expect(usdText(Number(price), DEFAULT_FX[currency])).toBe(expectedUsd(price, String(DEFAULT_FX[currency])))
        }),
        { numRuns: 2_000 },
      )
    }
    expect(checked).toBe(2_000 * CURRENCIES.length)
  })

  it('converts the audit\'s case exactly: 2,464,500.03875 GTQ at 7.75 is 318,000.005 USD, published 318,000.01', () => {
    expect((2_464_500.03875 * 100) / 7.75).toBeLessThan(31_800_000.5)
    expect(toUsd(2_464_500.03875, 'GTQ', DEFAULT_FX)).toEqual({ price_usd: 318_000.01, fx_rate: 7.75 })
  })

  it('reads numbers written with an exponent as the decimals they are', () => {
    expect(usdText(1e-7, 1)).toBe('0.00')
    expect(usdText(5e-3, 1)).toBe('0.01')
    expect(usdText(1e13, 2)).toBe('5000000000000.00')
  })
})
