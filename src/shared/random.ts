import { base62FromBytes } from './base62.ts'

/** Source of randomness, injected so that domain code stays pure and tests stay deterministic. */
export type RandomSource = { base62(length: number): string; uuid(): string }

export const cryptoRandom: RandomSource = {
  base62(length) {
    // 2x headroom: rejection sampling discards ~3% of bytes.
    return base62FromBytes(crypto.getRandomValues(new Uint8Array(length * 2 + 16)), length)
  },
  uuid: () => crypto.randomUUID(),
}

export type Clock = () => Date
export const systemClock: Clock = () => new Date()
