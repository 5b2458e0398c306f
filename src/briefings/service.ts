import { type Static, Type } from '@sinclair/typebox'
import type { EventStore } from '../eventstore/port.ts'
import type { Principal } from '../keys/authenticate.ts'
import type { ApiTier } from '../owners/owner.ts'
import { AppError, echo, notFound } from '../shared/errors.ts'
import type { Clock, RandomSource } from '../shared/random.ts'
import { CACHE_TTL_MS, cacheKeyOf } from './cache-key.ts'
import { type BriefingGenerated, type BriefingServedFromCache, cacheHitStream, quotaStream } from './events.ts'
import type { ZoneDetail, ZoneFactsSource } from './facts.ts'
import { QuotaLedger } from './ledger.ts'
import { type BriefingInput, findPersona, type Persona } from './personas/index.ts'
import { DEFAULT_QUOTAS, type QuotaPolicy, quotaExceeded, type Usage, quotaMonth, usageOf } from './quota.ts'
import type { BriefingReadModel, CachedBriefing } from './read-model.ts'
import type { BriefingWriter } from './writer.ts'

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

export type Caller = Pick<Principal, 'keyId' | 'ownerId' | 'tier'>

export type BriefingServiceDeps = {
  store: EventStore
  readModel: BriefingReadModel
  facts: ZoneFactsSource
  writer: BriefingWriter
  clock: Clock
  random: RandomSource
  quotas?: QuotaPolicy
}

export type BriefingService = {
  /** POST /briefings/{persona}: 404 persona → 400 body → 404 zone → cache hit → quota → write → charge. */
  brief(personaId: string, body: unknown, caller: Caller): Promise<BriefingResponse>
  /** This month's usage of an owner (for /health and every briefing result). */
  usage(ownerId: string, tier: ApiTier, now: Date): Promise<Usage>
}

const respond = (briefing: CachedBriefing, cached: boolean, usage: Usage): BriefingResponse => ({
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
  usage,
})

const PROJECTED_USAGE_TTL_MS = 1000

