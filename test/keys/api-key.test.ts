import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { formatApiKey, hashApiKey, isWellFormedApiKey, keyHint } from '../../src/domain/keys/api-key.ts'
import { cryptoRandom } from '../../src/shared/random.ts'
import { BASE62 } from '../../src/shared/base62.ts'

const base62 = fc.string({ unit: fc.constantFrom(...BASE62), minLength: 32, maxLength: 32 })

describe('API key format', () => {
  test('is mrd_ + 32 base62 + 6 base62 checksum characters', () => {
    const key = formatApiKey(cryptoRandom.base62(32))
    expect(key).toMatch(/^mrd_[0-9A-Za-z]{38}$/)
    expect(isWellFormedApiKey(key)).toBe(true)
  })

  test('any single changed character is caught by the checksum', () => {
    fc.assert(
      fc.property(base62, fc.integer({ min: 4, max: 41 }), fc.constantFrom(...BASE62), (random, position, replacement) => {
        const key = formatApiKey(random)
        fc.pre(key[position] !== replacement)
        const typo = key.slice(0, position) + replacement + key.slice(position + 1)
        expect(isWellFormedApiKey(typo)).toBe(false)
      }),
    )
  })

  test.each(['', 'mrd_', 'xyz_' + 'a'.repeat(38), 'mrd_' + 'a'.repeat(37), 'mrd_' + 'a'.repeat(39), 'mrd_' + '-'.repeat(38)])(
    'rejects %j',
    (text) => expect(isWellFormedApiKey(text)).toBe(false),
  )

  test('random parts are unbiased base62 and never repeat', () => {
    const seen = new Set(Array.from({ length: 2000 }, () => cryptoRandom.base62(32)))
    expect(seen.size).toBe(2000)
  })

  test('stores as SHA-256 hex and shows a hint that cannot rebuild the key', () => {
    const key = formatApiKey('0123456789abcdefghijABCDEFGHIJkl')
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/)
    expect(hashApiKey(key)).toBe(hashApiKey(key))
    expect(keyHint(key)).toBe(`${key.slice(0, 8)}…${key.slice(-4)}`)
    expect(keyHint(key).length).toBeLessThan(14)
  })
})
