import { type Static, Type } from '@sinclair/typebox'
import { CONFIDENCE_LEVELS } from './analysis.ts'
import { CACHE_TTL_MS } from './cache-key.ts'
import { oneOf, PERSONA_IDS, type PersonaId } from './personas/define.ts'
import type { BriefingInput } from './personas/index.ts'
import type { BriefingDraft } from './writer.ts'
import { At, Month } from '../schemas.ts'


const BriefingResult = Type.Object({
  verdict: Type.String(),
  confidence: oneOf(CONFIDENCE_LEVELS),
  headline: Type.String(),
  body_md: Type.String(),
})

/**
 * A generated briefing is a charge: it lives in the owner's quota stream for its month, so the
 * stream's length is the month's usage. A cache hit is free and lives in a stream of its own.
 */
export const BriefingEventSchemas = {
  BriefingGenerated: Type.Object({
    briefing_id: Type.String(),
    owner_id: Type.String(),
    key_id: Type.String(),
    persona: oneOf(PERSONA_IDS),
    /** The validated input with defaults applied (what the cache key was built from). */
    input: Type.Record(Type.String(), Type.Unknown()),
    cache_key: Type.String(),
    quota_month: Month,
    result: BriefingResult,
    writer: Type.String(),
    model: Type.String(),
    /** The Idempotency-Key the request carried, if any. */
    idempotency_key: Type.Optional(Type.String()),
    /** The attempt of that key it answers (see idempotency.ts): at most one charge per attempt. */
    attempt_id: Type.Optional(Type.String()),
    at: At,
    expires_at: At,
  }),
  BriefingServedFromCache: Type.Object({
    briefing_id: Type.String(),
    owner_id: Type.String(),
    key_id: Type.String(),
    persona: oneOf(PERSONA_IDS),
    cache_key: Type.String(),
    quota_month: Month,
    idempotency_key: Type.Optional(Type.String()),
    attempt_id: Type.Optional(Type.String()),
    at: At,
  }),
}
type Schemas = typeof BriefingEventSchemas
export type BriefingEvent = { [K in keyof Schemas]: { type: K; data: Static<Schemas[K]> } }[keyof Schemas]
export type BriefingGenerated = Static<Schemas['BriefingGenerated']>
export type BriefingServedFromCache = Static<Schemas['BriefingServedFromCache']>

export const isBriefingEvent = (event: { type: string }): event is BriefingEvent => Object.hasOwn(BriefingEventSchemas, event.type)

export const QUOTA_CATEGORY = 'quota'
export const CACHE_HIT_CATEGORY = 'cachehit'
/**
 * `quota-<owner>-<YYYY-MM>`: the category ends at the first '-' and the month is a suffix of fixed
 * width, so the name splits back unambiguously even for owner ids with hyphens (`acme-corp`).
 */
export const quotaStream = (ownerId: string, month: string) => `${QUOTA_CATEGORY}-${ownerId}-${month}`
export const cacheHitStream = (ownerId: string, month: string) => `${CACHE_HIT_CATEGORY}-${ownerId}-${month}`

/** Who asked: the owner whose quota pays, and the API key that sent the request. */
export type Asker = { ownerId: string; keyId: string }
/** The Idempotency-Key a request runs under, and the attempt of it (see idempotency.ts). */
export type KeyAttempt = { key: string; attemptId: string }

const underKey = (attempt: KeyAttempt | null) => (attempt ? { idempotency_key: attempt.key, attempt_id: attempt.attemptId } : {})

/**
 * The charge of a briefing the writer produced for `asker` at `at`, to the quota of `month` (the
 * month of `at`, or of the key's attempt): cached for 24 hours from `at`.
 */
export function briefingGenerated(briefing: {
  briefingId: string
  asker: Asker
  persona: PersonaId
  input: BriefingInput
  cacheKey: string
  month: string
  draft: BriefingDraft
  attempt: KeyAttempt | null
  at: Date
}): BriefingGenerated {
  const { draft } = briefing
  return {
    briefing_id: briefing.briefingId,
    owner_id: briefing.asker.ownerId,
    key_id: briefing.asker.keyId,
    persona: briefing.persona,
    input: briefing.input,
    cache_key: briefing.cacheKey,
    quota_month: briefing.month,
    result: { verdict: draft.verdict, confidence: draft.confidence, headline: draft.headline, body_md: draft.body_md },
    writer: draft.writer,
    model: draft.model,
    ...underKey(briefing.attempt),
    at: briefing.at.toISOString(),
    expires_at: new Date(briefing.at.getTime() + CACHE_TTL_MS).toISOString(),
  }
}

/** A cached briefing served to `asker` at `at`: free, recorded for the audit in the month's cache-hit stream. */
export function briefingServedFromCache(hit: {
  briefingId: string
  asker: Asker
  persona: PersonaId
  cacheKey: string
  month: string
  attempt: KeyAttempt | null
  at: Date
}): BriefingServedFromCache {
  return {
    briefing_id: hit.briefingId,
    owner_id: hit.asker.ownerId,
    key_id: hit.asker.keyId,
    persona: hit.persona,
    cache_key: hit.cacheKey,
    quota_month: hit.month,
    ...underKey(hit.attempt),
    at: hit.at.toISOString(),
  }
}
