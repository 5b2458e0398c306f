/**
 * Exact decimals for money: a value is `digits / 10^scale` in BigInt, so no binary fraction sits
 * between a feed's price and a published amount (docs/statistics.md, "Price in USD").
 */
export type Decimal = { digits: bigint; scale: number }

const NUMBER_TEXT = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/

/**
 * The decimal a number was written as: its shortest representation (ECMAScript Number::toString),
 * which is the written text for every decimal of up to 15 significant digits.
 */
export function decimalOf(value: number): Decimal {
  // Whole numbers (most areas) need no text: the same decimal, without the parse.
  if (Number.isSafeInteger(value)) return { digits: BigInt(value), scale: 0 }
  const match = NUMBER_TEXT.exec(String(value))
  if (!match || !Number.isFinite(value)) throw new Error(`not a finite number: ${value}`)
  const [, sign, whole, fraction = '', exponent = '0'] = match
  const scale = fraction.length - Number(exponent)
  const digits = BigInt(`${sign}${whole}${fraction}`)
  return scale >= 0 ? { digits, scale } : { digits: digits * 10n ** BigInt(-scale), scale: 0 }
}

/** numerator / denominator (denominator > 0) rounded once, half away from zero. */
export function divideHalfAwayFromZero(numerator: bigint, denominator: bigint): bigint {
  const magnitude = (2n * (numerator < 0n ? -numerator : numerator) + denominator) / (2n * denominator)
  return numerator < 0n ? -magnitude : magnitude
}

/** Whole cents of `amount / rate`, both exact decimals (rate > 0), rounded once, half away from zero. */
export function centsOfQuotient(amount: Decimal, rate: Decimal): bigint {
  // (a / 10^p) × 100 / (b / 10^r) = a × 100 × 10^r / (b × 10^p)
  return divideHalfAwayFromZero(amount.digits * 100n * 10n ** BigInt(rate.scale), rate.digits * 10n ** BigInt(amount.scale))
}

/** Whole cents as decimal text with two places: 31800001n → "318000.01". */
export function centsText(cents: bigint): string {
  const magnitude = cents < 0n ? -cents : cents
  return `${cents < 0n ? '-' : ''}${magnitude / 100n}.${String(magnitude % 100n).padStart(2, '0')}`
}
