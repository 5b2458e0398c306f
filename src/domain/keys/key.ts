import { type Static, Type } from '@sinclair/typebox'
import type { Owner } from '../owners/owner.ts'
import { fail } from '../../shared/errors.ts'
import type { Decider } from '../decider.ts'
import { Actor, At } from '../schemas.ts'

export const SCOPES = ['read', 'write'] as const
export const Scope = Type.Union(SCOPES.map((s) => Type.Literal(s)))
export type Scope = Static<typeof Scope>
/** What each scope lets a key do. */
export const SCOPE_ALLOWS: Record<Scope, string> = { read: 'GET endpoints', write: 'POST /briefings' }


/** No field of any key event holds the plaintext key: only its SHA-256 and a display hint. */
export const KeyEventSchemas = {
  ApiKeyIssued: Type.Object({
    key_id: Type.String(),
    owner_id: Type.String(),
    scopes: Type.Array(Scope),
    key_hash: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    hint: Type.String(),
    label: Type.Union([Type.String({ maxLength: 200 }), Type.Null()]),
    /** The key this one succeeds (`key roll`); absent for a key issued afresh. */
    rolled_from: Type.Optional(Type.String()),
    by: Actor,
    at: At,
  }),
  /** The key was rolled: `successor_key_id` replaces it, and it stays valid until `grace_ends_at` (no event marks that moment). */
  ApiKeyRolled: Type.Object({
    key_id: Type.String(),
    owner_id: Type.String(),
    successor_key_id: Type.String(),
    grace_ends_at: At,
    by: Actor,
    at: At,
  }),
  ApiKeyRevoked: Type.Object({
    key_id: Type.String(),
    owner_id: Type.String(),
    by: Actor,
    reason: Type.Union([Type.String({ maxLength: 500 }), Type.Null()]),
    at: At,
  }),
}
type Schemas = typeof KeyEventSchemas
export type KeyEvent = { [K in keyof Schemas]: { type: K; data: Static<Schemas[K]> } }[keyof Schemas]

/** What a key's stream says of it; `rolledTo` is set once it was rolled, and it expires at the grace end. */
type KeyFacts = {
  keyId: string
  ownerId: string
  scopes: Scope[]
  label: string | null
  rolledFrom: string | null
  rolledTo: { keyId: string; graceEndsAt: string } | null
}
export type ApiKey = { status: 'none' } | ({ status: 'active' } & KeyFacts) | ({ status: 'revoked' } & KeyFacts)

/** The longest grace a rolled key may keep: 30 days. */
export const MAX_GRACE_MS = 30 * 24 * 3600_000

export type KeyCommand =
  | {
      type: 'IssueApiKey'
      keyId: string
      ownerId: string
      scopes: string[]
      keyHash: string
      hint: string
      label: string | null
      actor: string
      at: string
      /** The owner the key is for and the acting owner, as their streams stand. */
      ownerState: Owner
      actorState: Owner
      /** Set when the key succeeds a rolled one: that key's id. */
      rolledFrom?: string
    }
  | {
      type: 'RollApiKey'
      keyId: string
      /** The id the successor will be issued under (`IssueApiKey` with `rolledFrom`, on its own stream). */
      successorKeyId: string
      /** How long the rolled key stays valid after `at`: 0 to MAX_GRACE_MS. */
      graceMs: number
      actor: string
      at: string
      ownerState: Owner
      actorState: Owner
    }
  | { type: 'RevokeApiKey'; keyId: string; actor: string; reason: string | null; at: string; actorState: Owner }

export const keyStream = (keyId: string) => `apikey-${keyId}`
export const initialKey: ApiKey = { status: 'none' }

const isActiveAdmin = (o: Owner) => o.status === 'active' && o.tier === 'admin'

/** Who may issue: an enterprise (or admin) owner for itself; an active admin for any pro or enterprise owner. */
function checkIssuer(ownerId: string, owner: Owner, actorId: string, actor: Owner) {
  if (owner.status === 'unregistered') throw fail.notFound(`owner ${ownerId} does not exist`)
  if (owner.status === 'inactive') throw fail.forbidden(`owner ${ownerId} is inactive`)
  if (owner.tier === 'free') throw fail.tierRequired(`owner ${ownerId} is on the free tier, which has no API access`)
  if (actor.status === 'unregistered') throw fail.forbidden(`actor ${actorId} is not a known owner`)
  const self = actorId === ownerId
  if (self && (owner.tier === 'enterprise' || owner.tier === 'admin')) return
  if (!self && isActiveAdmin(actor) && (owner.tier === 'pro' || owner.tier === 'enterprise')) return
  throw fail.forbidden(
    self
      ? `a ${owner.tier} owner cannot issue its own keys; an admin issues them`
      : `${actorId} may not issue keys for ${ownerId}: only an active admin issues keys for pro and enterprise owners`,
  )
}

function checkScopes(scopes: string[]): Scope[] {
  const unique = [...new Set(scopes)]
  if (unique.length === 0) throw fail.invalidRequest('a key needs at least one scope (read, write)')
  const bad = unique.filter((s) => !(SCOPES as readonly string[]).includes(s))
  if (bad.length > 0) throw fail.invalidRequest(`unknown scope(s): ${bad.join(', ')}; allowed: read, write`)
  return SCOPES.filter((s) => unique.includes(s))
}

