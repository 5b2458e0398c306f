import type { FeedRecord } from '../../src/domain/listings/feed.ts'
import { DEFAULT_FX } from '../../src/domain/market/fx.ts'

/** n / d, d > 0. */
export type Fraction = { n: bigint; d: bigint }

/** A feed number as the exact decimal it was written as (its shortest representation). */
export function decimal(value: number): Fraction {
  const [whole, fraction = ''] = String(value).split('.')
  return { n: BigInt(whole! + fraction), d: 10n ** BigInt(fraction.length) }
}

/** Whole cents of a local price in USD: price × 100 / rate exactly, halves up (all positive). */
export function usdCents(price: number, rate: number): number {
  const [p, r] = [decimal(price), decimal(rate)]
  const [n, d] = [p.n * r.d * 100n, p.d * r.n]
  return Number((2n * n + d) / (2n * d))
}

/** Whether a local price converts to an exact half US cent at the reference rate. */
export function isHalfCent(record: FeedRecord): boolean {
  const [p, r] = [decimal(record.price), decimal(DEFAULT_FX[record.currency])]
  return (p.n * r.d * 200n) % (p.d * r.n) === 0n && (p.n * r.d * 100n) % (p.d * r.n) !== 0n
}

/**
 * One listing in `every` priced at an exact half US cent, (k + ½) cents in its currency, near its
 * price: the prices an audit found converted in floating point and rounded down about one time in ten.
 */
export function halfCentPrices(records: FeedRecord[], every = 3): FeedRecord[] {
  const ids = [...new Set(records.map((r) => r.source_id))]
  const chosen = new Set(ids.filter((_, i) => i % every === 0))
  return records.map((record) => {
    if (!chosen.has(record.source_id)) return record
    const rate = decimal(DEFAULT_FX[record.currency])
    const k = BigInt(Math.floor((record.price * 100) / DEFAULT_FX[record.currency]))
    // (2k + 1) × rate / 200 in units of 10^-5: 200 = 2³ × 5², so it is a whole number.
    const scaled = ((2n * k + 1n) * rate.n * 100_000n) / (200n * rate.d)
    return { ...record, price: Number(`${scaled / 100_000n}.${String(scaled % 100_000n).padStart(5, '0')}`) }
  })
}
