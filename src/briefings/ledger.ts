import { type EventStore, type NewEvent, WrongExpectedRevision } from '../eventstore/port.ts'
import type { ApiTier } from '../domain/owners/owner.ts'
import { type BriefingGenerated, quotaStream } from '../domain/briefings/events.ts'
import { type QuotaPolicy, type QuotaState, quotaDecider, type Usage, usageOf } from '../domain/briefings/quota.ts'

/** Hints are only an optimisation; past this many streams the least recently charged are forgotten. */
const MAX_HINTS = 10_000

/** Each event of a quota stream is one charge: its last revision tells the state without reading it. */
const stateAt = (revision: number | 'no_stream'): QuotaState => ({ used: revision === 'no_stream' ? 0 : revision + 1 })

/** A recorded charge: the usage right after it; `duplicate` when its id was recorded before (by an earlier run). */
export type Charged = { usage: Usage; revision: number; position: number; duplicate: boolean }

/**
 * Charges briefings to the owners' monthly quota streams, deciding with the quota decider. Exactness
 * comes from the event store: for a limited tier each charge is appended with the stream's last
 * revision as the expected one, so of two concurrent charges (in this process or any other) only one
 * can take a given revision. On WrongExpectedRevision the store reports the actual revision, and the
 * charge is decided again from it. Each conflict means another charge was recorded, so the loop ends
 * within `quota` rounds. Unlimited tiers append at any revision: the store still tells the revision
 * their charge took, so their usage is exact too.
 *
 * In this process, charges to one stream queue behind each other and the last revision is
 * remembered, so they rarely conflict at all, and the usage this process has charged is known.
 */
export class QuotaLedger {
  private readonly revisions = new Map<string, number | 'no_stream'>()
  private readonly queues = new Map<string, Promise<unknown>>()
  private readonly decider: ReturnType<typeof quotaDecider>

  constructor(
    private readonly store: EventStore,
    private readonly policy: QuotaPolicy,
  ) {
    this.decider = quotaDecider(policy)
  }

  /** Briefings charged as this process last saw them, or undefined if it has not touched the stream. */
  knownUsed(ownerId: string, month: string): number | undefined {
    const revision = this.revisions.get(quotaStream(ownerId, month))
    return revision === undefined ? undefined : stateAt(revision).used
  }

  /**
   * Appends the charge if the quota allows; otherwise throws quota_exceeded and records nothing.
   * `usedGuess` (from the read model) only picks the first expected revision. `appending` is told
   * before each append, and told `false` after one that recorded nothing (a lost race).
   */
  charge(
    tier: ApiTier,
    briefing: BriefingGenerated,
    eventId: string,
    usedGuess: number,
    now: Date,
    appending: (maybe: boolean) => void = () => {},
  ): Promise<Charged> {
    const stream = quotaStream(briefing.owner_id, briefing.quota_month)
    return this.serialised(stream, async () => {
      let revision = this.revisions.get(stream) ?? (usedGuess > 0 ? usedGuess - 1 : 'no_stream')
      for (;;) {
        const state = stateAt(revision)
        const [event] = this.decider.decide({ type: 'ChargeBriefing', tier, briefing, now }, state)
        const expected = usageOf(this.policy, tier, state.used).unlimited ? 'any' : revision
        const recorded: NewEvent = { id: eventId, type: event!.type, data: event!.data }
        try {
          appending(true)
          const appended = await this.store.append(stream, [recorded], expected)
          this.remember(stream, appended.revision)
          return {
            usage: usageOf(this.policy, tier, stateAt(appended.revision).used),
            revision: appended.revision,
            position: appended.position,
            duplicate: appended.duplicate,
          }
        } catch (error) {
          if (!(error instanceof WrongExpectedRevision) || error.stream !== stream) throw error
          appending(false)
          revision = error.actual
          this.remember(stream, revision)
        }
      }
    })
  }

  /** Keeps the highest revision seen (a duplicate reports an older one), most recently charged last. */
  private remember(stream: string, revision: number | 'no_stream') {
    const known = this.revisions.get(stream)
    this.revisions.delete(stream)
    if (this.revisions.size >= MAX_HINTS) this.revisions.delete(this.revisions.keys().next().value!)
    this.revisions.set(stream, known === undefined || known === 'no_stream' || (revision !== 'no_stream' && revision > known) ? revision : known)
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
