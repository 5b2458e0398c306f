import type { ApiTier } from '../domain/owners/owner.ts'
import { quotaStream } from '../domain/briefings/events.ts'
import { type QuotaPolicy, quotaExceeded, type Usage, usageOf } from '../domain/briefings/quota.ts'
import type { BriefingReadModel } from '../../projections/briefings/read-model.ts'
import type { QuotaLedger } from './ledger.ts'
import { isUnavailable } from '../runtime/dependency.ts'

const PROJECTED_USAGE_TTL_MS = 1000

/** A place among the briefings being written for one quota; `release` when the briefing is charged or failed. */
export type Slot = { usage: Usage; release(): void }

/**
 * The usage an owner sees and the admission of new briefings before they are written.
 *
 * Usage is the projected count, never lower than what this process has charged (the ledger knows
 * its own charges at once). /health reports usage on every request, so the projected count is
 * reused for a second: other processes' charges appear within that second. While the read-model
 * database is unavailable the last count read is reused (/health keeps answering); the charge
 * needs the event store anyway.
 */
export class Admission {
  private readonly projected = new Map<string, { used: number; expires: number }>()
  /** Briefings being written in this process, per quota stream (see reserve). */
  private readonly writing = new Map<string, Set<Promise<void>>>()

  constructor(
    private readonly readModel: BriefingReadModel,
    private readonly ledger: QuotaLedger,
    private readonly policy: QuotaPolicy,
  ) {}

  async usage(ownerId: string, tier: ApiTier, month: string): Promise<Usage> {
    return usageOf(this.policy, tier, Math.max(await this.projectedUsed(ownerId, month), this.ledger.knownUsed(ownerId, month) ?? 0))
  }

  /**
   * Refuses when the month is used up, and waits while the briefings already being written in this
   * process would use up what is left, so that no writer call (which may cost money) is made for a
   * briefing that could not be charged. The charge stays the exact check, across processes too.
   * Check and registration run without an await in between.
   */
  async reserve(ownerId: string, tier: ApiTier, month: string, now: Date): Promise<Slot> {
    const stream = quotaStream(ownerId, month)
    for (;;) {
      const current = await this.usage(ownerId, tier, month)
      if (current.unlimited) return { usage: current, release: () => {} }
      if (current.used >= current.quota) throw quotaExceeded(current, month, now)
      const writing = this.writing.get(stream) ?? new Set<Promise<void>>()
      if (current.used + writing.size < current.quota) {
        let release = () => {}
        const done = new Promise<void>((resolve) => {
          release = resolve
        })
        writing.add(done)
        this.writing.set(stream, writing)
        void done.then(() => {
          writing.delete(done)
          if (writing.size === 0 && this.writing.get(stream) === writing) this.writing.delete(stream)
        })
        return { usage: current, release }
      }
      await Promise.race(writing)
    }
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
