import { parseUntil } from './trail.ts'
import type { EventStore, RecordedEvent } from '../eventstore/port.ts'
import { invalidRequest } from '../shared/errors.ts'
import { type BriefingEvent, cacheHitStream, isBriefingEvent, quotaStream } from '../domain/briefings/events.ts'
import { type BriefingReplayed, IDEMPOTENCY_CATEGORY, legacyReplayStream } from '../domain/briefings/idempotency.ts'
import { answerStream, unansweredOf } from '../domain/briefings/answers.ts'
import { Month } from '../domain/schemas.ts'
import { isValid } from '../shared/validate.ts'

export type QuotaAuditEntry = {
  position: number
  /** The recorded event's id (lower case). */
  event_id: string
  at: string
  type: BriefingEvent['type'] | 'BriefingReplayed'
  /** The key that asked for the briefing. */
  actor: string
  /** True for a generated briefing (one unit of quota), false for a cache hit or a replay (free). */
  charged: boolean
  /**
   * Whether the client got this answer: false when the request that recorded it was answered an error
   * (e.g. 503, its append having committed after the request's time ran out) and no retry of its
   * Idempotency-Key attempt served it since (decision 0116). A charge counts in `used` either way, as
   * the API counts it in every later `usage`.
   */
  answered: boolean
  /** The resulting state: units charged in the month up to and including this entry (what the API reported then). */
  used: number
  briefing_id: string
  key_id: string
  persona: string
  /** The briefing cache key (null for a replay, which serves a recorded response). */
  cache_key: string | null
  /** For generated briefings: who wrote it and what it said. */
  writer: string | null
  model: string | null
  verdict: string | null
  /** The request's Idempotency-Key, if it sent one. */
  idempotency_key: string | null
}

/** A recorded event the audit reads: a charge or cache hit of the owner-month streams, or a replay. */
type AuditedEvent = BriefingEvent | { type: 'BriefingReplayed'; data: BriefingReplayed }
const isAudited = (event: { type: string }): event is AuditedEvent => isBriefingEvent(event) || event.type === 'BriefingReplayed'


/** Events read at a time from the keys' streams. */
const PAGE = 1000

/**
 * The replays served to `ownerId` in `month`, recorded on each Idempotency-Key's stream (decision
 * 0107): read page by page from those streams' category, keeping only that owner's in that month.
 */
async function replaysOnKeys(store: EventStore, ownerId: string, month: string): Promise<RecordedEvent[]> {
  const found: RecordedEvent[] = []
  for (let after = 0; ; ) {
    const page = await store.readAll(after, { limit: PAGE, categories: [IDEMPOTENCY_CATEGORY] })
    for (const event of page) {
      const data = event.data as Partial<BriefingReplayed>
      if (event.type === 'BriefingReplayed' && data.owner_id === ownerId && data.quota_month === month) found.push(event)
    }
    if (page.length === 0) return found
    after = page[page.length - 1]!.position
  }
}

/** The entry of one audited event, `used` being the month's usage up to and including it. */
function entryOf(record: RecordedEvent, event: AuditedEvent, used: number, unanswered: ReadonlySet<string>): QuotaAuditEntry {
  const common = {
    position: record.position,
    event_id: record.id.toLowerCase(),
    at: event.data.at,
    type: event.type,
    actor: event.data.key_id,
    charged: event.type === 'BriefingGenerated',
    answered: !unanswered.has(record.id.toLowerCase()),
    used,
    briefing_id: event.data.briefing_id,
    key_id: event.data.key_id,
    persona: event.data.persona,
    cache_key: null,
    writer: null,
    model: null,
    verdict: null,
    idempotency_key: event.data.idempotency_key ?? null,
  }
  switch (event.type) {
    case 'BriefingGenerated':
      return { ...common, cache_key: event.data.cache_key, writer: event.data.writer, model: event.data.model, verdict: event.data.result.verdict }
    case 'BriefingServedFromCache':
      return { ...common, cache_key: event.data.cache_key }
    case 'BriefingReplayed':
      return common
    default: {
      const never: never = event
      throw new Error(`unhandled ${JSON.stringify(never)}`)
    }
  }
}

/**
 * Every charge, free cache hit and Idempotency-Key replay of `ownerId` in `month` (YYYY-MM), in the
 * order they were recorded, optionally only those at or before `until` (ISO time) and those at or
 * before log position `through`, each with the running total and whether its client got it (decision
 * 0116). Read from the event streams themselves, so it answers for the record, not for a read model.
 */
export async function quotaAudit(store: EventStore, ownerId: string, month: string, until?: string, through = Number.POSITIVE_INFINITY): Promise<QuotaAuditEntry[]> {
  if (!isValid(Month, month)) throw invalidRequest('month must be YYYY-MM', [{ field: 'month', message: 'Expected YYYY-MM' }])
  const limit = parseUntil(until)

  const streams = await store.readStreams([quotaStream(ownerId, month), cacheHitStream(ownerId, month), legacyReplayStream(ownerId, month), answerStream(ownerId, month)])
  const replays = await replaysOnKeys(store, ownerId, month)
  const recorded = [...[...streams.values()].flat(), ...replays].filter((e) => e.position <= through).sort((a, b) => a.position - b.position)
  const unanswered = unansweredOf(recorded)
  const entries: QuotaAuditEntry[] = []
  let used = 0
  for (const record of recorded) {
    const event = { type: record.type, data: record.data }
    if (!isAudited(event) || Date.parse(event.data.at) > limit) continue
    if (event.type === 'BriefingGenerated') used += 1
    entries.push(entryOf(record, event, used, unanswered))
  }
  return entries
}

/** What a list of entries sums up to, as `audit quota` and the ledger report it: `used` is the last entry's (the API's count). */
export const quotaTotals = (entries: readonly QuotaAuditEntry[]) => ({
  used: entries.at(-1)?.used ?? 0,
  charged: entries.filter((e) => e.charged).length,
  cache_hits: entries.filter((e) => e.type === 'BriefingServedFromCache').length,
  replays: entries.filter((e) => e.type === 'BriefingReplayed').length,
  not_answered: entries.filter((e) => !e.answered).length,
})
