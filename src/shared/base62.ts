export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** Turns random bytes into `length` base62 characters without modulo bias (rejection sampling). */
export function base62FromBytes(bytes: Uint8Array, length: number): string {
  let out = ''
  for (const byte of bytes) {
    if (byte >= 248) continue // 248 = 4 * 62: larger values would favour the first characters
    out += BASE62[byte % 62]
    if (out.length === length) return out
  }
  throw new Error(`not enough random bytes for ${length} base62 characters`)
}

/** Fixed-width base62 of a non-negative integer, left-padded with '0'. */
export function base62Fixed(value: number, width: number): string {
  let out = ''
  let rest = value
  while (rest > 0) {
    out = BASE62[rest % 62] + out
    rest = Math.floor(rest / 62)
  }
  return out.padStart(width, '0')
}

const DIGIT = new Map([...BASE62].map((char, value) => [char.charCodeAt(0), value]))

/** The integer that `base62Fixed` wrote as `text` (NaN if a character is not base62). */
export function base62Value(text: string): number {
  let value = 0
  for (let i = 0; i < text.length; i++) value = value * 62 + (DIGIT.get(text.charCodeAt(i)) ?? Number.NaN)
  return value
}
