import { createHash } from 'node:crypto'

/** A seeded pseudo-random source (sfc32): the same seed gives the same sequence on every runtime. */
export type Prng = {
  /** Uniform in [0, 1). */
  next(): number
  between(min: number, max: number): number
  /** Integer in [min, max]. */
  int(min: number, max: number): number
  chance(probability: number): boolean
  pick<T>(values: readonly T[]): T
  /** Picks by weight; weights need not sum to 1. */
  weighted<T>(entries: readonly (readonly [T, number])[]): T
  /** Standard normal (Box–Muller). */
  normal(): number
}

export function seededPrng(seed: string): Prng {
  const digest = createHash('sha256').update(seed).digest()
  let a = digest.readUInt32LE(0)
  let b = digest.readUInt32LE(4)
  let c = digest.readUInt32LE(8)
  let d = digest.readUInt32LE(12)
  const next = () => {
    a >>>= 0
    b >>>= 0
    c >>>= 0
    d >>>= 0
    const t = (a + b) | 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) | 0
    c = (c << 21) | (c >>> 11)
    d = (d + 1) | 0
    const out = (t + d) | 0
    c = (c + out) | 0
    return (out >>> 0) / 4294967296
  }
  for (let i = 0; i < 16; i++) next()
  const prng: Prng = {
    next,
    between: (min, max) => min + (max - min) * next(),
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (probability) => next() < probability,
    pick: (values) => values[Math.floor(next() * values.length)]!,
    weighted(entries) {
      const total = entries.reduce((sum, [, w]) => sum + w, 0)
      let roll = next() * total
      for (const [value, weight] of entries) {
        roll -= weight
        if (roll < 0) return value
      }
      return entries[entries.length - 1]![0]
    },
    normal() {
      const u = 1 - next()
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next())
    },
  }
  return prng
}
