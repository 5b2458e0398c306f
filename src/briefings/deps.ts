import type { EventStore } from '../eventstore/port.ts'
import { DependencyUnavailable } from '../runtime/dependency.ts'
import type { Principal } from '../http/authenticate.ts'
import { echo, fail } from '../shared/errors.ts'
import type { Clock, RandomSource } from '../shared/random.ts'
import type { BriefingResponse } from '../domain/briefings/answer.ts'
import type { KeyAttempt } from '../domain/briefings/events.ts'
import type { ZoneFactsSource } from '../domain/briefings/facts.ts'
import type { SentRecord } from '../domain/briefings/answers.ts'
import type { IdempotentRequest } from '../domain/briefings/idempotency.ts'
import type { BriefingInput, Persona } from '../domain/briefings/personas/index.ts'
import type { QuotaPolicy } from '../domain/briefings/quota.ts'
import type { BriefingWriter } from '../domain/briefings/writer.ts'
import type { BriefingReadModel } from '../../projections/briefings/read-model.ts'

/** What the briefing pipeline's steps share: who asks, what they run on, what they answer, and the 404s. */

export type Caller = Pick<Principal, 'keyId' | 'ownerId' | 'tier'>

/** The 404 of a briefing for a persona there is none of. */
export const unknownPersona = (id: string) => fail.notFound(`no persona ${echo(id)}; see GET /api/v1/briefings/personas`)
/** The 404 of a briefing on a zone the country does not have. */
export const unknownZone = (zone: string, country: string) => fail.notFound(`${zone} does not exist in ${country}`)

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

/** A request admitted (step 1): persona, validated input, cache key, caller, and its Idempotency-Key if it sent one. */
export type Ask = {
  persona: Persona
  input: BriefingInput
  cacheKey: string
  caller: Caller
  key: { request: IdempotentRequest; stream: string } | null
  /** What the request sent to the store before its answer was decided (its charge, cache hit or replay): marked should it fail. */
  sent: SentRecord[]
}

/**
 * Appends `record`'s event with `append`, kept in `ask.sent` unless the store's port refused the call
 * before sending it (then nothing was recorded and there is nothing to mark). Not for a grouped
 * append (src/eventstore/grouped-appends.ts): its event is on its way even when its caller's wait is refused.
 */
export async function sending<T>(ask: Ask, record: SentRecord, append: () => Promise<T>): Promise<T> {
  ask.sent.push(record)
  try {
    return await append()
  } catch (error) {
    if (error instanceof DependencyUnavailable && !error.sent) ask.sent.splice(ask.sent.indexOf(record), 1)
    throw error
  }
}

/**
 * A run holding an Idempotency-Key: its charge or cache hit belongs to the key's attempt, recorded
 * in the attempt's month with the event id of the attempt.
 */
export type KeyRun = { keyStream: string; attempt: KeyAttempt; month: string }

/**
 * The failure of a step that records the briefing (its charge or cache hit) once it may have
 * recorded it: the release of the key says so. The pipeline throws `cause`, never this.
 */
export class FailedRecording {
  constructor(readonly cause: unknown) {}
  static causeOf = (error: unknown) => (error instanceof FailedRecording ? error.cause : error)
}
