import { type Static, Type } from '@sinclair/typebox'
import { loadAggregate } from '../eventstore/command-handler.ts'
import { GroupedAppends } from '../eventstore/grouped-appends.ts'
import { type AppendResult, type EventStore, type StreamWrite, WrongExpectedRevision } from '../eventstore/port.ts'
import type { Principal } from '../http/authenticate.ts'
import type { ApiTier } from '../domain/owners/owner.ts'
import { AppError, echo, isAppError, notFound } from '../shared/errors.ts'
import type { Clock, RandomSource } from '../shared/random.ts'
import { CACHE_TTL_MS, cacheKeyOf } from '../domain/briefings/cache-key.ts'
import { type BriefingGenerated, type BriefingServedFromCache, cacheHitStream, quotaStream } from '../domain/briefings/events.ts'
import type { ZoneDetail, ZoneFactsSource } from '../domain/briefings/facts.ts'
import {
  type BriefingReplayed,
  DEFAULT_LEASE_MS,
  decideIdempotency,
  evolveIdempotency,
  IDEMPOTENCY_WINDOW_MS,
  type IdempotentRequest,
  idempotencyStream,
  initialIdempotency,
  isIdempotencyEvent,
  parseIdempotencyKey,
  replayStream,
  requestHashOf,
} from '../domain/briefings/idempotency.ts'
import { QuotaLedger } from './ledger.ts'
import { type BriefingInput, findPersona, type Persona } from '../domain/briefings/personas/index.ts'
import { DEFAULT_QUOTAS, type QuotaPolicy, quotaExceeded, type Usage, quotaMonth, usageOf } from '../domain/briefings/quota.ts'
import type { BriefingReadModel, CachedBriefing } from '../../projections/briefings/read-model.ts'
import type { BriefingWriter } from '../domain/briefings/writer.ts'

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

/** The 404 of a briefing on a zone the country does not have. */
export const unknownZone = (zone: string, country: string) => notFound(`${zone} does not exist in ${country}`)

export type BriefingServiceDeps = {
  store: EventStore
  readModel: BriefingReadModel
  facts: ZoneFactsSource
  writer: BriefingWriter
  clock: Clock
  random: RandomSource
  quotas?: QuotaPolicy
  /** How long a request holds its Idempotency-Key before another may take it over (see idempotency.ts). */
  idempotencyLeaseMs?: number
}

/** A briefing answer; `replayed` when it is the first result of the same Idempotency-Key, served again. */
export type Briefed = { briefing: BriefingResponse; replayed: boolean }

