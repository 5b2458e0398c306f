import type { ApiTier } from '../owners/owner.ts'
import { AppError, fail } from '../../shared/errors.ts'
import type { BriefingGenerated } from './events.ts'

/** Briefings per owner per UTC calendar month; admins are unlimited (as for rate limits). */
export type QuotaPolicy = { pro: number; enterprise: number }
export const DEFAULT_QUOTAS: QuotaPolicy = { pro: 50, enterprise: 500 }

export type Usage = { used: number; quota: number; unlimited: boolean }

/** The quota month containing `at`, as `YYYY-MM` (UTC). */
export const quotaMonth = (at: Date) => at.toISOString().slice(0, 7)

/** First instant of the month after `month`, when its quota resets. */
export function monthResetsAt(month: string): Date {
  const [year, mon] = month.split('-').map(Number) as [number, number]
  return new Date(Date.UTC(year, mon, 1))
}

/**
 * The month's usage, read once: a quota stream holds one event per charge and nothing else, so the
 * usage is its length, `usedAt(revision)` after the event at `revision`. The stream is the authority;
 * the ledger (src/briefings/ledger.ts), the usage read model and its copy in memory
 * (projections/briefings/usage.ts, usage-index.ts) all count with this function.
 */
export const usedAt = (revision: number | 'no_stream'): number => (revision === 'no_stream' ? 0 : revision + 1)
/** The revision of the last charge when `used` are recorded: the inverse of `usedAt`. */
export const lastChargeAt = (used: number): number | 'no_stream' => (used > 0 ? used - 1 : 'no_stream')

export function usageOf(policy: QuotaPolicy, tier: ApiTier, used: number): Usage {
  return tier === 'admin' ? { used, quota: 0, unlimited: true } : { used, quota: policy[tier], unlimited: false }
}

export function quotaExceeded(usage: Usage, month: string, now: Date): AppError {
  const resetsAt = monthResetsAt(month)
  const retryAfter = Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000))
  return fail.quotaExceeded(
    `the monthly briefing quota of ${usage.quota} is used up (${usage.used} used); it resets at ${resetsAt.toISOString()}. Cached briefings are still served.`,
    { used: usage.used, quota: usage.quota, resetsAt: resetsAt.toISOString() },
    retryAfter,
  )
}

// ---- the quota decider: one owner's quota stream for one month -------------------------------

/** A quota stream folded: the briefings charged to it (each of its events is one charge). */
export type QuotaState = { used: number }
export type QuotaEvent = { type: 'BriefingGenerated'; data: BriefingGenerated }
/** Charge a generated briefing (built by `briefingGenerated`) to its owner's quota of `briefing.quota_month`. */
export type ChargeBriefing = { type: 'ChargeBriefing'; tier: ApiTier; briefing: BriefingGenerated; now: Date }

/**
 * The monthly quota: a charge is recorded while the owner's tier allows one more this month (admins
 * always), else refused with `quota_exceeded` (used, quota, resets_at, Retry-After until then).
 * That two concurrent charges cannot both take the last unit is the shell's part: it appends the
 * charge expecting the stream as it was decided on.
 */
export function quotaDecider(policy: QuotaPolicy) {
  return {
    initialState: { used: 0 } as QuotaState,
    evolve: (state: QuotaState, _event: QuotaEvent): QuotaState => ({ used: state.used + 1 }),
    decide(command: ChargeBriefing, state: QuotaState): QuotaEvent[] {
      const usage = usageOf(policy, command.tier, state.used)
      if (!usage.unlimited && usage.used >= usage.quota) throw quotaExceeded(usage, command.briefing.quota_month, command.now)
      return [{ type: 'BriefingGenerated', data: command.briefing }]
    },
  }
}
