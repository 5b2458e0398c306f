/**
 * Days on market of one listing (GET /listings), pure. The zone figures, the median days on market
 * among them, are in zone-statistics.ts.
 */

export const DAY_MS = 86_400_000

/** Whole days a listing has been on the market at `nowMs` (0 for a listing dated in the future). */
export const daysOnMarket = (nowMs: number, listedMs: number): number => Math.max(0, Math.floor((nowMs - listedMs) / DAY_MS))

/** The first instant after `nowMs` at which `daysOnMarket` gives another value: the next whole day since listing. */
export const daysOnMarketChangesAt = (nowMs: number, listedMs: number): number =>
  listedMs + (daysOnMarket(nowMs, listedMs) + 1) * DAY_MS