export type BriefingService = {
  /**
   * POST /briefings/{persona}: 404 persona → 400 body → 400 Idempotency-Key → replay or 409 →
   * 404 zone → cache hit → quota → write → charge. `idempotencyKey` is the header as received.
   */
  brief(personaId: string, body: unknown, caller: Caller, idempotencyKey?: string | null): Promise<Briefed>
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

/** The first answer again, fields in the order of every answer (the stored JSON may have them reordered). */
const replayOf = (first: BriefingResponse): BriefingResponse =>
  respond(first, first.cached, { used: first.usage.used, quota: first.usage.quota, unlimited: first.usage.unlimited })

const PROJECTED_USAGE_TTL_MS = 1000
/** How often a request waits for another process that holds the same Idempotency-Key. */
const IDEMPOTENCY_POLL_MS = 100

/** The request runs under a claimed Idempotency-Key: its result is recorded with `complete`. */
type Idempotency = { key: string; complete(response: BriefingResponse): StreamWrite }

const idempotencyAggregate = { initial: initialIdempotency, evolve: evolveIdempotency, is: isIdempotencyEvent }
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export function briefingService(deps: BriefingServiceDeps): BriefingService {
  const quotas = deps.quotas ?? DEFAULT_QUOTAS
  const leaseMs = deps.idempotencyLeaseMs ?? DEFAULT_LEASE_MS
  const ledger = new QuotaLedger(deps.store, quotas)
  /** Cache hits are recorded with group commit: under load one append carries many. */
  const hitRecords = new GroupedAppends(deps.store)
  /** Identical requests in flight in this process: followers wait, then find the leader's briefing cached. */
  const inFlight = new Map<string, Promise<unknown>>()
  /** Briefings being written in this process, per quota stream (see reserveSlot). */
  const inProgress = new Map<string, Set<Promise<void>>>()
  /** Requests of this process working under an Idempotency-Key, by its stream: later ones wait for them. */
  const keysInFlight = new Map<string, Promise<Briefed | null>>()

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

  async function serveFromCache(hit: CachedBriefing, cacheKey: string, caller: Caller, now: Date, idempotency: Idempotency | null) {
    const month = quotaMonth(now)
    const data: BriefingServedFromCache = {
      briefing_id: hit.briefing_id,
      owner_id: caller.ownerId,
      key_id: caller.keyId,
      persona: hit.persona as BriefingServedFromCache['persona'],
      cache_key: cacheKey,
      quota_month: month,
      ...(idempotency && { idempotency_key: idempotency.key }),
      at: now.toISOString(),
    }
    const served = { stream: cacheHitStream(caller.ownerId, month), events: [{ id: deps.random.uuid(), type: 'BriefingServedFromCache', data }], expected: 'any' as const }
    if (!idempotency) {
      await hitRecords.append(served.stream, served.events[0]!)
      return respond(hit, true, await usage(caller.ownerId, caller.tier, now))
    }
    const response = respond(hit, true, await usage(caller.ownerId, caller.tier, now))
    await deps.store.appendMany([served, idempotency.complete(response)])
    return response
  }

  async function generate(
    persona: Persona,
    input: BriefingInput,
    zone: ZoneDetail,
    cacheKey: string,
    caller: Caller,
    now: Date,
    idempotency: Idempotency | null,
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
        ...(idempotency && { idempotency_key: idempotency.key }),
        at: now.toISOString(),
        expires_at: new Date(now.getTime() + CACHE_TTL_MS).toISOString(),
      }
      const briefing = { ...data, ...data.result, generated_at: data.at }
      const charged = await ledger.charge(
        caller.tier,
        { id: deps.random.uuid(), data },
        slot.usage.used,
        now,
        idempotency ? (after) => [idempotency.complete(respond(briefing, false, after))] : undefined,
      )
      // Read-your-writes for the cache. Not fatal: the briefing is charged and must be served; the
      // server's projection runner applies the event moments later anyway.
      await deps.readModel.catchUp().catch(() => {})
      return respond(briefing, false, charged.usage)
    } finally {
      slot.release()
    }
  }

  /** Zone → cache hit or quota, write and charge. Identical requests in flight in this process are generated once. */
  async function answer(
    persona: Persona,
    input: BriefingInput,
    cacheKey: string,
    caller: Caller,
    now: Date,
    idempotency: Idempotency | null,
  ): Promise<BriefingResponse> {
    // Existence first, so an unknown zone is a 404 even when the cache or the quota would answer.
    const zone = await deps.facts.zone(input.country, input.zone, now)
    if (!zone) throw unknownZone(input.zone, input.country)
    // A hit needs no coordination; only a miss is generated once per identical requests in flight.
    const hit = await deps.readModel.cached(cacheKey, now)
    if (hit) return serveFromCache(hit, cacheKey, caller, now, idempotency)
    for (;;) {
      const running = inFlight.get(cacheKey)
      if (!running) break
      await running.catch(() => {})
    }
    const work = (async () => {
      const hit = await deps.readModel.cached(cacheKey, now)
      return hit
        ? serveFromCache(hit, cacheKey, caller, now, idempotency)
        : generate(persona, input, zone, cacheKey, caller, now, idempotency)
    })()
    inFlight.set(cacheKey, work)
    try {
      return await work
    } finally {
      if (inFlight.get(cacheKey) === work) inFlight.delete(cacheKey)
    }
  }

  /**
   * One round for a request with an Idempotency-Key: replay, 409, wait for the request holding the
   * key (null: ask again), or claim the key and answer under it. Errors release the key.
   */
  async function underKey(stream: string, request: IdempotentRequest, persona: Persona, input: BriefingInput, cacheKey: string, caller: Caller): Promise<Briefed | null> {
    const now = deps.clock()
    const { state, revision } = await loadAggregate(deps.store, stream, idempotencyAggregate)
    const decision = decideIdempotency(state, request, now, leaseMs)
    switch (decision.kind) {
      case 'conflict':
        throw decision.error
      case 'wait':
        await sleep(Math.max(1, Math.min(IDEMPOTENCY_POLL_MS, decision.until.getTime() - now.getTime())))
        return null
      case 'replay': {
        const month = quotaMonth(now)
        const data: BriefingReplayed = {
          briefing_id: decision.briefingId,
          owner_id: caller.ownerId,
          key_id: caller.keyId,
          persona: persona.id,
          idempotency_key: request.key,
          first_at: decision.firstAt,
          quota_month: month,
          at: now.toISOString(),
        }
        await deps.store.append(replayStream(caller.ownerId, month), [{ id: deps.random.uuid(), type: 'BriefingReplayed', data }], 'any')
        return { briefing: replayOf(decision.response as BriefingResponse), replayed: true }
      }
      case 'claim': {
        let claimed: AppendResult
        try {
          claimed = await deps.store.append(stream, [{ id: deps.random.uuid(), ...decision.event }], revision)
        } catch (error) {
          if (error instanceof WrongExpectedRevision) return null // another request claimed it first
          throw error
        }
        const common = { owner_id: caller.ownerId, key_id: caller.keyId, idempotency_key: request.key }
        const idempotency: Idempotency = {
          key: request.key,
          complete(response) {
            const at = deps.clock()
            const data = {
              ...common,
              request_hash: request.requestHash,
              briefing_id: response.briefing_id,
              response,
              at: at.toISOString(),
              expires_at: new Date(at.getTime() + IDEMPOTENCY_WINDOW_MS).toISOString(),
            }
            return { stream, events: [{ id: deps.random.uuid(), type: 'IdempotencyKeyCompleted', data }], expected: claimed.revision }
          },
        }
        try {
          return { briefing: await answer(persona, input, cacheKey, caller, now, idempotency), replayed: false }
        } catch (error) {
          // Outlived its lease: another request holds the key now, and its result will be ours.
          if (error instanceof WrongExpectedRevision && error.stream === stream) return null
          const data = { ...common, error: isAppError(error) ? error.code : 'internal', at: deps.clock().toISOString() }
          // If this fails too, the lease frees the key.
          await deps.store.append(stream, [{ id: deps.random.uuid(), type: 'IdempotencyKeyReleased', data }], claimed.revision).catch(() => {})
          throw error
        }
      }
      default: {
        const never: never = decision
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
  }

  async function brief(personaId: string, body: unknown, caller: Caller, idempotencyHeader: string | null = null): Promise<Briefed> {
    const persona = findPersona(personaId)
    if (!persona) throw notFound(`no persona ${echo(personaId)}; see GET /api/v1/briefings/personas`)
    const input = persona.parse(body)
    const key = parseIdempotencyKey(idempotencyHeader)
    const cacheKey = cacheKeyOf(persona.id, input)
    if (key === null) return { briefing: await answer(persona, input, cacheKey, caller, deps.clock(), null), replayed: false }

    const request: IdempotentRequest = { ownerId: caller.ownerId, keyId: caller.keyId, key, persona: persona.id, requestHash: requestHashOf(cacheKey) }
    const stream = idempotencyStream(caller.ownerId, key)
    for (;;) {
      const running = keysInFlight.get(stream)
      if (running) {
        await running.catch(() => {})
        continue
      }
      const round = underKey(stream, request, persona, input, cacheKey, caller)
      keysInFlight.set(stream, round)
      try {
        const outcome = await round
        if (outcome) return outcome
      } finally {
        if (keysInFlight.get(stream) === round) keysInFlight.delete(stream)
      }
    }
  }

  return { brief, usage }
}
