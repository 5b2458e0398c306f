import { parseUntil } from '../audit/trail.ts'
import type { EventStore, RecordedEvent } from '../eventstore/port.ts'
import { invalidRequest } from '../shared/errors.ts'
import { type BriefingEvent, cacheHitStream, isBriefingEvent, quotaStream } from './events.ts'

export type QuotaAuditEntry = {
  position: number
  at: string
  type: BriefingEvent['type']
  /** The key that asked for the briefing. */
  actor: string
  /** True for a generated briefing (one unit of quota), false for a cache hit (free). */
  charged: boolean
  /** The resulting state: units charged in the month up to and including this entry (what the API reported then). */
  used: number
  briefing_id: string
  key_id: string
  persona: string
  cache_key: string
  /** For generated briefings: who wrote it and what it said. */
  writer: string | null
  model: string | null
  verdict: string | null
}

const MONTH = /^[0-9]{4}-(0[1-9]|1[0-2])$/

/**
 * Every charge and every free cache hit of `ownerId` in `month` (YYYY-MM), in the order they were
 * recorded, optionally only those at or before `until` (ISO time). Read from the event streams
 * themselves, so it answers for the record, not for a read model.
 */
export async function quotaAudit(store: EventStore, ownerId: string, month: string, until?: string): Promise<QuotaAuditEntry[]> {
  if (!MONTH.test(month)) throw invalidRequest('month must be YYYY-MM', [{ field: 'month', message: 'Expected YYYY-MM' }])
  const limit = parseUntil(until)

  const [charges, hits] = await Promise.all([store.readStream(quotaStream(ownerId, month)), store.readStream(cacheHitStream(ownerId, month))])
  const recorded: RecordedEvent[] = [...charges, ...hits].sort((a, b) => a.position - b.position)
  const entries: QuotaAuditEntry[] = []
  let used = 0
  for (const record of recorded) {
    const event = { type: record.type, data: record.data }
    if (!isBriefingEvent(event) || Date.parse(event.data.at) > limit) continue
    switch (event.type) {
      case 'BriefingGenerated':
        used += 1
        entries.push({
          position: record.position,
          at: event.data.at,
          type: event.type,
          actor: event.data.key_id,
          charged: true,
          used,
          briefing_id: event.data.briefing_id,
          key_id: event.data.key_id,
          persona: event.data.persona,
          cache_key: event.data.cache_key,
          writer: event.data.writer,
          model: event.data.model,
          verdict: event.data.result.verdict,
        })
        break
      case 'BriefingServedFromCache':
        entries.push({
          position: record.position,
          at: event.data.at,
          type: event.type,
          actor: event.data.key_id,
          charged: false,
          used,
          briefing_id: event.data.briefing_id,
          key_id: event.data.key_id,
          persona: event.data.persona,
          cache_key: event.data.cache_key,
          writer: null,
          model: null,
          verdict: null,
        })
        break
      default: {
        const never: never = event
        throw new Error(`unhandled ${JSON.stringify(never)}`)
      }
    }
  }
  return entries
}
