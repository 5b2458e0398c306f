import { createHash } from 'node:crypto'
import { type Static, Type } from '@sinclair/typebox'
import { derivedUuid } from '../../shared/derived-uuid.ts'
import { AppError, echo, fail, invalidRequest } from '../../shared/errors.ts'
import type { Asker } from './events.ts'
import { oneOf, PERSONA_IDS, type PersonaId } from './personas/define.ts'
import { quotaMonth } from './quota.ts'
import { At } from '../schemas.ts'
import type { Decider } from '../decider.ts'

/**
 * `Idempotency-Key` on `POST /briefings/{persona}`, with Stripe's semantics: the first result of a
 * key is kept for 24 hours and returned again for the same request; the same key with another
 * request is a 409. Keys belong to an owner (all its API keys share them).
 *
 * Each (owner, key) has a stream, and every decision is one stream's: a request claims the key
 * (appended expecting the stream's revision, so of concurrent claims in any processes exactly one
 * wins), charges the briefing or records the cache hit in the owner's month streams, then completes
 * the key with the result, expecting its claim's revision. A crash or a failed append between those
 * steps is recovered by the next request with the key, never charged twice:
 *
 * - The runs of one request under a key form an **attempt**, opened by the first claim. At most one
 *   charge exists per attempt: it carries the attempt and an event id derived from it
 *   (`attemptEventId`), so a second charge of the attempt is recognised by the store as a retry.
 * - A claim whose lease has passed (its claimant died, or is late) is taken over by the same
 *   request, which continues the attempt: it first looks for the attempt's charge, and completes the
 *   key from it if there is one.
 * - Errors are not results and release the key. A release ends the attempt only when nothing of it
 *   can have been recorded: its only run failed before writing anything. Otherwise the key is free
 *   for the same request, which continues the attempt, and another request gets a 409 until the
 *   attempt's 24 hours are over.
 */

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000
/** A claim lasts this long unless the service is told otherwise (the writer's worst case and then some). */
export const DEFAULT_LEASE_MS = 60_000
export const IDEMPOTENCY_HEADER = 'Idempotency-Key'
/** 1 to 255 visible ASCII characters: UUIDs, ULIDs, hashes, "order-42/attempt-1"; no spaces. */
/** An Idempotency-Key: 1 to 255 visible ASCII characters (the header's schema in the OpenAPI document too). */
export const IDEMPOTENCY_KEY_PATTERN = '^[!-~]{1,255}$'
const KEY_PATTERN = new RegExp(IDEMPOTENCY_KEY_PATTERN)

export const IDEMPOTENCY_CATEGORY = 'idempotency'
export const REPLAY_CATEGORY = 'replay'
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
/** `idempotency-<owner>-<32 hex>`: the key is hashed so any allowed character is safe in a stream name. */
export const idempotencyStream = (ownerId: string, key: string) => `${IDEMPOTENCY_CATEGORY}-${ownerId}-${sha256(key).slice(0, 32)}`
/** Where replays served to an owner in a month were recorded before decision 0107 (read by the audit; nothing is appended there now). */
export const legacyReplayStream = (ownerId: string, month: string) => `${REPLAY_CATEGORY}-${ownerId}-${month}`
/** What "the same request" means: the persona and the validated input (`requestKeyOf`, cache-key.ts: the cache key without what else the answer depends on). */
export const requestHashOf = (requestKey: string) => sha256(requestKey)
/** The id of an attempt's charge or cache hit: the same for every run of the attempt, whatever it decided. */
export const attemptEventId = (keyStream: string, attemptId: string, type: 'BriefingGenerated' | 'BriefingServedFromCache') =>
  derivedUuid(`${keyStream}\n${attemptId}\n${type}`)

/** The header's value, or null when it was not sent; a malformed value is a 400 naming the header. */
export function parseIdempotencyKey(header: string | null | undefined): string | null {
  if (header === null || header === undefined) return null
  if (KEY_PATTERN.test(header)) return header
  throw invalidRequest(`the ${IDEMPOTENCY_HEADER} header must be 1 to 255 visible ASCII characters without spaces, e.g. a UUID`, [
    { field: IDEMPOTENCY_HEADER, message: 'Expected 1 to 255 visible ASCII characters without spaces' },
  ])
}

const Common = {
  owner_id: Type.String(),
  /** The API key that sent the request (keys are scoped to the owner, not to the API key). */
  key_id: Type.String(),
  idempotency_key: Type.String(),
}

