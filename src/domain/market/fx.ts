import { divideRounded, fromCents } from './rounding.ts'
import type { Currency } from './vocabulary.ts'

/** Units of each currency per US dollar. */
export type FxTable = Readonly<Record<Currency, number>>

/**
 * The reference table used unless the operator supplies another. PAB and BZD are pegged
 * (1 and 2 per USD); the others are fixed reference rates, so that re-running a feed converts
 * identically. Every price event records the rate it used, so the table can change later
 * without rewriting history.
 */
export const DEFAULT_FX: FxTable = {
  USD: 1,
  PAB: 1,
  BZD: 2,
  GTQ: 7.75,
  HNL: 26,
  CRC: 505,
  DOP: 62,
  BRL: 5.6,
}

export type UsdPrice = { price_usd: number; fx_rate: number }

/** A local price in US dollars (rounded half away from zero to cents), with the rate used. */
export function toUsd(priceLocal: number, currency: Currency, fx: FxTable): UsdPrice {
  const rate = fx[currency]
  return { price_usd: fromCents(divideRounded(priceLocal * 100, rate)), fx_rate: rate }
}
