import { type EventStore, type NewEvent, type RecordedEvent, WrongExpectedRevision } from '../eventstore/port.ts'
import type { ApiTier } from '../domain/owners/owner.ts'
import { type BriefingGenerated, quotaStream } from '../domain/briefings/events.ts'
import { lastChargeAt, type QuotaPolicy, quotaDecider, type Usage, usageOf, usedAt } from '../domain/briefings/quota.ts'
import { isUnavailable } from '../runtime/dependency.ts'
import { singleFlight } from '../shared/single-flight.ts'
import type { BriefingReadModel } from '../../projections/briefings/read-model.ts'

/** Hints are only an optimisation; past this many streams the least recently charged are forgotten. */
const MAX_HINTS = 10_000
/** How long a count read from the usage read model is reused (/health and every cache hit read it). */
const PROJECTED_USAGE_TTL_MS = 1000

/** A recorded charge: the briefing it recorded (an earlier run's, if that run charged first) and the usage right after it. */
export type Charged = { briefing: BriefingGenerated; usage: Usage }

/**
 * The owners' monthly quota streams, the authority on usage: charged here, and read here for the
 * service (the one reading, `usage`).
 *
 * Charging is exact: for a limited tier each charge is appended with the stream's last revision as
 * the expected one, so of two concurrent charges (in this process or any other) only one can take a
 * given revision. On WrongExpectedRevision the store reports the actual revision, and the charge is
 * decided again from it. Each conflict means another charge was recorded, so the loop ends within
 * `quota` rounds. Unlimited tiers append at any revision: the store still tells the revision their
 * charge took, so their usage is exact too. In this process, charges to one stream fly one at a time
 * and the last revision is remembered, so they rarely conflict at all.
 *
 * Reading: the usage is the stream's length (`usedAt`). Without reading the stream, two counts of it
 * are at hand, both never above it (a stream only grows): the revision this process last appended
 * or saw, and the usage read model (which every process's charges reach within the projection's lag).
 * The larger is the closer. The read model's count is reused for a second, and while its database is
 * unavailable the last count read is reused (/health keeps answering); the charge needs the event
 * store anyway.
 */
export class QuotaLedger {
  private readonly revisions = new Map<string, number | 'no_stream'>()
  private readonly projected = new Map<string, { used: number; expires: number }>()
  private readonly oneChargeAtATime = singleFlight()
  private readonly decider: ReturnType<typeof quotaDecider>

  constructor(
    private readonly store: EventStore,
    private readonly readModel: BriefingReadModel,
    private readonly policy: QuotaPolicy,
  ) {
    this.decider = quotaDecider(policy)
  }

  /** The month's usage of an owner as far as known (see above). */
  async usage(ownerId: string, tier: ApiTier, month: string): Promise<Usage> {
    const projected = await this.projectedUsed(ownerId, month)
    // Read after the await: charges this process recorded meanwhile count (admission relies on it).
    const known = this.revisions.get(quotaStream(ownerId, month))
    return usageOf(this.policy, tier, Math.max(projected, known === undefined ? 0 : usedAt(known)))
  }

  /**
   * Appends the charge if the quota allows; otherwise throws quota_exceeded and records nothing.
   * `usedGuess` (from `usage`) only picks the first expected revision.
   */
  charge(tier: ApiTier, briefing: BriefingGenerated, eventId: string, usedGuess: number, now: Date): Promise<Charged> {
    const stream = quotaStream(briefing.owner_id, briefing.quota_month)
    return this.oneChargeAtATime(stream, async () => {
      let revision = this.revisions.get(stream) ?? lastChargeAt(usedGuess)
      for (;;) {
        const used = usedAt(revision)
        const [event] = this.decider.decide({ type: 'ChargeBriefing', tier, briefing, now }, { used })
        const expected = usageOf(this.policy, tier, used).unlimited ? 'any' : revision
        const recorded: NewEvent = { id: eventId, type: event!.type, data: event!.data }
        try {
          const appended = await this.store.append(stream, [recorded], expected)
          this.remember(stream, appended.revision)
          if (!appended.duplicate) return this.chargedAs(tier, { data: briefing, revision: appended.revision })
          // The charge an earlier run of the attempt recorded at that revision.
          const earlier = await this.findCharge(stream, (e) => e.revision === appended.revision)
          if (!earlier) throw new Error(`${stream} has no revision ${appended.revision}`)
          return this.chargedAs(tier, earlier)
        } catch (error) {
          if (!(error instanceof WrongExpectedRevision) || error.stream !== stream) throw error
          revision = error.actual
          this.remember(stream, revision)
        }
      }
    })
  }

  /** The charge recorded with `eventId` in an owner's month, if any (by an earlier run of an attempt), and the usage right after it. */
  async recorded(ownerId: string, tier: ApiTier, month: string, eventId: string): Promise<Charged | null> {
    const charge = await this.findCharge(quotaStream(ownerId, month), (e) => e.id.toLowerCase() === eventId)
    return charge ? this.chargedAs(tier, charge) : null
  }

  private async findCharge(stream: string, which: (event: RecordedEvent) => boolean): Promise<RecordedEvent | undefined> {
    return (await this.store.readStream(stream)).find(which)
  }

  private chargedAs(tier: ApiTier, charge: Pick<RecordedEvent, 'data' | 'revision'>): Charged {
    return { briefing: charge.data as BriefingGenerated, usage: usageOf(this.policy, tier, usedAt(charge.revision)) }
  }

  /** Keeps the highest revision seen (a duplicate reports an older one), most recently charged last. */
  private remember(stream: string, revision: number | 'no_stream') {
    const known = this.revisions.get(stream)
    this.revisions.delete(stream)
    if (this.revisions.size >= MAX_HINTS) this.revisions.delete(this.revisions.keys().next().value!)
    this.revisions.set(stream, known === undefined || known === 'no_stream' || (revision !== 'no_stream' && revision > known) ? revision : known)
  }

  private async projectedUsed(ownerId: string, month: string): Promise<number> {
    const key = `${ownerId}/${month}`
    const started = performance.now()
    const cached = this.projected.get(key)
    if (cached && cached.expires > started) return cached.used
    let used: number
    try {
      used = await this.readModel.used(ownerId, month)
    } catch (error) {
      if (cached && isUnavailable(error)) return cached.used
      throw error
    }
    if (this.projected.size >= 10_000) this.projected.clear()
    this.projected.set(key, { used, expires: started + PROJECTED_USAGE_TTL_MS })
    return used
  }
}
