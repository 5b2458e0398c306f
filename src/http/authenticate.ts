import type { ApiTier } from '../domain/owners/owner.ts'
import { AppError, fail } from '../shared/errors.ts'
import { hashApiKey, isWellFormedApiKey } from '../domain/keys/api-key.ts'
import { keyStanding, type Scope } from '../domain/keys/key.ts'
import type { IndexedKey, IndexedOwner } from '../../projections/owners-and-keys/key-index.ts'

export type Principal = { keyId: string; ownerId: string; tier: ApiTier; scopes: Scope[] }

export type KeyLookup = { key(hash: string): IndexedKey | undefined; owner(id: string): IndexedOwner | undefined }

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i

/** The refusals, made once: their messages never depend on the request. */
export const KEY_REFUSALS = {
  noKey: fail.authRequired('send your API key as "Authorization: Bearer <API_KEY>"'),
  notBearer: fail.authRequired('the Authorization header must be "Bearer <API_KEY>"'),
  malformed: fail.invalidKey('the API key is malformed or mistyped (checksum mismatch)'),
  unknown: fail.invalidKey('the API key is not recognised'),
  revoked: fail.invalidKey('the API key has been revoked'),
  expired: fail.invalidKey('the API key was rolled and its grace period has ended: use its successor'),
  ownerInactive: fail.invalidKey('the owner of this API key is inactive'),
  freeTier: fail.tierRequired('API access requires the pro tier or higher; this account is on the free tier'),
}

/** Known keys remembered: enough for every key a busy server sees within minutes. */
const MAX_VERIFIED_KEYS = 10_000

/**
 * The hashes of presented keys that were well formed and found in the key index, so that a key
 * seen before is not decoded (base62, CRC32) and hashed (SHA-256) on every request. Only keys
 * the index knows are remembered, at most `max` (the oldest goes first): random keys cannot make it
 * grow, and it holds no standing: revocation, rolls and owners are checked on every request as before.
 */
export class VerifiedKeys {
  private readonly hashes = new Map<string, string>()

  constructor(private readonly max = MAX_VERIFIED_KEYS) {}

  hashOf(text: string): string | undefined {
    return this.hashes.get(text)
  }

  remember(text: string, hash: string): void {
    if (this.hashes.has(text)) return
    if (this.hashes.size >= this.max) this.hashes.delete(this.hashes.keys().next().value!)
    this.hashes.set(text, hash)
  }

  get size(): number {
    return this.hashes.size
  }
}

/**
 * The caller of a request at the time `now` (milliseconds), or why it is refused (returned, not
 * thrown: refusals are the common case under abuse). `auth_required` when no bearer key is
 * presented, `invalid_key` when the key is malformed, has a bad checksum, is unknown, revoked or past
 * the grace of a roll, or its owner is inactive; `tier_required` for free owners (the rule of
 * validity: keyStanding). Malformed keys are refused before any lookup. Messages never echo the key.
 * With `verified`, a key found before is looked up by its remembered hash.
 */
export function authenticate(authorization: string | null, lookup: KeyLookup, now: number, verified?: VerifiedKeys): Principal | AppError {
  const presented = authorization?.trim()
  if (!presented) return KEY_REFUSALS.noKey
  const match = BEARER.exec(presented)
  if (!match) return KEY_REFUSALS.notBearer
  const text = match[1]!
  let hash = verified?.hashOf(text)
  if (hash === undefined) {
    if (!isWellFormedApiKey(text)) return KEY_REFUSALS.malformed
    hash = hashApiKey(text)
  }
  const key = lookup.key(hash)
  if (!key) return KEY_REFUSALS.unknown
  verified?.remember(text, hash)
  const owner = lookup.owner(key.ownerId)
  switch (keyStanding(key, owner, now)) {
    case 'valid':
      return { keyId: key.keyId, ownerId: key.ownerId, tier: owner!.tier as ApiTier, scopes: key.scopes }
    case 'revoked':
      return KEY_REFUSALS.revoked
    case 'expired':
      return KEY_REFUSALS.expired
    case 'owner_inactive':
      return KEY_REFUSALS.ownerInactive
    case 'free_tier':
      return KEY_REFUSALS.freeTier
  }
}
