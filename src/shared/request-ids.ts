/**
 * Request ids shaped like a UUID (8-4-4-4-12 hex digits), unique within the process and, by the
 * random first part drawn once at start (about 70 bits), across processes; the last group counts
 * requests (2⁴⁸ of them). Nothing is drawn per request: an id costs a counter and a string, where
 * `crypto.randomUUID()` reached for randomness every time. Ids are for correlating log lines, not secrets.
 */
export function requestIdSource(uuid: () => string = () => crypto.randomUUID()): () => string {
  const start = uuid().slice(0, 24)
  let count = 0
  return () => start + (count++).toString(16).padStart(12, '0')
}