export function briefingService(deps: BriefingServiceDeps): BriefingService {
  const quotas = deps.quotas ?? DEFAULT_QUOTAS
  const ledger = new QuotaLedger(deps.store, quotas)
  /** Identical requests in flight in this process: followers wait, then find the leader's briefing cached. */
  const inFlight = new Map<string, Promise<unknown>>()
  /** Briefings being written in this process, per quota stream (see reserveSlot). */
  const inProgress = new Map<string, Set<Promise<void>>>()

  /**
   * /health reports usage on every request, so the projected count is reused for a second: charges
   * made by this process are known at once (the ledger), other processes' within that second.
   */
  const projectedUsage = new Map<string, { used: number; expires: number }>()
  async function projectedUsed(ownerId: string, month: string): Promise<number> {
    const key = `${ownerId}/${month}`
    const started = performance.now()
    const cached = projectedUsage.get(key)
    if (cached && cached.expires > started) return cached.used
    const used = await deps.readModel.used(ownerId, month)
    if (projectedUsage.size >= 10_000) projectedUsage.clear()
    projectedUsage.set(key, { used, expires: started + PROJECTED_USAGE_TTL_MS })
    return used
  }

  async function usage(ownerId: string, tier: ApiTier, now: Date): Promise<Usage> {
    const month = quotaMonth(now)
    const projected = await projectedUsed(ownerId, month)
    return usageOf(quotas, tier, Math.max(projected, ledger.knownUsed(ownerId, month) ?? 0))
  }

  /**
   * Admission before writing: refuses when the month is used up, and waits while the briefings
   * already being written in this process would use up what is left, so that no writer call
   * (which may cost money) is made for a briefing that could not be charged. The charge stays the
   * exact check, across processes too. Check and registration run without an await in between.
   */
  async function reserveSlot(caller: Caller, now: Date): Promise<{ usage: Usage; release(): void }> {
    const stream = quotaStream(caller.ownerId, quotaMonth(now))
    for (;;) {
      const current = await usage(caller.ownerId, caller.tier, now)
      if (current.unlimited) return { usage: current, release: () => {} }
      if (current.used >= current.quota) throw quotaExceeded(current, quotaMonth(now), now)
      const writing = inProgress.get(stream) ?? new Set<Promise<void>>()
      if (current.used + writing.size < current.quota) {
        let release = () => {}
        const done = new Promise<void>((resolve) => {
          release = resolve
        })
        writing.add(done)
        inProgress.set(stream, writing)
        void done.then(() => {
          writing.delete(done)
          if (writing.size === 0 && inProgress.get(stream) === writing) inProgress.delete(stream)
        })
        return { usage: current, release }
      }
      await Promise.race(writing)
    }
  }

  async function serveFromCache(hit: CachedBriefing, cacheKey: string, caller: Caller, now: Date) {
    const month = quotaMonth(now)
    const data: BriefingServedFromCache = {
      briefing_id: hit.briefing_id,
      owner_id: caller.ownerId,
      key_id: caller.keyId,
      persona: hit.persona as BriefingServedFromCache['persona'],
      cache_key: cacheKey,
      quota_month: month,
      at: now.toISOString(),
    }
    await deps.store.append(cacheHitStream(caller.ownerId, month), [{ id: deps.random.uuid(), type: 'BriefingServedFromCache', data }], 'any')
    return respond(hit, true, await usage(caller.ownerId, caller.tier, now))
  }

  async function generate(
    persona: Persona,
    input: BriefingInput,
    zone: ZoneDetail,
    cacheKey: string,
    caller: Caller,
    now: Date,
  ): Promise<BriefingResponse> {
    const month = quotaMonth(now)
    const slot = await reserveSlot(caller, now)
    try {
      const draft = await deps.writer.write(persona, input, { zone, country: await deps.facts.country(input.country, now) })
      if (!persona.verdicts.includes(draft.verdict)) {
        throw new AppError('upstream_error', `the ${draft.writer} writer answered verdict ${draft.verdict}, outside the ${persona.id} vocabulary`)
      }
      const data: BriefingGenerated = {
        briefing_id: `brf_${deps.random.base62(16)}`,
        owner_id: caller.ownerId,
        key_id: caller.keyId,
        persona: persona.id,
        input,
        cache_key: cacheKey,
        quota_month: month,
        result: { verdict: draft.verdict, confidence: draft.confidence, headline: draft.headline, body_md: draft.body_md },
        writer: draft.writer,
        model: draft.model,
        at: now.toISOString(),
        expires_at: new Date(now.getTime() + CACHE_TTL_MS).toISOString(),
      }
      const charged = await ledger.charge(caller.tier, { id: deps.random.uuid(), data }, slot.usage.used, now)
      // Read-your-writes for the cache. Not fatal: the briefing is charged and must be served; the
      // server's projection runner applies the event moments later anyway.
      await deps.readModel.catchUp().catch(() => {})
      return respond({ ...data, ...data.result, generated_at: data.at }, false, charged.usage)
    } finally {
      slot.release()
    }
  }

  async function brief(personaId: string, body: unknown, caller: Caller): Promise<BriefingResponse> {
    const persona = findPersona(personaId)
    if (!persona) throw notFound(`no persona ${echo(personaId)}; see GET /api/v1/briefings/personas`)
    const input = persona.parse(body)
    const now = deps.clock()
    // Existence first, so an unknown zone is a 404 even when the cache or the quota would answer.
    const zone = await deps.facts.zone(input.country, input.zone, now)
    if (!zone) throw notFound(`${input.zone} does not exist in ${input.country}`)
    const cacheKey = cacheKeyOf(persona.id, input)
    for (;;) {
      const running = inFlight.get(cacheKey)
      if (!running) break
      await running.catch(() => {})
    }
    const work = (async () => {
      const hit = await deps.readModel.cached(cacheKey, now)
      return hit ? serveFromCache(hit, cacheKey, caller, now) : generate(persona, input, zone, cacheKey, caller, now)
    })()
    inFlight.set(cacheKey, work)
    try {
      return await work
    } finally {
      if (inFlight.get(cacheKey) === work) inFlight.delete(cacheKey)
    }
  }

  return { brief, usage }
}
