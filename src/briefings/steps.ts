import { GroupedAppends } from '../eventstore/grouped-appends.ts'
import { AppError, fail, isAppError } from '../shared/errors.ts'
import { type BriefingResponse, briefingOf, type CachedBriefing, respond } from '../domain/briefings/answer.ts'
import { cacheKeyOf, requestKeyOf } from '../domain/briefings/cache-key.ts'
import { briefingGenerated, briefingServedFromCache, cacheHitStream } from '../domain/briefings/events.ts'
import type { ZoneDetail } from '../domain/briefings/facts.ts'
import { attemptEventId, idempotencyStream, parseIdempotencyKey, requestHashOf } from '../domain/briefings/idempotency.ts'
import { findPersona } from '../domain/briefings/personas/index.ts'
import { quotaMonth } from '../domain/briefings/quota.ts'
import type { BriefingDraft } from '../domain/briefings/writer.ts'
import { Admission, type Slot } from './admission.ts'
import { type Ask, type BriefingServiceDeps, type Caller, FailedRecording, type KeyRun, sending, unknownPersona, unknownZone } from './deps.ts'
import type { QuotaLedger } from './ledger.ts'
import { unbounded } from '../runtime/dependency.ts'

/** 1. Admit: the persona (404), its body (400), the Idempotency-Key header as received (400). */
export function admit(personaId: string, body: unknown, caller: Caller, idempotencyHeader: string | null): Ask {
  const persona = findPersona(personaId)
  if (!persona) throw unknownPersona(personaId)
  const input = persona.parse(body)
  const key = parseIdempotencyKey(idempotencyHeader)
  const cacheKey = cacheKeyOf(persona.id, input)
  if (key === null) return { persona, input, cacheKey, caller, key: null, sent: [] }
  const request = { ownerId: caller.ownerId, keyId: caller.keyId, key, persona: persona.id, requestHash: requestHashOf(requestKeyOf(persona.id, input)) }
  return { persona, input, cacheKey, caller, key: { request, stream: idempotencyStream(caller.ownerId, key) }, sent: [] }
}

/**
 * Runs a step that records the briefing. Its failure may leave the record behind, unless the quota
 * refused the charge: that is decided before anything is appended.
 */
async function recording<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw isAppError(error) && error.code === 'quota_exceeded' ? error : new FailedRecording(error)
  }
}

/** The month a briefing is charged or served in: the request's, or its key's attempt's. */
const monthOf = (now: Date, run: KeyRun | null) => run?.month ?? quotaMonth(now)

/**
 * Steps 3 to 6 of the briefing pipeline (src/briefings/service.ts lists them in order). The two
 * that record, the cache hit and the charge, decide with the domain and append to the owner's month.
 */
export function answerSteps(deps: BriefingServiceDeps, ledger: QuotaLedger) {
  const { store, readModel, random } = deps
  const admission = new Admission(ledger)
  /** Cache hits without a key are recorded with group commit: under load one append carries many. */
  const hitRecords = new GroupedAppends(store)
  const usage = (caller: Caller, month: string) => ledger.usage(caller.ownerId, caller.tier, month)

  return {
    /** 3. The zone's facts: an unknown zone is a 404 even when the cache or the quota would answer. */
    async resolveZone(ask: Ask, now: Date): Promise<ZoneDetail> {
      const zone = await deps.facts.zone(ask.input.country, ask.input.zone, now)
      if (!zone) throw unknownZone(ask.input.zone, ask.input.country)
      return zone
    },

    /** 4. The cached briefing of the same request, while fresh. */
    cached: (ask: Ask, now: Date): Promise<CachedBriefing | null> => readModel.cached(ask.cacheKey, now),

    /** 4. … served: free, the hit recorded in the month's cache-hit stream. */
    serveHit: (hit: CachedBriefing, ask: Ask, now: Date, run: KeyRun | null): Promise<BriefingResponse> =>
      recording(async () => {
        const month = monthOf(now, run)
        const stream = cacheHitStream(ask.caller.ownerId, month)
        const data = briefingServedFromCache({ briefingId: hit.briefing_id, asker: ask.caller, persona: ask.persona.id, cacheKey: ask.cacheKey, month, attempt: run?.attempt ?? null, at: now })
        const event = { type: 'BriefingServedFromCache', data }
        // The attempt's hit has one id: served again by a later run of the attempt, it is recorded once.
        const id = run ? attemptEventId(run.keyStream, run.attempt.attemptId, 'BriefingServedFromCache') : random.uuid()
        const record = { eventId: id, type: 'BriefingServedFromCache' as const, briefingId: hit.briefing_id, ownerId: ask.caller.ownerId, month }
        if (run) await sending(ask, record, () => store.append(stream, [{ id, ...event }], 'any'))
        else {
          // Handed to the group, it is on its way even if this request's wait for it is refused.
          ask.sent.push(record)
          await hitRecords.append(stream, { id, ...event })
        }
        return respond(hit, true, await usage(ask.caller, month))
      }),

    /** 4. … or a place in the month's quota: 429 when used up (no writer call for a briefing that cannot be charged). */
    reserve: (ask: Ask, now: Date, run: KeyRun | null): Promise<Slot> => admission.reserve(ask.caller.ownerId, ask.caller.tier, monthOf(now, run), now),

    /** 5. The writer's draft, in the persona's vocabulary (502 otherwise), from the zone, the country and the estimate the input describes. */
    async write(ask: Ask, zone: ZoneDetail, now: Date): Promise<BriefingDraft> {
      const country = await deps.facts.country(ask.input.country, now)
      const subject = ask.persona.estimateSubject(ask.input)
      const facts = subject === null ? { zone, country } : { zone, country, estimate: await deps.facts.estimate(ask.input.country, zone.zone, subject) }
      // The writer's time is not the request's (its own timeout is documented): the request's bound covers the rest.
      const draft = await unbounded(() => deps.writer.write(ask.persona, ask.input, facts))
      if (!ask.persona.verdicts.includes(draft.verdict)) {
        throw fail.upstreamError(`the ${draft.writer} writer answered verdict ${draft.verdict}, outside the ${ask.persona.id} vocabulary`)
      }
      return draft
    },

    /** 6. The charge (once per attempt under a key), then the briefing is a cache hit here at once (read-your-writes). */
    charge: (ask: Ask, draft: BriefingDraft, slot: Slot, now: Date, run: KeyRun | null): Promise<BriefingResponse> =>
      recording(async () => {
        const briefing = briefingGenerated({
          briefingId: `brf_${random.base62(16)}`,
          asker: ask.caller,
          persona: ask.persona.id,
          input: ask.input,
          cacheKey: ask.cacheKey,
          month: monthOf(now, run),
          draft,
          attempt: run?.attempt ?? null,
          at: now,
        })
        // One charge per attempt: a later run of it that charges again is recognised by the id.
        const eventId = run ? attemptEventId(run.keyStream, run.attempt.attemptId, 'BriefingGenerated') : random.uuid()
        const record = { eventId, type: 'BriefingGenerated' as const, briefingId: briefing.briefing_id, ownerId: ask.caller.ownerId, month: briefing.quota_month }
        const charged = await sending(ask, record, () => ledger.charge(ask.caller.tier, briefing, eventId, slot.usage.used, now))
        const recorded = briefingOf(charged.briefing)
        readModel.recorded(ask.cacheKey, recorded)
        return respond(recorded, false, charged.usage)
      }),
  }
}
