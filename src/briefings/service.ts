import type { ApiTier } from '../domain/owners/owner.ts'
import type { BriefingResponse } from '../domain/briefings/answer.ts'
import { DEFAULT_LEASE_MS } from '../domain/briefings/idempotency.ts'
import { DEFAULT_QUOTAS, quotaMonth, type Usage } from '../domain/briefings/quota.ts'
import { nextTurn } from '../runtime/dependency.ts'
import { singleFlight } from '../shared/single-flight.ts'
import { type Ask, type Briefed, type BriefingServiceDeps, type Caller, FailedRecording, type KeyRun } from './deps.ts'
import { AnswerMarks } from './answers.ts'
import { KeySteps } from './key.ts'
import { QuotaLedger } from './ledger.ts'
import { admit, answerSteps } from './steps.ts'

export type BriefingService = {
  /** POST /briefings/{persona}; `idempotencyKey` is the header as received. */
  brief(personaId: string, body: unknown, caller: Caller, idempotencyKey?: string | null): Promise<Briefed>
  /** This month's usage of an owner, as the briefing answers report it. */
  usage(ownerId: string, tier: ApiTier, now: Date): Promise<Usage>
}

/**
 * The briefing pipeline, the imperative shell around the briefing deciders (quota, idempotency) and
 * builders in src/domain/briefings. A briefing is these steps, in this order, each a function; a
 * step that records appends to one stream (the key's, the owner's month of charges or of cache hits):
 *
 *   1. admit               persona 404 → body 400 → Idempotency-Key 400          steps.ts
 *   2. claim the key       409, a replay, a wait, or the claim (with a key only)  key.ts
 *   3. resolve the zone    404                                                    steps.ts
 *   4. cache or reserve    a cache hit (free), or a place in the quota (429)      steps.ts
 *   5. write               the writer's draft (502)                               steps.ts
 *   6. charge              the quota stream, exactly once                         steps.ts, ledger.ts
 *   7. complete the key    its first result (or its release on failure)          key.ts
 *
 * In this process, one round per Idempotency-Key and one generation per cache key fly at a time
 * (src/shared/single-flight.ts): the next one finds the first one's result recorded.
 */
export function briefingService(deps: BriefingServiceDeps): BriefingService {
  const ledger = new QuotaLedger(deps.store, deps.readModel, deps.quotas ?? DEFAULT_QUOTAS)
  const step = answerSteps(deps, ledger)
  const key = new KeySteps({ ...deps, leaseMs: deps.idempotencyLeaseMs ?? DEFAULT_LEASE_MS }, ledger)
  const marks = new AnswerMarks(deps.store, deps.clock)
  const oneRoundPerKey = singleFlight()
  const oneGenerationPerRequest = singleFlight()

  async function brief(personaId: string, body: unknown, caller: Caller, idempotencyHeader: string | null = null): Promise<Briefed> {
    // 1. admit
    const ask = admit(personaId, body, caller, idempotencyHeader)
    const idempotencyKey = ask.key
    try {
      if (idempotencyKey === null) return { briefing: await answer(ask, deps.clock(), null), replayed: false }
      for (;;) {
        // Each round is bounded as a request is (src/runtime/dependency.ts), not the wait for its turn.
        const briefed = await oneRoundPerKey(idempotencyKey.stream, () => (nextTurn(), underKey(ask, idempotencyKey, deps.clock())))
        if (briefed) return briefed
      }
    } catch (failure) {
      const error = FailedRecording.causeOf(failure)
      // What this request recorded stays recorded; its client gets `error` instead (decision 0116).
      marks.unanswered(ask.sent, error)
      throw error
    }
  }

  /** One round under the Idempotency-Key: its answer, or null to ask again. */
  async function underKey(ask: Ask, idempotencyKey: NonNullable<Ask['key']>, now: Date): Promise<Briefed | null> {
    // 2. claim the key
    const claim = await key.claim(ask, idempotencyKey, now)
    if (claim.kind === 'answered') return claim.briefed
    const { held } = claim
    try {
      // 3.–6., unless an earlier run of the attempt charged: then the key's result is that briefing
      const recovered = held.continuing ? await key.recover(held, ask) : null
      const briefing = recovered ?? (await answer(ask, now, held.run).catch((refusal: unknown) => key.recoverRefused(held, ask, refusal)))
      // 7. complete the key. Should that fail, this run's charge or cache hit is recorded (a recovered one is an earlier run's).
      const completed = await key.complete(held, briefing).catch((error: unknown) => Promise.reject(recovered ? error : new FailedRecording(error)))
      // An earlier run of the attempt may have recorded this charge or hit and answered an error.
      if (completed && held.continuing) marks.answeredOnRetry(held, briefing.briefing_id)
      return completed
    } catch (failure) {
      return key.release(held, failure)
    }
  }

  /** Steps 3 to 6; identical misses in flight in this process are generated once. */
  async function answer(ask: Ask, now: Date, run: KeyRun | null): Promise<BriefingResponse> {
    // 3. resolve the zone
    const zone = await step.resolveZone(ask, now)
    // 4. cache or reserve: a hit needs no coordination; only a miss waits for an identical one in flight
    const hit = await step.cached(ask, now)
    if (hit) return step.serveHit(hit, ask, now, run)
    return oneGenerationPerRequest(ask.cacheKey, async () => {
      const generated = await step.cached(ask, now)
      if (generated) return step.serveHit(generated, ask, now, run)
      const slot = await step.reserve(ask, now, run)
      try {
        // 5. write
        const draft = await step.write(ask, zone, now)
        // 6. charge
        return await step.charge(ask, draft, slot, now, run)
      } finally {
        slot.release()
      }
    })
  }

  return { brief, usage: (ownerId, tier, now) => ledger.usage(ownerId, tier, quotaMonth(now)) }
}