export function decideKey(command: KeyCommand, key: ApiKey): KeyEvent[] {
  switch (command.type) {
    case 'IssueApiKey': {
      if (key.status !== 'none') throw fail.conflict(`key ${command.keyId} already exists`)
      checkIssuer(command.ownerId, command.ownerState, command.actor, command.actorState)
      const scopes = checkScopes(command.scopes)
      return [
        {
          type: 'ApiKeyIssued',
          data: {
            key_id: command.keyId,
            owner_id: command.ownerId,
            scopes,
            key_hash: command.keyHash,
            hint: command.hint,
            label: command.label,
            ...(command.rolledFrom === undefined ? {} : { rolled_from: command.rolledFrom }),
            by: command.actor,
            at: command.at,
          },
        },
      ]
    }
    case 'RollApiKey': {
      if (key.status === 'none') throw fail.notFound(`key ${command.keyId} does not exist`)
      if (key.status === 'revoked') throw fail.conflict(`key ${command.keyId} is revoked`)
      if (key.rolledTo) {
        throw fail.conflict(`key ${command.keyId} was already rolled: ${key.rolledTo.keyId} succeeds it (roll that one instead)`)
      }
      if (!Number.isInteger(command.graceMs) || command.graceMs < 0 || command.graceMs > MAX_GRACE_MS) {
        throw fail.invalidRequest('the grace period must be from 0 (the old key stops at once) to 30 days')
      }
      // Rolling issues a key: the same people may do it as may issue one for that owner.
      checkIssuer(key.ownerId, command.ownerState, command.actor, command.actorState)
      return [
        {
          type: 'ApiKeyRolled',
          data: {
            key_id: key.keyId,
            owner_id: key.ownerId,
            successor_key_id: command.successorKeyId,
            grace_ends_at: new Date(Date.parse(command.at) + command.graceMs).toISOString(),
            by: command.actor,
            at: command.at,
          },
        },
      ]
    }
    case 'RevokeApiKey': {
      if (key.status === 'none') throw fail.notFound(`key ${command.keyId} does not exist`)
      if (key.status === 'revoked') throw fail.conflict(`key ${command.keyId} is already revoked`)
      if (command.actor !== key.ownerId && !isActiveAdmin(command.actorState)) {
        throw fail.forbidden(`${command.actor} may not revoke key ${command.keyId}: only its owner or an admin`)
      }
      return [
        {
          type: 'ApiKeyRevoked',
          data: { key_id: key.keyId, owner_id: key.ownerId, by: command.actor, reason: command.reason, at: command.at },
        },
      ]
    }
    default: {
      const never: never = command
      throw new Error(`unknown command ${JSON.stringify(never)}`)
    }
  }
}

export function evolveKey(key: ApiKey, event: KeyEvent): ApiKey {
  switch (event.type) {
    case 'ApiKeyIssued': {
      const d = event.data
      return { status: 'active', keyId: d.key_id, ownerId: d.owner_id, scopes: d.scopes, label: d.label, rolledFrom: d.rolled_from ?? null, rolledTo: null }
    }
    case 'ApiKeyRolled':
      return key.status === 'none' ? key : { ...key, rolledTo: { keyId: event.data.successor_key_id, graceEndsAt: event.data.grace_ends_at } }
    case 'ApiKeyRevoked':
      return key.status === 'none' ? key : { ...key, status: 'revoked' }
    default: {
      const never: never = event
      throw new Error(`unknown event ${JSON.stringify(never)}`)
    }
  }
}

export const isKeyEvent = (event: { type: string }): event is KeyEvent => Object.hasOwn(KeyEventSchemas, event.type)

/** A key's decisions: issuing it (who may, with which scopes), rolling it (who may, how long the grace) and revoking it (who may). */
export const keyDecider: Decider<KeyCommand, KeyEvent, ApiKey> = {
  decide: decideKey,
  evolve: evolveKey,
  initialState: initialKey,
  is: isKeyEvent,
}

/** When a key stops letting its holder in by itself: the grace end of a roll, in milliseconds (null: never rolled). */
export const keyExpiresAt = (key: { rolledTo: { graceEndsAt: string } | null }): number | null =>
  key.rolledTo ? Date.parse(key.rolledTo.graceEndsAt) : null

/** A key's status at the time `now`: a rolled key is `rolled` until its grace end (`expiresAt`, ms), `expired` from then. */
export function keyStatusAt(key: { status: 'active' | 'revoked'; expiresAt: number | null }, now: number): 'active' | 'rolled' | 'expired' | 'revoked' {
  if (key.status === 'revoked') return 'revoked'
  if (key.expiresAt === null) return 'active'
  return now >= key.expiresAt ? 'expired' : 'rolled'
}

/**
 * Why a key does not let its holder in, or `valid`: it must be active and not past the grace of a
 * roll, and its owner active and above the free tier.
 */
export type KeyStanding = 'valid' | 'revoked' | 'expired' | 'owner_inactive' | 'free_tier'

/**
 * The one rule of key validity, for authentication and for the audit trail alike, at the time `now`
 * (milliseconds): a rolled key expires at its grace end without any event, so time is an argument.
 * `expiresAt` is that grace end in milliseconds (null: the key was never rolled).
 */
export function keyStanding(
  key: { status: 'active' | 'revoked'; expiresAt: number | null },
  owner: { status: string; tier?: string } | undefined,
  now: number,
): KeyStanding {
  const status = keyStatusAt(key, now)
  if (status === 'revoked' || status === 'expired') return status
  if (!owner || owner.status !== 'active') return 'owner_inactive'
  if (owner.tier === 'free') return 'free_tier'
  return 'valid'
}
