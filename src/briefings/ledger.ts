import { type EventStore, type StreamWrite, WrongExpectedRevision } from '../eventstore/port.ts'
import type { ApiTier } from '../domain/owners/owner.ts'
import { type BriefingGenerated, quotaStream } from '../domain/briefings/events.ts'
import { decideCharge, type QuotaPolicy, quotaExceeded, type Usage, usageOf, usedAt } from '../domain/briefings/quota.ts'

/** Hints are only an optimisation; past this many streams they are forgotten. */
const MAX_HINTS = 10_000

/**
 * Charges briefings to the owners' monthly quota streams. Exactness comes from the event store:
 * each charge is appended with the stream's last revision as the expected one, so of two
 * concurrent charges (in this process or any other) only one can take a given revision.
 * On WrongExpectedRevision the store reports the actual revision, and the charge is decided again
 * from it. Each conflict means another charge was recorded, so the loop ends within `quota` rounds.
 *
 * In this process, charges to one stream queue behind each other and the last revision is
 * remembered, so they rarely conflict at all.
 */
export class QuotaLedger {
  private readonly revisions = new Map<string, number | 'no_stream'>()
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(
    private readonly store: EventStore,
    private readonly policy: QuotaPolicy,
  ) {}

  /** Briefings charged as this process last saw them, or undefined if it has not touched the stream. */
  knownUsed(ownerId: string, month: string): number | undefined {
    const revision = this.revisions.get(quotaStream(ownerId, month))
    return revision === undefined ? undefined : usedAt(revision)
  }

  /**
   * Appends the BriefingGenerated event if the quota allows; otherwise throws quota_exceeded and
   * records nothing. `usedGuess` (from the read model) only picks the first expected revision.
   * `also` adds writes to other streams, recorded atomically with the charge; it is given the usage
   * after the charge, which is then exact for unlimited owners too (their charge is checked against
   * the stream's revision like anyone's). A conflict in one of those streams is thrown as is.
   */
  charge(
    tier: ApiTier,
    event: { id: string; data: BriefingGenerated },
    usedGuess: number,
    now: Date,
    also?: (usage: Usage) => StreamWrite[],
  ): Promise<{ usage: Usage; position: number }> {
    const stream = quotaStream(event.data.owner_id, event.data.quota_month)
    return this.serialised(stream, async () => {
      let revision = this.revisions.get(stream) ?? (usedGuess > 0 ? usedGuess - 1 : 'no_stream')
      for (;;) {
        const decision = decideCharge(this.policy, tier, revision)
        if (decision.kind === 'exhausted') throw quotaExceeded(decision.usage, event.data.quota_month, now)
        const expected = also ? revision : decision.expected
        const charge = { stream, events: [{ id: event.id, type: 'BriefingGenerated', data: event.data }], expected }
        try {
          const [appended] = await this.store.appendMany([charge, ...(also?.(usageOf(this.policy, tier, usedAt(revision) + 1)) ?? [])])
          this.remember(stream, appended!.revision)
          return { usage: usageOf(this.policy, tier, usedAt(appended!.revision)), position: appended!.position }
        } catch (error) {
          if (!(error instanceof WrongExpectedRevision) || error.stream !== stream) throw error
          revision = error.actual
          this.remember(stream, revision)
        }
      }
    })
  }

  private remember(stream: string, revision: number | 'no_stream') {
    if (this.revisions.size >= MAX_HINTS && !this.revisions.has(stream)) this.revisions.clear()
    this.revisions.set(stream, revision)
  }

  private serialised<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(key) ?? Promise.resolve()
    const next = previous.then(work, work)
    this.queues.set(key, next)
    const forget = () => {
      if (this.queues.get(key) === next) this.queues.delete(key)
    }
    next.then(forget, forget)
    return next
  }
}