/** Fields added when charges and results were written apart are optional: older claims and releases lack them. */
export const IdempotencyEventSchemas = {
  IdempotencyKeyClaimed: Type.Object({
    ...Common,
    persona: oneOf(PERSONA_IDS),
    request_hash: Type.String(),
    /** This claim (a run of the request); the attempt it continues, and when that attempt was opened. */
    claim_id: Type.Optional(Type.String()),
    attempt_id: Type.Optional(Type.String()),
    attempt_at: Type.Optional(At),
    at: At,
    lease_until: At,
  }),
  /** The first result. */
  IdempotencyKeyCompleted: Type.Object({
    ...Common,
    request_hash: Type.String(),
    briefing_id: Type.String(),
    response: Type.Record(Type.String(), Type.Unknown()),
    at: At,
    expires_at: At,
  }),
  /** The claimed request failed with `error`; the key is free again. */
  IdempotencyKeyReleased: Type.Object({
    ...Common,
    error: Type.String(),
    /** The run had started to record its charge or cache hit: its attempt stays open. */
    may_have_recorded: Type.Optional(Type.Boolean()),
    at: At,
  }),
  /**
   * The first result served again, free, to a request of the same key: recorded on the key's stream,
   * where it was decided (before decision 0107, in `replay-<owner>-<month>`, which the audit still reads).
   */
  BriefingReplayed: Type.Object({
    briefing_id: Type.String(),
    owner_id: Type.String(),
    key_id: Type.String(),
    persona: oneOf(PERSONA_IDS),
    idempotency_key: Type.String(),
    /** When the first result was recorded. */
    first_at: At,
    quota_month: Type.String(),
    at: At,
  }),
}
export type IdempotencyEvent = {
  [K in keyof typeof IdempotencyEventSchemas]: { type: K; data: Static<(typeof IdempotencyEventSchemas)[K]> }
}[keyof typeof IdempotencyEventSchemas]
export const isIdempotencyEvent = (event: { type: string }): event is IdempotencyEvent => Object.hasOwn(IdempotencyEventSchemas, event.type)

export type BriefingReplayed = Static<(typeof IdempotencyEventSchemas)['BriefingReplayed']>

/** The replay to `asker` at `at` of the first result of `key` (recorded at `firstAt`). */
export const briefingReplayed = (replay: {
  briefingId: string
  asker: Asker
  persona: PersonaId
  key: string
  firstAt: string
  at: Date
}): BriefingReplayed => ({
  briefing_id: replay.briefingId,
  owner_id: replay.asker.ownerId,
  key_id: replay.asker.keyId,
  persona: replay.persona,
  idempotency_key: replay.key,
  first_at: replay.firstAt,
  quota_month: quotaMonth(replay.at),
  at: replay.at.toISOString(),
})

// ---- the key's state -----------------------------------------------------------------------

/** The runs of one request under a key that share at most one charge (see above). */
export type Attempt = { id: string; openedAt: string; requestHash: string; runs: number }

export type IdempotencyState =
  /** `open`: an attempt that may have recorded a charge or a cache hit, continued by the same request. */
  | { status: 'free'; open: Attempt | null }
  /** `attempt` null: claimed by an earlier version, which recorded the charge with the result at once. */
  | { status: 'claimed'; claimId: string | null; requestHash: string; leaseUntil: string; attempt: Attempt | null }
  | { status: 'completed'; requestHash: string; briefingId: string; response: Record<string, unknown>; at: string; expiresAt: string }

export const initialIdempotency: IdempotencyState = { status: 'free', open: null }

/** The month an attempt's charge and cache hit are recorded in: the month it was opened (the request's). */
export const attemptMonth = (attempt: Attempt) => quotaMonth(new Date(attempt.openedAt))

const attemptOf = (state: IdempotencyState): Attempt | null =>
  state.status === 'claimed' ? state.attempt : state.status === 'free' ? state.open : null

export function evolveIdempotency(state: IdempotencyState, event: IdempotencyEvent): IdempotencyState {
  switch (event.type) {
    case 'IdempotencyKeyClaimed': {
      const { data } = event
      const previous = attemptOf(state)
      const attempt = data.attempt_id
        ? {
            id: data.attempt_id,
            openedAt: data.attempt_at ?? data.at,
            requestHash: data.request_hash,
            runs: previous?.id === data.attempt_id ? previous.runs + 1 : 1,
          }
        : null
      return { status: 'claimed', claimId: data.claim_id ?? null, requestHash: data.request_hash, leaseUntil: data.lease_until, attempt }
    }
    case 'IdempotencyKeyCompleted':
      return {
        status: 'completed',
        requestHash: event.data.request_hash,
        briefingId: event.data.briefing_id,
        response: event.data.response,
        at: event.data.at,
        expiresAt: event.data.expires_at,
      }
    case 'IdempotencyKeyReleased': {
      const attempt = attemptOf(state)
      const mayBeCharged = attempt !== null && (event.data.may_have_recorded === true || attempt.runs > 1)
      return { status: 'free', open: mayBeCharged ? attempt : null }
    }
    case 'BriefingReplayed':
      // Serving the result again changes nothing of the key.
      return state
    default: {
      const never: never = event
      throw new Error(`unhandled ${JSON.stringify(never)}`)
    }
  }
}

// ---- what a request does with its key ------------------------------------------------------

export type IdempotentRequest = { ownerId: string; keyId: string; key: string; persona: PersonaId; requestHash: string }

export type KeyStep =
  /** Claim the key: a new attempt (`continuing` null), or the attempt to continue, whose charge is looked for first. */
  | { kind: 'claim'; continuing: Attempt | null }
  /** The same request already has a result: serve it again. */
  | { kind: 'replay'; response: Record<string, unknown>; briefingId: string; firstAt: string }
  /** The same request is running elsewhere: ask again, at the latest when its lease ends. */
  | { kind: 'wait'; until: Date }
  | { kind: 'conflict'; error: AppError }

