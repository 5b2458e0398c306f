import { AppError, fail } from '../shared/errors.ts'

/**
 * Per-key hourly rate limits (spec §8): a fixed window per UTC hour, counters reset at the start of
 * each hour. Counters are hot and ephemeral, so they are not events: one adapter keeps them in memory
 * (single process), one in Redis (shared by several API processes).
 */
export type RateDecision = {
  allowed: boolean
  limit: number
  /** Requests counted in this hour, including this one when allowed; equals `limit` on rejection. */
  used: number
  remaining: number
  /** Start of the next UTC hour, when the counter resets. */
  resetAt: Date
  retryAfterSeconds: number
}

export interface RateLimiter {
  /**
   * Counts one request for `subject` in the UTC hour containing `now`, unless the hour's count already
   * reached `limit` (a rejected request is NOT counted, so on rejection used === limit). An adapter
   * that holds the counters itself answers at once; one that asks a server returns a promise.
   */
  hit(subject: string, limit: number, now: Date): RateDecision | Promise<RateDecision>
  close(): Promise<void>
}

/** Requests per key per UTC hour. Admin is never counted and free has no API access, so neither appears. */
export type RateLimits = { pro: number; enterprise: number }
/** Unless configured otherwise (RATE_LIMIT_PRO, RATE_LIMIT_ENTERPRISE). */
export const defaultRateLimits: RateLimits = { pro: 100, enterprise: 1000 }

const HOUR_MS = 3_600_000

/** The fixed window containing `now`: [start of its UTC hour, start of the next UTC hour). */
export function hourWindow(now: Date): { start: Date; resetAt: Date } {
  const start = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS
  return { start: new Date(start), resetAt: new Date(start + HOUR_MS) }
}

/** Seconds until the next UTC hour, rounded up: 1 at hh:59:59.999, 3600 at hh:00:00.000, never 0. */
export function retryAfterSeconds(now: Date): number {
  return Math.ceil((hourWindow(now).resetAt.getTime() - now.getTime()) / 1000)
}

/**
 * The decision for a counter that stands at `count` after the hit. `used` is capped at `limit` so that a
 * limit lowered mid-hour (tier downgrade) still reports used === limit on rejection.
 */
export function rateDecision(limit: number, count: number, allowed: boolean, now: Date): RateDecision {
  const used = Math.min(count, limit)
  return {
    allowed,
    limit,
    used,
    remaining: limit - used,
    resetAt: hourWindow(now).resetAt,
    retryAfterSeconds: retryAfterSeconds(now),
  }
}

/** The name of the one quota policy in the IETF draft's headers: requests per UTC hour. */
export const RATE_LIMIT_POLICY = 'hour'

/**
 * Sets the rate-limit headers every counted response carries, in both forms: `X-RateLimit-*` (Reset
 * in unix seconds) and those of draft-ietf-httpapi-ratelimit-headers (structured fields, RFC 9651):
 * `RateLimit-Policy: "hour";q=LIMIT;w=3600` and `RateLimit: "hour";r=REMAINING;t=SECONDS` (seconds
 * until the counter resets, as Retry-After counts them). Both describe the same counter.
 */
export function setRateLimitHeaders(headers: Record<string, unknown>, decision: RateDecision): void {
  headers['X-RateLimit-Limit'] = String(decision.limit)
  headers['X-RateLimit-Remaining'] = String(decision.remaining)
  headers['X-RateLimit-Reset'] = String(decision.resetAt.getTime() / 1000)
  headers['RateLimit-Policy'] = `"${RATE_LIMIT_POLICY}";q=${decision.limit};w=${HOUR_MS / 1000}`
  headers['RateLimit'] = `"${RATE_LIMIT_POLICY}";r=${decision.remaining};t=${decision.retryAfterSeconds}`
}

/** The rate-limit headers every counted response carries (`setRateLimitHeaders`). */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {}
  setRateLimitHeaders(headers, decision)
  return headers
}

/** The 429 for a rejected decision: spec §7 body fields plus Retry-After and the rate-limit headers. */
export function rateLimitExceeded(decision: RateDecision): AppError {
  return fail.rateLimit(
    `hourly limit of ${decision.limit} requests reached; the counter resets at ${decision.resetAt.toISOString()}`,
    { limit: decision.limit, used: decision.used, retryAfterSeconds: decision.retryAfterSeconds },
    rateLimitHeaders(decision),
  )
}

/**
 * What an adapter throws when it cannot count (e.g. Redis does not answer): the request is not let
 * through uncounted. A typed failure of the port, not an answer: the HTTP layer maps it to its 503
 * (src/http/errors.ts `rateLimiterUnavailable`).
 */
export class RateLimiterUnavailable extends Error {
  constructor() {
    super('rate limiter unavailable')
    this.name = 'RateLimiterUnavailable'
  }
}
