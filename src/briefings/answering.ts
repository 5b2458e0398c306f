import { GroupedAppends } from '../eventstore/grouped-appends.ts'
import { fail } from '../shared/errors.ts'
import { type BriefingResponse, briefingOf, type CachedBriefing, respond } from '../domain/briefings/answer.ts'
import {
  type BriefingGenerated,
  briefingGenerated,
  briefingServedFromCache,
  cacheHitStream,
  type KeyAttempt,
  quotaStream,
} from '../domain/briefings/events.ts'
import type { ZoneDetail } from '../domain/briefings/facts.ts'
import { attemptEventId } from '../domain/briefings/idempotency.ts'
import type { BriefingInput, Persona } from '../domain/briefings/personas/index.ts'
import { quotaMonth } from '../domain/briefings/quota.ts'
import type { Admission } from './admission.ts'
import type { QuotaLedger } from './ledger.ts'
import { type BriefingServiceDeps, type Caller, unknownZone } from './deps.ts'

/**
 * A request running under a claimed Idempotency-Key: its charge or cache hit belongs to the key's
 * attempt (recorded in the attempt's month, with the event id of the attempt), and `mayHaveRecorded`
 * says whether one of them may be recorded, for the release of the key if the request fails.
 */
export type KeyRun = { keyStream: string; attempt: KeyAttempt; month: string; mayHaveRecorded: boolean }

export type Answering = (persona: Persona, input: BriefingInput, cacheKey: string, caller: Caller, now: Date, run: KeyRun | null) => Promise<BriefingResponse>

/**
 * Zone → cache hit or quota, write and charge: the answer of a briefing request, each decision
 * appended to its own stream. Identical requests in flight in this process are generated once.
 */
export function answering(deps: BriefingServiceDeps, ledger: QuotaLedger, admission: Admission): Answering {
  const { store, readModel, random } = deps
  /** Cache hits are recorded with group commit: under load one append carries many. */
  const hitRecords = new GroupedAppends(store)
  /** Identical requests in flight in this process: followers wait, then find the leader's briefing cached. */
  const inFlight = new Map<string, Promise<unknown>>()

  async function serveFromCache(hit: CachedBriefing, persona: Persona, cacheKey: string, caller: Caller, now: Date, run: KeyRun | null) {
    const month = run?.month ?? quotaMonth(now)
    const event = {
      type: 'BriefingServedFromCache',
      data: briefingServedFromCache({ briefingId: hit.briefing_id, asker: caller, persona: persona.id, cacheKey, month, attempt: run?.attempt ?? null, at: now }),
    }
    if (run) {
      // The attempt's hit has one id: served again by a later run of the attempt, it is recorded once.
      run.mayHaveRecorded = true
      await store.append(cacheHitStream(caller.ownerId, month), [{ id: attemptEventId(run.keyStream, run.attempt.attemptId, 'BriefingServedFromCache'), ...event }], 'any')
    } else {
      await hitRecords.append(cacheHitStream(caller.ownerId, month), { id: random.uuid(), ...event })
    }
    return respond(hit, true, await admission.usage(caller.ownerId, caller.tier, month))
  }

  /** The charge recorded at `revision` of its quota stream (another run of the attempt recorded it first). */
  async function recordedCharge(charge: BriefingGenerated, revision: number): Promise<BriefingGenerated> {
    const events = await store.readStream(quotaStream(charge.owner_id, charge.quota_month))
    const recorded = events.find((e) => e.revision === revision)
    if (!recorded) throw new Error(`${quotaStream(charge.owner_id, charge.quota_month)} has no revision ${revision}`)
    return recorded.data as BriefingGenerated
  }

  async function generate(persona: Persona, input: BriefingInput, zone: ZoneDetail, cacheKey: string, caller: Caller, now: Date, run: KeyRun | null) {
    const month = run?.month ?? quotaMonth(now)
    const slot = await admission.reserve(caller.ownerId, caller.tier, month, now)
    try {
      const draft = await deps.writer.write(persona, input, { zone, country: await deps.facts.country(input.country, now) })
      if (!persona.verdicts.includes(draft.verdict)) {
        throw fail.upstreamError(`the ${draft.writer} writer answered verdict ${draft.verdict}, outside the ${persona.id} vocabulary`)
      }
      const briefing = briefingGenerated({
        briefingId: `brf_${random.base62(16)}`,
        asker: caller,
        persona: persona.id,
        input,
        cacheKey,
        month,
        draft,
        attempt: run?.attempt ?? null,
        at: now,
      })
      // One charge per attempt: a later run of it that charges again is recognised by the id.
      const eventId = run ? attemptEventId(run.keyStream, run.attempt.attemptId, 'BriefingGenerated') : random.uuid()
      const charged = await ledger.charge(caller.tier, briefing, eventId, slot.usage.used, now, (maybe) => run && (run.mayHaveRecorded = maybe))
      const recorded = briefingOf(charged.duplicate ? await recordedCharge(briefing, charged.revision) : briefing)
      // Read-your-writes: the next identical request is a cache hit here at once.
      readModel.recorded(cacheKey, recorded)
      return respond(recorded, false, charged.usage)
    } finally {
      slot.release()
    }
  }

  return async function answer(persona, input, cacheKey, caller, now, run) {
    // Existence first, so an unknown zone is a 404 even when the cache or the quota would answer.
    const zone = await deps.facts.zone(input.country, input.zone, now)
    if (!zone) throw unknownZone(input.zone, input.country)
    // A hit needs no coordination; only a miss is generated once per identical requests in flight.
    const hit = await readModel.cached(cacheKey, now)
    if (hit) return serveFromCache(hit, persona, cacheKey, caller, now, run)
    for (;;) {
      const running = inFlight.get(cacheKey)
      if (!running) break
      await running.catch(() => {})
    }
    const work = (async () => {
      const hit = await readModel.cached(cacheKey, now)
      return hit ? serveFromCache(hit, persona, cacheKey, caller, now, run) : generate(persona, input, zone, cacheKey, caller, now, run)
    })()
    inFlight.set(cacheKey, work)
    try {
      return await work
    } finally {
      if (inFlight.get(cacheKey) === work) inFlight.delete(cacheKey)
    }
  }
}
