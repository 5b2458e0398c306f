import type { ApiTier } from '../domain/owners/owner.ts'
import { quotaStream } from '../domain/briefings/events.ts'
import { quotaExceeded, type Usage } from '../domain/briefings/quota.ts'
import type { QuotaLedger } from './ledger.ts'

/** A place among the briefings being written for one quota; `release` when the briefing is charged or failed. */
export type Slot = { usage: Usage; release(): void }

/**
 * The admission of new briefings before they are written: refuses when the month is used up, and
 * waits while the briefings already being written in this process would use up what is left, so
 * that no writer call (which may cost money) is made for a briefing that could not be charged. The
 * charge stays the exact check, across processes too.
 */
export class Admission {
  /** Briefings being written in this process, per quota stream. */
  private readonly writing = new Map<string, Set<Promise<void>>>()

  constructor(private readonly ledger: QuotaLedger) {}

  /** Check and registration run without an await in between. */
  async reserve(ownerId: string, tier: ApiTier, month: string, now: Date): Promise<Slot> {
    const stream = quotaStream(ownerId, month)
    for (;;) {
      const current = await this.ledger.usage(ownerId, tier, month)
      if (current.unlimited) return { usage: current, release: () => {} }
      if (current.used >= current.quota) throw quotaExceeded(current, month, now)
      const writing = this.writing.get(stream) ?? new Set<Promise<void>>()
      if (current.used + writing.size < current.quota) return { usage: current, release: this.register(stream, writing) }
      await Promise.race(writing)
    }
  }

  private register(stream: string, writing: Set<Promise<void>>): () => void {
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
    return release
  }
}
