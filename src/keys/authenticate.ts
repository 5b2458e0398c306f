import type { ApiTier } from '../owners/owner.ts'
import { AppError } from '../shared/errors.ts'
import { hashApiKey, isWellFormedApiKey } from './api-key.ts'
import type { Scope } from './key.ts'
import type { IndexedKey, IndexedOwner } from './key-index.ts'

export type Principal = { keyId: string; ownerId: string; tier: ApiTier; scopes: Scope[] }

export type KeyLookup = { key(hash: string): IndexedKey | undefined; owner(id: string): IndexedOwner | undefined }

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i

/**
 * `auth_required` when no bearer key is presented, `invalid_key` when the key is malformed, has a
 * bad checksum, is unknown or revoked, or its owner is inactive; `tier_required` for free owners.
 * Malformed keys are refused before any lookup. Messages never echo the key.
 */
export function authenticate(authorization: string | null, lookup: KeyLookup): Principal {
  if (!authorization?.trim()) {
    throw new AppError('auth_required', 'send your API key as "Authorization: Bearer <API_KEY>"')
  }
  const match = BEARER.exec(authorization.trim())
  if (!match) {
    throw new AppError('auth_required', 'the Authorization header must be "Bearer <API_KEY>"')
  }
  const text = match[1]!
  if (!isWellFormedApiKey(text)) {
    throw new AppError('invalid_key', 'the API key is malformed or mistyped (checksum mismatch)')
  }
  const key = lookup.key(hashApiKey(text))
  if (!key) throw new AppError('invalid_key', 'the API key is not recognised')
  if (key.status === 'revoked') throw new AppError('invalid_key', 'the API key has been revoked')
  const owner = lookup.owner(key.ownerId)
  if (!owner || owner.status !== 'active') throw new AppError('invalid_key', 'the owner of this API key is inactive')
  if (owner.tier === 'free') {
    throw new AppError('tier_required', 'API access requires the pro tier or higher; this account is on the free tier')
  }
  return { keyId: key.keyId, ownerId: key.ownerId, tier: owner.tier, scopes: key.scopes }
}
