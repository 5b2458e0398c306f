/**
 * `toISOString` of epoch milliseconds, formatted once per distinct value: for times written on
 * every request, where a busy millisecond (or a whole hour, for a reset time) repeats the last one.
 * Keep one per kind of time, so that two kinds do not evict each other.
 */
export function isoTimes(): (ms: number) => string {
  let lastMs = Number.NaN
  let lastIso = ''
  return (ms) => {
    if (ms !== lastMs) {
      lastMs = ms
      lastIso = new Date(ms).toISOString()
    }
    return lastIso
  }
}
