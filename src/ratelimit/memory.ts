import { hourWindow, rateDecision, type RateLimiter } from './port.ts'

/**
 * Counters in this process's memory: for the embedded single-process server. A hit is answered at
 * once (no promise), so concurrent requests cannot overshoot the limit. The first hit of a new hour drops
 * the counters of every earlier hour, so memory stays bounded by the keys active in the current hour.
 */
export function memoryRateLimiter(): RateLimiter {
  /** window start (epoch ms) → subject → count */
  const windows = new Map<number, Map<string, number>>()

  function countersFor(windowStart: number): Map<string, number> {
    let counters = windows.get(windowStart)
    if (!counters) {
      counters = new Map()
      windows.set(windowStart, counters)
      for (const start of windows.keys()) if (start < windowStart) windows.delete(start)
    }
    return counters
  }

  return {
    hit(subject, limit, now) {
      const counters = countersFor(hourWindow(now).start.getTime())
      const count = counters.get(subject) ?? 0
      if (count >= limit) return rateDecision(limit, count, false, now)
      counters.set(subject, count + 1)
      return rateDecision(limit, count + 1, true, now)
    },
    async close() {
      windows.clear()
    },
  }
}
