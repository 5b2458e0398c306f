import { createHash } from 'node:crypto'
import { type Static, Type } from '@sinclair/typebox'
import { AppError, echo, invalidRequest } from '../../shared/errors.ts'
import { oneOf, PERSONA_IDS } from './personas/define.ts'

/**
 * `Idempotency-Key` on `POST /briefings/{persona}`, with Stripe's semantics: the first result of a
 * key is kept for 24 hours and returned again for the same request; the same key with another
 * request is a 409. Keys belong to an owner (all its API keys share them).
 *
 * Each (owner, key) has a stream. A request claims the key (append with the stream's revision as
 * the expected one, so of concurrent claims in any processes exactly one wins), then records the
 * result in the same atomic append as the charge or the cache hit. Errors release the key: they
 * are not results, and a retry runs afresh. A claim carries a lease, so a key whose claimant died
 * is taken over once the lease has passed; the claimant that outlived its lease cannot record its
 * result any more (its expected revision is gone), so a key still yields at most one charge.
 */

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000
/** A claim lasts this long unless the service is told otherwise (the writer's worst case and then some). */
export const DEFAULT_LEASE_MS = 60_000
export const IDEMPOTENCY_HEADER = 'Idempotency-Key'
/** 1 to 255 visible ASCII characters: UUIDs, ULIDs, hashes, "order-42/attempt-1"; no spaces. */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/

export const IDEMPOTENCY_CATEGORY = 'idempotency'
export const REPLAY_CATEGORY = 'replay'
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
/** `idempotency-<owner>-<32 hex>`: the key is hashed so any allowed character is safe in a stream name. */
export const idempotencyStream = (ownerId: string, key: string) => `${IDEMPOTENCY_CATEGORY}-${ownerId}-${sha256(key).slice(0, 32)}`
/** Replays served to an owner in a month, beside its quota and cache-hit streams (for the audit). */
export const replayStream = (ownerId: string, month: string) => `${REPLAY_CATEGORY}-${ownerId}-${month}`
/** What "the same request" means: the persona and the validated input (the briefing cache key). */
export const requestHashOf = (cacheKey: string) => sha256(cacheKey)

/** The header's value, or null when it was not sent; a malformed value is a 400 naming the header. */
export function parseIdempotencyKey(header: string | null | undefined): string | null {
  if (header === null || header === undefined) return null
  if (KEY_PATTERN.test(header)) return header
  throw invalidRequest(`the ${IDEMPOTENCY_HEADER} header must be 1 to 255 visible ASCII characters without spaces, e.g. a UUID`, [
    { field: IDEMPOTENCY_HEADER, message: 'Expected 1 to 255 visible ASCII characters without spaces' },
  ])
}

const At = Type.String({ format: 'date-time' })
const Common = {
  owner_id: Type.String(),
  /** The API key that sent the request (keys are scoped to the owner, not to the API key). */
  key_id: Type.String(),
  idempotency_key: Type.String(),
}

export const IdempotencyEventSchemas = {
  IdempotencyKeyClaimed: Type.Object({ ...Common, persona: oneOf(PERSONA_IDS), request_hash: Type.String(), at: At, lease_until: At }),
  /** The first result, recorded atomically with the charge or cache hit that produced it. */
  IdempotencyKeyCompleted: Type.Object({
    ...Common,
    request_hash: Type.String(),
    briefing_id: Type.String(),
    response: Type.Record(Type.String(), Type.Unknown()),
    at: At,
    expires_at: At,
  }),
  /** The claimed request failed with `error`; the key is free again. */
  IdempotencyKeyReleased: Type.Object({ ...Common, error: Type.String(), at: At }),
}
export type IdempotencyEvent = {
  [K in keyof typeof IdempotencyEventSchemas]: { type: K; data: Static<(typeof IdempotencyEventSchemas)[K]> }
}[keyof typeof IdempotencyEventSchemas]
export const isIdempotencyEvent = (event: { type: string }): event is IdempotencyEvent => Object.hasOwn(IdempotencyEventSchemas, event.type)

