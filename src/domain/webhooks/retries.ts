/**
 * When a failed delivery is tried again (decision 0112; docs/api.md, "Webhooks"): 5 s, 30 s, 2 min,
 * 10 min, 30 min and 1 h after the 1st to 6th failure, then every 2 h; a message still failing
 * 24 h after its first failure disables the subscription. The same message (same `webhook-id`) is
 * sent each time, and nothing after it before it is delivered.
 */
const DELAYS_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000]
const THEN_EVERY_MS = 7_200_000

/** How long subscriptions keep being tried after a message first failed: 24 hours. */
export const RETRY_FOR_MS = 24 * 3600_000

/** The wait after the `failures`-th failure in a row of one message (1 = the first). */
export function retryDelayMs(failures: number): number {
  if (!Number.isInteger(failures) || failures < 1) throw new RangeError(`failures counts from 1, not ${failures}`)
  return DELAYS_MS[failures - 1] ?? THEN_EVERY_MS
}
