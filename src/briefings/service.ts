import type { EventStore } from '../eventstore/port.ts'
import type { Principal } from '../http/authenticate.ts'
import type { ApiTier } from '../domain/owners/owner.ts'
import { echo, notFound } from '../shared/errors.ts'
import type { Clock, RandomSource } from '../shared/random.ts'
import type { BriefingResponse } from '../domain/briefings/answer.ts'
import { cacheKeyOf } from '../domain/briefings/cache-key.ts'
import type { ZoneFactsSource } from '../domain/briefings/facts.ts'
import { DEFAULT_LEASE_MS, type IdempotentRequest, idempotencyStream, parseIdempotencyKey, requestHashOf } from '../domain/briefings/idempotency.ts'
import { findPersona } from '../domain/briefings/personas/index.ts'
import { DEFAULT_QUOTAS, type QuotaPolicy, quotaMonth, type Usage } from '../domain/briefings/quota.ts'
import type { BriefingWriter } from '../domain/briefings/writer.ts'
import type { BriefingReadModel } from '../../projections/briefings/read-model.ts'
import { Admission } from './admission.ts'
import { answering } from './answering.ts'
import { QuotaLedger } from './ledger.ts'
import { keyRounds } from './under-key.ts'

export type Caller = Pick<Principal, 'keyId' | 'ownerId' | 'tier'>

/** The 404 of a briefing for a persona there is none of. */
export const unknownPersona = (id: string) => notFound(`no persona ${echo(id)}; see GET /api/v1/briefings/personas`)
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

/**
 * The briefing service: the imperative shell around the briefing deciders (quota, idempotency) and
 * builders in src/domain/briefings. It reads, decides, appends (one stream per decision) and calls
 * the writer; answering.ts answers a request, under-key.ts runs it under an Idempotency-Key.
 */
export function briefingService(deps: BriefingServiceDeps): BriefingService {
  const quotas = deps.quotas ?? DEFAULT_QUOTAS
  const ledger = new QuotaLedger(deps.store, quotas)
  const admission = new Admission(deps.readModel, ledger, quotas)
  const answer = answering(deps, ledger, admission)
  const round = keyRounds({ ...deps, quotas, leaseMs: deps.idempotencyLeaseMs ?? DEFAULT_LEASE_MS }, answer)
  /** Requests of this process working under an Idempotency-Key, by its stream: later ones wait for them. */
  const keysInFlight = new Map<string, Promise<Briefed | null>>()

  async function brief(personaId: string, body: unknown, caller: Caller, idempotencyHeader: string | null = null): Promise<Briefed> {
    const persona = findPersona(personaId)
    if (!persona) throw unknownPersona(personaId)
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
      const outcome = round(stream, request, persona, input, cacheKey, caller)
      keysInFlight.set(stream, outcome)
      try {
        const briefed = await outcome
        if (briefed) return briefed
      } finally {
        if (keysInFlight.get(stream) === outcome) keysInFlight.delete(stream)
      }
    }
  }

  return { brief, usage: (ownerId, tier, now) => admission.usage(ownerId, tier, quotaMonth(now)) }
}
