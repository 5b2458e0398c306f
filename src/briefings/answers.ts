import type { EventStore } from '../eventstore/port.ts'
import { isUnavailable, outsideRequests } from '../runtime/dependency.ts'
import { ERROR_CATALOGUE, isAppError } from '../shared/errors.ts'
import type { Clock } from '../shared/random.ts'
import { answeredOnRetry, leftUnanswered, type SentRecord } from '../domain/briefings/answers.ts'
import { attemptEventId } from '../domain/briefings/idempotency.ts'
import type { Held } from './key.ts'

/** How often a mark the event store refused for an outage is tried again, and for how long. */
const MARK_RETRY_MS = 250
const MARK_RETRY_FOR_MS = 60_000

/**
 * Records whether the client got what its request recorded (src/domain/briefings/answers.ts,
 * decision 0116). A mark is recorded outside the request that failed (whose calls would fail at once,
 * see src/runtime/dependency.ts), and again every MARK_RETRY_MS while the store is unavailable, for
 * MARK_RETRY_FOR_MS: it is the record of an answer already given, not part of it.
 */
export class AnswerMarks {
  constructor(
    private readonly store: EventStore,
    private readonly clock: Clock,
  ) {}

  /**
   * The request failed after sending `sent` to the store: each was left unanswered. A quota refusal
   * is decided before anything of its run is recorded, and records nothing.
   */
  unanswered(sent: readonly SentRecord[], failure: unknown): void {
    const error = isAppError(failure) ? failure.code : 'internal'
    if (sent.length === 0 || error === 'quota_exceeded') return
    this.record(leftUnanswered(sent, ERROR_CATALOGUE[error].status, error, this.clock()))
  }

  /**
   * A run continuing an attempt served `briefingId` (200): the attempt's charge or cache hit, which an
   * earlier run may have left unanswered, was answered. Only one of the two exists; a mark of the other
   * names nothing and is never read.
   */
  answeredOnRetry(held: Held, briefingId: string): void {
    const { keyStream, attempt, month } = held.run
    const sent = (['BriefingGenerated', 'BriefingServedFromCache'] as const).map((type) => ({
      eventId: attemptEventId(keyStream, attempt.attemptId, type),
      type,
      briefingId,
      ownerId: held.request.ownerId,
      month,
    }))
    this.record(answeredOnRetry(sent, this.clock()))
  }

  private record(marks: readonly { stream: string; id: string; type: string; data: Record<string, unknown> }[]) {
    const until = Date.now() + MARK_RETRY_FOR_MS
    for (const stream of new Set(marks.map((m) => m.stream))) {
      const events = marks.filter((m) => m.stream === stream).map(({ id, type, data }) => ({ id, type, data }))
      // An append at any revision of well-formed events is refused only for an outage.
      const attempt = () =>
        void outsideRequests(() => this.store.append(stream, events, 'any')).catch(
          (failure: unknown) => isUnavailable(failure) && Date.now() < until && setTimeout(attempt, MARK_RETRY_MS),
        )
      attempt()
    }
  }
}
