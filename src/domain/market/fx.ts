import { centsOfQuotient, centsText, decimalOf } from './decimal.ts'
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

/**
 * A local price in US dollars as decimal text with cents: the price and the rate as the decimals
 * they were written as, divided exactly, rounded once to cents, half away from zero.
 */
export const usdText = (priceLocal: number, rate: number): string => centsText(centsOfQuotient(decimalOf(priceLocal), decimalOf(rate)))

/** A local price in US dollars (`usdText` as a number), with the rate used. */
export function toUsd(priceLocal: number, currency: Currency, fx: FxTable): UsdPrice {
  const rate = fx[currency]
  return { price_usd: Number(usdText(priceLocal, rate)), fx_rate: rate }
}
