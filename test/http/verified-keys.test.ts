import { describe, expect, it } from 'vitest'
import { formatApiKey, hashApiKey } from '../../src/domain/keys/api-key.ts'
import { authenticate, KEY_REFUSALS, type KeyLookup, VerifiedKeys } from '../../src/http/authenticate.ts'
import type { IndexedKey } from '../../projections/owners-and-keys/key-index.ts'
import { cryptoRandom } from '../../src/shared/random.ts'

/** Keys verified once are looked up by their remembered hash: bounded, and never a way around the index. */
describe('the verified keys of the gate', () => {
  const keys = new Map<string, IndexedKey>()
  const lookup: KeyLookup = { key: (hash) => keys.get(hash), owner: () => ({ tier: 'pro', status: 'active' }) }
  const issue = (id: string) => {
    const key = formatApiKey(cryptoRandom.base62(32))
    keys.set(hashApiKey(key), { keyId: id, ownerId: 'o', scopes: ['read'], status: 'active', expiresAt: null })
    return key
  }

  it('random keys, well formed or not, are not remembered: the memory does not grow', () => {
    const verified = new VerifiedKeys(5)
    for (let i = 0; i < 100; i++) {
      expect(authenticate(`Bearer ${formatApiKey(cryptoRandom.base62(32))}`, lookup, 0, verified)).toBe(KEY_REFUSALS.unknown)
      expect(authenticate(`Bearer mk_live_${cryptoRandom.base62(40)}`, lookup, 0, verified)).toBe(KEY_REFUSALS.malformed)
    }
    expect(verified.size).toBe(0)
  })

  it('known keys are remembered up to the bound, the oldest first out, and each still answers as the index says', () => {
    const verified = new VerifiedKeys(5)
    const issued = Array.from({ length: 8 }, (_, i) => issue(`key_${i}`))
    for (const key of issued) expect(authenticate(`Bearer ${key}`, lookup, 0, verified)).toMatchObject({ keyId: keys.get(hashApiKey(key))!.keyId })
    expect(verified.size).toBe(5)
    expect(verified.hashOf(issued[0]!)).toBeUndefined()
    expect(verified.hashOf(issued[7]!)).toBe(hashApiKey(issued[7]!))
    // Revoked while remembered: refused at the next request, as the index says.
    keys.set(hashApiKey(issued[7]!), { ...keys.get(hashApiKey(issued[7]!))!, status: 'revoked' })
    expect(authenticate(`Bearer ${issued[7]}`, lookup, 0, verified)).toBe(KEY_REFUSALS.revoked)
    keys.delete(hashApiKey(issued[6]!))
    expect(authenticate(`Bearer ${issued[6]}`, lookup, 0, verified)).toBe(KEY_REFUSALS.unknown)
  })
})
