import type { ApiTier } from '../domain/owners/owner.ts'
import { cacheKeyOf } from '../domain/briefings/cache-key.ts'
import { DEFAULT_LEASE_MS, type IdempotentRequest, idempotencyStream, parseIdempotencyKey, requestHashOf } from '../domain/briefings/idempotency.ts'
import { findPersona } from '../domain/briefings/personas/index.ts'
import { DEFAULT_QUOTAS, quotaMonth, type Usage } from '../domain/briefings/quota.ts'
import { Admission } from './admission.ts'
import { type Briefed, type BriefingServiceDeps, type Caller, unknownPersona } from './deps.ts'
import { answering } from './answering.ts'
import { QuotaLedger } from './ledger.ts'
import { keyRounds } from './under-key.ts'
import { nextTurn } from '../runtime/dependency.ts'

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
      nextTurn()
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
