import { type Static, Type } from '@sinclair/typebox'
import { derivedUuid } from '../../shared/derived-uuid.ts'
import { At, Month } from '../schemas.ts'

/**
 * Whether the client got the answer a briefing request recorded (decision 0116). A request records
 * its charge, cache hit or replay before its answer is decided; when the request then fails (its
 * append answered after the request's time ran out, or a later step failed), the event stays
 * recorded but the client got an error. The shell then records that it was left unanswered, and
 * when a later run of the same Idempotency-Key attempt serves that charge or cache hit, that it was
 * answered after all. Both are marks on the recorded event's id, in `answer-<owner>-<month>`. An
 * event was answered unless it was left unanswered and never answered on a retry.
 */

/** The events a request records before its answer, each of which the client may not have received. */
export const ANSWERED_TYPES = ['BriefingGenerated', 'BriefingServedFromCache', 'BriefingReplayed'] as const
export type AnsweredType = (typeof ANSWERED_TYPES)[number]

/** An event a request sent to the store (recorded, or possibly so) before its answer was decided. */
export type SentRecord = { eventId: string; type: AnsweredType; briefingId: string; ownerId: string; month: string }

const Mark = {
  /** The id of the charge, cache hit or replay this mark is about. */
  event_id: Type.String(),
  event_type: Type.Union(ANSWERED_TYPES.map((t) => Type.Literal(t))),
  briefing_id: Type.String(),
  owner_id: Type.String(),
  quota_month: Month,
  at: At,
}

export const AnswerEventSchemas = {
  /** The request that recorded `event_id` was answered an error (`status`, `error`): the client did not get it. */
  BriefingLeftUnanswered: Type.Object({ ...Mark, status: Type.Integer(), error: Type.String() }),
  /** A later run of the same Idempotency-Key attempt served the charge or cache hit `event_id` (200). */
  BriefingAnsweredOnRetry: Type.Object(Mark),
}
export type AnswerEvent = { [K in keyof typeof AnswerEventSchemas]: { type: K; data: Static<(typeof AnswerEventSchemas)[K]> } }[keyof typeof AnswerEventSchemas]

export const isAnswerEvent = (event: { type: string }): event is AnswerEvent => Object.hasOwn(AnswerEventSchemas, event.type)

export const ANSWER_CATEGORY = 'answer'
/** `answer-<owner>-<YYYY-MM>`: the marks of the events recorded in an owner's quota month (read with its quota stream). */
export const answerStream = (ownerId: string, month: string) => `${ANSWER_CATEGORY}-${ownerId}-${month}`

/**
 * The marks of `sent`, each with an id derived from the event's and the mark's type: a mark recorded
 * again (retried after an outage, or by another run) is recorded once.
 */
const marks = (type: AnswerEvent['type'], sent: readonly SentRecord[], extra: Record<string, unknown>, at: Date) =>
  sent.map((s) => ({
    id: derivedUuid(`${s.eventId}\n${type}`),
    stream: answerStream(s.ownerId, s.month),
    type,
    data: { event_id: s.eventId, event_type: s.type, briefing_id: s.briefingId, owner_id: s.ownerId, quota_month: s.month, ...extra, at: at.toISOString() },
  }))

/** What to record when the request that sent `sent` was answered `status` (`error`, its code). */
export const leftUnanswered = (sent: readonly SentRecord[], status: number, error: string, at: Date) => marks('BriefingLeftUnanswered', sent, { status, error }, at)

/** What to record when a later run of an attempt served its charge or cache hit. */
export const answeredOnRetry = (sent: readonly SentRecord[], at: Date) => marks('BriefingAnsweredOnRetry', sent, {}, at)

/**
 * The events whose client got no answer, by event id (lower case): left unanswered and never answered
 * on a retry. Once served, an event was answered whatever the order its marks were recorded in (a mark
 * waits for a store that is away, so a retry's may land first).
 */
export function unansweredOf(events: readonly { type: string; data: unknown }[]): Set<string> {
  const left = new Set<string>()
  const servedLater = new Set<string>()
  for (const event of events) {
    if (!isAnswerEvent(event)) continue
    switch (event.type) {
      case 'BriefingLeftUnanswered':
        left.add(event.data.event_id.toLowerCase())
        break
      case 'BriefingAnsweredOnRetry':
        servedLater.add(event.data.event_id.toLowerCase())
        break
      default: {
        const never: never = event
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
  }
  return new Set([...left].filter((id) => !servedLater.has(id)))
}
