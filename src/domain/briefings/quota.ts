import type { ExpectedRevision } from '../../eventstore/port.ts'
import type { ApiTier } from '../owners/owner.ts'
import { AppError } from '../../shared/errors.ts'

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

/** The quota stream's last revision → briefings charged in it (one BriefingGenerated per revision). */
export const usedAt = (revision: number | 'no_stream') => (revision === 'no_stream' ? 0 : revision + 1)

export function usageOf(policy: QuotaPolicy, tier: ApiTier, used: number): Usage {
  return tier === 'admin' ? { used, quota: 0, unlimited: true } : { used, quota: policy[tier], unlimited: false }
}

export function quotaExceeded(usage: Usage, month: string, now: Date): AppError {
  const resetsAt = monthResetsAt(month)
  const retryAfter = Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000))
  return new AppError(
    'quota_exceeded',
    `the monthly briefing quota of ${usage.quota} is used up (${usage.used} used); it resets at ${resetsAt.toISOString()}. Cached briefings are still served.`,
    { used: usage.used, quota: usage.quota, resets_at: resetsAt.toISOString() },
    { 'retry-after': String(retryAfter) },
  )
}

export type ChargeDecision = { kind: 'append'; expected: ExpectedRevision } | { kind: 'exhausted'; usage: Usage }

/**
 * Whether one more briefing may be charged to a quota stream whose last revision is `revision`.
 * The append carries that revision as the expected one, so a concurrent charge makes it fail
 * instead of both being recorded: no two charges can spend the same unit.
 */
export function decideCharge(policy: QuotaPolicy, tier: ApiTier, revision: number | 'no_stream'): ChargeDecision {
  const usage = usageOf(policy, tier, usedAt(revision))
  // Unlimited owners never conflict with themselves: their usage is only counted.
  if (usage.unlimited) return { kind: 'append', expected: 'any' }
  if (usage.used >= usage.quota) return { kind: 'exhausted', usage }
  return { kind: 'append', expected: revision }
}
