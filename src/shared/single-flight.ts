/** Runs `work` as the one flight of `key` in this process (see singleFlight). */
export type SingleFlight = <T>(key: string, work: () => Promise<T>) => Promise<T>

/**
 * One flight per key at a time in this process: a call waits while the flight of its key is in the
 * air (whatever its outcome), then flies its own `work`. Waiters do not share the result: each runs
 * its own work, which finds what the first one recorded (the briefing cache, an Idempotency-Key's
 * stream, a quota stream's revision) instead of doing it again.
 */
export function singleFlight(): SingleFlight {
  const flying = new Map<string, Promise<unknown>>()
  return async function fly<T>(key: string, work: () => Promise<T>): Promise<T> {
    for (let current = flying.get(key); current; current = flying.get(key)) await current.catch(() => {})
    const flight = work()
    flying.set(key, flight)
    try {
      return await flight
    } finally {
      if (flying.get(key) === flight) flying.delete(key)
    }
  }
}
