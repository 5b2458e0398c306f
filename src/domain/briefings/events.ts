import { type Static, Type } from '@sinclair/typebox'
import { CONFIDENCE_LEVELS } from './analysis.ts'
import { oneOf, PERSONA_IDS } from './personas/define.ts'

const At = Type.String({ format: 'date-time' })
const Month = Type.String({ pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$' })

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
