import { type Static, Type } from '@sinclair/typebox'
import type { Confidence } from './analysis.ts'
import type { BriefingGenerated } from './events.ts'
import type { Usage } from './quota.ts'

/** The answer of `POST /briefings/{persona}`. */
export const BriefingResponse = Type.Object({
  ok: Type.Literal(true),
  briefing_id: Type.String(),
  persona: Type.String(),
  verdict: Type.String(),
  confidence: Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')]),
  headline: Type.String(),
  body_md: Type.String(),
  cached: Type.Boolean(),
  generated_at: Type.String({ format: 'date-time' }),
  expires_at: Type.String({ format: 'date-time' }),
  usage: Type.Object({ used: Type.Integer(), quota: Type.Integer(), unlimited: Type.Boolean() }),
})
export type BriefingResponse = Static<typeof BriefingResponse>

/** A generated briefing as the cache serves it. */
export type CachedBriefing = {
  briefing_id: string
  persona: string
  verdict: string
  confidence: Confidence
  headline: string
  body_md: string
  generated_at: string
  expires_at: string
}

/** Whether a cached briefing may still be served at `now`: until its expiry (24 hours after it was generated), not at it. */
export const stillCached = (briefing: Pick<CachedBriefing, 'expires_at'>, now: Date) => Date.parse(briefing.expires_at) > now.getTime()

/** The briefing a charge recorded. */
export const briefingOf = (charge: BriefingGenerated): CachedBriefing => ({
  briefing_id: charge.briefing_id,
  persona: charge.persona,
  ...charge.result,
  generated_at: charge.at,
  expires_at: charge.expires_at,
})

/** The answer serving `briefing`, fresh or from the cache, with the usage after this request. */
export const respond = (briefing: CachedBriefing, cached: boolean, usage: Usage): BriefingResponse => ({
  ok: true,
  briefing_id: briefing.briefing_id,
  persona: briefing.persona,
  verdict: briefing.verdict,
  confidence: briefing.confidence,
  headline: briefing.headline,
  body_md: briefing.body_md,
  cached,
  generated_at: briefing.generated_at,
  expires_at: briefing.expires_at,
  usage: { used: usage.used, quota: usage.quota, unlimited: usage.unlimited },
})

/** A first answer again (recorded as JSON, which may have reordered its fields), fields in the order of every answer. */
export const replayOf = (first: BriefingResponse): BriefingResponse => respond(first, first.cached, first.usage)