const conflict = (key: string, what: string): KeyStep => ({
  kind: 'conflict',
  error: fail.idempotencyConflict(
    `${IDEMPOTENCY_HEADER} ${echo(key)} ${what}; a key stands for one request (persona and body) for 24 hours: send a new key for a new request`,
  ),
})
const IN_USE = 'is in use by a request with a different body or persona'

/** Pure: what a request with an idempotency key does, given the key's recorded state and the time. */
export function nextStep(state: IdempotencyState, request: IdempotentRequest, now: Date): KeyStep {
  /** Claim over an attempt that may hold a charge: only the same request may, until the attempt's 24 hours are over. */
  const claimOver = (attempt: Attempt | null): KeyStep => {
    if (attempt === null || Date.parse(attempt.openedAt) + IDEMPOTENCY_WINDOW_MS <= now.getTime()) return { kind: 'claim', continuing: null }
    return attempt.requestHash === request.requestHash ? { kind: 'claim', continuing: attempt } : conflict(request.key, IN_USE)
  }
  switch (state.status) {
    case 'free':
      return claimOver(state.open)
    case 'claimed':
      if (Date.parse(state.leaseUntil) <= now.getTime()) return claimOver(state.attempt)
      if (state.requestHash !== request.requestHash) return conflict(request.key, IN_USE)
      return { kind: 'wait', until: new Date(state.leaseUntil) }
    case 'completed':
      if (Date.parse(state.expiresAt) <= now.getTime()) return { kind: 'claim', continuing: null }
      if (state.requestHash !== request.requestHash) return conflict(request.key, 'was used for a different body or persona')
      return { kind: 'replay', response: state.response, briefingId: state.briefingId, firstAt: state.at }
    default: {
      const never: never = state
      throw new Error(`unhandled ${JSON.stringify(never)}`)
    }
  }
}

// ---- the idempotency decider: one key's stream ---------------------------------------------

export type IdempotencyCommand =
  /** Claim the key for a run of `request`, identified by `claimId` (a new id), holding it `leaseMs`. */
  | { type: 'ClaimKey'; request: IdempotentRequest; claimId: string; leaseMs: number; at: Date }
  /** Record the first result, by the run that holds the key. */
  | { type: 'CompleteKey'; request: IdempotentRequest; claimId: string; briefingId: string; response: Record<string, unknown>; at: Date }
  /** The run failed with `error`; `mayHaveRecorded` when it had started to record its charge or cache hit. */
  | { type: 'ReleaseKey'; request: IdempotentRequest; claimId: string; error: string; mayHaveRecorded: boolean; at: Date }

const common = (request: IdempotentRequest) => ({ owner_id: request.ownerId, key_id: request.keyId, idempotency_key: request.key })

/**
 * Decides a key's events. A claim is decided only when the key can be claimed (see nextStep): a
 * replay or a wait records nothing, and another request's key is refused with
 * `idempotency_conflict`. Only the run holding the key completes or releases it: a run whose claim
 * was taken over records nothing.
 */
export function decideIdempotency(command: IdempotencyCommand, state: IdempotencyState): IdempotencyEvent[] {
  const holds = state.status === 'claimed' && state.claimId === command.claimId
  switch (command.type) {
    case 'ClaimKey': {
      const step = nextStep(state, command.request, command.at)
      if (step.kind === 'conflict') throw step.error
      if (step.kind !== 'claim') return []
      const at = command.at.toISOString()
      return [
        {
          type: 'IdempotencyKeyClaimed',
          data: {
            ...common(command.request),
            persona: command.request.persona,
            request_hash: command.request.requestHash,
            claim_id: command.claimId,
            attempt_id: step.continuing?.id ?? command.claimId,
            attempt_at: step.continuing?.openedAt ?? at,
            at,
            lease_until: new Date(command.at.getTime() + command.leaseMs).toISOString(),
          },
        },
      ]
    }
    case 'CompleteKey':
      if (!holds) return []
      return [
        {
          type: 'IdempotencyKeyCompleted',
          data: {
            ...common(command.request),
            request_hash: command.request.requestHash,
            briefing_id: command.briefingId,
            response: command.response,
            at: command.at.toISOString(),
            expires_at: new Date(command.at.getTime() + IDEMPOTENCY_WINDOW_MS).toISOString(),
          },
        },
      ]
    case 'ReleaseKey':
      if (!holds) return []
      return [
        {
          type: 'IdempotencyKeyReleased',
          data: { ...common(command.request), error: command.error, may_have_recorded: command.mayHaveRecorded, at: command.at.toISOString() },
        },
      ]
    default: {
      const never: never = command
      throw new Error(`unhandled ${JSON.stringify(never)}`)
    }
  }
}

export const idempotencyDecider: Decider<IdempotencyCommand, IdempotencyEvent, IdempotencyState> = {
  decide: decideIdempotency,
  evolve: evolveIdempotency,
  initialState: initialIdempotency,
  is: isIdempotencyEvent,
}