/** A first result served again, free; lives in `replay-<owner>-<month>`. */
export const BriefingReplayedSchema = Type.Object({
  briefing_id: Type.String(),
  owner_id: Type.String(),
  key_id: Type.String(),
  persona: oneOf(PERSONA_IDS),
  idempotency_key: Type.String(),
  /** When the first result was recorded. */
  first_at: At,
  quota_month: Type.String(),
  at: At,
})
export type BriefingReplayed = Static<typeof BriefingReplayedSchema>

export type IdempotencyState =
  | { status: 'free' }
  | { status: 'claimed'; requestHash: string; leaseUntil: string }
  | { status: 'completed'; requestHash: string; briefingId: string; response: Record<string, unknown>; at: string; expiresAt: string }

export const initialIdempotency: IdempotencyState = { status: 'free' }

export function evolveIdempotency(_state: IdempotencyState, event: IdempotencyEvent): IdempotencyState {
  switch (event.type) {
    case 'IdempotencyKeyClaimed':
      return { status: 'claimed', requestHash: event.data.request_hash, leaseUntil: event.data.lease_until }
    case 'IdempotencyKeyCompleted':
      return {
        status: 'completed',
        requestHash: event.data.request_hash,
        briefingId: event.data.briefing_id,
        response: event.data.response,
        at: event.data.at,
        expiresAt: event.data.expires_at,
      }
    case 'IdempotencyKeyReleased':
      return { status: 'free' }
    default: {
      const never: never = event
      throw new Error(`unhandled ${JSON.stringify(never)}`)
    }
  }
}

export type IdempotentRequest = { ownerId: string; keyId: string; key: string; persona: (typeof PERSONA_IDS)[number]; requestHash: string }

export type IdempotencyDecision =
  /** Nobody holds the key: run the request under this claim. */
  | { kind: 'claim'; event: Extract<IdempotencyEvent, { type: 'IdempotencyKeyClaimed' }> }
  /** The same request already has a result: serve it again. */
  | { kind: 'replay'; response: Record<string, unknown>; briefingId: string; firstAt: string }
  /** The same request is running elsewhere: ask again, at the latest when its lease ends. */
  | { kind: 'wait'; until: Date }
  | { kind: 'conflict'; error: AppError }

const conflict = (key: string, what: string) =>
  new AppError(
    'idempotency_conflict',
    `${IDEMPOTENCY_HEADER} ${echo(key)} ${what}; a key stands for one request (persona and body) for 24 hours: send a new key for a new request`,
  )

/** Pure: what a request with an idempotency key does, given the key's recorded state and the time. */
export function decideIdempotency(state: IdempotencyState, request: IdempotentRequest, now: Date, leaseMs: number): IdempotencyDecision {
  const claim = (): IdempotencyDecision => ({
    kind: 'claim',
    event: {
      type: 'IdempotencyKeyClaimed',
      data: {
        owner_id: request.ownerId,
        key_id: request.keyId,
        idempotency_key: request.key,
        persona: request.persona,
        request_hash: request.requestHash,
        at: now.toISOString(),
        lease_until: new Date(now.getTime() + leaseMs).toISOString(),
      },
    },
  })
  switch (state.status) {
    case 'free':
      return claim()
    case 'claimed':
      if (Date.parse(state.leaseUntil) <= now.getTime()) return claim()
      if (state.requestHash !== request.requestHash) return { kind: 'conflict', error: conflict(request.key, 'is in use by a request with a different body or persona') }
      return { kind: 'wait', until: new Date(state.leaseUntil) }
    case 'completed':
      if (Date.parse(state.expiresAt) <= now.getTime()) return claim()
      if (state.requestHash !== request.requestHash) return { kind: 'conflict', error: conflict(request.key, 'was used for a different body or persona') }
      return { kind: 'replay', response: state.response, briefingId: state.briefingId, firstAt: state.at }
    default: {
      const never: never = state
      throw new Error(`unhandled ${JSON.stringify(never)}`)
    }
  }
}
